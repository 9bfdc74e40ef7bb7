"""The plan of a dense histogram build and its serial and parallel runs (compiled, numba).

One build runs up to three kinds of task side by side (:mod:`dpexp.trees.hist_tasks`):

* column tasks (node, rows, columns): with few columns (dense features plus bundles, at
  most ``max_row_columns``) a task covers every column of a chunk of a node's rows, and
  a node of more than ``chunk_rows`` rows is cut into at most ``max_chunks`` chunks whose
  partial histograms are added in chunk order -- so even the root keeps every thread
  busy. With many columns a task covers a block of columns over all of a node's rows;
* the columns of exclusive bundles of the sparse features are read like dense columns,
  into a per-node buffer that is then unpacked into the members' histograms
  (:func:`_unpack_bundles`);
* or (node, chunk of rows) over row-sparse lists of the sparse features: only the
  non-default entries are scanned, into a per-chunk buffer; a node's chunks are then
  added up in chunk order (:func:`_sparse_reduce`).

Sparse features get their default bin as the node total minus their other bins. The
plan of a build (chunks, tasks, buffers: :func:`_hist_plan`) depends on the data's shape
alone, and every sum runs in the order that plan fixes, never by the number of threads,
so the serial and the parallel kernels (:func:`hist_serial`, :func:`hist_parallel`)
give bit-identical histograms.
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit, prange
from dpexp.trees import parallel as par
from dpexp.trees.hist_layout import as_named
from dpexp.trees.hist_tasks import column_task, gather_span, row_list_chunk


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
                  max_chunks, split_columns=0):  # pragma: no cover
    """The (node, rows ``p0:p1``, columns ``c0:c1``, partial buffer) tasks of one build.

    Few columns (at most ``max_row_columns``): every task reads all columns of a chunk of
    one node's rows; a node of more than ``chunk_rows`` rows is cut into at most
    ``max_chunks`` equal chunks, each summed into its own partial histogram (``part``),
    which :func:`_finish_node` adds in chunk order (``part_first[j]:part_first[j+1]`` are
    node ``j``'s); a node of one chunk is cut into tasks of ``split_columns`` columns
    when that is positive (written in place; a bin's rows are added in the same order).
    Many columns: one task per (node, block of ``fblock`` columns) over all the node's
    rows, written in place (``part`` -1). The sums depend on the data's shape only,
    never on the number of threads.
    """
    nb = starts.shape[0]
    row_tasks = n_columns <= max_row_columns
    count = np.empty(nb, dtype=np.int64)
    size = np.empty(nb, dtype=np.int64)
    n_blocks = (n_columns + fblock - 1) // fblock
    split_blocks = ((n_columns + split_columns - 1) // split_columns if split_columns > 0
                    else 1)
    column_split = np.zeros(nb, dtype=np.bool_)
    for j in range(nb):
        m = ends[j] - starts[j]
        if row_tasks:
            size[j] = max(chunk_rows, (m + max_chunks - 1) // max_chunks)
            count[j] = max(1, (m + size[j] - 1) // size[j])
            if count[j] == 1 and split_blocks > 1 and m > 0:
                column_split[j] = True
                count[j] = split_blocks
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
        split = row_tasks and count[j] > 1 and not column_split[j]
        part_first[j + 1] = part_first[j] + (count[j] if split else 0)
        for i in range(count[j]):
            node[t] = j
            if column_split[j]:
                p0[t], p1[t] = starts[j], ends[j]
                c0[t] = i * split_columns
                c1[t] = min(c0[t] + split_columns, n_columns)
            elif row_tasks:
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
def _add_parts(parts, h):  # pragma: no cover
    """``h (B, K) = parts[0] + parts[1] + ...``, in that order."""
    for b in range(h.shape[0]):
        for k in range(h.shape[1]):
            acc = parts[0, b, k]
            for q in range(1, parts.shape[0]):
                acc += parts[q, b, k]
            h[b, k] = acc


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
def _hist_plan(starts, ends, out, feats, bundles, lists, tail, settings,
               parallel):  # pragma: no cover
    """Gather chunks, column tasks and every buffer of one build (``parallel``: for
    :func:`_hist_par`, which may cut small nodes by columns, ``settings.split_columns``).
    Returns ``(g0, g1)`` (gather chunks), the :func:`_column_tasks` and the buffers
    ``(part_d, part_b, wb, ch0, ch1, chf, bufs)``. Bundle buffers hold the values the
    bundles use (adult: 34 of 256), not all 256."""
    nb = starts.shape[0]
    k_stats = out.shape[3]
    n_bundles = bundles.codes.shape[1]
    b_width = bundles.values.max() if n_bundles > 0 else 0
    g0, g1, _ = par.row_chunks(starts, ends, settings.gather_rows)
    if settings.gathered:  # the caller keeps the statistics gathered (and partitioned)
        g0, g1 = g0[:0], g1[:0]
    tasks = _column_tasks(starts, ends, feats.shape[0] + n_bundles, settings.fblock,
                          settings.max_row_columns, settings.chunk_rows, settings.max_chunks,
                          settings.split_columns if parallel else 0)
    n_parts = tasks[6][nb]
    # partial histograms of the dense features, by position in feats (not feature id).
    # Leading dimensions are kept when a buffer is empty (0 features or bundles: 0 bytes),
    # so that every task's ``part_d[q]``, ``part_b[q]`` and ``wb[j]`` is an in-bounds view.
    part_d = np.empty((n_parts, feats.shape[0], out.shape[2], k_stats))
    part_b = np.empty((n_parts, n_bundles, b_width, k_stats))
    wb = np.empty((nb, n_bundles, b_width, k_stats))
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
        row_list_chunk(lists.indptr, lists.feature, lists.code, ordered, order, ch0[c], ch1[c],
                      bufs[c])
        return
    j, q = t_node[t], t_part[t]
    bcodes = bundles.codes
    bfeats = np.arange(bcodes.shape[1])
    if q < 0:  # all of the node's rows: straight into its histogram
        column_task(codes, bcodes, feats, bfeats, ordered, order, t_p0[t], t_p1[t],
                     t_c0[t], t_c1[t], out[slots[j]], feats, wb[j], bundles.values,
                     rows.codes, rows.offset)
    else:  # a chunk of them: into a partial sum, dense features by position
        column_task(codes, bcodes, feats, bfeats, ordered, order, t_p0[t], t_p1[t],
                     t_c0[t], t_c1[t], part_d[q], np.arange(feats.shape[0]), part_b[q],
                     bundles.values, rows.codes, rows.offset)


@njit(cache=True, nogil=True)
def _task_costs(tasks, buffers):  # pragma: no cover
    """The work of every task of a plan: rows x columns of a column task, rows of a
    chunk of the row-sparse lists (at least 1: every task runs)."""
    t_p0, t_p1, t_c0, t_c1 = tasks[1], tasks[2], tasks[3], tasks[4]
    ch0, ch1 = buffers[3], buffers[4]
    n_col = t_p0.shape[0]
    cost = np.empty(n_col + ch0.shape[0], dtype=np.int64)
    for t in range(n_col):
        cost[t] = max(1, (t_p1[t] - t_p0[t]) * (t_c1[t] - t_c0[t]))
    for c in range(ch0.shape[0]):
        cost[n_col + c] = max(1, ch1[c] - ch0[c])
    return cost


@njit(parallel=True, cache=True, nogil=True)
def _hist_par(codes, stats, order, starts, ends, out, slots, ordered, feats, bundles, lists,
              tail, rows, settings):  # pragma: no cover
    """Histograms of the nodes ``order[starts[j]:ends[j]]`` into ``out[slots[j]]``: the
    gathers, then the tasks (dealt to one group per thread by their rows x columns,
    :func:`~dpexp.trees.parallel.lpt_groups`: the nodes of a depth differ in size),
    then each node's partial sums, each step in parallel.
    IN: ``codes``, ``stats``, ``order``, ``starts``, ``ends``, ``slots``, the layout
    (``feats``, ``bundles``, ``lists``, ``tail``, ``rows``), ``settings``;
    OUT: ``out[slots]``; IN/OUT: ``ordered`` (written by the gathers unless
    ``settings.gathered``)."""
    gathers, tasks, buffers = _hist_plan(starts, ends, out, feats, bundles, lists, tail,
                                         settings, True)
    g0, g1 = gathers
    for g in prange(g0.shape[0]):
        gather_span(stats, order, g0[g], g1[g], ordered)
    members, first = par.lpt_groups(_task_costs(tasks, buffers), settings.threads)
    for g in prange(settings.threads):
        for i in range(first[g], first[g + 1]):
            _hist_task(members[i], codes, order, out, slots, ordered, feats, bundles, lists,
                       rows, tasks, buffers)
    for j in prange(starts.shape[0]):
        _finish_node(j, out, slots, feats, bundles, tail, ordered, starts, ends, tasks,
                     buffers)


@njit(cache=True, nogil=True)
def hist_parallel(codes, stats, order, starts, ends, out, slots, ordered, feats, bundles,
                    lists, tail, rows, settings):  # pragma: no cover
    """:func:`_hist_par` with the layout and ``settings`` as plain tuples (see
    :func:`~dpexp.trees.hist_layout.as_named`; numba's parallel lowering does not build named tuples itself)."""
    bundles, lists, tail, rows, settings = as_named(bundles, lists, tail, rows, settings)
    _hist_par(codes, stats, order, starts, ends, out, slots, ordered, feats, bundles, lists,
              tail, rows, settings)


@njit(cache=True, nogil=True)
def hist_serial(codes, stats, order, starts, ends, out, slots, ordered, feats, bundles, lists,
              tail, rows, settings):  # pragma: no cover
    """:func:`_hist_par` on one thread: the same sums (small nodes not cut by columns,
    which saves nothing on one thread)."""
    bundles, lists, tail, rows, settings = as_named(bundles, lists, tail, rows, settings)
    gathers, tasks, buffers = _hist_plan(starts, ends, out, feats, bundles, lists, tail,
                                         settings, False)
    g0, g1 = gathers
    for g in range(g0.shape[0]):
        gather_span(stats, order, g0[g], g1[g], ordered)
    for t in range(tasks[0].shape[0] + buffers[3].shape[0]):
        _hist_task(t, codes, order, out, slots, ordered, feats, bundles, lists, rows, tasks,
                   buffers)
    for j in range(starts.shape[0]):
        _finish_node(j, out, slots, feats, bundles, tail, ordered, starts, ends, tasks,
                     buffers)
