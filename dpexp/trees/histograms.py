"""Histograms of the level-wise grower (compiled, numba): dense and column-sparse builds.

Rows of the training set are kept in one ``order`` array partitioned by node (see
:mod:`dpexp.trees.partition`): node ``j`` of a level owns ``order[starts[j]:ends[j]]``.
Histograms have shape ``(n_nodes, n_features, n_bins, K)``: per node x feature x bin the
sum of each of the ``K`` per-row statistics (``stats (n, K)``, e.g. gradient and hessian,
or one-hot class counts).

Two data layouts are supported:

* dense ``codes (n, d)``, column-major, with exclusive bundles or row-sparse lists
  (:class:`dpexp.trees.binning.SparseFeatureCodes`) for its binary/one-hot columns, whose
  default bin comes by subtraction from the node totals (:func:`dense_hist_into`);
* column-compressed sparse input: column scans with the zero bin by subtraction
  (:func:`build_hist_sparse`).

:func:`reference_histograms` is the plain-numpy oracle the tests hold the kernels to.

Dense builds. The nodes' statistics are read in row order, ``ordered[k, p] =
stats[order[p], k]``: either gathered by the build itself, or kept so by the grower's
moved-statistics row store, whose partitions move every row's statistics along with it
(random reads of the statistics would otherwise dominate a large build). One build runs
up to three kinds of task side by side:

* column tasks (node, rows, columns): four columns per pass over the rows, so one read
  of ``order`` and of the statistics serves four histograms (they stay in L1) and runs
  of rows falling into one bin -- common when rows are sorted -- make four short
  dependency chains instead of one long one. With few columns (dense features plus
  bundles, at most ``ROW_TASK_MAX_COLUMNS``) a task covers every column of a chunk of a
  node's rows, and a node of more than ``HIST_CHUNK_ROWS`` rows is cut into at most
  ``HIST_MAX_CHUNKS`` chunks whose partial histograms are added in chunk order -- so even
  the root keeps every thread busy. When the table also has row-major codes
  (:class:`~dpexp.trees.binning.RowCodes`) such a task reads those instead: one row's
  columns in one read, its updates spread over every column's bins. With many columns a
  task covers a block of columns over all of a node's rows;
* the columns of exclusive bundles of the sparse features are read like dense columns,
  into a per-node buffer that is then unpacked into the members' histograms;
* or (node, chunk of rows) over row-sparse lists of the sparse features: only the
  non-default entries are scanned, into a per-chunk buffer; a node's chunks are then
  added up in chunk order.

Per-row loops run over views indexed from 0 (``rows = order[s:e]``, ``for p in
range(e - s)``) and index by row id through ``np.uint64(r)``: numba cannot tell that an
index from ``range(s, e)`` or from an int64 array is not negative, and would add the
wraparound arithmetic of negative indices to every such access.

Sparse features get their default bin as the node total minus their other bins. The
plan of a build (chunks, tasks, buffers: :func:`_hist_plan`) depends on the data's shape
alone, and every sum runs in the order that plan fixes, never by the number of threads,
so the serial and the parallel kernels give bit-identical histograms. Settings reach the
kernels as named tuples (:class:`HistPlanSettings`, :class:`Bundles`, ...), which numba
compiles like plain tuples.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from dpexp.trees import parallel as par
from dpexp.trees.level_histograms import merged_hist_into
from dpexp.trees.pair_add import add_pair

# Work cutting of a build (read at call time, so tests can change them).
SPARSE_CHUNK_ROWS = 8192  # rows per task over the row-sparse lists
ROW_TASK_MAX_COLUMNS = 32  # at most this many columns: row-chunk tasks
HIST_CHUNK_ROWS = 8192  # rows per row-chunk task, at least
HIST_MAX_CHUNKS = 16  # row-chunk tasks (partial histograms) per node, at most
GATHER_ROWS = 16384  # rows per gather task
# Builds of several nodes of a dense column-major table of at least this many codes go
# through the one-pass build in row order (dpexp.trees.level_histograms), when their rows
# make at least MERGED_MIN_WORK_PER_ROW column updates per row of the table.
MERGED_MIN_CODES = 1 << 24
MERGED_MIN_WORK_PER_ROW = 4
_NO_INT = np.zeros(0, dtype=np.int64)
_ALL = _NO_INT  # n_values of _dense_features: clear every bin


@njit(cache=True, nogil=True)
def gather_rows(stats, order, ordered):  # pragma: no cover
    """``ordered[k, p] = stats[order[p], k]`` for every position ``p`` of ``order``.
    IN: ``stats``, ``order``; OUT: ``ordered``."""
    _gather(stats, order, 0, order.shape[0], ordered)


@njit(cache=True, nogil=True)
def _gather(stats, order, s, e, ordered):  # pragma: no cover
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


class Bundles(NamedTuple):
    """Exclusive bundles of a table's sparse features
    (:class:`~dpexp.trees.binning.SparseFeatureCodes`): ``codes (n, n_bundles)``, value
    ``v`` of bundle ``c`` is code ``code[c, v]`` of feature ``feature[c, v]`` (-1: none),
    bundle ``c`` uses values ``0 .. values[c]-1``."""

    codes: np.ndarray
    feature: np.ndarray
    code: np.ndarray
    values: np.ndarray


class RowLists(NamedTuple):
    """Row-sparse lists of the sparse features: row ``r``'s non-default entries are
    ``feature[q], code[q]`` for ``q`` in ``indptr[r]:indptr[r+1]``."""

    indptr: np.ndarray
    feature: np.ndarray
    code: np.ndarray


class SparseTail(NamedTuple):
    """The sparse features (``features``), every feature's default bin (``default``,
    got by subtraction from the node total) and a bound of the sparse features' codes
    (``bins``)."""

    default: np.ndarray
    features: np.ndarray
    bins: int


class RowMajor(NamedTuple):
    """Row-major codes (:class:`~dpexp.trees.binning.RowCodes`): ``codes[r, c]`` is row
    ``r``'s bin in one flat histogram, column ``c`` owning bins ``offset[c]:offset[c+1]``
    (``codes`` with no rows: none)."""

    codes: np.ndarray
    offset: np.ndarray


class HistPlanSettings(NamedTuple):
    """How a build cuts its work (see :func:`_column_tasks`); shapes only, never results."""

    fblock: int  # columns per column task
    max_row_columns: int  # at most this many columns: row-chunk tasks over every column
    chunk_rows: int  # rows per row-chunk task, at least
    max_chunks: int  # row-chunk tasks per node, at most
    gather_rows: int  # rows per gather task
    sparse_chunk_rows: int  # rows per task over the row-sparse lists
    gathered: bool  # the caller keeps the statistics gathered in row order already


@njit(cache=True, nogil=True)
def _finish_node(j, out, slots, feats, bundles, tail, ordered, starts, ends, tasks, buffers
                 ):  # pragma: no cover
    """Node ``j``'s partial histograms (row chunks) added in chunk order, then its sparse
    features from bundles or row-sparse lists. IN: the plan's ``buffers``, ``ordered``;
    OUT: ``out[slots[j]]``."""
    part_first = tasks[6]
    part_d, part_b, wb, _, _, chf, bufs = buffers
    bvalues = bundles.values
    h = out[slots[j]]
    q0, q1 = part_first[j], part_first[j + 1]
    if q1 > q0:
        for i in range(feats.shape[0]):
            _add_parts(part_d[q0:q1, i], h[feats[i]])
        for c in range(part_b.shape[1]):
            _add_parts(part_b[q0:q1, c, :bvalues[c]], wb[j, c, :bvalues[c]])
    if tail.features.shape[0] == 0:
        return
    if wb.shape[1] > 0:
        _unpack_bundles(wb[j], bundles.feature, bundles.code, bvalues, tail.features,
                        tail.default, tail.bins, h)
    else:
        _sparse_reduce(bufs, chf[j], chf[j + 1], tail.features, tail.default, ordered,
                       starts[j], ends[j], h)


@njit(cache=True, nogil=True)
def _hist_plan(starts, ends, out, feats, bundles, lists, tail, settings):  # pragma: no cover
    """Gather chunks, column tasks and every buffer of one build. Returns ``(g0, g1)``
    (gather chunks), the :func:`_column_tasks` and the buffers ``(part_d, part_b, wb, ch0,
    ch1, chf, bufs)``. Bundle buffers hold the values the bundles use (adult: 34 of
    256), not all 256."""
    nb = starts.shape[0]
    k_stats = out.shape[3]
    n_bundles = bundles.codes.shape[1]
    b_width = bundles.values.max() if n_bundles > 0 else 0
    g0, g1, _ = par.row_chunks(starts, ends, settings.gather_rows)
    if settings.gathered:  # the caller keeps the statistics gathered (and partitioned)
        g0, g1 = g0[:0], g1[:0]
    tasks = _column_tasks(starts, ends, feats.shape[0] + n_bundles, settings.fblock,
                          settings.max_row_columns, settings.chunk_rows, settings.max_chunks)
    n_parts = tasks[6][nb]
    # partial histograms of the dense features, by position in feats (not feature id)
    part_d = np.empty((n_parts if feats.shape[0] > 0 else 0, feats.shape[0], out.shape[2],
                       k_stats))
    part_b = np.empty((n_parts if n_bundles > 0 else 0, n_bundles, b_width, k_stats))
    wb = np.empty((nb if n_bundles > 0 else 0, n_bundles, b_width, k_stats))
    n_sparse = tail.features.shape[0]
    use_lists = n_bundles == 0 and n_sparse > 0 and lists.indptr.shape[0] > 0
    ch0, ch1, chf = par.row_chunks(starts, ends, settings.sparse_chunk_rows)
    if not use_lists:
        ch0, ch1 = ch0[:0], ch1[:0]
    bufs = np.empty((ch0.shape[0], n_sparse if use_lists else 0, tail.bins, k_stats))
    return (g0, g1), tasks, (part_d, part_b, wb, ch0, ch1, chf, bufs)


@njit(cache=True, nogil=True)
def _hist_task(t, codes, order, out, slots, ordered, feats, bundles, lists, rows, tasks,
               buffers):  # pragma: no cover
    """Task ``t`` of a build's plan (:func:`_hist_plan`): a column task, into the node's
    histogram or a partial sum of it, or past those a chunk of the row-sparse lists.
    IN: everything but ``out`` and ``buffers``, which it writes (its own part only)."""
    t_node, t_p0, t_p1, t_c0, t_c1, t_part, _ = tasks
    part_d, part_b, wb, ch0, ch1, _, bufs = buffers
    n_col = t_node.shape[0]
    if t >= n_col:
        c = t - n_col
        _sparse_chunk(lists.indptr, lists.feature, lists.code, ordered, order, ch0[c], ch1[c],
                      bufs[c])
        return
    j, q = t_node[t], t_part[t]
    bcodes = bundles.codes
    bfeats = np.arange(bcodes.shape[1])
    if q < 0:  # all of the node's rows: straight into its histogram
        _column_task(codes, bcodes, feats, bfeats, ordered, order, t_p0[t], t_p1[t],
                     t_c0[t], t_c1[t], out[slots[j]], feats, wb[j], bundles.values,
                     rows.codes, rows.offset)
    else:  # a chunk of them: into a partial sum, dense features by position
        _column_task(codes, bcodes, feats, bfeats, ordered, order, t_p0[t], t_p1[t],
                     t_c0[t], t_c1[t], part_d[q], np.arange(feats.shape[0]), part_b[q],
                     bundles.values, rows.codes, rows.offset)


@njit(cache=True, nogil=True)
def _as_named(bundles, lists, tail, rows, settings):  # pragma: no cover
    """The named tuples of a build from plain ones (or named ones, unchanged). Callers
    pass plain tuples: numba types a named tuple argument in Python, a few microseconds
    per argument and call -- more than the whole build of a node of a few rows -- and a
    plain tuple in C."""
    return (Bundles(*bundles), RowLists(*lists), SparseTail(*tail), RowMajor(*rows),
            HistPlanSettings(*settings))


@njit(parallel=True, cache=True, nogil=True)
def _hist_par(codes, stats, order, starts, ends, out, slots, ordered, feats, bundles, lists,
              tail, rows, settings):  # pragma: no cover
    """Histograms of the nodes ``order[starts[j]:ends[j]]`` into ``out[slots[j]]``: the
    gathers, then the tasks, then each node's partial sums, each step in parallel.
    IN: ``codes``, ``stats``, ``order``, ``starts``, ``ends``, ``slots``, the layout
    (``feats``, ``bundles``, ``lists``, ``tail``, ``rows``), ``settings``;
    OUT: ``out[slots]``; IN/OUT: ``ordered`` (written by the gathers unless
    ``settings.gathered``)."""
    gathers, tasks, buffers = _hist_plan(starts, ends, out, feats, bundles, lists, tail,
                                         settings)
    g0, g1 = gathers
    for g in prange(g0.shape[0]):
        _gather(stats, order, g0[g], g1[g], ordered)
    for t in prange(tasks[0].shape[0] + buffers[3].shape[0]):
        _hist_task(t, codes, order, out, slots, ordered, feats, bundles, lists, rows, tasks,
                   buffers)
    for j in prange(starts.shape[0]):
        _finish_node(j, out, slots, feats, bundles, tail, ordered, starts, ends, tasks,
                     buffers)


@njit(cache=True, nogil=True)
def _hist_par_plain(codes, stats, order, starts, ends, out, slots, ordered, feats, bundles,
                    lists, tail, rows, settings):  # pragma: no cover
    """:func:`_hist_par` with the layout and ``settings`` as plain tuples (see
    :func:`_as_named`; numba's parallel lowering does not build named tuples itself)."""
    bundles, lists, tail, rows, settings = _as_named(bundles, lists, tail, rows, settings)
    _hist_par(codes, stats, order, starts, ends, out, slots, ordered, feats, bundles, lists,
              tail, rows, settings)


@njit(cache=True, nogil=True)
def _hist_ser(codes, stats, order, starts, ends, out, slots, ordered, feats, bundles, lists,
              tail, rows, settings):  # pragma: no cover
    """:func:`_hist_par` on one thread: the same tasks, the same sums."""
    bundles, lists, tail, rows, settings = _as_named(bundles, lists, tail, rows, settings)
    gathers, tasks, buffers = _hist_plan(starts, ends, out, feats, bundles, lists, tail,
                                         settings)
    g0, g1 = gathers
    for g in range(g0.shape[0]):
        _gather(stats, order, g0[g], g1[g], ordered)
    for t in range(tasks[0].shape[0] + buffers[3].shape[0]):
        _hist_task(t, codes, order, out, slots, ordered, feats, bundles, lists, rows, tasks,
                   buffers)
    for j in range(starts.shape[0]):
        _finish_node(j, out, slots, feats, bundles, tail, ordered, starts, ends, tasks,
                     buffers)


_NO_CODES = np.zeros((0, 0), dtype=np.uint8, order="F")
_NO_BUNDLES = Bundles(_NO_CODES, np.zeros((0, 1), dtype=np.int64),
                      np.zeros((0, 1), dtype=np.uint8), _NO_INT)
_NO_LISTS = RowLists(_NO_INT, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint8))
_NO_ROWS = RowMajor(np.zeros((0, 0), dtype=np.uint8), np.zeros(1, dtype=np.int64))


