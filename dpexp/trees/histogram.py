"""Compiled (numba) kernels of the histogram tree grower.

Rows of the training set are kept in one ``order`` array partitioned by node: node ``j``
of the current level owns ``order[starts[j]:ends[j]]``. Histograms have shape
``(n_nodes, n_features, n_bins, K)``: per node x feature x bin the sum of each of the
``K`` per-row statistics (``stats (n, K)``, e.g. gradient and hessian, or one-hot class
counts).

Two data layouts are supported:

* dense ``codes (n, d)``, column-major, with exclusive bundles or row-sparse lists
  (:class:`dpexp.trees.binning.SparseFeatureCodes`) for its binary/one-hot columns, whose
  default bin comes by subtraction from the node totals -- adult's 123 columns cost 14
  column updates per row (see the "dense" section);
* column-compressed sparse input: column scans with the zero bin by subtraction.

Every parallel kernel has a serial twin: the grower calls the parallel one only when a
call has enough work (:data:`PARALLEL_MIN_WORK`), because a fork/join of the thread pool
costs more than small builds (and much more when other processes share the cores). Sums
run in an order fixed by the data, not by the number of threads, so results are
deterministic and the same with one thread or many.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from dpexp.trees.binning import BUNDLE_VALUES

FEATURE_BLOCK = 64
# Elementary updates below which a kernel runs on one thread. Measured on the 2-core
# bench machine: a fork/join of numba's pool, and the less optimised code numba emits
# inside prange bodies, only pay off for builds of this size (~10 ms of serial work).
PARALLEL_MIN_WORK = 1 << 24
# The dense histogram kernel splits even one node into (node, features) tasks, so it can
# go parallel much earlier than the others: from ~1M column updates (the root of a
# covtype-sized table; cod-rna's 480k-update root measured no faster on two threads).
HIST_PARALLEL_MIN_WORK = 1 << 20


def use_parallel(work: int, threshold: int | None = None) -> bool:
    """Whether a call with ``work`` elementary updates should use the thread pool
    (``threshold`` defaults to :data:`PARALLEL_MIN_WORK`)."""
    limit = PARALLEL_MIN_WORK if threshold is None else threshold
    return work >= limit and numba.get_num_threads() > 1


def feature_block(n_features: int) -> int:
    """Features per dense histogram task: even (the kernel reads features in pairs and
    fours), about four tasks per thread for one node, at most ``FEATURE_BLOCK``."""
    per_task = -(-n_features // (4 * numba.get_num_threads()))
    return int(min(FEATURE_BLOCK, max(2, per_task + per_task % 2)))


# ----------------------------------------------------------------------------- dense
#
# Dense codes are stored column-major (``BinnedData.codes`` is Fortran-ordered). The
# node's statistics are first gathered in row order (``ordered[k, p] = stats[order[p],
# k]``), then up to three kinds of task run side by side:
#
# * (node, block of dense features): four features per pass over the node's rows, so one
#   read of ``order`` and of the statistics serves four histograms (16 KiB, in L1) and
#   runs of rows falling into one bin -- common when rows are sorted -- make four short
#   dependency chains instead of one long one (measured 1.3-1.6 ns per update, against
#   3-3.7 ns feature by feature or row by row);
# * (node, block of exclusive bundles) of the sparse features
#   (:class:`~dpexp.trees.binning.SparseFeatureCodes`): the same kernel on the bundle
#   columns, into a per-node buffer that is then unpacked into the members' histograms;
# * or (node, chunk of rows) over row-sparse lists of the sparse features: only the
#   non-default entries are scanned, into a per-chunk buffer; a node's chunks are then
#   added up in chunk order.
#
# Sparse features get their default bin as the node total minus their other bins. Every
# sum runs in an order fixed by the data alone (rows in ``order`` order, chunks of
# ``SPARSE_CHUNK_ROWS``), never by the number of threads, so the serial and the parallel
# kernels give bit-identical histograms.

SPARSE_CHUNK_ROWS = 8192


@njit(cache=True, nogil=True)
def _gather(stats, order, s, e, ordered):  # pragma: no cover
    """``ordered[k, p] = stats[order[p], k]`` for ``p`` in ``s:e``."""
    for p in range(s, e):
        r = order[p]
        for k in range(stats.shape[1]):
            ordered[k, p] = stats[r, k]


@njit(cache=True, nogil=True)
def _dense_features(codes, ordered, order, s, e, feats, i0, i1, h):  # pragma: no cover
    """Histograms ``h[f] (B, K)`` of the features ``f in feats[i0:i1]`` over the rows
    ``order[s:e]``."""
    k_stats = ordered.shape[0]
    for i in range(i0, i1):
        f = feats[i]
        for b in range(h.shape[1]):
            for k in range(k_stats):
                h[f, b, k] = 0.0
    i = i0
    if k_stats == 2:
        og = ordered[0]
        oh = ordered[1]
        while i + 4 <= i1:
            fa, fb, fc, fd = feats[i], feats[i + 1], feats[i + 2], feats[i + 3]
            for p in range(s, e):
                r = order[p]
                gp = og[p]
                hp = oh[p]
                ba = codes[r, fa]
                bb = codes[r, fb]
                bc = codes[r, fc]
                bd = codes[r, fd]
                h[fa, ba, 0] += gp
                h[fa, ba, 1] += hp
                h[fb, bb, 0] += gp
                h[fb, bb, 1] += hp
                h[fc, bc, 0] += gp
                h[fc, bc, 1] += hp
                h[fd, bd, 0] += gp
                h[fd, bd, 1] += hp
            i += 4
        if i + 2 <= i1:
            fa, fb = feats[i], feats[i + 1]
            for p in range(s, e):
                r = order[p]
                gp = og[p]
                hp = oh[p]
                ba = codes[r, fa]
                bb = codes[r, fb]
                h[fa, ba, 0] += gp
                h[fa, ba, 1] += hp
                h[fb, bb, 0] += gp
                h[fb, bb, 1] += hp
            i += 2
        while i < i1:  # the last feature, still without an inner k loop
            f = feats[i]
            for p in range(s, e):
                b = codes[order[p], f]
                h[f, b, 0] += og[p]
                h[f, b, 1] += oh[p]
            i += 1
    for ii in range(i, i1):
        f = feats[ii]
        for p in range(s, e):
            b = codes[order[p], f]
            for k in range(k_stats):
                h[f, b, k] += ordered[k, p]


@njit(cache=True, nogil=True)
def _sparse_chunk(indptr, feat, code, ordered, order, p0, p1, buf):  # pragma: no cover
    """``buf (S, Bs, K)``: sums over the rows ``order[p0:p1]`` of their non-default
    entries of the row-sparse features."""
    k_stats = ordered.shape[0]
    buf[:] = 0.0
    if k_stats == 2:  # the GBDT case: two scalars per row, no inner loop
        og = ordered[0]
        oh = ordered[1]
        for p in range(p0, p1):
            r = order[p]
            gp = og[p]
            hp = oh[p]
            for q in range(indptr[r], indptr[r + 1]):
                i = feat[q]
                b = code[q]
                buf[i, b, 0] += gp
                buf[i, b, 1] += hp
        return
    for p in range(p0, p1):
        r = order[p]
        for q in range(indptr[r], indptr[r + 1]):
            i = feat[q]
            b = code[q]
            for k in range(k_stats):
                buf[i, b, k] += ordered[k, p]


@njit(cache=True, nogil=True)
def _sparse_reduce(bufs, c0, c1, sparse_feats, default, ordered, s, e, h):  # pragma: no cover
    """The row-sparse features' histograms of one node: its chunks ``bufs[c0:c1]`` added
    in order, each default bin = node total - the other bins."""
    k_stats = ordered.shape[0]
    tot = np.zeros(k_stats)
    for p in range(s, e):
        for k in range(k_stats):
            tot[k] += ordered[k, p]
    n_bins = h.shape[1]
    sb = bufs.shape[2]
    for i in range(sparse_feats.shape[0]):
        f = sparse_feats[i]
        for b in range(n_bins):
            for k in range(k_stats):
                h[f, b, k] = 0.0
        for c in range(c0, c1):
            for b in range(sb):
                for k in range(k_stats):
                    h[f, b, k] += bufs[c, i, b, k]
        z = default[f]
        for k in range(k_stats):
            acc = 0.0
            for b in range(sb):
                acc += h[f, b, k]
            h[f, z, k] = tot[k] - acc


@njit(cache=True, nogil=True)
def _unpack_bundles(wb, vfeat, vcode, sparse_feats, default, ordered, s, e, h):  # pragma: no cover
    """The sparse features' histograms of one node from its bundle histograms ``wb
    (n_bundles, 256, K)``; each default bin = node total - the other bins."""
    k_stats = ordered.shape[0]
    tot = np.zeros(k_stats)
    for p in range(s, e):
        for k in range(k_stats):
            tot[k] += ordered[k, p]
    for i in range(sparse_feats.shape[0]):
        f = sparse_feats[i]
        for b in range(h.shape[1]):
            for k in range(k_stats):
                h[f, b, k] = 0.0
    for c in range(wb.shape[0]):
        for v in range(1, wb.shape[1]):
            f = vfeat[c, v]
            if f >= 0:
                for k in range(k_stats):
                    h[f, vcode[c, v], k] = wb[c, v, k]
    for i in range(sparse_feats.shape[0]):
        f = sparse_feats[i]
        z = default[f]
        for k in range(k_stats):
            acc = 0.0
            for b in range(h.shape[1]):
                acc += h[f, b, k]
            h[f, z, k] = tot[k] - acc


@njit(parallel=True, cache=True, nogil=True)
def _hist_par(codes, stats, order, starts, ends, out, slots, ordered, feats, fblock,
              bcodes, bfeats, wb, vfeat, vcode,
              indptr, feat, code, default, sparse_feats, chunk_p0, chunk_p1, chunk_first,
              bufs):  # pragma: no cover
    nb = starts.shape[0]
    for j in prange(nb):
        _gather(stats, order, starts[j], ends[j], ordered)
    nf = feats.shape[0]
    n_fb = (nf + fblock - 1) // fblock
    n_dense = nb * n_fb
    nbun = bfeats.shape[0]
    n_bb = (nbun + fblock - 1) // fblock
    n_bund = nb * n_bb
    for t in prange(n_dense + n_bund + chunk_p0.shape[0]):
        if t < n_dense:
            j = t // n_fb
            i0 = (t % n_fb) * fblock
            _dense_features(codes, ordered, order, starts[j], ends[j], feats, i0,
                            min(nf, i0 + fblock), out[slots[j]])
        elif t < n_dense + n_bund:
            u = t - n_dense
            j = u // n_bb
            i0 = (u % n_bb) * fblock
            _dense_features(bcodes, ordered, order, starts[j], ends[j], bfeats, i0,
                            min(nbun, i0 + fblock), wb[j])
        else:
            c = t - n_dense - n_bund
            _sparse_chunk(indptr, feat, code, ordered, order, chunk_p0[c], chunk_p1[c], bufs[c])
    if sparse_feats.shape[0] > 0:
        for j in prange(nb):
            if nbun > 0:
                _unpack_bundles(wb[j], vfeat, vcode, sparse_feats, default, ordered,
                                starts[j], ends[j], out[slots[j]])
            else:
                _sparse_reduce(bufs, chunk_first[j], chunk_first[j + 1], sparse_feats,
                               default, ordered, starts[j], ends[j], out[slots[j]])


@njit(cache=True, nogil=True)
def _hist_ser(codes, stats, order, starts, ends, out, slots, ordered, feats,
              bcodes, bfeats, wb, vfeat, vcode,
              indptr, feat, code, default, sparse_feats, chunk_p0, chunk_p1, chunk_first,
              bufs):  # pragma: no cover
    for j in range(starts.shape[0]):
        s, e = starts[j], ends[j]
        _gather(stats, order, s, e, ordered)
        _dense_features(codes, ordered, order, s, e, feats, 0, feats.shape[0], out[slots[j]])
        if sparse_feats.shape[0] == 0:
            continue
        if bfeats.shape[0] > 0:
            _dense_features(bcodes, ordered, order, s, e, bfeats, 0, bfeats.shape[0], wb[j])
            _unpack_bundles(wb[j], vfeat, vcode, sparse_feats, default, ordered, s, e,
                            out[slots[j]])
        else:
            for c in range(chunk_first[j], chunk_first[j + 1]):
                _sparse_chunk(indptr, feat, code, ordered, order, chunk_p0[c], chunk_p1[c],
                              bufs[c])
            _sparse_reduce(bufs, chunk_first[j], chunk_first[j + 1], sparse_feats, default,
                           ordered, s, e, out[slots[j]])


_NO_INT = np.zeros(0, dtype=np.int64)


def _row_chunks(starts, ends):
    """Chunks of ``SPARSE_CHUNK_ROWS`` positions of every node: (p0, p1, first chunk of
    each node + total)."""
    sizes = ends - starts
    counts = -(-sizes // SPARSE_CHUNK_ROWS)
    first = np.zeros(starts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    node = np.repeat(np.arange(starts.size), counts)
    p0 = starts[node] + (np.arange(first[-1]) - first[node]) * SPARSE_CHUNK_ROWS
    return p0, np.minimum(p0 + SPARSE_CHUNK_ROWS, ends[node]), first


def dense_hist_into(codes, stats, order, starts, ends, out, slots, *, sparse_codes=None,
                    scratch=None, fblock=None) -> None:
    """Write the histogram of node ``j`` (rows ``order[starts[j]:ends[j]]``) into
    ``out[slots[j]]`` from dense ``codes (n, d)`` (column-major is fastest).

    ``sparse_codes``: the data's :class:`~dpexp.trees.binning.SparseFeatureCodes` (its
    sparse features are histogrammed from bundles or row-sparse lists, the others from
    ``codes``); ``scratch``: optional ``(K, len(order))`` float64 buffer for the gathered
    statistics, reused across calls.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    nb = starts.size
    k_stats = stats.shape[1]
    if scratch is None or scratch.shape != (k_stats, order.shape[0]):
        scratch = np.empty((k_stats, order.shape[0]))
    sc = sparse_codes
    no_u8 = np.zeros((0, 0), dtype=np.uint8, order="F")
    bundles = (no_u8, _NO_INT, np.zeros((0, 0, 1, k_stats)), np.zeros((0, 1), dtype=np.int64),
               np.zeros((0, 1), dtype=np.uint8))
    lists = (_NO_INT, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint8))
    chunks = (_NO_INT, _NO_INT, np.zeros(nb + 1, dtype=np.int64), np.zeros((0, 0, 0, k_stats)))
    if sc is None:
        feats = np.arange(codes.shape[1], dtype=np.int64)
        tail = (np.zeros(codes.shape[1], dtype=np.uint8), _NO_INT)
        per_row = feats.size
    else:
        feats = sc.dense_features
        tail = (sc.default_bin, sc.sparse_features)
        if sc.n_bundles:
            wb = np.empty((nb, sc.n_bundles, BUNDLE_VALUES, k_stats))
            bundles = (sc.bundle_codes, np.arange(sc.n_bundles, dtype=np.int64), wb,
                       sc.bundle_feature, sc.bundle_code)
            per_row = feats.size + sc.n_bundles
        else:
            lists = (sc.indptr, sc.feature, sc.code)
            p0, p1, first = _row_chunks(starts, ends)
            chunks = (p0, p1, first,
                      np.empty((p0.size, sc.sparse_features.size, sc.sparse_bins, k_stats)))
            per_row = feats.size + sc.mean_nnz
    head = (codes, stats, order, starts, ends, out, slots, scratch, feats)
    rest = (*bundles, *lists, *tail, *chunks)
    if use_parallel(int((ends - starts).sum()) * per_row, HIST_PARALLEL_MIN_WORK):
        fb = feature_block(max(feats.size, bundles[1].size)) if fblock is None else int(fblock)
        _hist_par(*head, fb, *rest)
    else:
        _hist_ser(*head, *rest)


