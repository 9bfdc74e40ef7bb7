"""The level-wise histogram tree grower, the one tree grower of the project.

:func:`grow_tree` grows one tree over binned data (:mod:`dpexp.trees.binning`) one depth
at a time. Every data-dependent decision is delegated to two pluggable policies, so
non-private (NP) and private algorithms (DPBoost/SEQ/PARA, InPrivate, XGBoost-DP,
Gaussian BDT, ...) share the same compiled histogram code:

* a **split policy** is called once per depth with a :class:`SplitContext` (the
  histograms of all open nodes of that depth) and returns, per node, the chosen candidate
  ``(feature, bin)`` -- "rows with code <= bin go left" -- or feature ``-1`` for "make it
  a leaf";
* a **leaf policy** is called once per tree with a :class:`LeafContext` (the statistic
  totals of all leaves) and returns the leaf values.

Policies receive the tree's ``rng`` and ``accountant`` and do their own spending (see
:mod:`dpexp.trees.policies` for greedy, exponential-mechanism and Laplace-leaf policies).

Per depth the grower builds histograms only for the smaller child of every split and
gets its sibling by subtraction from the parent (the "subtraction trick").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from dpexp.trees.binning import BinMapper, BinnedData
from dpexp.trees.histogram import (
    FEATURE_BLOCK,
    apply_binned_dense,
    build_hist_dense,
    build_hist_dense_2,
    build_hist_sparse,
    partition_dense,
    partition_sparse,
)
from dpexp.trees.tree import ArrayTree, TreeBuilder


@dataclass
class SplitContext:
    """What a split policy sees for the open nodes of one depth.

    ``hist[j, f, b, k]``: sum of statistic ``k`` over the rows of node ``j`` whose code of
    feature ``f`` is ``b``. ``totals[j, k]``: sum over the node. ``n_candidates[f]``:
    candidate bins of feature ``f`` are ``0 .. n_candidates[f]-1`` (a public quantity,
    from the bin mapper). ``n_rows[j]``: exact row counts -- private data; a DP policy
    must not use them except through a mechanism.
    """

    depth: int
    max_depth: int
    hist: np.ndarray
    totals: np.ndarray
    n_candidates: np.ndarray
    n_rows: np.ndarray
    node_ids: np.ndarray
    rng: np.random.Generator
    accountant: Any | None
    label: str = ""

    @property
    def n_nodes(self) -> int:
        return int(self.hist.shape[0])


@dataclass
class LeafContext:
    """What a leaf policy sees: statistic ``totals (n_leaves, K)`` of every leaf."""

    totals: np.ndarray
    n_rows: np.ndarray
    depth: np.ndarray
    node_ids: np.ndarray
    rng: np.random.Generator
    accountant: Any | None
    label: str = ""

    @property
    def n_leaves(self) -> int:
        return int(self.totals.shape[0])


class SplitPolicy(Protocol):
    def __call__(self, ctx: SplitContext) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(feature, bin)`` int arrays of length ``ctx.n_nodes``; feature -1 = leaf."""
        ...


class LeafPolicy(Protocol):
    def __call__(self, ctx: LeafContext) -> np.ndarray:
        """Return leaf values ``(ctx.n_leaves, n_outputs)``."""
        ...


@dataclass
class GrownTree:
    """A grown tree: the :class:`ArrayTree` plus the bin of every split (for binned data)."""

    tree: ArrayTree
    bins: np.ndarray  # int64 (n_nodes,), -1 at leaves

    def apply_binned(self, data: BinnedData) -> np.ndarray:
        """Leaf id of each row of *dense* binned data (uses bins, not thresholds)."""
        t = self.tree
        return apply_binned_dense(
            data.codes, t.feature.astype(np.int64), self.bins, t.child_start.astype(np.int64),
            data.n_rows,
        )


def _build(data: BinnedData, stats, order, starts, ends, n_bins) -> np.ndarray:
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if data.is_sparse:
        return build_hist_sparse(
            data.indptr, data.rows, data.values, data.zero_bin, stats, order, starts, ends,
            data.n_rows, n_bins,
        )
    if stats.shape[1] == 2:
        return build_hist_dense_2(
            data.codes, np.ascontiguousarray(stats[:, 0]), np.ascontiguousarray(stats[:, 1]),
            order, starts, ends, n_bins, FEATURE_BLOCK,
        )
    return build_hist_dense(data.codes, stats, order, starts, ends, n_bins, FEATURE_BLOCK)


def _partition(data: BinnedData, order, starts, ends, features, bins) -> np.ndarray:
    args = (
        order,
        np.asarray(starts, dtype=np.int64),
        np.asarray(ends, dtype=np.int64),
        np.asarray(features, dtype=np.int64),
        np.asarray(bins, dtype=np.int64),
    )
    if data.is_sparse:
        return partition_sparse(
            data.indptr, data.rows, data.values, data.zero_bin, *args, data.n_rows
        )
    return partition_dense(data.codes, *args)


