"""Row partitions of the level-wise grower (compiled, numba).

Rows of the training set are kept in one ``order`` array partitioned by node: node ``j``
of the current level owns ``order[starts[j]:ends[j]]``. A split ``(feature f, bin b)``
sends the rows with ``code <= b`` to the left child, which takes the first positions of
the node's segment. Partitions are stable, so they have one result however they are
computed: in place in one pass for cache-sized tables (:func:`partition_dense`; a
depth's nodes in parallel, dealt to the threads by rows), or into
a second buffer in two passes over chunks of rows (mark, then scatter), in parallel,
carrying the rows' gathered statistics along (:func:`partition_rows`), or over
column-compressed codes (:func:`partition_sparse`).

Per-row loops run over views indexed from 0 and index by row id through ``np.uint64(r)``:
numba cannot tell that an index from ``range(s, e)`` or from an int64 array is not
negative, and would add the wraparound arithmetic of negative indices to every access.
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit, prange
from dpexp.trees import parallel as par


@njit(cache=True, nogil=True)
def is_sorted(a):  # pragma: no cover
    """Whether ``a`` is non-decreasing."""
    bad = 0
    for i in range(1, a.shape[0]):  # no early exit: vectorised, and rows are mostly sorted
        bad += a[i] < a[i - 1]
    return bad == 0


@njit(cache=True, nogil=True)
def copy_if_sorted(a, out):  # pragma: no cover
    """``out[:] = a`` when ``a`` is non-decreasing (one pass for both); returns whether
    it is (``out`` is then not fully written)."""
    bad = 0
    for i in range(a.shape[0]):  # no early exit: vectorised, and rows are mostly sorted
        out[i] = a[i]
        if i:
            bad += a[i] < a[i - 1]
    return bad == 0


@njit(cache=True, nogil=True)
def _mask_chunk(codes, order, lo, hi, f, b, mask):  # pragma: no cover
    """``mask[p] = 1`` where row ``order[p]`` goes left (``codes[r, f] <= b``; every row
    when ``f < 0``), for ``p`` in ``lo:hi``; returns how many go left."""
    if f < 0:
        mask[lo:hi] = 1
        return hi - lo
    col = codes[:, f]
    rows, marks = order[lo:hi], mask[lo:hi]
    nl = 0
    for p in range(hi - lo):
        m = 1 if col[np.uint64(rows[p])] <= b else 0
        marks[p] = m
        nl += m
    return nl


@njit(cache=True, nogil=True)
def _scatter_chunk(order, ordered, mask, lo, hi, left_at, right_at, out,
                   out_ordered):  # pragma: no cover
    """Rows of ``order[lo:hi]`` (and their statistics ``ordered[:, p]``) written to ``out``
    in order: the left-going ones from ``left_at``, the others from ``right_at``."""
    nl = 0
    k_stats = ordered.shape[0]
    rows, marks = order[lo:hi], mask[lo:hi]  # indexed from 0: see the module docstring
    if k_stats == 2:  # the GBDT case (gradient, hessian): no inner loop
        og, oh, tg, th = ordered[0, lo:hi], ordered[1, lo:hi], out_ordered[0], out_ordered[1]
        for p in range(hi - lo):  # branch-free: the direction is data-dependent
            m = np.int64(marks[p])
            dest = np.uint64(m * (left_at + nl) + (1 - m) * (right_at + (p - nl)))
            out[dest] = rows[p]
            tg[dest] = og[p]
            th[dest] = oh[p]
            nl += m
        return
    if k_stats == 1:  # gradients with unit hessians (not stored)
        og, tg = ordered[0, lo:hi], out_ordered[0]
        for p in range(hi - lo):
            m = np.int64(marks[p])
            dest = np.uint64(m * (left_at + nl) + (1 - m) * (right_at + (p - nl)))
            out[dest] = rows[p]
            tg[dest] = og[p]
            nl += m
        return
    for p in range(hi - lo):
        m = np.int64(marks[p])
        dest = np.uint64(m * (left_at + nl) + (1 - m) * (right_at + (p - nl)))
        out[dest] = rows[p]
        for k in range(k_stats):
            out_ordered[k, dest] = ordered[k, lo + p]
        nl += m


@njit(cache=True, nogil=True)
def _chunk_offsets(starts, first, p0, p1, n_left_c):  # pragma: no cover
    """Rows going left per node, and where each chunk's left and right rows go."""
    nb = starts.shape[0]
    nc = p0.shape[0]
    n_left = np.zeros(nb, dtype=np.int64)
    left_at = np.empty(nc, dtype=np.int64)
    right_at = np.empty(nc, dtype=np.int64)
    for j in range(nb):
        for c in range(first[j], first[j + 1]):
            n_left[j] += n_left_c[c]
        at_l = starts[j]
        at_r = starts[j] + n_left[j]
        for c in range(first[j], first[j + 1]):
            left_at[c] = at_l
            right_at[c] = at_r
            at_l += n_left_c[c]
            at_r += p1[c] - p0[c] - n_left_c[c]
    return n_left, left_at, right_at