def build_hist_dense(codes, stats, order, starts, ends, n_bins, fblock=None, *,
                     sparse_codes=None):
    """Histograms ``(len(starts), d, n_bins, K)`` of the nodes over dense ``codes``."""
    nb = np.asarray(starts).shape[0]
    out = np.empty((nb, codes.shape[1], n_bins, stats.shape[1]))
    dense_hist_into(codes, np.ascontiguousarray(stats, dtype=np.float64), order, starts, ends,
                    out, np.arange(nb), sparse_codes=sparse_codes, fblock=fblock)
    return out


# ----------------------------------------------------------------------------- sparse CSC


@njit(parallel=True, cache=True, nogil=True)
def build_hist_sparse(
    indptr, rows, values, zero_bin, stats, order, starts, ends, n_rows, n_bins
):  # pragma: no cover
    """Histograms over column-compressed codes; implicit zeros go to ``zero_bin[f]``."""
    nb = starts.shape[0]
    d = indptr.shape[0] - 1
    k_stats = stats.shape[1]
    slot = np.full(n_rows, -1, dtype=np.int32)
    totals = np.zeros((nb, k_stats))
    for j in range(nb):
        for p in range(starts[j], ends[j]):
            r = order[p]
            slot[r] = j
            for k in range(k_stats):
                totals[j, k] += stats[r, k]
    hist = np.zeros((nb, d, n_bins, k_stats))
    for f in prange(d):
        for q in range(indptr[f], indptr[f + 1]):
            r = rows[q]
            j = slot[r]
            if j >= 0:
                b = values[q]
                for k in range(k_stats):
                    hist[j, f, b, k] += stats[r, k]
        z = zero_bin[f]
        for j in range(nb):
            for k in range(k_stats):
                s = 0.0
                for b in range(n_bins):
                    s += hist[j, f, b, k]
                hist[j, f, z, k] += totals[j, k] - s
    return hist