@dataclass(frozen=True)
class DenseLayout:
    """The kernel arguments that depend on a dense binned table only (its dense features,
    bundles or row-sparse lists, its row-major codes): made once per fit, not once per
    histogram build. ``per_row``: column updates per row (the work of a build);
    ``fblock``: columns per task of a column-task build (:func:`feature_block`)."""

    feats: np.ndarray
    bundles: Bundles
    lists: RowLists
    tail: SparseTail
    per_row: float
    fblock: int
    rows: RowMajor

    @property
    def n_columns(self) -> int:
        return int(self.feats.size + self.bundles.codes.shape[1])

    @cached_property
    def plain_tuples(self) -> tuple[tuple, tuple, tuple, tuple]:
        """``(bundles, lists, tail, rows)`` as plain tuples, the kernels' fast arguments
        (:func:`_as_named`); made once per layout."""
        return tuple(self.bundles), tuple(self.lists), tuple(self.tail), tuple(self.rows)


def dense_layout(codes, sparse_codes=None, row_codes=None) -> DenseLayout:
    """:class:`DenseLayout` of ``codes (n, d)`` with its
    :class:`~dpexp.trees.binning.SparseFeatureCodes` (None: every feature dense) and
    optionally its :class:`~dpexp.trees.binning.RowCodes` (tasks over every column of a
    node's rows then read those: the same histograms, faster)."""
    sc = sparse_codes
    if sc is None:
        feats = np.arange(codes.shape[1], dtype=np.int64)
        parts = (feats, _NO_BUNDLES, _NO_LISTS,
                 SparseTail(np.zeros(codes.shape[1], dtype=np.uint8), _NO_INT, 1), feats.size)
    elif sc.n_bundles:
        parts = (sc.dense_features,
                 Bundles(sc.bundle_codes, sc.bundle_feature, sc.bundle_code, sc.bundle_values),
                 _NO_LISTS, SparseTail(sc.default_bin, sc.sparse_features, sc.sparse_bins),
                 sc.dense_features.size + sc.n_bundles)
    else:
        parts = (sc.dense_features, _NO_BUNDLES, RowLists(sc.indptr, sc.feature, sc.code),
                 SparseTail(sc.default_bin, sc.sparse_features, sc.sparse_bins),
                 sc.dense_features.size + sc.mean_nnz)
    n_columns = parts[0].size + parts[1].codes.shape[1]
    rows = _NO_ROWS
    if row_codes is not None:
        if row_codes.n_columns != n_columns or row_codes.codes.shape[0] != codes.shape[0]:
            raise ValueError(f"row codes of shape {row_codes.codes.shape} do not fit a table "
                             f"of {codes.shape[0]} rows and {n_columns} histogram columns")
        rows = RowMajor(row_codes.codes, row_codes.offset)
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
    positions (the moved-statistics row store keeps it so), the build then reads the
    statistics in order only; ``unit_last``: the last statistic is 1 for every row (e.g.
    unit hessians), so it is counted, never stored or read (``scratch`` then has ``K - 1``
    rows). Bins of a sparse feature at or past ``sparse_bins`` (which bounds its codes)
    are not written: ``out`` must hold zeros there, as a zeroed buffer does. ``n_rows``:
    the nodes' rows in all, when the caller has it already. Builds of several nodes of a
    large wide table (:func:`_merged_applies`) take the one-pass route in row order
    (:func:`~dpexp.trees.level_histograms.merged_hist_into`: the same histograms; it reads
    ``stats`` by row id and leaves ``scratch`` alone).

    IN: ``codes``, ``stats``, ``order``, ``starts``, ``ends``, ``slots``, ``layout``;
    OUT: ``out[slots]``; IN/OUT: ``scratch`` (read when ``gathered``, else written).
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
    settings = HistPlanSettings(
        lay.fblock if fblock is None else int(fblock), ROW_TASK_MAX_COLUMNS, HIST_CHUNK_ROWS,
        HIST_MAX_CHUNKS, GATHER_ROWS, SPARSE_CHUNK_ROWS, bool(gathered))
    if n_rows is None:
        n_rows = int((ends - starts).sum())
    if _merged_applies(codes, stats, starts, lay, n_rows) and merged_hist_into(
            codes, stats, order, starts, ends, out, slots, lay.feats, unit_last=unit_last,
            fblock=lay.fblock if fblock is None else int(fblock), n_rows=n_rows):
        return
    parallel = par.use_parallel(int(n_rows * lay.per_row), par.HIST_PARALLEL_MIN_WORK)
    (_hist_par_plain if parallel else _hist_ser)(
        codes, stats, order, starts, ends, out, np.asarray(slots, dtype=np.int64), scratch,
        lay.feats, *lay.plain_tuples, tuple(settings))


