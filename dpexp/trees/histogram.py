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
call has enough work (the ``*_MIN_WORK``/``*_MIN_ROWS`` thresholds below), because a
fork/join of the thread pool costs more than small builds (and much more when other
processes share the cores). Sums run in an order fixed by the data, not by the number
of threads, so results are deterministic and the same with one thread or many.

Row partitions are stable, so they have one result however they are computed: in place
in one pass for cache-sized tables (:func:`partition_dense`), or into a second buffer in
two passes over chunks of rows (mark, then scatter), in parallel, carrying the rows'
gathered statistics along (:func:`partition_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

FEATURE_BLOCK = 64
# Elementary updates below which a kernel runs on one thread. Measured on the 2-core
# bench machine: a fork/join of numba's pool, and the less optimised code numba emits
# inside prange bodies, only pay off for builds of this size (~10 ms of serial work).
PARALLEL_MIN_WORK = 1 << 24
# The dense histogram kernel splits even one node into (node, rows, columns) tasks, so it
# goes parallel much earlier than the others: from 64k column updates (measured on adult,
# 32k rows x 18 bundles: 6.8 -> 5.9 ms per NP tree, median of 7 fits, against 1 << 20).
HIST_PARALLEL_MIN_WORK = 1 << 16
# Per-level scans of whole histograms (split search, sibling subtraction) go parallel from
# this many histogram entries (e.g. 16 nodes x 54 features x 255 bins x 2 on covtype).
LEVEL_PARALLEL_MIN_WORK = 1 << 18
# Row partitions go parallel (chunks of rows, two passes) from this many rows in one call.
PARTITION_PARALLEL_MIN_ROWS = 1 << 17
# The greedy split search goes parallel from this many candidates (node x bin) in a level
# (~5 ns each: 80 us of serial work, e.g. 8 nodes of covtype's 2,584 candidates).
SPLIT_PARALLEL_MIN_CANDIDATES = 1 << 14
# From this many rows a tree keeps its statistics in row order, moved along by every
# partition: below it the table is cache-resident and gathering them per build is cheaper.
MOVE_STATS_MIN_ROWS = 1 << 17
PARTITION_CHUNK_ROWS = 1 << 15


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
# nodes' statistics are read in row order, ``ordered[k, p] = stats[order[p], k]``: either
# gathered by the build itself, or kept so by the grower, whose partitions move every
# row's statistics along with it on large tables (``gathered``; random reads of the
# statistics were half of a covtype-sized build). One build runs up to three kinds of
# task side by side:
#
# * column tasks (node, rows, columns): four columns per pass over the rows, so one read
#   of ``order`` and of the statistics serves four histograms (16 KiB, in L1) and runs of
#   rows falling into one bin -- common when rows are sorted -- make four short
#   dependency chains instead of one long one (1.3-1.8 ns per update, against 3-3.7 ns
#   feature by feature or row by row). With few columns (dense features plus bundles, at
#   most ``ROW_TASK_MAX_COLUMNS``: adult's 18 bundles, covtype's 12 columns, cod-rna's 8) a
#   task covers every column of a chunk of a node's rows, and a node of more than
#   ``HIST_CHUNK_ROWS`` rows is cut into at most ``HIST_MAX_CHUNKS`` chunks whose partial
#   histograms are added in chunk order -- so even the root keeps both threads busy.
#   When the table also has row-major codes (:class:`~dpexp.trees.binning.RowCodes`: few
#   columns and at most 256 bins in all, e.g. adult) such a task reads those instead:
#   one row's columns in one read, its updates spread over every column's bins (adult's
#   root: 1.8 -> 1.0 ns per update). With many columns a task covers a block of columns
#   over all of a node's rows;
# * the columns of exclusive bundles of the sparse features
#   (:class:`~dpexp.trees.binning.SparseFeatureCodes`) are read like dense columns, into a
#   per-node buffer that is then unpacked into the members' histograms;
# * or (node, chunk of rows) over row-sparse lists of the sparse features: only the
#   non-default entries are scanned, into a per-chunk buffer; a node's chunks are then
#   added up in chunk order.
#
# Per-row loops run over views indexed from 0 (``rows = order[s:e]``, ``for p in
# range(e - s)``) and index by row id through ``np.uint64(r)``: numba cannot tell that
# an index from ``range(s, e)`` or from an int64 array is not negative, and adds the
# wraparound arithmetic of negative indices to every such access (a partition of
# adult's 32k rows: 2.6 -> 1.6 ns per row with views, 1.2 with unsigned row ids).
#
# Sparse features get their default bin as the node total minus their other bins. The
# plan of a build (chunks, tasks, buffers: ``_hist_plan``) depends on the data's shape
# alone, and every sum runs in the order that plan fixes, never by the number of
# threads, so the serial and the parallel kernels give bit-identical histograms.

SPARSE_CHUNK_ROWS = 8192
_NO_INT = np.zeros(0, dtype=np.int64)
_ALL = _NO_INT  # n_values of _dense_features: clear every bin
ROW_TASK_MAX_COLUMNS = 32
HIST_CHUNK_ROWS = 8192
HIST_MAX_CHUNKS = 16
GATHER_ROWS = 16384


@njit(cache=True, nogil=True)
def gather_rows(stats, order, ordered):  # pragma: no cover
    """``ordered[k, p] = stats[order[p], k]`` for every position ``p`` of ``order``."""
    _gather(stats, order, 0, order.shape[0], ordered)


@njit(cache=True, nogil=True)
def _gather(stats, order, s, e, ordered):  # pragma: no cover
    """``ordered[k, p] = stats[order[p], k]`` for ``p`` in ``s:e`` and the first
    ``len(ordered)`` statistics (a unit last statistic is not stored)."""
    rows = order[s:e]  # indexed from 0, row ids unsigned: see the dense section
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
        for b in range(nz):
            for k in range(k_stats):
                h[slots[i], b, k] = 0.0
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
                h[sa, ba, 0] += gp
                h[sa, ba, 1] += hp
                h[sb, bb, 0] += gp
                h[sb, bb, 1] += hp
                h[sc, bc, 0] += gp
                h[sc, bc, 1] += hp
                h[sd, bd, 0] += gp
                h[sd, bd, 1] += hp
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
                h[sa, ba, 0] += gp
                h[sa, ba, 1] += hp
                h[sb, bb, 0] += gp
                h[sb, bb, 1] += hp
            i += 2
        while i < i1:  # the last feature, still without an inner k loop
            f, sf = feats[i], slots[i]
            for p in range(m):
                b = codes[np.uint64(rows[p]), f]
                h[sf, b, 0] += og[p]
                h[sf, b, 1] += 1.0 if unit else oh[p]
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
def _sparse_chunk(indptr, feat, code, ordered, order, p0, p1, buf):  # pragma: no cover
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
                buf[i, b, 0] += gp
                buf[i, b, 1] += hp
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
def _sparse_reduce(bufs, c0, c1, sparse_feats, default, ordered, s, e, h):  # pragma: no cover
    """The row-sparse features' histograms of one node: its chunks ``bufs[c0:c1]`` added
    in order, each default bin = node total - the other bins."""
    k_stats = h.shape[2]
    stored = ordered.shape[0]
    tot = np.zeros(k_stats)
    for p in range(s, e):
        for k in range(stored):
            tot[k] += ordered[k, p]
    if stored < k_stats:  # the unit last statistic: the row count
        tot[k_stats - 1] = e - s
    sb = bufs.shape[2]  # bounds the sparse features' codes: higher bins are not written
    n_bins = min(sb, h.shape[1])
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
def _unpack_bundles(wb, vfeat, vcode, n_values, sparse_feats, default, sparse_bins,
                    h):  # pragma: no cover
    """The sparse features' histograms of one node from its bundle histograms ``wb
    (n_bundles, V, K)`` (bundle ``c`` uses values ``0 .. n_values[c]-1 < V``); each default
    bin = node total - the other bins. Every row has one value in bundle 0 (0 when all
    its members are at their defaults), so the node total is the sum of bundle 0's
    histogram. Only the bins below ``sparse_bins`` (which bounds the sparse features'
    codes) are written."""
    k_stats = h.shape[2]
    tot = np.zeros(k_stats)
    for v in range(n_values[0]):
        for k in range(k_stats):
            tot[k] += wb[0, v, k]
    nbins = min(sparse_bins, h.shape[1])
    for i in range(sparse_feats.shape[0]):
        f = sparse_feats[i]
        for b in range(nbins):
            for k in range(k_stats):
                h[f, b, k] = 0.0
    for c in range(wb.shape[0]):
        for v in range(1, n_values[c]):
            f = vfeat[c, v]
            if f >= 0:
                for k in range(k_stats):
                    h[f, vcode[c, v], k] = wb[c, v, k]
    for i in range(sparse_feats.shape[0]):
        f = sparse_feats[i]
        z = default[f]
        for k in range(k_stats):
            acc = 0.0
            for b in range(nbins):
                acc += h[f, b, k]
            h[f, z, k] = tot[k] - acc


@njit(cache=True, nogil=True)
def _row_chunks(starts, ends, size):  # pragma: no cover
    """Chunks of ``size`` positions of every node: (p0, p1, first chunk of each node +
    total)."""
    nb = starts.shape[0]
    first = np.zeros(nb + 1, dtype=np.int64)
    for j in range(nb):
        first[j + 1] = first[j] + (ends[j] - starts[j] + size - 1) // size
    p0 = np.empty(first[nb], dtype=np.int64)
    p1 = np.empty(first[nb], dtype=np.int64)
    for j in range(nb):
        for c in range(first[j], first[j + 1]):
            p0[c] = starts[j] + (c - first[j]) * size
            p1[c] = min(p0[c] + size, ends[j])
    return p0, p1, first


@njit(cache=True, nogil=True)
def _column_tasks(starts, ends, n_columns, fblock, max_row_columns, chunk_rows,
                  max_chunks):  # pragma: no cover
    """The (node, rows ``p0:p1``, columns ``c0:c1``, partial buffer) tasks of one build.

    Few columns (at most ``max_row_columns``): every task reads all columns of a chunk of
    one node's rows; a node of more than ``chunk_rows`` rows is cut into at most
    ``max_chunks`` equal chunks, each summed into its own partial histogram (``part``),
    which :func:`_finish_node` adds in chunk order (``part_first[j]:part_first[j+1]`` are
    node ``j``'s). Many columns: one task per (node, block of ``fblock`` columns) over all
    the node's rows, written in place (``part`` -1). The plan depends on the data's shape
    only, never on the number of threads.
    """
    nb = starts.shape[0]
    row_tasks = n_columns <= max_row_columns
    count = np.empty(nb, dtype=np.int64)
    size = np.empty(nb, dtype=np.int64)
    n_blocks = (n_columns + fblock - 1) // fblock
    for j in range(nb):
        m = ends[j] - starts[j]
        if row_tasks:
            size[j] = max(chunk_rows, (m + max_chunks - 1) // max_chunks)
            count[j] = max(1, (m + size[j] - 1) // size[j])
        else:
            size[j] = max(m, 1)
            count[j] = n_blocks
    n_tasks = count.sum()
    node = np.empty(n_tasks, dtype=np.int64)
    p0 = np.empty(n_tasks, dtype=np.int64)
    p1 = np.empty(n_tasks, dtype=np.int64)
    c0 = np.empty(n_tasks, dtype=np.int64)
    c1 = np.empty(n_tasks, dtype=np.int64)
    part = np.full(n_tasks, -1, dtype=np.int64)
    part_first = np.zeros(nb + 1, dtype=np.int64)
    t = 0
    for j in range(nb):
        split = row_tasks and count[j] > 1
        part_first[j + 1] = part_first[j] + (count[j] if split else 0)
        for i in range(count[j]):
            node[t] = j
            if row_tasks:
                p0[t] = starts[j] + i * size[j]
                p1[t] = min(p0[t] + size[j], ends[j])
                c0[t], c1[t] = 0, n_columns
                if split:
                    part[t] = part_first[j] + i
            else:
                p0[t], p1[t] = starts[j], ends[j]
                c0[t] = i * fblock
                c1[t] = min(c0[t] + fblock, n_columns)
            t += 1
    return node, p0, p1, c0, c1, part, part_first


@njit(cache=True, nogil=True)
def _row_task(rcodes, roff, ordered, order, p0, p1, nd, hd, dslots, hb, bvalues
              ):  # pragma: no cover
    """Every column's histogram over the rows ``order[p0:p1]`` from the row-major codes
    (:class:`~dpexp.trees.binning.RowCodes`: ``rcodes[r, c]`` is row ``r``'s bin in one
    flat histogram, column ``c`` owning bins ``roff[c]:roff[c+1]``), then written out as
    :func:`_column_task` writes them: dense feature ``i < nd`` into ``hd[dslots[i]]``
    (all its bins), bundle ``c`` into ``hb[c]`` (its ``bvalues[c]`` values). Every bin
    sums its rows in the same order as the column kernel, so the histograms are the same
    bit for bit."""
    k_stats = hd.shape[2]
    stored = ordered.shape[0]
    buf = np.zeros(roff[roff.shape[0] - 1] * k_stats)
    n_col = rcodes.shape[1]
    rows = order[p0:p1]  # indexed from 0, row ids unsigned: see the dense section
    if k_stats == 2:  # the GBDT case: two scalars per row, no inner k loop
        unit = stored == 1
        og = ordered[0, p0:p1]
        oh = ordered[stored - 1, p0:p1]
        for p in range(p1 - p0):
            row = rcodes[np.uint64(rows[p])]
            gp = og[p]
            hp = 1.0 if unit else oh[p]
            for c in range(n_col):
                t = 2 * np.intp(row[c])
                buf[t] += gp
                buf[t + 1] += hp
    else:
        stat = ordered[:, p0:p1]
        for p in range(p1 - p0):
            row = rcodes[np.uint64(rows[p])]
            for c in range(n_col):
                t = k_stats * np.intp(row[c])
                for k in range(stored):
                    buf[t + k] += stat[k, p]
                if stored < k_stats:
                    buf[t + k_stats - 1] += 1.0
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
            h[v, k] = buf[(a + v) * k_stats + k] if a + v < b else 0.0


@njit(cache=True, nogil=True)
def _column_task(codes, bcodes, feats, bfeats, ordered, order, p0, p1, c0, c1, hd, dslots,
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


@njit(cache=True, nogil=True)
def _add_parts(parts, h):  # pragma: no cover
    """``h (B, K) = parts[0] + parts[1] + ...``, in that order."""
    for b in range(h.shape[0]):
        for k in range(h.shape[1]):
            acc = parts[0, b, k]
            for q in range(1, parts.shape[0]):
                acc += parts[q, b, k]
            h[b, k] = acc


@njit(cache=True, nogil=True)
def _finish_node(j, out, slots, feats, wb, part_d, part_b, part_first, vfeat, vcode,
                 bvalues, sparse_feats, default, sparse_bins, ordered, starts, ends, bufs,
                 chunk_first):  # pragma: no cover
    """Node ``j``'s partial histograms (row chunks) added in chunk order, then its sparse
    features from bundles or row-sparse lists."""
    h = out[slots[j]]
    q0, q1 = part_first[j], part_first[j + 1]
    if q1 > q0:
        for i in range(feats.shape[0]):
            _add_parts(part_d[q0:q1, i], h[feats[i]])
        for c in range(part_b.shape[1]):
            _add_parts(part_b[q0:q1, c, :bvalues[c]], wb[j, c, :bvalues[c]])
    if sparse_feats.shape[0] == 0:
        return
    if wb.shape[1] > 0:
        _unpack_bundles(wb[j], vfeat, vcode, bvalues, sparse_feats, default, sparse_bins, h)
    else:
        _sparse_reduce(bufs, chunk_first[j], chunk_first[j + 1], sparse_feats, default,
                       ordered, starts[j], ends[j], h)


@njit(cache=True, nogil=True)
def _hist_plan(starts, ends, out, feats, bcodes, bvalues, indptr, sparse_feats, sparse_bins,
               k_stats, sizes):  # pragma: no cover
    """Gather chunks, column tasks and every buffer of one build (``sizes``: fblock,
    max_row_columns, chunk_rows, max_chunks, gather_rows, sparse_chunk_rows, gathered).
    Bundle buffers hold the values the bundles use (adult: 34 of 256), not all 256."""
    nb = starts.shape[0]
    n_bundles = bcodes.shape[1]
    b_width = bvalues.max() if n_bundles > 0 else 0
    g0, g1, _ = _row_chunks(starts, ends, sizes[4])
    if sizes[6]:  # the caller keeps the statistics gathered (and partitioned) already
        g0, g1 = g0[:0], g1[:0]
    tasks = _column_tasks(starts, ends, feats.shape[0] + n_bundles, sizes[0], sizes[1],
                          sizes[2], sizes[3])
    n_parts = tasks[6][nb]
    # partial histograms of the dense features, by position in feats (not feature id)
    part_d = np.empty((n_parts if feats.shape[0] > 0 else 0, feats.shape[0], out.shape[2],
                       k_stats))
    part_b = np.empty((n_parts if n_bundles > 0 else 0, n_bundles, b_width, k_stats))
    wb = np.empty((nb if n_bundles > 0 else 0, n_bundles, b_width, k_stats))
    lists = n_bundles == 0 and sparse_feats.shape[0] > 0 and indptr.shape[0] > 0
    ch0, ch1, chf = _row_chunks(starts, ends, sizes[5])
    if not lists:
        ch0, ch1 = ch0[:0], ch1[:0]
    bufs = np.empty((ch0.shape[0], sparse_feats.shape[0] if lists else 0, sparse_bins,
                     k_stats))
    return g0, g1, tasks, part_d, part_b, wb, ch0, ch1, chf, bufs


@njit(cache=True, nogil=True)
def _hist_task(t, codes, order, out, slots, ordered, feats, bcodes, bvalues, indptr, feat,
               code, t_node, t_p0, t_p1, t_c0, t_c1, t_part, part_d, part_b, wb, ch0, ch1,
               bufs, rcodes, roff):  # pragma: no cover
    """Task ``t`` of a build's plan (:func:`_hist_plan`): a column task, into the node's
    histogram or a partial sum of it, or past those a chunk of the row-sparse lists."""
    n_col = t_node.shape[0]
    if t >= n_col:
        c = t - n_col
        _sparse_chunk(indptr, feat, code, ordered, order, ch0[c], ch1[c], bufs[c])
        return
    j, q = t_node[t], t_part[t]
    bfeats = np.arange(bcodes.shape[1])
    if q < 0:  # all of the node's rows: straight into its histogram
        _column_task(codes, bcodes, feats, bfeats, ordered, order, t_p0[t], t_p1[t],
                     t_c0[t], t_c1[t], out[slots[j]], feats, wb[j], bvalues, rcodes, roff)
    else:  # a chunk of them: into a partial sum, dense features by position
        _column_task(codes, bcodes, feats, bfeats, ordered, order, t_p0[t], t_p1[t],
                     t_c0[t], t_c1[t], part_d[q], np.arange(feats.shape[0]), part_b[q],
                     bvalues, rcodes, roff)


@njit(parallel=True, cache=True, nogil=True)
def _hist_par(codes, stats, order, starts, ends, out, slots, ordered, feats, bcodes, vfeat,
              vcode, bvalues, indptr, feat, code, default, sparse_feats, sparse_bins, rcodes,
              roff, sizes):  # pragma: no cover
    g0, g1, tasks, part_d, part_b, wb, ch0, ch1, chf, bufs = _hist_plan(
        starts, ends, out, feats, bcodes, bvalues, indptr, sparse_feats, sparse_bins,
        out.shape[3], sizes)
    t_node, t_p0, t_p1, t_c0, t_c1, t_part, part_first = tasks
    for g in prange(g0.shape[0]):
        _gather(stats, order, g0[g], g1[g], ordered)
    for t in prange(t_node.shape[0] + ch0.shape[0]):
        _hist_task(t, codes, order, out, slots, ordered, feats, bcodes, bvalues, indptr, feat,
                   code, t_node, t_p0, t_p1, t_c0, t_c1, t_part, part_d, part_b, wb, ch0, ch1,
                   bufs, rcodes, roff)
    for j in prange(starts.shape[0]):
        _finish_node(j, out, slots, feats, wb, part_d, part_b, part_first, vfeat, vcode,
                     bvalues, sparse_feats, default, sparse_bins, ordered, starts, ends, bufs,
                     chf)


@njit(cache=True, nogil=True)
def _hist_ser(codes, stats, order, starts, ends, out, slots, ordered, feats, bcodes, vfeat,
              vcode, bvalues, indptr, feat, code, default, sparse_feats, sparse_bins, rcodes,
              roff, sizes):  # pragma: no cover
    """:func:`_hist_par` on one thread: the same tasks, the same sums."""
    g0, g1, tasks, part_d, part_b, wb, ch0, ch1, chf, bufs = _hist_plan(
        starts, ends, out, feats, bcodes, bvalues, indptr, sparse_feats, sparse_bins,
        out.shape[3], sizes)
    t_node, t_p0, t_p1, t_c0, t_c1, t_part, part_first = tasks
    for g in range(g0.shape[0]):
        _gather(stats, order, g0[g], g1[g], ordered)
    for t in range(t_node.shape[0] + ch0.shape[0]):
        _hist_task(t, codes, order, out, slots, ordered, feats, bcodes, bvalues, indptr, feat,
                   code, t_node, t_p0, t_p1, t_c0, t_c1, t_part, part_d, part_b, wb, ch0, ch1,
                   bufs, rcodes, roff)
    for j in range(starts.shape[0]):
        _finish_node(j, out, slots, feats, wb, part_d, part_b, part_first, vfeat, vcode,
                     bvalues, sparse_feats, default, sparse_bins, ordered, starts, ends, bufs,
                     chf)


_NO_CODES = np.zeros((0, 0), dtype=np.uint8, order="F")


@dataclass(frozen=True)
class DenseLayout:
    """The kernel arguments that depend on a dense binned table only (its dense features,
    bundles or row-sparse lists, its row-major codes): made once per fit, not once per
    histogram build. ``fblock``: columns per task of a column-task build
    (:func:`feature_block`)."""

    feats: np.ndarray
    bundles: tuple
    lists: tuple
    tail: tuple
    per_row: float
    fblock: int
    rows: tuple

    @property
    def n_columns(self) -> int:
        return int(self.feats.size + self.bundles[0].shape[1])


def dense_layout(codes, sparse_codes=None, row_codes=None) -> DenseLayout:
    """:class:`DenseLayout` of ``codes (n, d)`` with its
    :class:`~dpexp.trees.binning.SparseFeatureCodes` (None: every feature dense) and
    optionally its :class:`~dpexp.trees.binning.RowCodes` (tasks over every column of a
    node's rows then read those: the same histograms, faster)."""
    sc = sparse_codes
    no_bundles = (_NO_CODES, np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1), dtype=np.uint8),
                  _NO_INT)
    no_lists = (_NO_INT, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint8))
    if sc is None:
        feats = np.arange(codes.shape[1], dtype=np.int64)
        parts = (feats, no_bundles, no_lists,
                 (np.zeros(codes.shape[1], dtype=np.uint8), _NO_INT, 1), feats.size)
    elif sc.n_bundles:
        parts = (sc.dense_features,
                 (sc.bundle_codes, sc.bundle_feature, sc.bundle_code, sc.bundle_values),
                 no_lists, (sc.default_bin, sc.sparse_features, sc.sparse_bins),
                 sc.dense_features.size + sc.n_bundles)
    else:
        parts = (sc.dense_features, no_bundles, (sc.indptr, sc.feature, sc.code),
                 (sc.default_bin, sc.sparse_features, sc.sparse_bins),
                 sc.dense_features.size + sc.mean_nnz)
    n_columns = parts[0].size + parts[1][0].shape[1]
    rows = (np.zeros((0, 0), dtype=np.uint8), np.zeros(1, dtype=np.int64))  # none
    if row_codes is not None:
        if row_codes.n_columns != n_columns or row_codes.codes.shape[0] != codes.shape[0]:
            raise ValueError(f"row codes of shape {row_codes.codes.shape} do not fit a table "
                             f"of {codes.shape[0]} rows and {n_columns} histogram columns")
        rows = (row_codes.codes, row_codes.offset)
    return DenseLayout(*parts, fblock=feature_block(n_columns), rows=rows)


def dense_hist_into(codes, stats, order, starts, ends, out, slots, *, sparse_codes=None,
                    scratch=None, fblock=None, gathered=False, unit_last=False,
                    layout: DenseLayout | None = None, n_rows: int | None = None) -> None:
    """Write the histogram of node ``j`` (rows ``order[starts[j]:ends[j]]``) into
    ``out[slots[j]]`` from dense ``codes (n, d)`` (column-major is fastest).

    ``sparse_codes``: the data's :class:`~dpexp.trees.binning.SparseFeatureCodes` (its
    sparse features are histogrammed from bundles or row-sparse lists, the others from
    ``codes``), or its :func:`dense_layout` as ``layout``; ``scratch``: optional ``(K,
    len(order))`` float64 buffer for the gathered statistics, reused across calls;
    ``gathered``: ``scratch[:, p]`` already holds ``stats[order[p]]`` for the nodes'
    positions (:func:`partition_dense` keeps it so), the build then reads the statistics
    in order only; ``unit_last``: the last statistic is 1 for every row (e.g. unit
    hessians), so it is counted, never stored or read (``scratch`` then has ``K - 1``
    rows). Bins of a sparse feature at or past ``sparse_bins`` (which bounds its codes)
    are not written: ``out`` must hold zeros there, as a zeroed buffer does. ``n_rows``:
    the nodes' rows in all, when the caller has it already.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    stored = stats.shape[1] - int(bool(unit_last))
    if out.shape[3] != stats.shape[1]:
        raise ValueError(f"out has {out.shape[3]} statistics, stats {stats.shape[1]}")
    if scratch is None or scratch.shape != (stored, order.shape[0]):
        if gathered:
            raise ValueError("gathered=True needs the (K, len(order)) scratch it refers to")
        scratch = np.empty((stored, order.shape[0]))
    lay = dense_layout(codes, sparse_codes) if layout is None else layout
    fb = lay.fblock if fblock is None else int(fblock)
    sizes = np.array([fb, ROW_TASK_MAX_COLUMNS, HIST_CHUNK_ROWS, HIST_MAX_CHUNKS, GATHER_ROWS,
                      SPARSE_CHUNK_ROWS, int(gathered)], dtype=np.int64)
    if n_rows is None:
        n_rows = int((ends - starts).sum())
    parallel = use_parallel(int(n_rows * lay.per_row), HIST_PARALLEL_MIN_WORK)
    (_hist_par if parallel else _hist_ser)(
        codes, stats, order, starts, ends, out, np.asarray(slots, dtype=np.int64), scratch,
        lay.feats, *lay.bundles, *lay.lists, *lay.tail, *lay.rows, sizes)


def build_hist_dense(codes, stats, order, starts, ends, n_bins, fblock=None, *,
                     sparse_codes=None, unit_last=False, row_codes=None):
    """Histograms ``(len(starts), d, n_bins, K)`` of the nodes over dense ``codes``
    (``row_codes``: see :func:`dense_layout`)."""
    nb = np.asarray(starts).shape[0]
    out = np.zeros((nb, codes.shape[1], n_bins, stats.shape[1]))
    dense_hist_into(codes, np.ascontiguousarray(stats, dtype=np.float64), order, starts, ends,
                    out, np.arange(nb), fblock=fblock, unit_last=unit_last,
                    layout=dense_layout(codes, sparse_codes, row_codes))
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
def _subtract_one(parent, p, out, small, big, n_bins):  # pragma: no cover
    for f in range(out.shape[1]):
        for b in range(n_bins[f]):
            for k in range(out.shape[3]):
                out[big, f, b, k] = parent[p, f, b, k] - out[small, f, b, k]


@njit(parallel=True, cache=True, nogil=True)
def _subtract_par(parent, pidx, out, small, big, n_bins):  # pragma: no cover
    for i in prange(small.shape[0]):
        _subtract_one(parent, pidx[i], out, small[i], big[i], n_bins)


@njit(cache=True, nogil=True)
def _subtract_ser(parent, pidx, out, small, big, n_bins):  # pragma: no cover
    for i in range(small.shape[0]):
        _subtract_one(parent, pidx[i], out, small[i], big[i], n_bins)


def subtract_siblings(parent, out, small, big, parent_index=None, n_bins=None,
                      n_bins_total=None) -> None:
    """``out[big[i]] = parent[parent_index[i]] - out[small[i]]`` (``parent_index``
    defaults to ``i``): the larger child of split ``i`` from its parent and its built
    smaller sibling (no temporary arrays). ``n_bins[f]``: only bins below it are
    subtracted (default: all); the others of ``out[big[i]]`` are left as they are.
    ``n_bins_total``: ``sum(n_bins)``, when the caller has it already."""
    pidx = (np.arange(small.shape[0], dtype=np.int64) if parent_index is None
            else np.asarray(parent_index, dtype=np.int64))
    n_bins = (np.full(out.shape[1], out.shape[2], dtype=np.int64) if n_bins is None
              else np.minimum(np.asarray(n_bins, dtype=np.int64), out.shape[2]))
    if small.shape[0] > 1 and use_parallel(
            int(n_bins.sum() if n_bins_total is None else n_bins_total) * out.shape[3]
            * small.shape[0], LEVEL_PARALLEL_MIN_WORK):
        _subtract_par(parent, pidx, out, small, big, n_bins)
    else:
        _subtract_ser(parent, pidx, out, small, big, n_bins)


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
def level_children(hist, totals, features, bins, starts, ends, n_left):  # pragma: no cover
    """The bookkeeping of one depth after its split decisions, in one compiled call.

    Node ``j`` (rows ``starts[j]:ends[j]``) splits on ``(features[j], bins[j])`` or is a
    leaf (feature -1); ``n_left[j]``: its rows going left, as a partition returns them,
    or an empty array to take them from the left child's last statistic (a row count:
    unit last statistic, no partition). Returns ``(js, closed, child_starts,
    child_ends, child_totals, small, big, small_rows)``: the split nodes, the leaf nodes,
    the children's row ranges and :func:`child_totals` (left then right per split), per
    split the child to build (the one with fewer rows; ties: the left) and its sibling
    (by subtraction), and the rows of the children to build."""
    nb = features.shape[0]
    n_split = 0
    for j in range(nb):
        n_split += features[j] >= 0
    js = np.empty(n_split, dtype=np.int64)
    closed = np.empty(nb - n_split, dtype=np.int64)
    a = 0
    for j in range(nb):
        if features[j] >= 0:
            js[a] = j
            a += 1
        else:
            closed[j - a] = j
    c_totals = child_totals(hist, totals, js, features[js], bins[js])
    c_starts = np.empty(2 * n_split, dtype=np.int64)
    c_ends = np.empty(2 * n_split, dtype=np.int64)
    small = np.empty(n_split, dtype=np.int64)
    last = totals.shape[1] - 1
    small_rows = 0
    for i in range(n_split):
        j = js[i]
        s, e = starts[j], ends[j]
        mid = s + (n_left[j] if n_left.shape[0] else np.int64(np.rint(c_totals[2 * i, last])))
        c_starts[2 * i], c_ends[2 * i] = s, mid
        c_starts[2 * i + 1], c_ends[2 * i + 1] = mid, e
        right = e - mid < mid - s
        small[i] = 2 * i + (1 if right else 0)
        small_rows += (e - mid) if right else (mid - s)
    return js, closed, c_starts, c_ends, c_totals, small, small ^ 1, small_rows


@njit(cache=True, nogil=True)
def is_sorted(a):  # pragma: no cover
    """Whether ``a`` is non-decreasing."""
    bad = 0
    for i in range(1, a.shape[0]):  # no early exit: vectorised, and rows are mostly sorted
        bad += a[i] < a[i - 1]
    return bad == 0


# ----------------------------------------------------------------------------- partition


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
    rows, marks = order[lo:hi], mask[lo:hi]  # indexed from 0: see the dense section
    if k_stats == 2:  # the GBDT case (gradient, hessian): no inner loop, 28% faster
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


@njit(cache=True, nogil=True)
def _chunk_nodes(first):  # pragma: no cover
    node = np.empty(first[-1], dtype=np.int64)
    for j in range(first.shape[0] - 1):
        node[first[j]:first[j + 1]] = j
    return node


@njit(parallel=True, cache=True, nogil=True)
def _partition_par(codes, order, ordered, starts, ends, features, bins, chunk, mask, out,
                   out_ordered):  # pragma: no cover
    """Stable partition of every node's rows (and of their gathered statistics
    ``ordered``, when it has columns) into ``codes[:, f] <= b`` first, written to ``out``
    / ``out_ordered`` at the same positions. Nodes are cut into chunks of ``chunk`` rows:
    each chunk marks its rows (in parallel), then writes them to their places (in
    parallel). A stable partition has one result, whatever the threads."""
    p0, p1, first = _row_chunks(starts, ends, chunk)
    node = _chunk_nodes(first)
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
    p0, p1, first = _row_chunks(starts, ends, chunk)
    node = _chunk_nodes(first)
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
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if mask is None or mask.shape != order.shape:
        mask = np.empty(order.shape[0], dtype=np.uint8)
    if ordered is None:
        ordered = out_ordered = np.empty((0, order.shape[0]))
    kernel = (_partition_par if use_parallel(int((ends - starts).sum()),
                                             PARTITION_PARALLEL_MIN_ROWS) else _partition_ser)
    return kernel(codes, order, ordered, starts, ends, np.asarray(features, dtype=np.int64),
                  np.asarray(bins, dtype=np.int64), PARTITION_CHUNK_ROWS, mask, out,
                  out_ordered)


@njit(cache=True, nogil=True)
def _partition_in_place(codes, order, starts, ends, features, bins):  # pragma: no cover
    nb = starts.shape[0]
    n_left = np.zeros(nb, dtype=np.int64)
    width = 0
    for j in range(nb):
        width = max(width, ends[j] - starts[j])
    buf = np.empty(width, dtype=order.dtype)
    for j in range(nb):
        s, e, f, b = starts[j], ends[j], features[j], bins[j]
        if f < 0:
            n_left[j] = e - s
            continue
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
        n_left[j] = nl
    return n_left


def partition_dense(codes, order, starts, ends, features, bins) -> np.ndarray:
    """:func:`partition_rows` in place (``order`` itself is partitioned), on one thread
    in one pass: the fastest way for a table that fits in cache."""
    return _partition_in_place(codes, order, np.asarray(starts, dtype=np.int64),
                               np.asarray(ends, dtype=np.int64),
                               np.asarray(features, dtype=np.int64),
                               np.asarray(bins, dtype=np.int64))


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
    if use_parallel(hist.size, LEVEL_PARALLEL_MIN_WORK):
        _gains_par(hist, float(lam), n_valid, out)
    else:
        _gains_ser(hist, float(lam), n_valid, out)
    return out


@njit(cache=True, nogil=True)
def _best_block(hist, lam, n_valid, mcw, mcc, counts, totals, j, f0, f1, best_gain,
                best_bin):  # pragma: no cover
    """Best (gain, bin) of the features ``f0:f1`` of node ``j`` into ``best_gain[j, f]``,
    ``best_bin[j, f]``; (-inf, -1) when none is valid. The parent's sums are
    ``totals[j]`` when given (every feature then sees the same parent), else each
    feature's own bin sums. One call per block of features: a call per (node, feature)
    cost more than the search of a binary feature itself."""
    n_bins = hist.shape[2]
    use_counts = counts.shape[0] > 0
    use_totals = totals.shape[0] > 0
    gt = totals[j, 0] if use_totals else 0.0
    ht = totals[j, 1] if use_totals else 0.0
    for f in range(f0, f1):
        if not use_totals:
            gt = 0.0
            ht = 0.0
            for b in range(n_bins):
                gt += hist[j, f, b, 0]
                ht += hist[j, f, b, 1]
        ct = ht
        if use_counts:
            ct = 0.0
            for b in range(n_bins):
                ct += counts[j, f, b]
        parent = gt * gt / (ht + lam)
        gl = 0.0
        hl = 0.0
        cl = 0.0
        best = -np.inf
        arg = -1
        for b in range(n_valid[f]):
            gl += hist[j, f, b, 0]
            hl += hist[j, f, b, 1]
            cl = cl + counts[j, f, b] if use_counts else hl
            hr = ht - hl
            cr = ct - cl
            gr = gt - gl
            gain = gl * gl / (hl + lam) + gr * gr / (hr + lam) - parent
            bad = (hl < mcw) | (hr < mcw) | (cl < mcc) | (cr < mcc)
            if (not bad) & (gain > best):  # one branch, mostly not taken
                best = gain
                arg = b
        best_gain[j, f] = best
        best_bin[j, f] = arg


@njit(cache=True, nogil=True)
def _reduce_best(best_gain, best_bin, min_gain):  # pragma: no cover
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
        if not gains[j] > min_gain:
            feat[j] = -1
            bins[j] = -1
    return feat, bins, gains


@njit(parallel=True, cache=True, nogil=True)
def _best_par(hist, lam, n_valid, mcw, mcc, counts, totals, fblock, min_gain
              ):  # pragma: no cover
    nb, d = hist.shape[0], hist.shape[1]
    best_gain = np.empty((nb, d))
    best_bin = np.empty((nb, d), dtype=np.int64)
    n_blocks = (d + fblock - 1) // fblock
    for task in prange(nb * n_blocks):
        j = task // n_blocks
        f0 = (task % n_blocks) * fblock
        _best_block(hist, lam, n_valid, mcw, mcc, counts, totals, j, f0, min(f0 + fblock, d),
                    best_gain, best_bin)
    return _reduce_best(best_gain, best_bin, min_gain)


@njit(cache=True, nogil=True)
def _best_ser(hist, lam, n_valid, mcw, mcc, counts, totals, fblock, min_gain
              ):  # pragma: no cover
    nb, d = hist.shape[0], hist.shape[1]
    best_gain = np.empty((nb, d))
    best_bin = np.empty((nb, d), dtype=np.int64)
    for j in range(nb):
        _best_block(hist, lam, n_valid, mcw, mcc, counts, totals, j, 0, d, best_gain,
                    best_bin)
    return _reduce_best(best_gain, best_bin, min_gain)


_NO_TOTALS = np.zeros((0, 2))


def best_splits(hist, lam, n_valid, min_child_weight, min_child_count, counts, totals=None,
                min_gain=-np.inf, n_valid_total=None):
    """Greedy (non-private) best candidate per node with its gain improvement.

    Improvement = G(I_L, I_R) - (sum g)^2 / (H + lambda) (Eq. 3 minus the parent term).
    Children must have hessian sum >= ``min_child_weight`` and, when ``counts`` (a
    ``(nb, d, B)`` count histogram, or an empty array meaning "hessian = count") is given,
    at least ``min_child_count`` rows. ``totals (nb, 2)``: the nodes' (gradient, hessian)
    sums, the parent of every candidate (default: each feature's own bin sums; both are
    the node's sums, up to rounding). Returns (feature, bin, improvement); feature (and
    bin) -1 when no valid candidate improves by more than ``min_gain``. Ties go to the
    lowest feature, then the lowest bin. ``n_valid_total``: ``sum(n_valid)``, when the
    caller has it already.
    """
    hist = np.ascontiguousarray(hist, dtype=np.float64)
    totals = (_NO_TOTALS if totals is None
              else np.ascontiguousarray(np.asarray(totals, dtype=np.float64)[:, :2]))
    if totals.shape[0] not in (0, hist.shape[0]):
        raise ValueError(f"totals has {totals.shape[0]} rows for {hist.shape[0]} nodes")
    args = (hist, float(lam), np.asarray(n_valid, dtype=np.int64), float(min_child_weight),
            float(min_child_count), np.asarray(counts, dtype=np.float64), totals)
    total = int(args[2].sum()) if n_valid_total is None else int(n_valid_total)
    if use_parallel(total * hist.shape[0], SPLIT_PARALLEL_MIN_CANDIDATES):
        return _best_par(*args, FEATURE_BLOCK, float(min_gain))
    return _best_ser(*args, FEATURE_BLOCK, float(min_gain))


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
    every row gets one addition, so the result is the same on any number of threads."""
    rows = int(np.sum(seg_end - seg_start)) if seg_start.size else 0
    kernel = (_add_segments_par if use_parallel(rows, PARTITION_PARALLEL_MIN_ROWS)
              else _add_segments_ser)
    kernel(order, seg_start, seg_end, seg_value, float(scale), out)


@njit(cache=True, nogil=True)
def _score_chunk(codes, order, p0, p1, f, b, add_left, add_right, out):  # pragma: no cover
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


@njit(parallel=True, cache=True, nogil=True)
def _score_par(codes, order, starts, ends, feats, bins, add_left, add_right, chunk,
               out):  # pragma: no cover
    p0, p1, first = _row_chunks(starts, ends, chunk)
    node = _chunk_nodes(first)
    for c in prange(p0.shape[0]):  # segments hold disjoint rows: no two threads meet
        j = node[c]
        _score_chunk(codes, order, p0[c], p1[c], feats[j], bins[j], add_left[j],
                     add_right[j], out)


@njit(cache=True, nogil=True)
def _score_ser(codes, order, starts, ends, feats, bins, add_left, add_right, chunk,
               out):  # pragma: no cover
    for j in range(starts.shape[0]):
        _score_chunk(codes, order, starts[j], ends[j], feats[j], bins[j], add_left[j],
                     add_right[j], out)


def add_split_segments(codes, order, starts, ends, feats, bins, value_left, value_right,
                       scale, out) -> None:
    """``out[r] += scale * v`` for the rows ``r`` of every segment ``order[s:e]``: ``v``
    is ``value_left[j]`` for the rows with ``codes[r, feats[j]] <= bins[j]`` (all of them
    when ``feats[j]`` is -1, a leaf), else ``value_right[j]``. The last depth of a tree
    scores its rows this way without being partitioned; every row gets one addition of
    ``scale * v`` (as :func:`add_leaf_segments`), so threads never change a bit."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    rows = int(np.sum(ends - starts)) if starts.size else 0
    kernel = _score_par if use_parallel(rows, PARTITION_PARALLEL_MIN_ROWS) else _score_ser
    kernel(codes, order, starts, ends, np.asarray(feats, dtype=np.int64),
           np.asarray(bins, dtype=np.int64), float(scale) * np.asarray(value_left, np.float64),
           float(scale) * np.asarray(value_right, np.float64), PARTITION_CHUNK_ROWS, out)


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