@njit(parallel=True, cache=True, nogil=True)
def _partition_par(codes, order, ordered, starts, ends, features, bins, chunk, mask, out,
                   out_ordered):  # pragma: no cover
    """Stable partition of every node's rows (and of their gathered statistics
    ``ordered``, when it has columns) into ``codes[:, f] <= b`` first, written to ``out``
    / ``out_ordered`` at the same positions. Nodes are cut into chunks of ``chunk`` rows:
    each chunk marks its rows (in parallel), then writes them to their places (in
    parallel). A stable partition has one result, whatever the threads."""
    p0, p1, first = par.row_chunks(starts, ends, chunk)
    node = par.chunk_nodes(first)
    n_left_c = np.zeros(p0.shape[0], dtype=np.int64)
    for c in prange(p0.shape[0]):
        j = node[c]
        n_left_c[c] = _mask_chunk(codes, order, p0[c], p1[c], features[j], bins[j], mask)
    n_left, left_at, right_at = _chunk_offsets(starts, first, p0, p1, n_left_c)
    for c in prange(p0.shape[0]):
        _scatter_chunk(order, ordered, mask, p0[c], p1[c], left_at[c], right_at[c], out,
                       out_ordered)
    return n_left


@njit(cache=True, nogil=True)
def _partition_ser(codes, order, ordered, starts, ends, features, bins, chunk, mask, out,
                   out_ordered):  # pragma: no cover
    """:func:`_partition_par` on one thread."""
    p0, p1, first = par.row_chunks(starts, ends, chunk)
    node = par.chunk_nodes(first)
    n_left_c = np.zeros(p0.shape[0], dtype=np.int64)
    for c in range(p0.shape[0]):
        j = node[c]
        n_left_c[c] = _mask_chunk(codes, order, p0[c], p1[c], features[j], bins[j], mask)
    n_left, left_at, right_at = _chunk_offsets(starts, first, p0, p1, n_left_c)
    for c in range(p0.shape[0]):
        _scatter_chunk(order, ordered, mask, p0[c], p1[c], left_at[c], right_at[c], out,
                       out_ordered)
    return n_left


def partition_rows(codes, order, starts, ends, features, bins, out, *, ordered=None,
                   out_ordered=None, mask=None) -> np.ndarray:
    """Stable partition of each node's rows ``order[starts[j]:ends[j]]`` into
    ``codes[:, features[j]] <= bins[j]`` first (feature -1: the node is copied as it is),
    written to ``out`` at the same positions; returns the rows going left per node.

    ``ordered (K, len(order))``: statistics in row order, written alongside to
    ``out_ordered``; ``mask``: optional uint8 scratch like ``order``. Positions outside
    the nodes are not written.

    IN: ``codes``, ``order``, ``starts``, ``ends``, ``features``, ``bins``, ``ordered``;
    OUT: ``out``, ``out_ordered`` (the nodes' positions), ``mask`` (scratch).
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if mask is None or mask.shape != order.shape:
        mask = np.empty(order.shape[0], dtype=np.uint8)
    if ordered is None:
        ordered = out_ordered = np.empty((0, order.shape[0]))
    kernel = (_partition_par if par.use_parallel(int((ends - starts).sum()),
                                             par.PARTITION_PARALLEL_MIN_ROWS) else _partition_ser)
    return kernel(codes, order, ordered, starts, ends, np.asarray(features, dtype=np.int64),
                  np.asarray(bins, dtype=np.int64), par.PARTITION_CHUNK_ROWS, mask, out,
                  out_ordered)


@njit(cache=True, nogil=True)
def _partition_node(codes, order, buf, s, e, f, b):  # pragma: no cover
    """Stable partition of one node ``order[s:e]`` in place on ``codes[:, f] <= b``
    (``buf``: scratch of at least ``e - s`` row ids); returns how many go left."""
    col = codes[:, f]
    seg = order[s:e]  # indices from 0 on a view: no wraparound arithmetic per row
    nl = 0
    nr = 0
    for p in range(e - s):  # branch-free: the direction is data-dependent (unpredictable)
        r = seg[p]
        left = col[np.uint64(r)] <= b
        seg[nl] = r  # nl <= p: already read
        buf[nr] = r
        nl += left
        nr += 1 - left
    seg[nl:] = buf[:nr]
    return nl


@njit(cache=True, nogil=True)
def _partition_in_place(codes, order, starts, ends, features, bins):  # pragma: no cover
    nb = starts.shape[0]
    n_left = np.zeros(nb, dtype=np.int64)
    width = 0
    for j in range(nb):
        width = max(width, ends[j] - starts[j])
    buf = np.empty(width, dtype=order.dtype)
    for j in range(nb):
        s, e, f = starts[j], ends[j], features[j]
        n_left[j] = e - s if f < 0 else _partition_node(codes, order, buf, s, e, f, bins[j])
    return n_left


@njit(cache=True, nogil=True)
def node_groups(starts, ends, features, n_groups):  # pragma: no cover
    """The split nodes (feature >= 0) dealt to ``n_groups`` groups of about equal rows
    (:func:`~dpexp.trees.parallel.lpt_groups`). Returns ``(members, first)``: group
    ``g`` is ``members[first[g]:first[g+1]]``. A node's partition does not depend on
    its group, so neither does any result."""
    sizes = np.zeros(starts.shape[0], dtype=np.int64)
    for j in range(starts.shape[0]):
        if features[j] >= 0:
            sizes[j] = ends[j] - starts[j]
    return par.lpt_groups(sizes, n_groups)


@njit(parallel=True, cache=True, nogil=True)
def _partition_in_place_par(codes, order, starts, ends, features, bins,
                            n_groups):  # pragma: no cover
    """:func:`_partition_in_place` with the nodes dealt to ``n_groups`` groups of about
    equal rows (:func:`node_groups`), the groups in parallel; node ``j`` uses the
    scratch ``buf[starts[j]:ends[j]]``, its own. Every node is partitioned by the same
    serial loop, so the result is the serial kernel's."""
    nb = starts.shape[0]
    n_left = np.zeros(nb, dtype=np.int64)
    for j in range(nb):
        if features[j] < 0:
            n_left[j] = ends[j] - starts[j]
    members, first = node_groups(starts, ends, features, n_groups)
    buf = np.empty(order.shape[0], dtype=order.dtype)
    for g in prange(n_groups):
        for i in range(first[g], first[g + 1]):
            j = members[i]
            s, e = starts[j], ends[j]
            n_left[j] = _partition_node(codes, order, buf[s:e], s, e, features[j], bins[j])
    return n_left