# ----------------------------------------------------------------------------- siblings


@njit(cache=True, nogil=True)
def _subtract_one(parent, p, out, small, big):  # pragma: no cover
    for f in range(out.shape[1]):
        for b in range(out.shape[2]):
            for k in range(out.shape[3]):
                out[big, f, b, k] = parent[p, f, b, k] - out[small, f, b, k]


@njit(parallel=True, cache=True, nogil=True)
def _subtract_par(parent, pidx, out, small, big):  # pragma: no cover
    for i in prange(small.shape[0]):
        _subtract_one(parent, pidx[i], out, small[i], big[i])


@njit(cache=True, nogil=True)
def _subtract_ser(parent, pidx, out, small, big):  # pragma: no cover
    for i in range(small.shape[0]):
        _subtract_one(parent, pidx[i], out, small[i], big[i])


def subtract_siblings(parent, out, small, big, parent_index=None) -> None:
    """``out[big[i]] = parent[parent_index[i]] - out[small[i]]`` (``parent_index``
    defaults to ``i``): the larger child of split ``i`` from its parent and its built
    smaller sibling (no temporary arrays)."""
    pidx = (np.arange(small.shape[0], dtype=np.int64) if parent_index is None
            else np.asarray(parent_index, dtype=np.int64))
    if use_parallel(out[0].size * small.shape[0]) and small.shape[0] > 1:
        _subtract_par(parent, pidx, out, small, big)
    else:
        _subtract_ser(parent, pidx, out, small, big)