def _merged_applies(codes, stats, starts, lay: DenseLayout, n_rows: int) -> bool:
    """Whether a build goes through :func:`~dpexp.trees.level_histograms.merged_hist_into`
    (the same histograms): several nodes of a column-major table too large for the caches,
    dense features only, read by column tasks (whose sums run in row order, as the merged
    build's do; row-chunk tasks add partial sums), two statistics, and rows enough that its
    pass over the row ids of the table is small beside the build."""
    n_total = codes.shape[0]
    return (starts.shape[0] >= 2 and stats.shape[1] == 2 and codes.flags.f_contiguous
            and lay.n_columns > ROW_TASK_MAX_COLUMNS and lay.bundles.codes.shape[1] == 0
            and lay.tail.features.size == 0 and lay.rows.codes.shape[0] == 0
            and n_total * lay.n_columns >= MERGED_MIN_CODES
            and n_rows * lay.n_columns >= MERGED_MIN_WORK_PER_ROW * n_total)


def build_hist_dense(codes, stats, order, starts, ends, n_bins, fblock=None, *,
                     sparse_codes=None, unit_last=False, row_codes=None):
    """Histograms ``(len(starts), d, n_bins, K)`` of the nodes over dense ``codes``
    (``row_codes``: see :func:`dense_layout`). All arguments are IN."""
    nb = np.asarray(starts).shape[0]
    out = np.zeros((nb, codes.shape[1], n_bins, stats.shape[1]))
    dense_hist_into(codes, np.ascontiguousarray(stats, dtype=np.float64), order, starts, ends,
                    out, np.arange(nb), fblock=fblock, unit_last=unit_last,
                    layout=dense_layout(codes, sparse_codes, row_codes))
    return out


