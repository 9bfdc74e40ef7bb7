"""Routing rows down grown trees: leaf ids and score updates (compiled, numba).

Binned data (codes) is routed with the bins of the splits (``code <= bin`` goes left),
raw data with their thresholds (``x <= threshold`` goes left), which the bin mapper makes
equivalent. Trees are arrays (:class:`~dpexp.trees.tree.ArrayTree`): a node with
``child_start >= 0`` is a numeric split whose children are ``child_start`` (left) and
``child_start + 1`` (right). Score updates add one value per row, so any number of
threads gives the same scores bit for bit.
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit, prange
from dpexp.trees import parallel as par


@njit(parallel=True, cache=True, nogil=True)
def apply_binned_dense(codes, feature, bin_, child_start, n_rows):  # pragma: no cover
    """Leaf reached by each row of dense binned ``codes`` (numeric splits only)."""
    out = np.empty(n_rows, dtype=np.int64)
    for i in prange(n_rows):
        node = 0
        while child_start[node] >= 0:
            if codes[i, feature[node]] <= bin_[node]:
                node = child_start[node]
            else:
                node = child_start[node] + 1
        out[i] = node
    return out


@njit(cache=True, nogil=True)
def _leaf_of(codes, i, feature, bin_, child_start):  # pragma: no cover
    node = 0
    while child_start[node] >= 0:
        node = child_start[node] + (codes[i, feature[node]] > bin_[node])
    return node


@njit(parallel=True, cache=True, nogil=True)
def _add_tree_par(codes, feature, bin_, child_start, value, scale, out):  # pragma: no cover
    for i in prange(codes.shape[0]):
        out[i] += scale * value[_leaf_of(codes, i, feature, bin_, child_start)]


@njit(cache=True, nogil=True)
def _add_tree_ser(codes, feature, bin_, child_start, value, scale, out):  # pragma: no cover
    # Four rows walk down together so that their dependent load chains (node -> feature
    # -> code -> child) overlap instead of running one after another.
    n = codes.shape[0]
    n4 = n // 4 * 4
    for i in range(0, n4, 4):
        a = 0
        b = 0
        c = 0
        d = 0
        while (child_start[a] >= 0 or child_start[b] >= 0 or child_start[c] >= 0
               or child_start[d] >= 0):
            if child_start[a] >= 0:
                a = child_start[a] + (codes[i, feature[a]] > bin_[a])
            if child_start[b] >= 0:
                b = child_start[b] + (codes[i + 1, feature[b]] > bin_[b])
            if child_start[c] >= 0:
                c = child_start[c] + (codes[i + 2, feature[c]] > bin_[c])
            if child_start[d] >= 0:
                d = child_start[d] + (codes[i + 3, feature[d]] > bin_[d])
        out[i] += scale * value[a]
        out[i + 1] += scale * value[b]
        out[i + 2] += scale * value[c]
        out[i + 3] += scale * value[d]
    for i in range(n4, n):
        out[i] += scale * value[_leaf_of(codes, i, feature, bin_, child_start)]


def add_tree_binned(codes, feature, bin_, child_start, value, scale, out) -> None:
    """``out[i] += scale * value[leaf(i)]`` for every row of dense binned ``codes``
    (no leaf-id array in between). IN: ``codes``, the tree arrays; IN/OUT: ``out``."""
    if par.use_parallel(codes.shape[0] * 16):
        _add_tree_par(codes, feature, bin_, child_start, value, scale, out)
    else:
        _add_tree_ser(codes, feature, bin_, child_start, value, scale, out)


@njit(parallel=True, cache=True, nogil=True)
def _add_tree_rows_par(codes, rows, feature, bin_, child_start, value, scale,
                       out):  # pragma: no cover
    for p in prange(rows.shape[0]):  # distinct rows: no two threads meet
        i = rows[p]
        out[i] += scale * value[_leaf_of(codes, i, feature, bin_, child_start)]


@njit(cache=True, nogil=True)
def _add_tree_rows_ser(codes, rows, feature, bin_, child_start, value, scale,
                       out):  # pragma: no cover
    # four rows walk down together, as in _add_tree_ser
    n = rows.shape[0]
    n4 = n // 4 * 4
    for p in range(0, n4, 4):
        ia = rows[p]
        ib = rows[p + 1]
        ic = rows[p + 2]
        id_ = rows[p + 3]
        a = 0
        b = 0
        c = 0
        d = 0
        while (child_start[a] >= 0 or child_start[b] >= 0 or child_start[c] >= 0
               or child_start[d] >= 0):
            if child_start[a] >= 0:
                a = child_start[a] + (codes[ia, feature[a]] > bin_[a])
            if child_start[b] >= 0:
                b = child_start[b] + (codes[ib, feature[b]] > bin_[b])
            if child_start[c] >= 0:
                c = child_start[c] + (codes[ic, feature[c]] > bin_[c])
            if child_start[d] >= 0:
                d = child_start[d] + (codes[id_, feature[d]] > bin_[d])
        out[ia] += scale * value[a]
        out[ib] += scale * value[b]
        out[ic] += scale * value[c]
        out[id_] += scale * value[d]
    for p in range(n4, n):
        i = rows[p]
        out[i] += scale * value[_leaf_of(codes, i, feature, bin_, child_start)]


def add_tree_binned_rows(codes, rows, feature, bin_, child_start, value, scale, out) -> None:
    """:func:`add_tree_binned` for the rows ``rows`` (distinct ids, ascending is fastest)
    only: each gets the same one addition ``scale * value[leaf]``, bit for bit.
    IN: ``codes``, ``rows``, the tree arrays; IN/OUT: ``out``."""
    rows = np.asarray(rows, dtype=np.int64)
    if par.use_parallel(rows.shape[0] * 16):
        _add_tree_rows_par(codes, rows, feature, bin_, child_start, value, scale, out)
    else:
        _add_tree_rows_ser(codes, rows, feature, bin_, child_start, value, scale, out)


@njit(cache=True, nogil=True)
def _add_segment(order, s, e, v, out):  # pragma: no cover
    rows = order[s:e]
    for p in range(e - s):
        out[np.uint64(rows[p])] += v


@njit(parallel=True, cache=True, nogil=True)
def _add_segments_par(order, seg_start, seg_end, seg_value, scale, out):  # pragma: no cover
    for i in prange(seg_start.shape[0]):  # leaves hold disjoint rows: no two threads meet
        _add_segment(order, seg_start[i], seg_end[i], scale * seg_value[i], out)


@njit(cache=True, nogil=True)
def _add_segments_ser(order, seg_start, seg_end, seg_value, scale, out):  # pragma: no cover
    for i in range(seg_start.shape[0]):
        _add_segment(order, seg_start[i], seg_end[i], scale * seg_value[i], out)


def add_leaf_segments(order, seg_start, seg_end, seg_value, scale, out) -> None:
    """``out[order[s:e]] += scale * v`` for every leaf segment (rows a tree was grown on);
    every row gets one addition, so the result is the same on any number of threads.
    IN: ``order``, the segments and their values; IN/OUT: ``out``."""
    rows = int(np.sum(seg_end - seg_start)) if seg_start.size else 0
    kernel = (_add_segments_par if par.use_parallel(rows, par.PARTITION_PARALLEL_MIN_ROWS)
              else _add_segments_ser)
    kernel(order, seg_start, seg_end, seg_value, float(scale), out)


@njit(cache=True, nogil=True)
def _leaf_of_float(X, i, feature, threshold, child_start):  # pragma: no cover
    node = 0
    while child_start[node] >= 0:
        node = child_start[node] + (1 if X[i, feature[node]] > threshold[node] else 0)
    return node


@njit(parallel=True, cache=True, nogil=True)
def apply_dense(X, feature, threshold, child_start):  # pragma: no cover
    """Leaf reached by each row of a dense float matrix (numeric ``x <= t`` splits)."""
    out = np.empty(X.shape[0], dtype=np.int64)
    for i in prange(X.shape[0]):
        out[i] = _leaf_of_float(X, i, feature, threshold, child_start)
    return out


@njit(cache=True, nogil=True)
def apply_dense_serial(X, feature, threshold, child_start):  # pragma: no cover
    """:func:`apply_dense` on one thread (small inputs: no thread-pool fork/join)."""
    out = np.empty(X.shape[0], dtype=np.int64)
    for i in range(X.shape[0]):
        out[i] = _leaf_of_float(X, i, feature, threshold, child_start)
    return out


#: Rows of a block of :func:`add_forest_dense`: 64 rows of a few hundred float64
#: features stay in L2 while every tree walks them.
FOREST_BLOCK_ROWS = 64


@njit(cache=True, nogil=True)
def _add_forest_block(X, i0, i1, feature, threshold, child_start, value, roots, scale,
                      out):  # pragma: no cover
    for t in range(roots.shape[0]):
        root = roots[t]
        for i in range(i0, i1):
            node = root
            while child_start[node] >= 0:
                node = child_start[node] + (1 if X[i, feature[node]] > threshold[node] else 0)
            out[i] += scale * value[node]


@njit(parallel=True, cache=True, nogil=True)
def _add_forest_par(X, feature, threshold, child_start, value, roots, scale, block,
                    out):  # pragma: no cover
    n_blocks = (X.shape[0] + block - 1) // block
    for b in prange(n_blocks):  # blocks hold disjoint rows
        _add_forest_block(X, b * block, min((b + 1) * block, X.shape[0]), feature, threshold,
                          child_start, value, roots, scale, out)


@njit(cache=True, nogil=True)
def _add_forest_ser(X, feature, threshold, child_start, value, roots, scale, block,
                    out):  # pragma: no cover
    for i0 in range(0, X.shape[0], block):
        _add_forest_block(X, i0, min(i0 + block, X.shape[0]), feature, threshold,
                          child_start, value, roots, scale, out)


def add_forest_dense(X, feature, threshold, child_start, value, roots, scale, out) -> None:
    """``out[i] += scale * value[leaf_t(i)]`` for every tree ``t`` in order, for the rows of
    a C-contiguous float matrix ``X`` (numeric ``x <= threshold`` splits).

    The trees are packed into one node table: tree ``t`` starts at node ``roots[t]`` and
    its ``child_start`` values are indices into the table. Rows are taken in blocks of
    :data:`FOREST_BLOCK_ROWS` and every tree walks a block before the next block, so each
    row is read from cache rather than memory once per tree (a tree at a time over a
    table larger than the cache waited on memory at every node). Every row still gets the
    trees' additions one after the other in tree order: the same sums, bit for bit, as
    one tree at a time over all rows, on any number of threads.
    IN: ``X`` and the packed trees; IN/OUT: ``out``."""
    work = X.shape[0] * max(roots.shape[0], 1) * 8
    kernel = _add_forest_par if par.use_parallel(work) else _add_forest_ser
    kernel(X, feature, threshold, child_start, value, roots, float(scale), FOREST_BLOCK_ROWS,
           out)


@njit(parallel=True, cache=True, nogil=True)
def apply_csr(indptr, indices, data, n_rows, feature, threshold, child_start):  # pragma: no cover
    """Leaf reached by each row of a CSR matrix with sorted column indices."""
    out = np.empty(n_rows, dtype=np.int64)
    for i in prange(n_rows):
        lo = indptr[i]
        hi = indptr[i + 1]
        node = 0
        while child_start[node] >= 0:
            f = feature[node]
            k = np.searchsorted(indices[lo:hi], f)
            x = data[lo + k] if (k < hi - lo and indices[lo + k] == f) else 0.0
            node = child_start[node] + 1 if x > threshold[node] else child_start[node]
        out[i] = node
    return out