@njit(cache=True, nogil=True)
def child_totals(hist, totals, js, feats, bins):  # pragma: no cover
    """Totals of the children (left, right interleaved) of the split nodes ``js``:
    left = bins ``<= bins[i]`` of feature ``feats[i]`` summed in bin order (the order of
    ``np.cumsum``), right = parent total - left."""
    k_stats = totals.shape[1]
    out = np.empty((2 * js.shape[0], k_stats))
    for i in range(js.shape[0]):
        j = js[i]
        f = feats[i]
        for k in range(k_stats):
            acc = 0.0
            for b in range(bins[i] + 1):
                acc += hist[j, f, b, k]
            out[2 * i, k] = acc
            out[2 * i + 1, k] = totals[j, k] - acc
    return out


@njit(cache=True, nogil=True)
def is_sorted(a):  # pragma: no cover
    """Whether ``a`` is non-decreasing."""
    bad = 0
    for i in range(1, a.shape[0]):  # no early exit: vectorised, and rows are mostly sorted
        bad += a[i] < a[i - 1]
    return bad == 0


# ----------------------------------------------------------------------------- partition


@njit(cache=True, nogil=True)
def _partition_node(codes, order, s, e, f, b, buf):  # pragma: no cover
    """Stable partition of ``order[s:e]`` into ``codes[:, f] <= b`` first; returns the
    number of rows going left. ``buf`` is scratch of length >= ``e - s``."""
    col = codes[:, f]
    nl = 0
    nr = 0
    for p in range(s, e):  # branch-free: the direction is data-dependent (unpredictable)
        r = order[p]
        left = 1 if col[r] <= b else 0
        order[s + nl] = r  # s + nl <= p: already read
        buf[nr] = r
        nl += left
        nr += 1 - left
    for q in range(nr):
        order[s + nl + q] = buf[q]
    return nl