def reference_histograms(codes, stats, order, starts, ends, n_bins) -> np.ndarray:
    """The plain-numpy oracle of the histogram kernels (tests only: slow, obviously
    right): ``out[j, f, b, k]`` = sum of ``stats[r, k]`` over the rows ``r`` of
    ``order[starts[j]:ends[j]]`` with ``codes[r, f] == b``. ``codes``: a dense ``(n,
    d)`` array. Sums are in row order per bin, as ``np.add.at`` adds, so they may differ
    from the kernels' in the last bits; compare with a tolerance."""
    codes = np.asarray(codes)
    stats = np.asarray(stats, dtype=np.float64)
    out = np.zeros((len(starts), codes.shape[1], n_bins, stats.shape[1]))
    for j, (s, e) in enumerate(zip(starts, ends, strict=True)):
        rows = np.asarray(order[s:e], dtype=np.int64)
        for f in range(codes.shape[1]):
            np.add.at(out[j, f], codes[rows, f].astype(np.int64), stats[rows])
    return out


@njit(parallel=True, cache=True, nogil=True)
def build_hist_sparse(
    indptr, rows, values, zero_bin, stats, order, starts, ends, n_rows, n_bins
):  # pragma: no cover
    """Histograms ``(len(starts), d, n_bins, K)`` of the nodes ``order[starts[j]:ends[j]]``
    over column-compressed codes (``indptr``, ``rows``, ``values``); implicit zeros go to
    ``zero_bin[f]``, by subtraction from the node totals. All arguments are IN."""
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


@njit(cache=True, nogil=True)
def node_totals(stats, order, s, e):  # pragma: no cover
    """Column sums of ``stats[order[s:e]]`` without the gathered copy (all IN)."""
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


def feature_block(n_features: int) -> int:
    """Features per dense histogram task: even (the kernel reads features in pairs and
    fours), about four tasks per thread for one node, at most :data:`~dpexp.trees.parallel.FEATURE_BLOCK`."""
    per_task = -(-n_features // (4 * par.n_threads()))
    return int(min(par.FEATURE_BLOCK, max(2, per_task + per_task % 2)))

