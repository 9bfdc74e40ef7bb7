"""The work of one task of a dense histogram build (compiled, numba).

Rows of the training set are kept in one ``order`` array partitioned by node (see
:mod:`dpexp.trees.partition`); the nodes' statistics are read in row order,
``ordered[k, p] = stats[order[p], k]`` (:func:`gather_span`). A task fills histograms
``h (B, K)`` of some columns over some of a node's rows:

* :func:`column_task`: dense features (:func:`_dense_features`, four columns per pass
  over the rows) and the columns of exclusive bundles, or every column at once from
  the row-major codes (:func:`_row_task`);
* :func:`row_list_chunk`: the non-default entries of the row-sparse lists over a chunk
  of rows.

Per-row loops run over views indexed from 0 (``rows = order[s:e]``, ``for p in
range(e - s)``) and index by row id through ``np.uint64(r)``: numba cannot tell that an
index from ``range(s, e)`` or from an int64 array is not negative, and would add the
wraparound arithmetic of negative indices to every such access.
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit
from dpexp.trees.pair_add import add_pair

_ALL = np.zeros(0, dtype=np.int64)  # n_values of _dense_features: clear every bin


@njit(cache=True, nogil=True)
def gather_rows(stats, order, ordered):  # pragma: no cover
    """``ordered[k, p] = stats[order[p], k]`` for every position ``p`` of ``order``.
    IN: ``stats``, ``order``; OUT: ``ordered``."""
    gather_span(stats, order, 0, order.shape[0], ordered)


@njit(cache=True, nogil=True)
def gather_span(stats, order, s, e, ordered):  # pragma: no cover
    """``ordered[k, p] = stats[order[p], k]`` for ``p`` in ``s:e`` and the first
    ``len(ordered)`` statistics (a unit last statistic is not stored)."""
    rows = order[s:e]  # indexed from 0, row ids unsigned: see the module docstring
    if ordered.shape[0] == 2:  # the GBDT case: no inner loop
        og, oh = ordered[0, s:e], ordered[1, s:e]
        for p in range(e - s):
            r = np.uint64(rows[p])
            og[p] = stats[r, 0]
            oh[p] = stats[r, 1]
        return
    if ordered.shape[0] == 1:  # gradients, unit hessians
        og = ordered[0, s:e]
        for p in range(e - s):
            og[p] = stats[np.uint64(rows[p]), 0]
        return
    out = ordered[:, s:e]
    for p in range(e - s):
        r = np.uint64(rows[p])
        for k in range(ordered.shape[0]):
            out[k, p] = stats[r, k]


@njit(cache=True, nogil=True)
def _dense_features(codes, ordered, order, s, e, feats, i0, i1, h, n_values,
                    slots):  # pragma: no cover
    """Histograms ``h[slots[i]] (B, K)`` of the features ``feats[i]``, ``i in i0:i1``, over
    the rows ``order[s:e]``; only bins below ``n_values[feats[i]]`` are cleared first (all
    of them when ``n_values`` is empty). ``ordered`` holds ``K`` statistics, or ``K - 1``
    when the last one is 1 for every row (a row count: added, never read)."""
    k_stats = h.shape[2]
    stored = ordered.shape[0]
    for i in range(i0, i1):
        f = feats[i]
        nz = h.shape[1] if n_values.shape[0] == 0 else n_values[f]
        # one contiguous fill per feature: the element-wise triple index cost a few
        # microseconds per node, more than the build itself on nodes of a few rows
        h[slots[i], :nz] = 0.0
    i = i0
    rows = order[s:e]  # views indexed from 0 (no wraparound arithmetic per row)
    m = e - s
    if k_stats == 2:  # the GBDT case: (gradient, hessian) or (gradient, unit hessian)
        unit = stored == 1
        og = ordered[0, s:e]
        oh = ordered[stored - 1, s:e]
        while i + 4 <= i1:
            fa, fb, fc, fd = feats[i], feats[i + 1], feats[i + 2], feats[i + 3]
            sa, sb, sc, sd = slots[i], slots[i + 1], slots[i + 2], slots[i + 3]
            for p in range(m):
                r = np.uint64(rows[p])
                gp = og[p]
                hp = 1.0 if unit else oh[p]
                ba = codes[r, fa]
                bb = codes[r, fb]
                bc = codes[r, fc]
                bd = codes[r, fd]
                add_pair(h, (sa, ba), gp, hp)
                add_pair(h, (sb, bb), gp, hp)
                add_pair(h, (sc, bc), gp, hp)
                add_pair(h, (sd, bd), gp, hp)
            i += 4
        if i + 2 <= i1:
            fa, fb = feats[i], feats[i + 1]
            sa, sb = slots[i], slots[i + 1]
            for p in range(m):
                r = np.uint64(rows[p])
                gp = og[p]
                hp = 1.0 if unit else oh[p]
                ba = codes[r, fa]
                bb = codes[r, fb]
                add_pair(h, (sa, ba), gp, hp)
                add_pair(h, (sb, bb), gp, hp)
            i += 2
        while i < i1:  # the last feature, still without an inner k loop
            f, sf = feats[i], slots[i]
            for p in range(m):
                b = codes[np.uint64(rows[p]), f]
                add_pair(h, (sf, b), og[p], 1.0 if unit else oh[p])
            i += 1
    stat = ordered[:, s:e]
    for ii in range(i, i1):
        f, sf = feats[ii], slots[ii]
        for p in range(m):
            b = codes[np.uint64(rows[p]), f]
            for k in range(stored):
                h[sf, b, k] += stat[k, p]
            if stored < k_stats:
                h[sf, b, k_stats - 1] += 1.0


@njit(cache=True, nogil=True)
def row_list_chunk(indptr, feat, code, ordered, order, p0, p1, buf):  # pragma: no cover
    """``buf (S, Bs, K)``: sums over the rows ``order[p0:p1]`` of their non-default
    entries of the row-sparse features (``ordered``: as in :func:`_dense_features`)."""
    k_stats = buf.shape[2]
    stored = ordered.shape[0]
    buf[:] = 0.0
    if k_stats == 2:  # the GBDT case: two scalars per row, no inner loop
        unit = stored == 1
        og = ordered[0]
        oh = ordered[stored - 1]
        for p in range(p0, p1):
            r = order[p]
            gp = og[p]
            hp = 1.0 if unit else oh[p]
            for q in range(indptr[r], indptr[r + 1]):
                i = feat[q]
                b = code[q]
                add_pair(buf, (i, b), gp, hp)
        return
    for p in range(p0, p1):
        r = order[p]
        for q in range(indptr[r], indptr[r + 1]):
            i = feat[q]
            b = code[q]
            for k in range(stored):
                buf[i, b, k] += ordered[k, p]
            if stored < k_stats:
                buf[i, b, k_stats - 1] += 1.0


@njit(cache=True, nogil=True)
def _row_task(rcodes, roff, ordered, order, p0, p1, nd, hd, dslots, hb, bvalues
              ):  # pragma: no cover
    """Every column's histogram over the rows ``order[p0:p1]`` from the row-major codes
    (:class:`~dpexp.trees.row_codes.RowCodes`: ``rcodes[r, c]`` is row ``r``'s bin in one
    flat histogram, column ``c`` owning bins ``roff[c]:roff[c+1]``), then written out as
    :func:`column_task` writes them: dense feature ``i < nd`` into ``hd[dslots[i]]``
    (all its bins), bundle ``c`` into ``hb[c]`` (its ``bvalues[c]`` values). Every bin
    sums its rows in the same order as the column kernel, so the histograms are the same
    bit for bit."""
    k_stats = hd.shape[2]
    stored = ordered.shape[0]
    buf = np.zeros((roff[roff.shape[0] - 1], k_stats))
    n_col = rcodes.shape[1]
    rows = order[p0:p1]  # indexed from 0, row ids unsigned: see the module docstring
    if k_stats == 2:  # the GBDT case: two scalars per row, no inner k loop
        unit = stored == 1
        og = ordered[0, p0:p1]
        oh = ordered[stored - 1, p0:p1]
        for p in range(p1 - p0):
            row = rcodes[np.uint64(rows[p])]
            gp = og[p]
            hp = 1.0 if unit else oh[p]
            for c in range(n_col):
                add_pair(buf, (row[c],), gp, hp)
    else:
        stat = ordered[:, p0:p1]
        for p in range(p1 - p0):
            row = rcodes[np.uint64(rows[p])]
            for c in range(n_col):
                t = np.intp(row[c])
                for k in range(stored):
                    buf[t, k] += stat[k, p]
                if stored < k_stats:
                    buf[t, k_stats - 1] += 1.0
    for i in range(nd):
        _copy_bins(buf, roff[i], roff[i + 1], hd[dslots[i]], hd.shape[1])
    for c in range(n_col - nd):
        _copy_bins(buf, roff[nd + c], roff[nd + c + 1], hb[c], bvalues[c])


@njit(cache=True, nogil=True)
def _copy_bins(buf, a, b, h, n_bins):  # pragma: no cover
    """``h[:n_bins]`` = the flat histogram's bins ``a:b``, zeros past them."""
    k_stats = h.shape[1]
    for v in range(n_bins):
        for k in range(k_stats):
            h[v, k] = buf[a + v, k] if a + v < b else 0.0


@njit(cache=True, nogil=True)
def column_task(codes, bcodes, feats, bfeats, ordered, order, p0, p1, c0, c1, hd, dslots,
                 hb, bvalues, rcodes, roff):  # pragma: no cover
    """Histograms of the columns ``c0:c1`` over the rows ``order[p0:p1]``: column ``c <
    len(feats)`` is dense feature ``feats[c]`` (into ``hd``), the others are bundles (into
    ``hb``). A task of every column reads the row-major codes when there are some
    (``rcodes``, :func:`_row_task`)."""
    nd = feats.shape[0]
    if rcodes.shape[0] > 0 and c0 == 0 and c1 == nd + bcodes.shape[1]:
        _row_task(rcodes, roff, ordered, order, p0, p1, nd, hd, dslots, hb, bvalues)
        return
    if c0 < nd:
        _dense_features(codes, ordered, order, p0, p1, feats, c0, min(c1, nd), hd, _ALL,
                        dslots)
    if c1 > nd:
        _dense_features(bcodes, ordered, order, p0, p1, bfeats, max(c0, nd) - nd, c1 - nd, hb,
                        bvalues, bfeats)
