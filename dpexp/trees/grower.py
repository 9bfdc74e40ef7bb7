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
gets its sibling by subtraction from the parent (the "subtraction trick"). On large
dense tables the tree's rows and their statistics live in two buffers that every
partition writes in turn (:class:`_RowBuffers`), so histogram builds read both in order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from dpexp.trees.binning import BinMapper, BinnedData
from dpexp.trees.histogram import (
    MOVE_STATS_MIN_ROWS,
    DenseLayout,
    add_leaf_segments,
    add_split_segments,
    add_tree_binned,
    apply_binned_dense,
    build_hist_sparse,
    dense_hist_into,
    dense_layout,
    gather_rows,
    is_sorted,
    level_children,
    node_totals,
    partition_dense,
    partition_rows,
    partition_sparse,
    subtract_siblings,
)
from dpexp.trees.tree import NUMERIC, ArrayTree


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
    n_candidates_total: int | None = None  # sum(n_candidates), when the grower has it

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
    """A grown tree: the :class:`ArrayTree` plus the bin of every split (for binned data).

    ``order``/``leaf_start``/``leaf_end``/``leaf_node`` (set by :func:`grow_tree`) give the
    training rows of every leaf: ``order[leaf_start[i]:leaf_end[i]]`` reached leaf
    ``leaf_node[i]``, so boosting can update its scores without walking the tree again.
    """

    tree: ArrayTree
    bins: np.ndarray  # int64 (n_nodes,), -1 at leaves
    order: np.ndarray | None = None
    leaf_start: np.ndarray | None = None
    leaf_end: np.ndarray | None = None
    leaf_node: np.ndarray | None = None

    def apply_binned(self, data: BinnedData) -> np.ndarray:
        """Leaf id of each row of *dense* binned data (uses bins, not thresholds)."""
        t = self.tree
        return apply_binned_dense(
            data.codes, t.feature.astype(np.int64), self.bins, t.child_start.astype(np.int64),
            data.n_rows,
        )

    def add_to_scores(self, scores: np.ndarray, scale: float, data: BinnedData | None = None,
                      *, grown_rows_only: bool = False) -> None:
        """``scores += scale * value[leaf(x), 0]`` in place for every row of dense ``data``.

        With ``grown_rows_only`` only the rows the tree was grown on are updated, from the
        stored leaf segments (no tree walk; exact same leaves as :meth:`apply_binned`).
        """
        value = np.ascontiguousarray(self.tree.value[:, 0])
        if grown_rows_only:
            if self.order is None:
                raise ValueError("this tree has no leaf segments (grown with scores=...: "
                                 "its rows are scored already)")
            add_leaf_segments(self.order, self.leaf_start, self.leaf_end,
                              value[self.leaf_node], float(scale), scores)
            return
        t = self.tree
        add_tree_binned(data.codes, t.feature.astype(np.int64), self.bins,
                        t.child_start.astype(np.int64), value, float(scale), scores)


