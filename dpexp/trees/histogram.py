"""Compiled (numba) kernels of the histogram tree grower.

Rows of the training set are kept in one ``order`` array partitioned by node: node ``j``
of the current level owns ``order[starts[j]:ends[j]]``. Histograms have shape
``(n_nodes, n_features, n_bins, K)``: per node x feature x bin the sum of each of the
``K`` per-row statistics (``stats (n, K)``, e.g. gradient and hessian, or one-hot class
counts).

Three data layouts are supported:

* dense ``codes (n, d)``: tasks are (node, block of features), so every task writes its
  own slice of the histogram (no atomics, deterministic sums);
* "row-sparse" dense codes (:class:`dpexp.trees.binning.RowSparseCodes`): only the
  entries that differ from each feature's default bin are scanned row by row and the
  default bin is obtained by subtraction from the node totals -- for one-hot/binary data
  such as adult (14 of 123 features non-zero per row) this is ~9x less work;
* column-compressed sparse input: column scans with the zero bin by subtraction.

Every parallel kernel has a serial twin: the grower calls the parallel one only when a
call has enough work (:data:`PARALLEL_MIN_WORK`), because a fork/join of the thread pool
costs more than small builds (and much more when other processes share the cores). Sums
are done in a fixed order for a given number of threads, so results are deterministic.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

FEATURE_BLOCK = 16
# Elementary updates below which a kernel runs on one thread. Measured on the 2-core
# bench machine: a fork/join of numba's pool, and the less optimised code numba emits
# inside prange bodies, only pay off for builds of this size (~10 ms of serial work).
PARALLEL_MIN_WORK = 1 << 24


def use_parallel(work: int) -> bool:
    """Whether a call with ``work`` elementary updates should use the thread pool."""
    return work >= PARALLEL_MIN_WORK and numba.get_num_threads() > 1


def feature_block(n_features: int) -> int:
    """Features per dense histogram task: a few tasks per thread, at least 16 features
    (so a task reads whole cache lines of a row) and at most 64 (so its slice of the
    histogram, 64 x 255 x 2 float64, stays in the L2 cache)."""
    per_task = -(-n_features // (4 * numba.get_num_threads()))
    return int(min(64, max(FEATURE_BLOCK, per_task)))


# ----------------------------------------------------------------------------- dense


@njit(cache=True, nogil=True)
def _dense_task(codes, stats, order, s, e, f0, f1, h):  # pragma: no cover
    """Accumulate rows ``order[s:e]`` of features ``f0:f1`` into ``h (d, B, K)``."""
    k_stats = stats.shape[1]
    for f in range(f0, f1):
        for b in range(h.shape[1]):
            for k in range(k_stats):
                h[f, b, k] = 0.0
    for p in range(s, e):
        r = order[p]
        for f in range(f0, f1):
            b = codes[r, f]
            for k in range(k_stats):
                h[f, b, k] += stats[r, k]


@njit(cache=True, nogil=True)
def _dense_task_2(codes, g, hs, order, s, e, f0, f1, h):  # pragma: no cover
    """:func:`_dense_task` for ``K = 2`` with the statistics as two vectors."""
    for f in range(f0, f1):
        for b in range(h.shape[1]):
            h[f, b, 0] = 0.0
            h[f, b, 1] = 0.0
    for p in range(s, e):
        r = order[p]
        gr = g[r]
        hr = hs[r]
        for f in range(f0, f1):
            b = codes[r, f]
            h[f, b, 0] += gr
            h[f, b, 1] += hr


@njit(parallel=True, cache=True, nogil=True)
def _dense_into_par(codes, stats, order, starts, ends, out, slots, fblock):  # pragma: no cover
    d = codes.shape[1]
    n_fb = (d + fblock - 1) // fblock
    for task in prange(starts.shape[0] * n_fb):
        j = task // n_fb
        f0 = (task % n_fb) * fblock
        _dense_task(codes, stats, order, starts[j], ends[j], f0, min(d, f0 + fblock),
                    out[slots[j]])


@njit(cache=True, nogil=True)
def _dense_into_ser(codes, stats, order, starts, ends, out, slots):  # pragma: no cover
    for j in range(starts.shape[0]):
        _dense_task(codes, stats, order, starts[j], ends[j], 0, codes.shape[1], out[slots[j]])


@njit(parallel=True, cache=True, nogil=True)
def _dense2_into_par(codes, g, hs, order, starts, ends, out, slots, fblock):  # pragma: no cover
    d = codes.shape[1]
    n_fb = (d + fblock - 1) // fblock
    for task in prange(starts.shape[0] * n_fb):
        j = task // n_fb
        f0 = (task % n_fb) * fblock
        _dense_task_2(codes, g, hs, order, starts[j], ends[j], f0, min(d, f0 + fblock),
                      out[slots[j]])


@njit(cache=True, nogil=True)
def _dense2_into_ser(codes, g, hs, order, starts, ends, out, slots):  # pragma: no cover
    for j in range(starts.shape[0]):
        _dense_task_2(codes, g, hs, order, starts[j], ends[j], 0, codes.shape[1], out[slots[j]])


def _stat_columns(stats, columns):
    if columns is not None:
        return columns
    return np.ascontiguousarray(stats[:, 0]), np.ascontiguousarray(stats[:, 1])


def build_hist_dense(codes, stats, order, starts, ends, n_bins, fblock=FEATURE_BLOCK):
    """Histograms of the nodes ``(starts[j], ends[j])`` over dense ``codes (n, d)``."""
    nb = starts.shape[0]
    out = np.empty((nb, codes.shape[1], n_bins, stats.shape[1]))
    dense_hist_into(codes, stats, order, np.asarray(starts, dtype=np.int64),
                    np.asarray(ends, dtype=np.int64), out, np.arange(nb), fblock)
    return out


def dense_hist_into(codes, stats, order, starts, ends, out, slots, fblock=None, *,
                    columns=None) -> None:
    """Write the histogram of node ``j`` into ``out[slots[j]]`` (dense codes).

    ``columns``: optional ``(g, h)`` contiguous copies of the two columns of ``stats``
    (a grower makes them once per tree instead of once per call)."""
    work = int((ends - starts).sum()) * codes.shape[1]
    fb = feature_block(codes.shape[1]) if fblock is None else int(fblock)
    if stats.shape[1] == 2:
        g, hs = _stat_columns(stats, columns)
        if use_parallel(work):
            _dense2_into_par(codes, g, hs, order, starts, ends, out, slots, fb)
        else:
            _dense2_into_ser(codes, g, hs, order, starts, ends, out, slots)
    elif use_parallel(work):
        _dense_into_par(codes, stats, order, starts, ends, out, slots, fb)
    else:
        _dense_into_ser(codes, stats, order, starts, ends, out, slots)


# ----------------------------------------------------------------------------- row-sparse


@njit(cache=True, nogil=True)
def _rowsparse_node(indptr, feat, code, default, stats, order, s, e, h):  # pragma: no cover
    """Histogram ``h (d, B, K)`` of rows ``order[s:e]`` from their non-default entries;
    each feature's default bin gets the node total minus the other bins."""
    k_stats = stats.shape[1]
    d = h.shape[0]
    for f in range(d):
        for b in range(h.shape[1]):
            for k in range(k_stats):
                h[f, b, k] = 0.0
    tot = np.zeros(k_stats)
    for p in range(s, e):
        r = order[p]
        for k in range(k_stats):
            tot[k] += stats[r, k]
        for q in range(indptr[r], indptr[r + 1]):
            f = feat[q]
            b = code[q]
            for k in range(k_stats):
                h[f, b, k] += stats[r, k]
    for f in range(d):
        z = default[f]
        for k in range(k_stats):
            acc = 0.0
            for b in range(h.shape[1]):
                acc += h[f, b, k]
            h[f, z, k] = tot[k] - acc