def grow_tree(
    data: BinnedData,
    stats: np.ndarray,
    rows: np.ndarray,
    mapper: BinMapper,
    *,
    max_depth: int,
    split_policy: SplitPolicy,
    leaf_policy: LeafPolicy,
    rng: np.random.Generator,
    accountant=None,
    n_outputs: int = 1,
    label: str = "",
) -> GrownTree:
    """Grow one tree level-wise on the rows ``rows`` of ``data``.

    ``stats (n_rows_total, K)`` float64: per-row statistics summed in the histograms
    (for GBDT: column 0 gradient, column 1 hessian). ``rows``: ids of the rows this tree
    may use (any order; may be empty). Depth ``max_depth`` nodes are always leaves.
    """
    stats = np.ascontiguousarray(stats, dtype=np.float64)
    order = np.sort(np.asarray(rows, dtype=np.int64))
    n_candidates = np.maximum(mapper.n_bins - 1, 0).astype(np.int64)
    n_bins = max(mapper.max_bins, 1)
    builder = TreeBuilder(n_outputs=n_outputs)
    bins: list[int] = []

    root = builder.add_node(0)
    bins.append(-1)
    # open nodes of the current depth
    node_ids = np.array([root], dtype=np.int64)
    starts = np.array([0], dtype=np.int64)
    ends = np.array([order.size], dtype=np.int64)
    totals = stats[order].sum(axis=0, keepdims=True) if order.size else np.zeros((1, stats.shape[1]))
    hist = _build(data, stats, order, starts, ends, n_bins) if max_depth > 0 else None
    leaf_ids: list[np.ndarray] = []
    leaf_totals: list[np.ndarray] = []
    leaf_rows: list[np.ndarray] = []

    for depth in range(max_depth + 1):
        n_rows = ends - starts
        if depth == max_depth or node_ids.size == 0:
            leaf_ids.append(node_ids)
            leaf_totals.append(totals)
            leaf_rows.append(n_rows)
            break
        ctx = SplitContext(
            depth=depth, max_depth=max_depth, hist=hist, totals=totals,
            n_candidates=n_candidates, n_rows=n_rows, node_ids=node_ids, rng=rng,
            accountant=accountant, label=label,
        )
        feat, bin_ = split_policy(ctx)
        feat = np.asarray(feat, dtype=np.int64)
        bin_ = np.asarray(bin_, dtype=np.int64)
        split = feat >= 0
        if (~split).any():
            leaf_ids.append(node_ids[~split])
            leaf_totals.append(totals[~split])
            leaf_rows.append(n_rows[~split])
        if not split.any():
            node_ids = node_ids[:0]
            break
        js = np.flatnonzero(split)
        f_s, b_s = feat[js], bin_[js]
        n_left = _partition(data, order, starts[js], ends[js], f_s, b_s)
        # children totals from the parents' histograms: left = bins <= b of feature f
        cum = np.cumsum(hist[js, f_s], axis=1)  # (ns, B, K)
        left_tot = cum[np.arange(js.size), b_s]
        right_tot = totals[js] - left_tot
        new_ids, new_starts, new_ends, new_tot = [], [], [], []
        for i, j in enumerate(js):
            f, b = int(f_s[i]), int(b_s[i])
            lft, rgt = builder.split_numeric(int(node_ids[j]), f, mapper.threshold(f, b))
            bins[int(node_ids[j])] = b
            bins.extend([-1, -1])
            mid = starts[j] + n_left[i]
            new_ids += [lft, rgt]
            new_starts += [starts[j], mid]
            new_ends += [mid, ends[j]]
            new_tot += [left_tot[i], right_tot[i]]
        child_starts = np.asarray(new_starts, dtype=np.int64)
        child_ends = np.asarray(new_ends, dtype=np.int64)
        if depth + 1 < max_depth:
            sizes = (child_ends - child_starts).reshape(-1, 2)
            small = np.argmin(sizes, axis=1)  # 0: build left, 1: build right
            pick = 2 * np.arange(js.size) + small
            small_hist = _build(data, stats, order, child_starts[pick], child_ends[pick], n_bins)
            big_hist = hist[js] - small_hist
            new_hist = np.empty((2 * js.size, *hist.shape[1:]))
            new_hist[pick] = small_hist
            new_hist[pick ^ 1] = big_hist
            hist = new_hist
        else:
            hist = None
        node_ids = np.asarray(new_ids, dtype=np.int64)
        starts, ends = child_starts, child_ends
        totals = np.asarray(new_tot).reshape(-1, stats.shape[1])

    ids = np.concatenate(leaf_ids) if leaf_ids else np.zeros(0, dtype=np.int64)
    lctx = LeafContext(
        totals=np.concatenate(leaf_totals).reshape(-1, stats.shape[1]),
        n_rows=np.concatenate(leaf_rows),
        depth=np.asarray([builder.depth[i] for i in ids], dtype=np.int64),
        node_ids=ids,
        rng=rng,
        accountant=accountant,
        label=label,
    )
    values = np.asarray(leaf_policy(lctx), dtype=np.float64).reshape(ids.size, n_outputs)
    for i, node in enumerate(ids):
        builder.set_value(int(node), values[i])
    return GrownTree(tree=builder.build(), bins=np.asarray(bins, dtype=np.int64))