def _build_into(data: BinnedData, stats, order, starts, ends, out, slots,
                rows_io: _RowBuffers | None = None, n_rows: int | None = None) -> None:
    """Histograms of the nodes ``order[starts[j]:ends[j]]`` (``n_rows`` rows in all)
    into ``out[slots[j]]`` (dense data: with the tree's row buffers)."""
    if data.is_sparse:
        out[slots] = build_hist_sparse(
            data.indptr, data.rows, data.values, data.zero_bin, stats, order, starts, ends,
            data.n_rows, out.shape[2],
        )
        return
    dense_hist_into(data.codes, stats, order, starts, ends, out, slots,
                    scratch=rows_io.stats, gathered=rows_io.gathered,
                    unit_last=rows_io.unit_last, layout=rows_io.layout, n_rows=n_rows)


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
    workspace: GrowWorkspace | None = None,
    unit_last: bool = False,
    scores: np.ndarray | None = None,
    score_scale: float = 1.0,
) -> GrownTree:
    """Grow one tree level-wise on the rows ``rows`` of ``data``.

    ``stats (n_rows_total, K)`` float64: per-row statistics summed in the histograms
    (for GBDT: column 0 gradient, column 1 hessian). ``rows``: ids of the rows this tree
    may use (any order; may be empty). Depth ``max_depth`` nodes are always leaves.

    ``workspace``: scratch arrays to reuse from the previous tree of the same fit (the
    returned tree's ``order`` then lives in it: read it before the next tree is grown).
    ``unit_last``: the caller promises ``stats[:, -1] == 1`` for every row (GBDT with
    ``h = 1``, Li et al. 2020 Section 4); that statistic is then counted, not stored, read
    or moved with the rows: the same histograms, one statistic less to move and read.

    ``scores``: with ``n_outputs == 1``, ``scores[r] += score_scale * value[leaf(r)]``
    for every row ``r`` the tree grows on (boosting's score update). With ``unit_last``
    on dense data the rows of the last depth are then scored where they lie instead of
    being partitioned first (the leaves' row counts come from the count statistic), so
    the returned tree carries no leaf segments (``order`` is None).

    Node ids are assigned as :class:`~dpexp.trees.tree.TreeBuilder` would (root 0, the
    children of the split nodes of a depth in order, left then right), but the tree's
    arrays are filled per depth, not node by node.
    """
    stats = np.ascontiguousarray(stats, dtype=np.float64)
    k_stats = stats.shape[1]
    order = np.asarray(rows, dtype=np.int64)
    if not is_sorted(order):
        order = np.sort(order)
    elif data.is_sparse or order.size < MOVE_STATS_MIN_ROWS:
        order = order.copy()  # partitioned in place below; large dense tables are not
    # dense data: the statistics gathered once in row order, then moved along with their
    # rows by every partition, so histograms read them in order, never at random
    ws = workspace or GrowWorkspace()
    rows_io = None if data.is_sparse else _RowBuffers(
        stats, order, ws, unit_last, ws.layout(data))
    n_candidates = np.maximum(mapper.n_bins - 1, 0).astype(np.int64)
    n_candidates_total = int(n_candidates.sum())
    hist_shape = (data.n_features, max(mapper.max_bins, 1), k_stats)
    nodes = _NodeTable()
    # open nodes of the current depth
    node_ids = np.zeros(1, dtype=np.int64)
    starts = np.zeros(1, dtype=np.int64)
    ends = np.array([order.size], dtype=np.int64)
    hist = None
    levels = _HistogramLevels(ws, hist_shape, mapper.n_bins)
    if max_depth > 0:
        hist = levels.next(1)
        _build_into(data, stats, order, starts, ends, hist, np.zeros(1, dtype=np.int64),
                    rows_io, order.size)
    if hist is not None and hist.shape[1] > 0:
        # every row lies in one bin of feature 0: a few hundred additions, not one per row
        totals = hist[0, 0].sum(axis=0).reshape(1, k_stats)
    else:
        totals = node_totals(stats, order, 0, order.size).reshape(1, k_stats)
    leaves = _LeafCollector()
    if scores is not None and n_outputs != 1:
        raise ValueError(f"scores need n_outputs == 1, got {n_outputs}")
    # the last depth's splits, scored without a partition: (starts, ends, feats, bins)
    fuse_last = scores is not None and rows_io is not None and rows_io.unit_last
    last_splits = None

    no_counts = np.zeros(0, dtype=np.int64)  # level_children: rows going left from counts
    for depth in range(max_depth + 1):
        if depth == max_depth or node_ids.size == 0:
            leaves.add(node_ids, totals, starts, ends)
            break
        ctx = SplitContext(
            depth=depth, max_depth=max_depth, hist=hist, totals=totals,
            n_candidates=n_candidates, n_rows=ends - starts, node_ids=node_ids, rng=rng,
            accountant=accountant, label=label, n_candidates_total=n_candidates_total,
        )
        feat, bin_ = split_policy(ctx)
        feat = np.asarray(feat, dtype=np.int64)
        bin_ = np.asarray(bin_, dtype=np.int64)
        last = depth + 1 == max_depth
        if rows_io is None:
            n_left = partition_sparse(data.indptr, data.rows, data.values, data.zero_bin,
                                      order, starts, ends, feat, bin_, data.n_rows)
        elif fuse_last and last:
            n_left = no_counts  # the last split level is scored, not partitioned
        else:
            # below the last split only leaf segments are needed, not the statistics
            n_left = rows_io.partition(data.codes_by_feature(), starts, ends, feat, bin_,
                                       with_stats=not last)
            order = rows_io.order
        js, closed, c_starts, c_ends, c_totals, small, big, small_rows = level_children(
            hist, totals, feat, bin_, starts, ends, n_left)
        if closed.size:
            leaves.add(node_ids[closed], totals[closed], starts[closed], ends[closed])
        if js.size == 0:
            node_ids = node_ids[:0]
            break
        f_s, b_s = feat[js], bin_[js]
        if n_left is no_counts:
            last_splits = (starts[js], ends[js], f_s, b_s)
        node_ids = nodes.split(node_ids[js], f_s, b_s)
        totals, starts, ends = c_totals, c_starts, c_ends
        hist = (_child_histograms(data, stats, order, starts, ends, small, big, small_rows,
                                  hist, js, levels, rows_io)
                if not last else None)

    ids, leaf_totals, leaf_start, leaf_end = leaves.arrays(k_stats)
    depth_arr = nodes.depth_array()
    lctx = LeafContext(
        totals=leaf_totals,
        n_rows=leaf_end - leaf_start,
        depth=depth_arr[ids].astype(np.int64),
        node_ids=ids,
        rng=rng,
        accountant=accountant,
        label=label,
    )
    values = np.asarray(leaf_policy(lctx), dtype=np.float64).reshape(ids.size, n_outputs)
    tree, bins = nodes.build(ids, values, n_outputs, depth_arr, mapper)
    if scores is None:
        return GrownTree(tree=tree, bins=bins, order=order,
                         leaf_start=leaf_start, leaf_end=leaf_end, leaf_node=ids)
    v = values[:, 0]
    if last_splits is None:
        add_leaf_segments(order, leaf_start, leaf_end, v, float(score_scale), scores)
        return GrownTree(tree=tree, bins=bins, order=order,
                         leaf_start=leaf_start, leaf_end=leaf_end, leaf_node=ids)
    # the leaves closed before the last depth, then its split nodes' two children
    s_s, e_s, f_s, b_s = last_splits
    n_closed = ids.size - 2 * s_s.size
    none = np.full(n_closed, -1, dtype=np.int64)
    add_split_segments(
        data.codes_by_feature(), order, np.concatenate([leaf_start[:n_closed], s_s]),
        np.concatenate([leaf_end[:n_closed], e_s]), np.concatenate([none, f_s]),
        np.concatenate([none, b_s]), np.concatenate([v[:n_closed], v[n_closed::2]]),
        np.concatenate([v[:n_closed], v[n_closed + 1::2]]), float(score_scale), scores)
    return GrownTree(tree=tree, bins=bins)


