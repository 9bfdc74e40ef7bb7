"""The level loop of the grower compiled (numba): one call per depth, or per tree.

The reference grower (:class:`dpexp.trees.grower._LevelGrower`) runs a depth as a
sequence of compiled kernels called from Python: the split policy, the row partition,
the children's bookkeeping (:func:`~dpexp.trees.levels.level_children`), the build of
the smaller children's histograms and the subtraction of their siblings. On a small
table each of those calls costs about as much in Python and numba's dispatch as in
compiled work (bench/HISTORY.md, "The level loop compiled"). For the in-place row store
(dense tables that fit in cache, :class:`~dpexp.trees.row_stores.InPlaceRows`) this
module runs the same kernels, in the same order and on the same buffers, from compiled
code:

* :func:`level_after_split` -- everything of a depth after its split decisions, in one
  call (any split policy, which decides in Python before this call);
* :func:`greedy_tree_levels` -- every depth of a tree whose split policy is the greedy,
  non-private search (:class:`~dpexp.trees.policies.GreedySplit`), the split search
  included: one call per tree;
* :func:`exponential_tree_levels` -- every depth of a tree whose splits are DPBoost's
  exponential mechanism (:class:`~dpexp.trees.policies.ExponentialSplit`), the draws
  included: one call per tree, inside one accountant call that checks the depths'
  total budget, draws their uniforms and charges each depth as its own ledger entry
  (:meth:`~dpexp.privacy.accountant.Accountant.exponential_rounds`).

Every kernel called here is the one the reference path calls, with the same arguments
and the same choice between its serial and parallel twin (which give the same bits), so
a tree is bit for bit the reference's (``tests/trees/test_fused_levels.py``,
``bench/check_identical.py``).
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit
from dpexp.privacy.mechanisms import all_finite, inverse_cdf_rows
from dpexp.trees.hist_plan import hist_parallel, hist_serial
from dpexp.trees.histograms import node_totals
from dpexp.trees.levels import level_children, subtract_flat_par, subtract_flat_ser
from dpexp.trees.partition import partition_in_place
from dpexp.trees.split_search import (
    best_splits_par,
    best_splits_ser,
    candidate_gains_par,
    candidate_gains_ser,
)

_NO_COUNTS = np.zeros(0, dtype=np.int64)
#: The ``gains`` argument of :func:`level_after_split` that asks for no gains.
NO_GAINS = (False, 0.0, _NO_COUNTS, _NO_COUNTS, 0)


@njit(cache=True, nogil=True)
def _build_and_subtract(codes, stats, order, scratch, parent, out, c_starts, c_ends, js,
                        small, big, small_rows, layout, settings, sub_bins, n_bins_total,
                        per_row, hist_min_work, level_min_work, multi):  # pragma: no cover
    """The smaller child of every split built into ``out``, its sibling = parent - child:
    what :meth:`~dpexp.trees.row_stores.InPlaceRows.build` and
    :meth:`~dpexp.trees.levels.HistogramLevels.subtract` do, with the same choice of the
    serial or parallel kernel (``multi``: numba has more than one thread)."""
    feats, bundles, lists, tail, rows = layout
    starts = c_starts[small]
    ends = c_ends[small]
    if multi and np.int64(small_rows * per_row) >= hist_min_work:
        hist_parallel(codes, stats, order, starts, ends, out, small, scratch, feats, bundles,
                      lists, tail, rows, settings)
    else:
        hist_serial(codes, stats, order, starts, ends, out, small, scratch, feats, bundles,
                    lists, tail, rows, settings)
    if (small.shape[0] > 1 and multi
            and n_bins_total * out.shape[3] * small.shape[0] >= level_min_work):
        subtract_flat_par(parent, js, out, small, big, sub_bins)
    else:
        subtract_flat_ser(parent, js, out, small, big, sub_bins)


@njit(cache=True, nogil=True)
def _root(codes, stats, order, scratch, hist, layout, settings, per_row, hist_min_work,
          multi):  # pragma: no cover
    """The root's histogram into ``hist[0]`` and its statistic totals ``(1, K)``, as
    :meth:`~dpexp.trees.grower._LevelGrower.root` gets them: the sum of feature 0's bins
    in bin order from the first bin (the order of numpy's ``sum(axis=0)`` over a
    C-contiguous ``(bins, K)`` array), or of the rows when there is no feature."""
    feats, bundles, lists, tail, rows = layout
    n = order.shape[0]
    starts = np.zeros(1, dtype=np.int64)
    ends = np.full(1, n, dtype=np.int64)
    if multi and np.int64(n * per_row) >= hist_min_work:
        hist_parallel(codes, stats, order, starts, ends, hist, starts, scratch, feats, bundles,
                      lists, tail, rows, settings)
    else:
        hist_serial(codes, stats, order, starts, ends, hist, starts, scratch, feats, bundles,
                    lists, tail, rows, settings)
    k_stats = hist.shape[3]
    totals = np.empty((1, k_stats))
    if hist.shape[1] == 0:
        totals[0] = node_totals(stats, order, 0, n)
        return totals
    for k in range(k_stats):
        acc = hist[0, 0, 0, k]
        for b in range(1, hist.shape[2]):
            acc += hist[0, 0, b, k]
        totals[0, k] = acc
    return totals


@njit(cache=True, nogil=True)
def level_after_split(codes_f, codes, stats, order, scratch, hist, hist_out, totals, feat,
                      bins_, starts, ends, partition, build, gains, layout, settings, sub_bins,
                      n_bins_total, per_row, hist_min_work, level_min_work, multi,
                      partition_cut):  # pragma: no cover
    """One depth after its split decisions ``(feat, bins_)`` (feature -1: a leaf), for the
    in-place row store: the stable partition of ``order`` (when ``partition``; else the
    children's row counts come from the unit last statistic), the bookkeeping of
    :func:`~dpexp.trees.levels.level_children`, and (when ``build``) the children's
    histograms into ``hist_out`` (at least ``2 * len(feat)`` nodes; parent ``hist``).
    ``gains = (wanted, lambda, n_valid, offset, n_columns)``: when wanted (and built),
    the children's packed candidate gains of
    :func:`~dpexp.trees.split_search.candidate_gains` (the utilities of DPBoost's
    exponential mechanism, computed here by the same kernel; ``sub_bins`` bounds the
    bins that hold data), for the policy to draw from; else :data:`NO_GAINS`.

    Returns ``level_children``'s ``(js, closed, child_starts, child_ends, child_totals)``
    and the gains (``(0, 0)`` when not computed).
    IN/OUT: ``order`` (partitioned), ``scratch``, ``hist_out``; IN: the rest."""
    n_left = _NO_COUNTS
    if partition:
        n_left = partition_in_place(codes_f, order, starts, ends, feat, bins_, partition_cut)
    js, closed, c_starts, c_ends, c_totals, small, big, small_rows = level_children(
        hist, totals, feat, bins_, starts, ends, n_left)
    utilities = np.empty((0, 0))
    if build and js.shape[0]:
        out = hist_out[:c_starts.shape[0]]
        _build_and_subtract(codes, stats, order, scratch, hist, out, c_starts, c_ends, js,
                            small, big, small_rows, layout, settings, sub_bins, n_bins_total,
                            per_row, hist_min_work, level_min_work, multi)
        wanted, lam, n_valid, offset, n_columns = gains
        if wanted:
            utilities = np.empty((out.shape[0], n_columns))
            if out.shape[0] > 1 and multi and out.size >= level_min_work:
                candidate_gains_par(out, lam, n_valid, sub_bins, offset, utilities)
            else:
                candidate_gains_ser(out, lam, n_valid, sub_bins, offset, utilities)
    return js, closed, c_starts, c_ends, c_totals, utilities


@njit(cache=True, nogil=True)
def _grown(a, need):  # pragma: no cover
    """``a`` or a copy at least twice as long, so that ``need`` entries fit."""
    if need <= a.shape[0]:
        return a
    out = np.empty((max(need, 2 * a.shape[0]),) + a.shape[1:], dtype=a.dtype)
    out[:a.shape[0]] = a
    return out


@njit(cache=True, nogil=True)
def greedy_tree_levels(codes_f, codes, stats, order, scratch, hist_a, hist_b, max_depth, fuse_last, n_valid, n_valid_total, rule, fblock,
                       split_min_candidates, layout, settings, sub_bins, n_bins_total,
                       per_row, hist_min_work, level_min_work, multi,
                       partition_cut):  # pragma: no cover
    """Every depth of one tree with greedy splits, from its root (rows ``order``, its
    histogram built into ``hist_a[:1]`` by :func:`_root`): per depth
    the search of :func:`~dpexp.trees.split_search.best_splits` (``rule``: its
    :class:`~dpexp.trees.split_search.SplitRule`), then :func:`level_after_split`; the
    depths' histograms alternate between ``hist_a`` and ``hist_b`` (each at least as
    many nodes as the widest depth that is built). ``fuse_last``: the last split depth is
    not partitioned (the caller scores its rows from the splits).

    Returns ``(parents, feats, bins, level_sizes, leaf_ids, leaf_totals, leaf_starts,
    leaf_ends, last_splits)``: the split nodes in split order with their candidates, the
    nodes per depth, the leaves in the order they are closed (as
    :class:`~dpexp.trees.grower._LeafCollector` holds them), and ``(4, n)`` starts, ends,
    features and bins of the last depth's splits when it was not partitioned (else
    ``(4, 0)``). IN/OUT: ``order``, ``scratch``, ``hist_a``, ``hist_b``; IN: the rest."""
    totals = _root(codes, stats, order, scratch, hist_a[:1], layout, settings, per_row,
                   hist_min_work, multi)
    k_stats = totals.shape[1]
    no_counts = np.zeros((0, 0, 0))
    n_cap = 64
    parents = np.empty(n_cap, dtype=np.int64)
    s_feats = np.empty(n_cap, dtype=np.int64)
    s_bins = np.empty(n_cap, dtype=np.int64)
    leaf_ids = np.empty(n_cap, dtype=np.int64)
    leaf_totals = np.empty((n_cap, k_stats))
    leaf_starts = np.empty(n_cap, dtype=np.int64)
    leaf_ends = np.empty(n_cap, dtype=np.int64)
    level_sizes = np.zeros(max_depth + 1, dtype=np.int64)
    level_sizes[0] = 1
    last_splits = np.empty((4, 0), dtype=np.int64)
    n_split = 0
    n_leaves = 0
    n_nodes = 1
    node_ids = np.zeros(1, dtype=np.int64)
    starts = np.zeros(1, dtype=np.int64)
    ends = np.full(1, order.shape[0], dtype=np.int64)
    hist = hist_a[:1]
    depth = 0
    open_level = True
    while depth < max_depth:
        nb = node_ids.shape[0]
        t2 = np.ascontiguousarray(totals[:, :2])
        if multi and n_valid_total * nb >= split_min_candidates:
            feat, bins_, _ = best_splits_par(hist, n_valid, no_counts, t2, rule, fblock)
        else:
            feat, bins_, _ = best_splits_ser(hist, n_valid, no_counts, t2, rule, fblock)
        last = depth + 1 == max_depth
        scored = fuse_last and last
        hist_out = hist_b if depth % 2 == 0 else hist_a
        js, closed, c_starts, c_ends, c_totals, _ = level_after_split(
            codes_f, codes, stats, order, scratch, hist, hist_out, totals, feat, bins_, starts,
            ends, not scored, not last, NO_GAINS, layout, settings, sub_bins, n_bins_total,
            per_row, hist_min_work, level_min_work, multi, partition_cut)
        m = closed.shape[0]
        if m:
            leaf_ids = _grown(leaf_ids, n_leaves + m)
            leaf_totals = _grown(leaf_totals, n_leaves + m)
            leaf_starts = _grown(leaf_starts, n_leaves + m)
            leaf_ends = _grown(leaf_ends, n_leaves + m)
            for i in range(m):
                c = closed[i]
                leaf_ids[n_leaves + i] = node_ids[c]
                leaf_totals[n_leaves + i] = totals[c]
                leaf_starts[n_leaves + i] = starts[c]
                leaf_ends[n_leaves + i] = ends[c]
            n_leaves += m
        ns = js.shape[0]
        if ns == 0:
            open_level = False
            break
        parents = _grown(parents, n_split + ns)
        s_feats = _grown(s_feats, n_split + ns)
        s_bins = _grown(s_bins, n_split + ns)
        for i in range(ns):
            j = js[i]
            parents[n_split + i] = node_ids[j]
            s_feats[n_split + i] = feat[j]
            s_bins[n_split + i] = bins_[j]
        if scored:
            last_splits = np.empty((4, ns), dtype=np.int64)
            for i in range(ns):
                j = js[i]
                last_splits[0, i] = starts[j]
                last_splits[1, i] = ends[j]
                last_splits[2, i] = feat[j]
                last_splits[3, i] = bins_[j]
        n_split += ns
        node_ids = np.arange(n_nodes, n_nodes + 2 * ns)
        n_nodes += 2 * ns
        level_sizes[depth + 1] = 2 * ns
        starts, ends, totals = c_starts, c_ends, c_totals
        hist = hist_out[:2 * ns]
        depth += 1
    if open_level:  # the nodes of depth max_depth are leaves
        m = node_ids.shape[0]
        leaf_ids = _grown(leaf_ids, n_leaves + m)
        leaf_totals = _grown(leaf_totals, n_leaves + m)
        leaf_starts = _grown(leaf_starts, n_leaves + m)
        leaf_ends = _grown(leaf_ends, n_leaves + m)
        leaf_ids[n_leaves:n_leaves + m] = node_ids
        leaf_totals[n_leaves:n_leaves + m] = totals
        leaf_starts[n_leaves:n_leaves + m] = starts
        leaf_ends[n_leaves:n_leaves + m] = ends
        n_leaves += m
    n_levels = 1
    for k in range(1, max_depth + 1):
        if level_sizes[k] > 0:
            n_levels = k + 1
    return (parents[:n_split], s_feats[:n_split], s_bins[:n_split], level_sizes[:n_levels],
            leaf_ids[:n_leaves], leaf_totals[:n_leaves], leaf_starts[:n_leaves],
            leaf_ends[:n_leaves], last_splits)


@njit(cache=True, nogil=True)
def exponential_tree_levels(codes_f, codes, stats, order, scratch, hist_a, hist_b, max_depth,
                            fuse_last, gains, column_feature, scale, uniforms, layout,
                            settings, sub_bins, n_bins_total, per_row, hist_min_work,
                            level_min_work, multi, partition_cut):  # pragma: no cover
    """Every depth of one tree whose splits are drawn by the exponential mechanism
    (:class:`~dpexp.trees.policies.ExponentialSplit`, Li et al. 2020 Algorithm 1 lines
    4-8), from its root: per depth the nodes' packed candidate gains (``gains``, as
    :func:`level_after_split` takes them; the root's by the serial kernel, as
    :func:`~dpexp.trees.split_search.candidate_gains` computes one node's), one draw per
    node by :func:`~dpexp.privacy.mechanisms.inverse_cdf_rows` (``scale``; node ``j``
    of depth ``d`` takes ``uniforms[2**d - 1 + j]``: the uniforms the per-depth policy
    draws, in its order), the candidate's feature (``column_feature``) and bin, then
    :func:`level_after_split`. Every node of a depth below ``max_depth`` splits (a
    drawn candidate always has a feature), so depth ``d`` has ``2**d`` nodes, numbered
    as the grower numbers them. The histograms alternate between ``hist_a`` and
    ``hist_b`` (at least ``2**(max_depth - 1)`` nodes each).

    Returns ``(finite, parents, feats, bins, level_sizes, leaf_ids, leaf_totals,
    leaf_starts, leaf_ends, last_splits)`` as :func:`greedy_tree_levels` does, after
    ``finite``: False when a depth's utilities were not all finite (the tree is then
    unfinished and must be discarded; the mechanism refuses such utilities).
    IN/OUT: ``order``, ``scratch``, ``hist_a``, ``hist_b``; IN: the rest."""
    totals = _root(codes, stats, order, scratch, hist_a[:1], layout, settings, per_row,
                   hist_min_work, multi)
    _, lam, n_valid, offset, n_columns = gains
    utilities = np.empty((1, n_columns))
    candidate_gains_ser(hist_a[:1], lam, n_valid, sub_bins, offset, utilities)
    n_split = (1 << max_depth) - 1
    parents = np.arange(n_split)
    s_feats = np.empty(n_split, dtype=np.int64)
    s_bins = np.empty(n_split, dtype=np.int64)
    level_sizes = np.empty(max_depth + 1, dtype=np.int64)
    level_sizes[0] = 1
    last_splits = np.empty((4, 0), dtype=np.int64)
    starts = np.zeros(1, dtype=np.int64)
    ends = np.full(1, order.shape[0], dtype=np.int64)
    hist = hist_a[:1]
    finite = True
    for depth in range(max_depth):
        nb = starts.shape[0]
        first = nb - 1  # the id of the depth's first node, and of its first uniform
        if not all_finite(utilities.reshape(-1).view(np.int64)):
            finite = False
            break
        u = np.empty((1, nb))
        u[0, :] = uniforms[first:first + nb]
        choice = np.empty((1, nb), dtype=np.int64)
        inverse_cdf_rows(utilities, scale, u, choice)
        feat = np.empty(nb, dtype=np.int64)
        bins_ = np.empty(nb, dtype=np.int64)
        for j in range(nb):
            f = column_feature[choice[0, j]]
            feat[j] = f
            bins_[j] = choice[0, j] - offset[f]
            s_feats[first + j] = f
            s_bins[first + j] = bins_[j]
        last = depth + 1 == max_depth
        scored = fuse_last and last
        hist_out = hist_b if depth % 2 == 0 else hist_a
        _, _, c_starts, c_ends, c_totals, utilities = level_after_split(
            codes_f, codes, stats, order, scratch, hist, hist_out, totals, feat, bins_, starts,
            ends, not scored, not last, gains, layout, settings, sub_bins, n_bins_total,
            per_row, hist_min_work, level_min_work, multi, partition_cut)
        if scored:
            last_splits = np.empty((4, nb), dtype=np.int64)
            last_splits[0] = starts
            last_splits[1] = ends
            last_splits[2] = feat
            last_splits[3] = bins_
        level_sizes[depth + 1] = 2 * nb
        starts, ends, totals = c_starts, c_ends, c_totals
        hist = hist_out[:2 * nb]
    n_leaves = starts.shape[0]  # the nodes of depth max_depth
    leaf_ids = np.arange(n_leaves - 1, 2 * n_leaves - 1)
    return (finite, parents, s_feats, s_bins, level_sizes, leaf_ids, totals, starts, ends,
            last_splits)
