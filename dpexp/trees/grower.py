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

Per depth (:meth:`_LevelGrower.step`) the grower asks the split policy, partitions the
rows, closes the unsplit nodes as leaves (:func:`~dpexp.trees.levels.level_children`),
builds histograms only for the smaller child of every split and gets its sibling by
subtraction from the parent (the "subtraction trick"). The rows live behind one
interface, :class:`~dpexp.trees.row_stores.RowStore` (in place, statistics moved with
the rows, or column-sparse); which storage a tree uses never changes a result. On the
in-place store the loop runs compiled (:mod:`dpexp.trees.fused_levels`, the same kernels
on the same buffers: the same trees): the whole tree in one call with the greedy policy
or the exponential mechanism's, else everything of a depth after the policy's decision
in one call (:data:`COMPILED_LEVELS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from dpexp.trees import parallel as par
from dpexp.trees.binned_data import BinnedData, take_codes
from dpexp.trees.binning import BinMapper
from dpexp.trees.fused_levels import (
    NO_GAINS,
    exponential_tree_levels,
    greedy_tree_levels,
    level_after_split,
)
from dpexp.trees.histograms import node_totals
from dpexp.trees.levels import HistogramLevels, level_children
from dpexp.trees.partition import in_place_cut
from dpexp.trees.predict import (
    add_leaf_segments,
    add_tree_binned,
    add_tree_binned_rows,
    apply_binned_dense,
)
from dpexp.trees.row_stores import GrowWorkspace, InPlaceRows, RowStore, row_store
from dpexp.trees.tree import ArrayTree
from dpexp.trees.tree_arrays import node_arrays, score_segments

__all__ = ["GrowWorkspace", "GrownTree", "LeafContext", "LeafPolicy", "SplitContext",
           "SplitPolicy", "grow_tree"]


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
    # n_bins[f]: the bins of feature f from n_bins[f] on hold zeros in hist (public, from
    # the bin mapper; None when the caller does not promise it)
    n_bins: np.ndarray | None = None
    # the packed candidate gains the policy asked for (its compiled_gains()), computed
    # by the grower with the histograms (dpexp.trees.fused_levels); None: not computed
    utilities: np.ndarray | None = None

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
                      *, grown_rows_only: bool = False, rows: np.ndarray | None = None
                      ) -> None:
        """``scores += scale * value[leaf(x), 0]`` in place for every row of dense ``data``,
        or for the rows ``rows`` of it only (distinct ids; the others are left as they are).

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
        if rows is not None:
            add_tree_binned_rows(data.codes, rows, t.feature.astype(np.int64), self.bins,
                                 t.child_start.astype(np.int64), value, float(scale), scores)
            return
        add_tree_binned(data.codes, t.feature.astype(np.int64), self.bins,
                        t.child_start.astype(np.int64), value, float(scale), scores)


@dataclass
class _Level:
    """The open nodes of one depth: ids, row ranges ``order[starts[j]:ends[j]]``,
    statistic totals and histograms (None below the last split depth)."""

    node_ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    totals: np.ndarray
    hist: np.ndarray | None
    utilities: np.ndarray | None = None  # the policy's gains, when the grower made them


_NO_COUNTS = np.zeros(0, dtype=np.int64)  # level_children: rows going left from counts
_NO_HIST = np.zeros((0, 0, 0, 0))  # the compiled step's output below the last split
_NO_SPLITS = np.zeros((4, 0), dtype=np.int64)  # score_segments: every leaf partitioned

#: Trees on the in-place row store run their level loop compiled
#: (:mod:`dpexp.trees.fused_levels`: the same kernels on the same buffers, the same
#: bits): one call per depth after the split policy, or one per tree with the greedy
#: policy. False: the reference loop (:meth:`_LevelGrower.step`) for every tree. Read at
#: call time (the tests and ``bench/bench_gbdt.py --ab`` switch it).
COMPILED_LEVELS = True
#: Trees whose split policy offers ``compiled_tree`` (DPBoost's exponential mechanism,
#: :class:`~dpexp.trees.policies.ExponentialSplit`) grow in one compiled call when
#: :data:`COMPILED_LEVELS` holds (the same draws, ledger entries and bits). False: one
#: policy call per depth (the per-depth reference the tests compare against).
COMPILED_EXPONENTIAL_TREE = True
#: The one-call-per-tree greedy loop keeps both histogram buffers as wide as a depth can
#: be (``2**(max_depth - 1)`` nodes); beyond this many bytes per buffer it runs per depth.
COMPILED_TREE_MAX_HIST_BYTES = 64 << 20


class _LevelGrower:
    """One tree's growth, one :meth:`step` per depth, over any :class:`RowStore`."""

    def __init__(self, store: RowStore, mapper: BinMapper, n_features: int, k_stats: int,
                 max_depth: int, split_policy: SplitPolicy, rng, accountant, label: str,
                 ws: GrowWorkspace, fuse_last: bool) -> None:
        self.store = store
        self.max_depth = max_depth
        self.split_policy = split_policy
        self.rng, self.accountant, self.label = rng, accountant, label
        self.n_candidates = mapper.n_candidates
        self.n_candidates_total = mapper.n_candidates_total
        self.levels = HistogramLevels(ws, (n_features, max(mapper.max_bins, 1), k_stats),
                                      mapper.n_bins)
        self.nodes = _NodeTable()
        self.leaves = _LeafCollector()
        # the last depth's splits scored without a partition: needs the row counts
        self.fuse_last = fuse_last
        self.last_splits: np.ndarray | None = None  # (4, n): starts, ends, feats, bins
        # the compiled level loop's arguments (None: the reference loop); numba's thread
        # count read once per tree (each read takes the thread pool's lock)
        self.threads = threads = par.n_threads()
        self.kernel = (store.kernel_args(threads)
                       if COMPILED_LEVELS and type(store) is InPlaceRows else None)
        self.kernel_tail: tuple = ()
        self.gains = NO_GAINS
        gains_of = getattr(split_policy, "compiled_gains", None)
        if self.kernel is not None and gains_of is not None:
            self.gains = gains_of(self.n_candidates, self.levels.hist_shape[1]) or NO_GAINS
        if self.kernel is not None:
            self.kernel_tail = (
                self.kernel.layout, self.kernel.settings, self.levels._sub_bins,
                self.levels.n_bins_total, self.kernel.per_row, par.HIST_PARALLEL_MIN_WORK,
                par.LEVEL_PARALLEL_MIN_WORK, threads > 1, in_place_cut(threads))

    def compiled_tree_fits(self) -> bool:
        """Whether :meth:`grow_greedy_compiled` can run this tree (its two buffers are
        within :data:`COMPILED_TREE_MAX_HIST_BYTES`)."""
        width = 1 << max(self.max_depth - 1, 0)
        per_node = 8 * math.prod(self.levels.hist_shape)
        return (self.kernel is not None and self.max_depth > 0
                and width * per_node <= COMPILED_TREE_MAX_HIST_BYTES)

    def grow_greedy_compiled(self, rule) -> None:
        """Every depth of the tree in one compiled call
        (:func:`~dpexp.trees.fused_levels.greedy_tree_levels`, greedy splits by ``rule``,
        the root included): the nodes, leaves and last splits :meth:`root` and
        :meth:`step` would have recorded."""
        hist_a, hist_b = self.levels.reserve(1 << (self.max_depth - 1))
        parents, feats, bins_, sizes, l_ids, l_totals, l_starts, l_ends, last = (
            greedy_tree_levels(
                *self.kernel.head(), hist_a, hist_b, self.max_depth, self.fuse_last, self.n_candidates, self.n_candidates_total,
                rule, par.FEATURE_BLOCK, par.SPLIT_PARALLEL_MIN_CANDIDATES, *self.kernel_tail))
        self.nodes.load(parents, feats, bins_, sizes)
        self.leaves.add(l_ids, l_totals, l_starts, l_ends)
        if last.shape[1]:
            self.last_splits = last

    def grow_exponential_compiled(self, policy) -> None:
        """Every depth of the tree in one compiled call
        (:func:`~dpexp.trees.fused_levels.exponential_tree_levels`), run by the policy
        inside one accountant call (``policy.compiled_tree``: the depths' budget checked
        at once, their uniforms drawn at once, one ledger entry per depth as its
        ``__call__`` writes them): the nodes, leaves and last splits :meth:`root` and
        :meth:`step` would have recorded."""
        hist_a, hist_b = self.levels.reserve(1 << (self.max_depth - 1))

        def levels(scale: float, uniforms: np.ndarray, column_feature: np.ndarray) -> tuple:
            finite, *grown = exponential_tree_levels(
                *self.kernel.head(), hist_a, hist_b, self.max_depth, self.fuse_last,
                self.gains, column_feature, scale, uniforms, *self.kernel_tail)
            if not finite:  # what the mechanism says of such utilities, nothing charged
                raise ValueError("utility must be finite (no NaN or infinity)")
            return grown

        parents, feats, bins_, sizes, l_ids, l_totals, l_starts, l_ends, last = (
            policy.compiled_tree(levels, self.n_candidates, self.levels.hist_shape[1],
                                 max_depth=self.max_depth, rng=self.rng,
                                 accountant=self.accountant, label=self.label))
        self.nodes.load(parents, feats, bins_, sizes)
        self.leaves.add(l_ids, l_totals, l_starts, l_ends)
        if last.shape[1]:
            self.last_splits = last

    def root(self, stats: np.ndarray) -> _Level:
        order = self.store.order
        k_stats = stats.shape[1]
        starts = np.zeros(1, dtype=np.int64)
        ends = np.array([order.size], dtype=np.int64)
        hist = None
        if self.max_depth > 0:
            hist = self.levels.next(1)
            self.store.build(starts, ends, hist, np.zeros(1, dtype=np.int64), order.size)
        if hist is not None and hist.shape[1] > 0:
            # every row lies in one bin of feature 0: a few hundred additions, not one per row
            totals = hist[0, 0].sum(axis=0).reshape(1, k_stats)
        else:
            totals = node_totals(stats, order, 0, order.size).reshape(1, k_stats)
        return _Level(np.zeros(1, dtype=np.int64), starts, ends, totals, hist)

    def step(self, lv: _Level, depth: int) -> _Level | None:
        """Split the nodes of depth ``depth`` (the policy decides), close the others as
        leaves; the next depth's nodes, or None when none is split."""
        ctx = SplitContext(
            depth=depth, max_depth=self.max_depth, hist=lv.hist, totals=lv.totals,
            n_candidates=self.n_candidates, n_rows=lv.ends - lv.starts, node_ids=lv.node_ids,
            rng=self.rng, accountant=self.accountant, label=self.label,
            n_candidates_total=self.n_candidates_total, n_bins=self.levels.n_bins,
            utilities=lv.utilities,
        )
        feat, bin_ = self.split_policy(ctx)
        feat = np.ascontiguousarray(feat, dtype=np.int64)
        bin_ = np.ascontiguousarray(bin_, dtype=np.int64)
        last = depth + 1 == self.max_depth
        scored = self.fuse_last and last  # the last split level is scored, not partitioned
        if self.kernel is not None:  # the rest of the depth in one compiled call
            out = _NO_HIST if last else self.levels.next(2 * feat.size)
            js, closed, starts, ends, totals, utilities = level_after_split(
                *self.kernel.head(), lv.hist, out, lv.totals, feat, bin_, lv.starts, lv.ends,
                not scored, not last, self.gains, *self.kernel_tail)
        else:
            # below the last split only leaf segments are needed, not the statistics
            n_left = _NO_COUNTS if scored else self.store.partition(
                lv.starts, lv.ends, feat, bin_, with_stats=not last)
            js, closed, starts, ends, totals, small, big, small_rows = level_children(
                lv.hist, lv.totals, feat, bin_, lv.starts, lv.ends, n_left)
        if closed.size:
            self.leaves.add(lv.node_ids[closed], lv.totals[closed], lv.starts[closed],
                            lv.ends[closed])
        if js.size == 0:
            return None
        f_s, b_s = feat[js], bin_[js]
        if scored:
            self.last_splits = np.stack((lv.starts[js], lv.ends[js], f_s, b_s))
        node_ids = self.nodes.split(lv.node_ids[js], f_s, b_s)
        hist = None
        if not last and self.kernel is not None:
            hist = out[:starts.size]
        elif not last:
            # build the smaller child of every split, its sibling = parent - child
            hist = self.levels.next(starts.size)
            self.store.build(starts[small], ends[small], hist, small, small_rows)
            self.levels.subtract(lv.hist, hist, small, big, js)
        if self.kernel is not None and self.gains[0] and hist is not None:
            return _Level(node_ids, starts, ends, totals, hist, utilities)
        return _Level(node_ids, starts, ends, totals, hist)


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
    may use (any order; may be empty; never written). Depth ``max_depth`` nodes are
    always leaves.

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
    if scores is not None and n_outputs != 1:
        raise ValueError(f"scores need n_outputs == 1, got {n_outputs}")
    stats = np.ascontiguousarray(stats, dtype=np.float64)
    ws = workspace or GrowWorkspace()
    if worth_compacting(data, rows):
        return _grow_compact(data, stats, rows, mapper, ws, scores, score_scale,
                             max_depth=max_depth, split_policy=split_policy,
                             leaf_policy=leaf_policy, rng=rng, accountant=accountant,
                             n_outputs=n_outputs, label=label, unit_last=unit_last)
    # with scores the tree's order is returned only when the last depth splits nothing
    store = row_store(data, stats, rows, ws, unit_last, order_in_workspace=scores is not None)
    grower = _LevelGrower(store, mapper, data.n_features, stats.shape[1], max_depth,
                          split_policy, rng, accountant, label, ws,
                          fuse_last=scores is not None and store.counts_rows)
    rule = _compiled_rule(split_policy)
    if rule is not None and stats.shape[1] >= 2 and grower.compiled_tree_fits():
        grower.grow_greedy_compiled(rule)
        return _finish(grower, data, leaf_policy, mapper, n_outputs, stats.shape[1], scores,
                       score_scale)
    if (COMPILED_EXPONENTIAL_TREE and grower.gains[0] and grower.compiled_tree_fits()
            and hasattr(split_policy, "compiled_tree")):
        grower.grow_exponential_compiled(split_policy)
        return _finish(grower, data, leaf_policy, mapper, n_outputs, stats.shape[1], scores,
                       score_scale)
    level: _Level | None = grower.root(stats)
    for depth in range(max_depth):
        level = grower.step(level, depth)
        if level is None:
            break
    if level is not None:  # the nodes of depth max_depth are leaves
        grower.leaves.add(level.node_ids, level.totals, level.starts, level.ends)
    return _finish(grower, data, leaf_policy, mapper, n_outputs, stats.shape[1], scores,
                   score_scale)


def _compiled_rule(split_policy: SplitPolicy):
    """The :class:`~dpexp.trees.split_search.SplitRule` of a policy whose search the
    compiled tree loop runs itself (``compiled_rule()``: the greedy policy), else None."""
    rule_of = getattr(split_policy, "compiled_rule", None)
    return rule_of() if rule_of is not None else None


#: A dense table at least this large (bytes of codes) is compacted for a tree grown on
#: at most 1/COMPACT_MAX_SHARE of its rows: their codes are gathered once into a table of
#: their own, so every build and partition reads adjacent bytes instead of one cache line
#: per row and feature (800,000 x 400 codes, 16,000 rows: 39 ms per histogram pass at
#: random rows, 6 ms compact; bench/HISTORY.md).
COMPACT_MIN_BYTES = 32 << 20
COMPACT_MAX_SHARE = 8


def worth_compacting(data: BinnedData, rows: np.ndarray) -> bool:
    """Whether :func:`grow_tree` grows on a compact copy of ``rows`` (dense data only)."""
    # Only tables without sparse features: their histograms take a feature's default bin
    # as the node total minus the other bins, with the default chosen on the table, so a
    # compact table could choose another default and round differently.
    return (not data.is_sparse and data.codes.nbytes >= COMPACT_MIN_BYTES
            and 0 < len(rows) * COMPACT_MAX_SHARE <= data.n_rows
            and data.sparse_codes() is None)


def _grow_compact(data: BinnedData, stats: np.ndarray, rows: np.ndarray, mapper: BinMapper,
                  ws: GrowWorkspace, scores: np.ndarray | None, score_scale: float,
                  **grow: Any) -> GrownTree:
    """:func:`grow_tree` on a table of ``rows`` alone (sorted, so every histogram sums the
    same rows in the same order: the same tree bit for bit), mapped back to row ids."""
    ids = np.sort(np.asarray(rows, dtype=np.int64))
    compact = BinnedData(ids.size, data.n_features,
                         codes=take_codes(data.codes, ids, data.codes_by_row()))
    compact._sparse_codes.append(None)  # as the whole table: no feature is treated as sparse
    local = None if scores is None else np.zeros(ids.size)
    grown = grow_tree(compact, stats[ids], np.arange(ids.size), mapper, workspace=ws,
                      scores=local, score_scale=score_scale, **grow)
    if local is not None:
        scores[ids] += local  # 0 + s v is s v exactly: the same sums as in place
    if grown.order is None:
        return grown
    return GrownTree(tree=grown.tree, bins=grown.bins, order=ids[grown.order],
                     leaf_start=grown.leaf_start, leaf_end=grown.leaf_end,
                     leaf_node=grown.leaf_node)


def _finish(grower: _LevelGrower, data: BinnedData, leaf_policy: LeafPolicy,
            mapper: BinMapper, n_outputs: int, k_stats: int, scores: np.ndarray | None,
            score_scale: float) -> GrownTree:
    """Leaf values from the leaf policy, the tree's arrays, and the score update (both
    compiled: :mod:`dpexp.trees.tree_arrays`)."""
    order = grower.store.order
    ids, leaf_totals, leaf_start, leaf_end = grower.leaves.arrays(k_stats)
    depth_arr = grower.nodes.depth_array()
    lctx = LeafContext(
        totals=leaf_totals, n_rows=leaf_end - leaf_start,
        depth=depth_arr[ids].astype(np.int64), node_ids=ids, rng=grower.rng,
        accountant=grower.accountant, label=grower.label,
    )
    values = np.asarray(leaf_policy(lctx), dtype=np.float64).reshape(ids.size, n_outputs)
    tree, bins = grower.nodes.build(ids, values, depth_arr, mapper)
    if scores is None:
        return GrownTree(tree=tree, bins=bins, order=order, leaf_start=leaf_start,
                         leaf_end=leaf_end, leaf_node=ids)
    # the leaves closed before the last depth, then its split nodes' two children
    last = _NO_SPLITS if grower.last_splits is None else grower.last_splits
    score_segments(data.codes_by_feature(), order, leaf_start, leaf_end,
                   np.ascontiguousarray(values[:, 0]), float(score_scale),
                   ids.size - 2 * last.shape[1], last,
                   par.PARTITION_PARALLEL_MIN_ROWS if grower.threads > 1 else 0,
                   par.PARTITION_CHUNK_ROWS, scores)
    if grower.last_splits is None:
        return GrownTree(tree=tree, bins=bins, order=order, leaf_start=leaf_start,
                         leaf_end=leaf_end, leaf_node=ids)
    return GrownTree(tree=tree, bins=bins)


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

    def load(self, parents, feats, bins_, level_sizes) -> None:
        """Record the splits of every depth at once (in split order; ``level_sizes``:
        the nodes per depth, root first), as :meth:`split` per depth would."""
        if parents.size:
            self.parents.append(parents)
            self.feats.append(feats)
            self.bins.append(bins_)
        self.n_nodes = 1 + 2 * parents.size
        self.level_sizes = level_sizes.tolist()

    def depth_array(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.level_sizes), dtype=np.int32), self.level_sizes)

    def build(self, leaf_ids, leaf_values, depth, mapper: BinMapper
              ) -> tuple[ArrayTree, np.ndarray]:
        empty = np.zeros(0, dtype=np.int64)
        p, f, b = ((parts[0] if len(parts) == 1 else np.concatenate(parts)) if parts
                   else empty for parts in (self.parents, self.feats, self.bins))
        # the children of a depth's splits are numbered in split order, two each
        kind, feature, threshold, child_start, n_children, value, bins = node_arrays(
            self.n_nodes, p.astype(np.int64), f.astype(np.int64), b.astype(np.int64),
            leaf_ids, leaf_values, mapper.threshold_table)
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
        if len(self.parts) == 1:  # one part (a compiled tree): no copies
            ids, totals, starts, ends = self.parts[0]
        else:
            ids, totals, starts, ends = (np.concatenate(col)
                                         for col in zip(*self.parts, strict=True))
        return ids.astype(np.int64), totals.reshape(-1, k_stats), starts, ends