class GrowWorkspace:
    """Scratch arrays that the trees of one fit share (``grow_tree(..., workspace=...)``).

    A large table's row buffers are tens of megabytes; allocated afresh for every tree
    they are paid again in page faults each time. Arrays only grow; callers get views of
    the first elements. Not for trees grown concurrently.
    """

    def __init__(self) -> None:
        self._flat: dict[object, np.ndarray] = {}
        self._layout: tuple[BinnedData, DenseLayout] | None = None

    def layout(self, data: BinnedData) -> DenseLayout:
        """The histogram kernels' :func:`~dpexp.trees.histogram.dense_layout` of dense
        ``data`` (made once for the trees of a fit, which all grow on the same table)."""
        if self._layout is None or self._layout[0] is not data:
            self._layout = (data, dense_layout(data.codes, data.sparse_codes(),
                                               data.row_codes()))
        return self._layout[1]

    def array(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        """A C-contiguous ``shape`` array (contents undefined) backed by buffer ``name``."""
        size = math.prod(shape)
        buf = self._flat.get(name)
        if buf is None or buf.dtype != np.dtype(dtype) or buf.size < size:
            buf = np.empty(max(size, 1), dtype=dtype)
            self._flat[name] = buf
        return buf[:size].reshape(shape)

    def zeros(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """A float64 ``shape`` array backed by buffer ``name``, zero when first allocated
        and afterwards as its users left it. Histograms use this: no kernel writes the
        bins past a feature's codes, so those stay zero without being cleared again
        (one buffer per histogram shape, so the positions of those bins never move)."""
        key = (name, shape[1:])
        size = math.prod(shape)
        buf = self._flat.get(key)
        if buf is None or buf.size < size:
            buf = np.zeros(max(size, 1))
            self._flat[key] = buf
        return buf[:size].reshape(shape)


class _RowBuffers:
    """A tree's row order and, for large tables, its statistics in that order ``(K, n)``,
    double-buffered: every partition writes the level's rows, statistics alongside, into
    the other buffer (:func:`~dpexp.trees.histogram.partition_rows`), so histograms read
    them in order. Small tables are partitioned in place and their statistics gathered by
    each build (``gathered`` False). Either way a build sees the same values in the same
    positions, so the choice never changes a result."""

    def __init__(self, stats: np.ndarray, order: np.ndarray,
                 workspace: GrowWorkspace | None = None, unit_last: bool = False,
                 layout: DenseLayout | None = None) -> None:
        ws = workspace or GrowWorkspace()
        self.unit_last = bool(unit_last) and stats.shape[1] > 0
        m, k = order.size, stats.shape[1] - int(self.unit_last)
        self.layout = layout  # the table's kernel arguments (None: built per call)
        self.order = order
        self._given = order  # may be the caller's array: read, never written
        self._ws = ws
        self.gathered = m >= MOVE_STATS_MIN_ROWS
        self.stats = ws.array("stats_a", (k, m), np.float64)
        if self.gathered:
            gather_rows(stats, order, self.stats)
            self._spare = (ws.array("order_b", (m,), order.dtype),
                           ws.array("stats_b", (k, m), np.float64))
            self._mask = ws.array("mask", (m,), np.uint8)

    def partition(self, codes, starts, ends, features, bins, *, with_stats: bool) -> np.ndarray:
        """Partition the nodes (feature -1: keep as is); rows outside them keep their
        positions. Returns the rows going left per node."""
        if not self.gathered:
            return partition_dense(codes, self.order, starts, ends, features, bins)
        out, out_stats = self._spare
        if out is self._given:
            out = self._ws.array("order_a", out.shape, out.dtype)
        covered = int((ends - starts).sum())
        if covered < self.order.size:  # positions outside the nodes: closed leaves
            out[:] = self.order
            if with_stats:
                out_stats[:] = self.stats
        if with_stats:
            n_left = partition_rows(codes, self.order, starts, ends, features, bins, out,
                                    ordered=self.stats, out_ordered=out_stats,
                                    mask=self._mask)
            self._spare = (self.order, self.stats)
            self.order, self.stats = out, out_stats
        else:
            n_left = partition_rows(codes, self.order, starts, ends, features, bins, out,
                                    mask=self._mask)
            self._spare = (self.order, out_stats)
            self.order = out
        return n_left


class _NodeTable:
    """The nodes of a level-wise tree, recorded one depth at a time."""

    def __init__(self) -> None:
        self.n_nodes = 1
        self.level_sizes = [1]
        self.parents: list[np.ndarray] = []
        self.feats: list[np.ndarray] = []
        self.bins: list[np.ndarray] = []

    def split(self, parents, feats, bins_) -> np.ndarray:
        """Turn ``parents`` into numeric splits; returns the child ids (left, right, ...)."""
        n2 = 2 * parents.size
        children = np.arange(self.n_nodes, self.n_nodes + n2, dtype=np.int64)
        self.parents.append(parents)
        self.feats.append(feats)
        self.bins.append(bins_)
        self.n_nodes += n2
        self.level_sizes.append(n2)
        return children

    def depth_array(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.level_sizes), dtype=np.int32), self.level_sizes)

    def build(self, leaf_ids, leaf_values, n_outputs: int, depth, mapper: BinMapper
              ) -> tuple[ArrayTree, np.ndarray]:
        n = self.n_nodes
        kind = np.zeros(n, dtype=np.int8)  # LEAF
        feature = np.full(n, -1, dtype=np.int32)
        threshold = np.full(n, np.nan)
        child_start = np.full(n, -1, dtype=np.int32)
        n_children = np.zeros(n, dtype=np.int32)
        bins = np.full(n, -1, dtype=np.int64)
        if self.parents:
            p = np.concatenate(self.parents)
            f = np.concatenate(self.feats)
            b = np.concatenate(self.bins)
            kind[p] = NUMERIC
            feature[p] = f
            threshold[p] = mapper.threshold_table[f, b]
            # the children of a depth's splits are numbered in split order, two each
            child_start[p] = 1 + 2 * np.arange(p.size)
            n_children[p] = 2
            bins[p] = b
        value = np.zeros((n, n_outputs))
        value[leaf_ids] = leaf_values
        tree = ArrayTree(kind=kind, feature=feature, threshold=threshold,
                         child_start=child_start, n_children=n_children, value=value,
                         depth=depth)
        return tree, bins