@njit(parallel=True, cache=True, nogil=True)
def _partition_par(codes, order, starts, ends, features, bins):  # pragma: no cover
    nb = starts.shape[0]
    n_left = np.zeros(nb, dtype=np.int64)
    for j in prange(nb):
        buf = np.empty(ends[j] - starts[j], dtype=order.dtype)
        n_left[j] = _partition_node(codes, order, starts[j], ends[j], features[j], bins[j], buf)
    return n_left


@njit(cache=True, nogil=True)
def _partition_ser(codes, order, starts, ends, features, bins):  # pragma: no cover
    nb = starts.shape[0]
    n_left = np.zeros(nb, dtype=np.int64)
    width = 0
    for j in range(nb):
        width = max(width, ends[j] - starts[j])
    buf = np.empty(width, dtype=order.dtype)
    for j in range(nb):
        n_left[j] = _partition_node(codes, order, starts[j], ends[j], features[j], bins[j], buf)
    return n_left


def partition_dense(codes, order, starts, ends, features, bins):
    """Stable in-place partition of each node's rows into ``codes[:, f] <= b`` first.

    Returns the number of rows going left for each node.
    """
    if use_parallel(int((ends - starts).sum()) * 8) and starts.shape[0] > 1:
        return _partition_par(codes, order, starts, ends, features, bins)
    return _partition_ser(codes, order, starts, ends, features, bins)


