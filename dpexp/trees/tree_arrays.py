"""The end of a tree in compiled code (numba): its arrays and boosting's score update.

After the leaf policy has given the leaf values, the grower
(:func:`dpexp.trees.grower.grow_tree`) turns its record of the splits into the arrays
of an :class:`~dpexp.trees.tree.ArrayTree` (:func:`node_arrays`) and, when boosting asks
for it, adds the tree to the scores of the rows it grew on (:func:`score_segments`). In
numpy these are a dozen small array operations, and in Python they cost more than the
work itself (a tree of 64 leaves on adult: ~0.1 ms of ~1.3 ms; bench/HISTORY.md): here
they are two compiled calls. The values are those of the numpy steps they replace, bit
for bit (the same products, one addition per row).
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit, prange
from dpexp.trees import parallel as par


@njit(cache=True, nogil=True)
def level_depths(level_sizes):  # pragma: no cover
    """The depth of every node, int32, from the nodes per depth (root first)."""
    depth = np.empty(level_sizes.sum(), dtype=np.int32)
    at = 0
    for d in range(level_sizes.shape[0]):
        depth[at:at + level_sizes[d]] = d
        at += level_sizes[d]
    return depth


@njit(cache=True, nogil=True)
def node_arrays(n_nodes, parents, feats, bins_, leaf_ids, leaf_values,
                threshold_table):  # pragma: no cover
    """The arrays of a level-wise tree of ``n_nodes`` nodes: ``parents[i]`` (in split
    order) splits on ``feats[i]`` at ``bins_[i]`` (threshold ``threshold_table[f, b]``)
    and its children are ``1 + 2i`` and ``2 + 2i``; leaf ``leaf_ids[j]`` holds
    ``leaf_values[j]`` (``(n_leaves, n_outputs)``). Returns ``(kind, feature, threshold,
    child_start, n_children, value, bins)`` with the dtypes of
    :class:`~dpexp.trees.tree.ArrayTree` (``bins`` int64, -1 at leaves)."""
    kind = np.zeros(n_nodes, dtype=np.int8)  # LEAF
    feature = np.full(n_nodes, -1, dtype=np.int32)
    threshold = np.full(n_nodes, np.nan)
    child_start = np.full(n_nodes, -1, dtype=np.int32)
    n_children = np.zeros(n_nodes, dtype=np.int32)
    bins = np.full(n_nodes, -1, dtype=np.int64)
    for i in range(parents.shape[0]):
        p = parents[i]
        kind[p] = 1  # NUMERIC
        feature[p] = feats[i]
        threshold[p] = threshold_table[feats[i], bins_[i]]
        child_start[p] = 1 + 2 * i
        n_children[p] = 2
        bins[p] = bins_[i]
    value = np.zeros((n_nodes, leaf_values.shape[1]))
    for j in range(leaf_ids.shape[0]):
        value[leaf_ids[j]] = leaf_values[j]
    return kind, feature, threshold, child_start, n_children, value, bins


@njit(cache=True, nogil=True)
def score_chunk(codes, order, p0, p1, f, b, add_left, add_right, out):  # pragma: no cover
    """``out[r] += add_left`` for the rows ``r = order[p0:p1]`` with ``codes[r, f] <= b``
    (every row when ``f < 0``), ``add_right`` for the others."""
    rows = order[p0:p1]
    if f < 0:
        for p in range(p1 - p0):
            out[np.uint64(rows[p])] += add_left
        return
    col = codes[:, f]
    for p in range(p1 - p0):
        r = np.uint64(rows[p])
        out[r] += add_left if col[r] <= b else add_right


@njit(cache=True, nogil=True)
def _segments(leaf_start, leaf_end, values, scale, n_closed, last_splits):  # pragma: no cover
    """Every scored segment: the leaves closed before the last depth (no split), then
    the last depth's split nodes with their two children's values (leaves
    ``n_closed + 2i`` and ``n_closed + 2i + 1``); the additions ``scale * v``."""
    n_last = last_splits.shape[1]
    n = n_closed + n_last
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    feats = np.full(n, -1, dtype=np.int64)
    bins_ = np.full(n, -1, dtype=np.int64)
    add_left = np.empty(n)
    add_right = np.empty(n)
    for j in range(n_closed):
        starts[j], ends[j] = leaf_start[j], leaf_end[j]
        add_left[j] = scale * values[j]
        add_right[j] = add_left[j]
    for i in range(n_last):
        j = n_closed + i
        starts[j], ends[j] = last_splits[0, i], last_splits[1, i]
        feats[j], bins_[j] = last_splits[2, i], last_splits[3, i]
        add_left[j] = scale * values[n_closed + 2 * i]
        add_right[j] = scale * values[n_closed + 2 * i + 1]
    return starts, ends, feats, bins_, add_left, add_right


@njit(parallel=True, cache=True, nogil=True)
def _score_segments_par(codes, order, starts, ends, feats, bins_, add_left, add_right,
                        chunk, out):  # pragma: no cover
    p0, p1, first = par.row_chunks(starts, ends, chunk)
    node = par.chunk_nodes(first)
    for c in prange(p0.shape[0]):  # segments hold disjoint rows: no two threads meet
        j = node[c]
        score_chunk(codes, order, p0[c], p1[c], feats[j], bins_[j], add_left[j],
                     add_right[j], out)


@njit(cache=True, nogil=True)
def score_segments(codes, order, leaf_start, leaf_end, values, scale, n_closed, last_splits,
                   min_rows_parallel, chunk, out):  # pragma: no cover
    """``out[r] += scale * v`` for every row ``r`` a tree grew on, from its segments of
    ``order``: with ``last_splits`` of shape ``(4, 0)`` every leaf ``j`` (``values[j]``)
    over ``order[leaf_start[j]:leaf_end[j]]``; else the first ``n_closed`` leaves so, then
    the unpartitioned last depth, ``last_splits = (starts, ends, features, bins)``, whose
    rows go to the left child's value when ``codes[r, f] <= b`` (the leaves after the
    first ``n_closed``, two per split). Every row gets one addition, so the result is
    the same serial or in parallel (``min_rows_parallel`` rows or more; 0: never).
    IN: all but ``out``; IN/OUT: ``out``."""
    if last_splits.shape[1] == 0:
        n_closed = leaf_start.shape[0]
    starts, ends, feats, bins_, add_left, add_right = _segments(
        leaf_start, leaf_end, values, scale, n_closed, last_splits)
    rows = 0
    for j in range(starts.shape[0]):
        rows += ends[j] - starts[j]
    if 0 < min_rows_parallel <= rows:
        _score_segments_par(codes, order, starts, ends, feats, bins_, add_left, add_right,
                            chunk, out)
        return
    for j in range(starts.shape[0]):
        score_chunk(codes, order, starts[j], ends[j], feats[j], bins_[j], add_left[j],
                     add_right[j], out)