class _LeafCollector:
    """Leaves of a tree in the order they are closed, with their row segments."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, ids, totals, starts, ends) -> None:
        self.parts.append((ids, totals, starts, ends))

    def arrays(self, k_stats: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self.parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, np.zeros((0, k_stats)), empty, empty
        ids, totals, starts, ends = (np.concatenate(col) for col in zip(*self.parts, strict=True))
        return ids.astype(np.int64), totals.reshape(-1, k_stats), starts, ends


class _HistogramLevels:
    """Histogram arrays of consecutive depths, alternating between two zeroed workspace
    buffers (a depth's children are built while its own histograms are read).
    ``n_bins[f]`` bounds feature ``f``'s codes: bins past it are never written, so they
    stay zero and are neither cleared nor subtracted again."""

    def __init__(self, ws: GrowWorkspace, hist_shape: tuple[int, ...], n_bins) -> None:
        self.ws = ws
        self.hist_shape = hist_shape
        self.n_bins = np.asarray(n_bins, dtype=np.int64)  # <= max_bins = hist_shape[1]
        self.n_bins_total = int(self.n_bins.sum())
        self.turn = 0

    def next(self, n_nodes: int) -> np.ndarray:
        self.turn ^= 1
        return self.ws.zeros(f"hist{self.turn}", (n_nodes, *self.hist_shape))


def _child_histograms(data, stats, order, starts, ends, small, big, small_rows, parent_hist,
                      parent_index, levels: _HistogramLevels, rows_io=None) -> np.ndarray:
    """Histograms of all children (``starts``/``ends``: left, right per split): build
    child ``small[i]`` of split ``i`` (``small_rows`` rows in all), get its sibling
    ``big[i]`` as parent minus child (the "subtraction trick"); split ``i`` is node
    ``parent_index[i]`` of ``parent_hist``."""
    out = levels.next(starts.size)
    _build_into(data, stats, order, starts[small], ends[small], out, small, rows_io,
                small_rows)
    subtract_siblings(parent_hist, out, small, big, parent_index, levels.n_bins,
                      levels.n_bins_total)
    return out