@njit(cache=True, nogil=True)
def _rowsparse_node_2(indptr, feat, code, default, g, hs, order, s, e, h):  # pragma: no cover
    """:func:`_rowsparse_node` for ``K = 2`` with the statistics as two vectors."""
    d, n_bins = h.shape[0], h.shape[1]
    for f in range(d):
        for b in range(n_bins):
            h[f, b, 0] = 0.0
            h[f, b, 1] = 0.0
    tg = 0.0
    th = 0.0
    for p in range(s, e):
        r = order[p]
        gr = g[r]
        hr = hs[r]
        tg += gr
        th += hr
        for q in range(indptr[r], indptr[r + 1]):
            f = feat[q]
            b = code[q]
            h[f, b, 0] += gr
            h[f, b, 1] += hr
    for f in range(d):
        sg = 0.0
        sh = 0.0
        for b in range(n_bins):
            sg += h[f, b, 0]
            sh += h[f, b, 1]
        z = default[f]
        h[f, z, 0] = tg - sg
        h[f, z, 1] = th - sh


@njit(parallel=True, cache=True, nogil=True)
def _rowsparse_into_par(indptr, feat, code, default, stats, order, starts, ends, out,
                        slots):  # pragma: no cover
    for j in prange(starts.shape[0]):
        _rowsparse_node(indptr, feat, code, default, stats, order, starts[j], ends[j],
                        out[slots[j]])


@njit(cache=True, nogil=True)
def _rowsparse_into_ser(indptr, feat, code, default, stats, order, starts, ends, out,
                        slots):  # pragma: no cover
    for j in range(starts.shape[0]):
        _rowsparse_node(indptr, feat, code, default, stats, order, starts[j], ends[j],
                        out[slots[j]])


@njit(parallel=True, cache=True, nogil=True)
def _rowsparse2_into_par(indptr, feat, code, default, g, hs, order, starts, ends, out,
                         slots):  # pragma: no cover
    for j in prange(starts.shape[0]):
        _rowsparse_node_2(indptr, feat, code, default, g, hs, order, starts[j], ends[j],
                          out[slots[j]])


@njit(cache=True, nogil=True)
def _rowsparse2_into_ser(indptr, feat, code, default, g, hs, order, starts, ends, out,
                         slots):  # pragma: no cover
    for j in range(starts.shape[0]):
        _rowsparse_node_2(indptr, feat, code, default, g, hs, order, starts[j], ends[j],
                          out[slots[j]])


def rowsparse_hist_into(rs, stats, order, starts, ends, out, slots, *, columns=None) -> None:
    """Write node histograms into ``out[slots[j]]`` from :class:`RowSparseCodes` ``rs``
    (``columns`` as in :func:`dense_hist_into`)."""
    parallel = use_parallel(int((ends - starts).sum()) * rs.mean_nnz) and starts.shape[0] > 1
    head = (rs.indptr, rs.feature, rs.code, rs.default_bin)
    tail = (order, starts, ends, out, slots)
    if stats.shape[1] == 2:
        g, hs = _stat_columns(stats, columns)
        kernel = _rowsparse2_into_par if parallel else _rowsparse2_into_ser
        kernel(*head, g, hs, *tail)
    else:
        kernel = _rowsparse_into_par if parallel else _rowsparse_into_ser
        kernel(*head, stats, *tail)


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
