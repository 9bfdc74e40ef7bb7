"""Histograms of the level-wise grower (compiled, numba): dense and column-sparse builds.

Rows of the training set are kept in one ``order`` array partitioned by node (see
:mod:`dpexp.trees.partition`): node ``j`` of a level owns ``order[starts[j]:ends[j]]``.
Histograms have shape ``(n_nodes, n_features, n_bins, K)``: per node x feature x bin the
sum of each of the ``K`` per-row statistics (``stats (n, K)``, e.g. gradient and hessian,
or one-hot class counts).

Two data layouts are supported:

* dense ``codes (n, d)``, column-major, with exclusive bundles or row-sparse lists
  (:class:`dpexp.trees.sparse_features.SparseFeatureCodes`) for its binary/one-hot columns, whose
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
  (:class:`~dpexp.trees.row_codes.RowCodes`) such a task reads those instead: one row's
  columns in one read, its updates spread over every column's bins. With many columns a
  task covers a block of columns over all of a node's rows;
* the columns of exclusive bundles of the sparse features are read like dense columns,
  into a per-node buffer that is then unpacked into the members' histograms;
* or (node, chunk of rows) over row-sparse lists of the sparse features: only the
  non-default entries are scanned, into a per-chunk buffer; a node's chunks are then
  added up in chunk order.

The build is split by concern: :mod:`dpexp.trees.hist_layout` (the table's layout as the
kernels take it), :mod:`dpexp.trees.hist_tasks` (the work of one task),
:mod:`dpexp.trees.hist_plan` (cutting a build into tasks, the serial and parallel runs);
this module holds the entry points and the work-cutting settings. Sums run in the order
the plan fixes, never by the number of threads, so the serial and the parallel kernels
give bit-identical histograms.
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit, prange
from dpexp.trees import parallel as par
from dpexp.trees.hist_layout import DenseLayout, HistPlanSettings, dense_layout
from dpexp.trees.hist_plan import hist_parallel, hist_serial
from dpexp.trees.level_histograms import merged_hist_into

# Work cutting of a build (read at call time, so tests can change them).
SPARSE_CHUNK_ROWS = 8192  # rows per task over the row-sparse lists
ROW_TASK_MAX_COLUMNS = 32  # at most this many columns: row-chunk tasks
HIST_CHUNK_ROWS = 8192  # rows per row-chunk task, at least
HIST_MAX_CHUNKS = 16  # row-chunk tasks (partial histograms) per node, at most
GATHER_ROWS = 16384  # rows per gather task
# A parallel build cuts a node of one row chunk into tasks of this many columns (when the
# table has no row codes, whose tasks read every column): a depth's few small nodes then
# make enough tasks for the threads. Four: the column kernel reads four per pass.
SMALL_NODE_COLUMNS = 4
# Builds of several nodes of a dense column-major table of at least this many codes go
# through the one-pass build in row order (dpexp.trees.level_histograms), when their rows
# make at least MERGED_MIN_WORK_PER_ROW column updates per row of the table.
MERGED_MIN_CODES = 1 << 24
MERGED_MIN_WORK_PER_ROW = 4


def dense_hist_into(codes, stats, order, starts, ends, out, slots, *, sparse_codes=None,
                    scratch=None, fblock=None, gathered=False, unit_last=False,
                    layout: DenseLayout | None = None, n_rows: int | None = None) -> None:
    """Write the histogram of node ``j`` (rows ``order[starts[j]:ends[j]]``) into
    ``out[slots[j]]`` from dense ``codes (n, d)`` (column-major is fastest).

    ``sparse_codes``: the data's :class:`~dpexp.trees.sparse_features.SparseFeatureCodes` (its
    sparse features are histogrammed from bundles or row-sparse lists, the others from
    ``codes``), or its :func:`~dpexp.trees.hist_layout.dense_layout` as ``layout``; ``scratch``: optional ``(K,
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
    settings = plan_settings(lay, fblock, gathered)
    if n_rows is None:
        n_rows = int((ends - starts).sum())
    if _merged_applies(codes, stats, starts, lay, n_rows) and merged_hist_into(
            codes, stats, order, starts, ends, out, slots, lay.feats, unit_last=unit_last,
            fblock=lay.fblock if fblock is None else int(fblock), n_rows=n_rows):
        return
    parallel = par.use_parallel(int(n_rows * lay.per_row), par.HIST_PARALLEL_MIN_WORK)
    (hist_parallel if parallel else hist_serial)(
        codes, stats, order, starts, ends, out, np.asarray(slots, dtype=np.int64), scratch,
        lay.feats, *lay.plain_tuples, settings)


def plan_settings(lay: DenseLayout, fblock: int | None = None,
                  gathered: bool = False, *, threads: int | None = None) -> tuple:
    """The :class:`~dpexp.trees.hist_layout.HistPlanSettings` of a dense build over
    ``lay`` as a plain tuple (the work-cutting settings of this module, read now;
    ``threads``: numba's thread count, when the caller has read it)."""
    return tuple(HistPlanSettings(
        lay.fblock if fblock is None else int(fblock), ROW_TASK_MAX_COLUMNS, HIST_CHUNK_ROWS,
        HIST_MAX_CHUNKS, GATHER_ROWS, SPARSE_CHUNK_ROWS, bool(gathered),
        par.n_threads() if threads is None else threads,
        0 if lay.rows.codes.shape[0] else SMALL_NODE_COLUMNS))


def merged_possible(codes, stats, lay: DenseLayout) -> bool:
    """Whether some build over this table could take the one-pass route of
    :func:`_merged_applies` (its conditions on the table alone; False: no build does)."""
    return (stats.shape[1] == 2 and codes.flags.f_contiguous
            and lay.n_columns > ROW_TASK_MAX_COLUMNS and lay.bundles.codes.shape[1] == 0
            and lay.tail.features.size == 0 and lay.rows.codes.shape[0] == 0
            and codes.shape[0] * lay.n_columns >= MERGED_MIN_CODES)


def _merged_applies(codes, stats, starts, lay: DenseLayout, n_rows: int) -> bool:
    """Whether a build goes through :func:`~dpexp.trees.level_histograms.merged_hist_into`
    (the same histograms): several nodes of a column-major table too large for the caches,
    dense features only, read by column tasks (whose sums run in row order, as the merged
    build's do; row-chunk tasks add partial sums), two statistics, and rows enough that its
    pass over the row ids of the table is small beside the build."""
    return (starts.shape[0] >= 2 and merged_possible(codes, stats, lay)
            and n_rows * lay.n_columns >= MERGED_MIN_WORK_PER_ROW * codes.shape[0])


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