@njit(cache=True, nogil=True)
def partition_in_place(codes, order, starts, ends, features, bins, cut):  # pragma: no cover
    """:func:`partition_dense`'s kernel. ``cut = (threads, min_rows)``: the nodes in
    parallel (:func:`_partition_in_place_par`, one group per thread) when numba has more
    than one thread, at least two nodes split and the split nodes hold at least
    ``min_rows`` rows; else serial. The same result either way. IN/OUT: ``order``; IN:
    the rest."""
    threads, min_rows = cut
    n_split = 0
    rows = 0
    for j in range(starts.shape[0]):
        if features[j] >= 0:
            n_split += 1
            rows += ends[j] - starts[j]
    if threads > 1 and n_split >= 2 and rows >= min_rows:
        return _partition_in_place_par(codes, order, starts, ends, features, bins,
                                       min(threads, n_split))
    return _partition_in_place(codes, order, starts, ends, features, bins)


def in_place_cut(threads: int | None = None) -> tuple[int, int]:
    """The ``cut`` of :func:`partition_in_place` now: numba's threads (``threads``,
    when the caller has read them) and
    :data:`~dpexp.trees.parallel.IN_PLACE_PARALLEL_MIN_ROWS`."""
    return (par.n_threads() if threads is None else threads), par.IN_PLACE_PARALLEL_MIN_ROWS


def partition_dense(codes, order, starts, ends, features, bins) -> np.ndarray:
    """:func:`partition_rows` in place (``order`` itself is partitioned) in one pass: the
    fastest way for a table that fits in cache; the nodes in parallel when there are
    rows enough (:func:`partition_in_place`). IN/OUT: ``order``; IN: the rest. Returns
    the rows going left per node."""
    return partition_in_place(codes, order, np.asarray(starts, dtype=np.int64),
                              np.asarray(ends, dtype=np.int64),
                              np.asarray(features, dtype=np.int64),
                              np.asarray(bins, dtype=np.int64), in_place_cut())


@njit(cache=True, nogil=True)
def partition_sparse(
    indptr, rows, values, zero_bin, order, starts, ends, features, bins, n_rows
):  # pragma: no cover
    """:func:`partition_dense` for column-compressed codes (``indptr``, ``rows``,
    ``values``, implicit zeros in ``zero_bin[f]``). IN/OUT: ``order``; IN: the rest."""
    nb = starts.shape[0]
    n_left = np.zeros(nb, dtype=np.int64)
    code = np.empty(n_rows, dtype=np.uint8)
    for j in range(nb):
        s, e, f, b = starts[j], ends[j], features[j], bins[j]
        if f < 0:  # a leaf: its rows stay where they are
            n_left[j] = e - s
            continue
        for p in range(s, e):
            code[order[p]] = zero_bin[f]
        for q in range(indptr[f], indptr[f + 1]):
            code[rows[q]] = values[q]
        buf = np.empty(e - s, dtype=order.dtype)
        nl = 0
        nr = 0
        for p in range(s, e):
            r = order[p]
            if code[r] <= b:
                order[s + nl] = r
                nl += 1
            else:
                buf[nr] = r
                nr += 1
        for q in range(nr):
            order[s + nl + q] = buf[q]
        n_left[j] = nl
    return n_left