@njit(cache=True, nogil=True)
def partition_sparse(
    indptr, rows, values, zero_bin, order, starts, ends, features, bins, n_rows
):  # pragma: no cover
    """:func:`partition_dense` for column-compressed codes."""
    nb = starts.shape[0]
    n_left = np.zeros(nb, dtype=np.int64)
    code = np.empty(n_rows, dtype=np.uint8)
    for j in range(nb):
        s, e, f, b = starts[j], ends[j], features[j], bins[j]
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


# ----------------------------------------------------------------------------- gains


@njit(cache=True, nogil=True)
def _gains_task(hist, lam, n_valid, j, f, out):  # pragma: no cover
    n_bins = hist.shape[2]
    gt = 0.0
    ht = 0.0
    for b in range(n_bins):
        gt += hist[j, f, b, 0]
        ht += hist[j, f, b, 1]
    gl = 0.0
    hl = 0.0
    for b in range(n_valid[f]):
        gl += hist[j, f, b, 0]
        hl += hist[j, f, b, 1]
        gr = gt - gl
        hr = ht - hl
        out[j, f, b] = gl * gl / (hl + lam) + gr * gr / (hr + lam)


@njit(parallel=True, cache=True, nogil=True)
def _gains_par(hist, lam, n_valid, out):  # pragma: no cover
    d = hist.shape[1]
    for task in prange(hist.shape[0] * d):
        _gains_task(hist, lam, n_valid, task // d, task % d, out)


@njit(cache=True, nogil=True)
def _gains_ser(hist, lam, n_valid, out):  # pragma: no cover
    d = hist.shape[1]
    for task in range(hist.shape[0] * d):
        _gains_task(hist, lam, n_valid, task // d, task % d, out)


def split_gains(hist, lam, n_valid) -> np.ndarray:
    """Gain of Eq. (3) of Li et al. 2020 for every candidate of every node.

    ``hist (nb, d, B, 2)`` holds (gradient sum, hessian sum); the candidate (f, b) sends
    bins ``<= b`` left. Returns ``(nb, d, B-1)``; candidates ``b >= n_valid[f]`` are NaN.
    ``G(I_L, I_R) = (sum_L g)^2 / (H_L + lambda) + (sum_R g)^2 / (H_R + lambda)`` where
    ``H`` is the hessian sum, i.e. the count ``|I|`` when ``h = 1`` (Section 4).
    """
    hist = np.ascontiguousarray(hist, dtype=np.float64)
    n_valid = np.asarray(n_valid, dtype=np.int64)
    nb, d, n_bins, _ = hist.shape
    out = np.empty((nb, d, max(n_bins - 1, 0)))
    if out.size and int(n_valid.min()) < out.shape[2]:
        out.fill(np.nan)  # only public non-candidates stay NaN; skipped when there are none
    if use_parallel(hist.size):
        _gains_par(hist, float(lam), n_valid, out)
    else:
        _gains_ser(hist, float(lam), n_valid, out)
    return out


@njit(cache=True, nogil=True)
def _best_task(hist, lam, n_valid, mcw, mcc, counts, j, f):  # pragma: no cover
    """Best (gain, bin) of feature ``f`` of node ``j``; (-inf, -1) when none is valid."""
    n_bins = hist.shape[2]
    use_counts = counts.shape[0] > 0
    gt = 0.0
    ht = 0.0
    ct = 0.0
    for b in range(n_bins):
        gt += hist[j, f, b, 0]
        ht += hist[j, f, b, 1]
        if use_counts:
            ct += counts[j, f, b]
    if not use_counts:
        ct = ht
    parent = gt * gt / (ht + lam)
    gl = 0.0
    hl = 0.0
    cl = 0.0
    best = -np.inf
    arg = -1
    for b in range(n_valid[f]):
        gl += hist[j, f, b, 0]
        hl += hist[j, f, b, 1]
        cl += counts[j, f, b] if use_counts else hist[j, f, b, 1]
        hr = ht - hl
        cr = ct - cl
        if hl < mcw or hr < mcw:
            continue
        if cl < mcc or cr < mcc:
            continue
        gr = gt - gl
        gain = gl * gl / (hl + lam) + gr * gr / (hr + lam) - parent
        if gain > best:
            best = gain
            arg = b
    return best, arg


@njit(cache=True, nogil=True)
def _reduce_best(best_gain, best_bin):  # pragma: no cover
    nb, d = best_gain.shape
    feat = np.full(nb, -1, dtype=np.int64)
    bins = np.full(nb, -1, dtype=np.int64)
    gains = np.full(nb, -np.inf)
    for j in range(nb):
        for f in range(d):
            if best_gain[j, f] > gains[j]:
                gains[j] = best_gain[j, f]
                feat[j] = f
                bins[j] = best_bin[j, f]
    return feat, bins, gains


@njit(parallel=True, cache=True, nogil=True)
def _best_par(hist, lam, n_valid, mcw, mcc, counts):  # pragma: no cover
    nb, d = hist.shape[0], hist.shape[1]
    best_gain = np.empty((nb, d))
    best_bin = np.empty((nb, d), dtype=np.int64)
    for task in prange(nb * d):
        j = task // d
        f = task % d
        best_gain[j, f], best_bin[j, f] = _best_task(hist, lam, n_valid, mcw, mcc, counts, j, f)
    return _reduce_best(best_gain, best_bin)


@njit(cache=True, nogil=True)
def _best_ser(hist, lam, n_valid, mcw, mcc, counts):  # pragma: no cover
    nb, d = hist.shape[0], hist.shape[1]
    best_gain = np.empty((nb, d))
    best_bin = np.empty((nb, d), dtype=np.int64)
    for j in range(nb):
        for f in range(d):
            best_gain[j, f], best_bin[j, f] = _best_task(hist, lam, n_valid, mcw, mcc, counts,
                                                         j, f)
    return _reduce_best(best_gain, best_bin)


def best_splits(hist, lam, n_valid, min_child_weight, min_child_count, counts):
    """Greedy (non-private) best candidate per node with its gain improvement.

    Improvement = G(I_L, I_R) - (sum g)^2 / (H + lambda) (Eq. 3 minus the parent term).
    Children must have hessian sum >= ``min_child_weight`` and, when ``counts`` (a
    ``(nb, d, B)`` count histogram, or an empty array meaning "hessian = count") is given,
    at least ``min_child_count`` rows. Returns (feature, bin, improvement); feature -1
    when no valid candidate.
    """
    args = (np.ascontiguousarray(hist, dtype=np.float64), float(lam),
            np.asarray(n_valid, dtype=np.int64), float(min_child_weight),
            float(min_child_count), np.asarray(counts, dtype=np.float64))
    if use_parallel(hist.size):
        return _best_par(*args)
    return _best_ser(*args)


# ----------------------------------------------------------------------------- predict


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
    # Four rows walk down together: their dependent load chains (node -> feature ->
    # code -> child) overlap, ~3x faster than one row at a time.
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
    (no leaf-id array in between)."""
    if use_parallel(codes.shape[0] * 16):
        _add_tree_par(codes, feature, bin_, child_start, value, scale, out)
    else:
        _add_tree_ser(codes, feature, bin_, child_start, value, scale, out)


@njit(cache=True, nogil=True)
def add_leaf_segments(order, seg_start, seg_end, seg_value, scale, out):  # pragma: no cover
    """``out[order[s:e]] += scale * v`` for every leaf segment (rows a tree was grown on)."""
    for i in range(seg_start.shape[0]):
        v = scale * seg_value[i]
        for p in range(seg_start[i], seg_end[i]):
            out[order[p]] += v


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


@njit(cache=True, nogil=True)
def node_totals(stats, order, s, e):  # pragma: no cover
    """Column sums of ``stats[order[s:e]]`` without the gathered copy."""
    if stats.shape[1] == 2:  # scalar accumulators (registers); same order of additions
        t0 = 0.0
        t1 = 0.0
        for p in range(s, e):
            r = order[p]
            t0 += stats[r, 0]
            t1 += stats[r, 1]
        out = np.empty(2)
        out[0] = t0
        out[1] = t1
        return out
    tot = np.zeros(stats.shape[1])
    for p in range(s, e):
        r = order[p]
        for k in range(stats.shape[1]):
            tot[k] += stats[r, k]
    return tot


def n_threads() -> int:
    """Threads numba uses for the parallel kernels."""
    return int(numba.get_num_threads())
