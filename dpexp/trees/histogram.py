"""Compiled (numba) kernels of the histogram tree grower.

Rows of the training set are kept in one ``order`` array partitioned by node: node ``j``
of the current level owns ``order[starts[j]:ends[j]]`` (row ids in increasing order).
Histograms have shape ``(n_nodes, n_features, n_bins, K)``: per node x feature x bin the
sum of each of the ``K`` per-row statistics (``stats (n, K)``, e.g. gradient and hessian,
or one-hot class counts).

Dense kernels parallelise over (node, block of features) tasks, so every task writes its
own slice of the histogram (no atomics, deterministic sums). The sparse kernels scan the
stored non-zeros column by column and obtain each feature's zero bin by subtraction from
the node totals (the trick LightGBM uses for sparse features).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

FEATURE_BLOCK = 16


@njit(parallel=True, cache=True, nogil=True)
def build_hist_dense(codes, stats, order, starts, ends, n_bins, fblock):  # pragma: no cover
    """Histograms of the nodes ``(starts[j], ends[j])`` over dense ``codes (n, d)``."""
    nb = starts.shape[0]
    d = codes.shape[1]
    k_stats = stats.shape[1]
    n_fb = (d + fblock - 1) // fblock
    hist = np.zeros((nb, d, n_bins, k_stats))
    for task in prange(nb * n_fb):
        j = task // n_fb
        f0 = (task % n_fb) * fblock
        f1 = min(d, f0 + fblock)
        h = hist[j]
        for p in range(starts[j], ends[j]):
            r = order[p]
            for f in range(f0, f1):
                b = codes[r, f]
                for k in range(k_stats):
                    h[f, b, k] += stats[r, k]
    return hist


@njit(parallel=True, cache=True, nogil=True)
def build_hist_dense_2(codes, g, hs, order, starts, ends, n_bins, fblock):  # pragma: no cover
    """Specialisation of :func:`build_hist_dense` for ``K = 2`` (gradient, hessian)."""
    nb = starts.shape[0]
    d = codes.shape[1]
    n_fb = (d + fblock - 1) // fblock
    hist = np.zeros((nb, d, n_bins, 2))
    for task in prange(nb * n_fb):
        j = task // n_fb
        f0 = (task % n_fb) * fblock
        f1 = min(d, f0 + fblock)
        h = hist[j]
        for p in range(starts[j], ends[j]):
            r = order[p]
            gr = g[r]
            hr = hs[r]
            for f in range(f0, f1):
                b = codes[r, f]
                h[f, b, 0] += gr
                h[f, b, 1] += hr
    return hist


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


@njit(parallel=True, cache=True, nogil=True)
def partition_dense(codes, order, starts, ends, features, bins):  # pragma: no cover
    """Stable in-place partition of each node's rows into ``codes[:, f] <= b`` first.

    Returns the number of rows going left for each node.
    """
    nb = starts.shape[0]
    n_left = np.zeros(nb, dtype=np.int64)
    for j in prange(nb):
        s, e, f, b = starts[j], ends[j], features[j], bins[j]
        buf = np.empty(e - s, dtype=order.dtype)
        nl = 0
        nr = 0
        for p in range(s, e):
            r = order[p]
            if codes[r, f] <= b:
                order[s + nl] = r
                nl += 1
            else:
                buf[nr] = r
                nr += 1
        for q in range(nr):
            order[s + nl + q] = buf[q]
        n_left[j] = nl
    return n_left


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


@njit(parallel=True, cache=True, nogil=True)
def split_gains(hist, lam, n_valid):  # pragma: no cover
    """Gain of Eq. (3) of Li et al. 2020 for every candidate of every node.

    ``hist (nb, d, B, 2)`` holds (gradient sum, hessian sum); the candidate (f, b) sends
    bins ``<= b`` left. Returns ``(nb, d, B-1)``; candidates ``b >= n_valid[f]`` are NaN.
    ``G(I_L, I_R) = (sum_L g)^2 / (H_L + lambda) + (sum_R g)^2 / (H_R + lambda)`` where
    ``H`` is the hessian sum, i.e. the count ``|I|`` when ``h = 1`` (Section 4).
    """
    nb, d, n_bins, _ = hist.shape
    out = np.full((nb, d, max(n_bins - 1, 0)), np.nan)
    for task in prange(nb * d):
        j = task // d
        f = task % d
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
    return out


@njit(parallel=True, cache=True, nogil=True)
def best_splits(hist, lam, n_valid, min_child_weight, min_child_count, counts):  # pragma: no cover
    """Greedy (non-private) best candidate per node with its gain improvement.

    Improvement = G(I_L, I_R) - (sum g)^2 / (H + lambda) (Eq. 3 minus the parent term).
    Children must have hessian sum >= ``min_child_weight`` and, when ``counts`` (a
    ``(nb, d, B)`` count histogram, or an empty array meaning "hessian = count") is given,
    at least ``min_child_count`` rows. Returns (feature, bin, improvement); feature -1
    when no valid candidate.
    """
    nb, d, n_bins, _ = hist.shape
    best_gain = np.full((nb, d), -np.inf)
    best_bin = np.full((nb, d), -1, dtype=np.int64)
    use_counts = counts.shape[0] > 0
    for task in prange(nb * d):
        j = task // d
        f = task % d
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
        for b in range(n_valid[f]):
            gl += hist[j, f, b, 0]
            hl += hist[j, f, b, 1]
            cl += counts[j, f, b] if use_counts else hist[j, f, b, 1]
            hr = ht - hl
            cr = ct - cl
            if hl < min_child_weight or hr < min_child_weight:
                continue
            if cl < min_child_count or cr < min_child_count:
                continue
            gr = gt - gl
            gain = gl * gl / (hl + lam) + gr * gr / (hr + lam) - parent
            if gain > best_gain[j, f]:
                best_gain[j, f] = gain
                best_bin[j, f] = b
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


@njit(parallel=True, cache=True, nogil=True)
def apply_dense(X, feature, threshold, child_start):  # pragma: no cover
    """Leaf reached by each row of a dense float matrix (numeric ``x <= t`` splits)."""
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in prange(n):
        node = 0
        while child_start[node] >= 0:
            if X[i, feature[node]] > threshold[node]:
                node = child_start[node] + 1
            else:
                node = child_start[node]
        out[i] = node
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


def n_threads() -> int:
    """Threads numba uses for the parallel kernels."""
    return int(numba.get_num_threads())
