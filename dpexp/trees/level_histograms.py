"""Dense histograms of all the nodes of a build in one pass over the rows in id order
(compiled, numba).

Each node of a level owns an ascending run of row ids: the row stores sort a tree's rows
(:func:`~dpexp.trees.row_stores.row_store`) and every partition is stable. On a large
table those runs interleave over its whole length, so a build that reads a column-major
table node by node (:func:`~dpexp.trees.histograms.dense_hist_into`'s column tasks)
streams every column over nearly all of its length once per node: a level of ``k``
nodes reads the codes about ``k`` times. This build visits the rows of all its nodes
together, in ascending row id, so a level reads every column once.

Every bin of a node still receives that node's rows in ascending row id, the order in
which the node-by-node build adds them, so the histograms are the same bit for bit
(:func:`merged_hist_into` falls back when a run is not ascending). Tasks are blocks of
features over all the rows, written in place: the sums never depend on the number of
threads.
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit, prange
from dpexp.trees import parallel as par
from dpexp.trees.pair_add import add_pair


@njit(cache=True, nogil=True)
def _merge_nodes(order, starts, ends, slots, mark, rows_out, slot_out):  # pragma: no cover
    """The rows of the nodes ``order[starts[j]:ends[j]]`` in ascending row id
    (``rows_out[:m]``) with their node's histogram slot (``slot_out[:m]``); returns ``m``,
    or -1 when some node's run is not ascending (outputs then undefined).

    ``mark (n_total,)`` int32 holds -1 everywhere on entry and is left so."""
    lo = mark.shape[0]
    hi = -1
    for j in range(starts.shape[0]):
        s, e = starts[j], ends[j]
        if e <= s:
            continue
        sj = np.int32(slots[j])
        prev = -1
        for p in range(s, e):
            r = order[p]
            if r <= prev:  # not ascending: undo the marks and let the caller fall back
                for jj in range(j + 1):
                    for pp in range(starts[jj], ends[jj] if jj < j else p):
                        mark[order[pp]] = -1
                return -1
            mark[r] = sj
            prev = r
        lo = min(lo, order[s])
        hi = max(hi, order[e - 1])
    m = 0
    for r in range(lo, hi + 1):
        v = mark[r]
        rows_out[m] = r  # written always, kept only for marked rows (no branch per row)
        slot_out[m] = v
        m += v >= 0
        mark[r] = -1
    return m


@njit(cache=True, nogil=True)
def _gather_stats(stats, rows, m, stored, out):  # pragma: no cover
    """``out[k, q] = stats[rows[q], k]`` for ``q < m`` and the first ``stored`` statistics."""
    for q in range(m):
        r = np.uint64(rows[q])
        for k in range(stored):
            out[k, q] = stats[r, k]


@njit(cache=True, nogil=True)
def _features_pass(codes, g, h, unit, rows, slot, out, fs):  # pragma: no cover
    """Add every row ``q`` (``rows[q]``, node slot ``slot[q]``) to the histograms of the
    features ``fs`` (one or four): ``out[slot, f, code, 0] += g[q]``, ``[..., 1] += h[q]``
    (1 when ``unit``)."""
    fa = fs[0]
    if fs.shape[0] == 4:  # four features per read of a row's node, statistics and id
        fb, fc, fd = fs[1], fs[2], fs[3]
        for q in range(rows.shape[0]):
            r = np.uint64(rows[q])
            j = slot[q]
            gq = g[q]
            hq = 1.0 if unit else h[q]
            ba, bb, bc, bd = codes[r, fa], codes[r, fb], codes[r, fc], codes[r, fd]
            add_pair(out, (j, fa, ba), gq, hq)
            add_pair(out, (j, fb, bb), gq, hq)
            add_pair(out, (j, fc, bc), gq, hq)
            add_pair(out, (j, fd, bd), gq, hq)
    else:
        for q in range(rows.shape[0]):
            r = np.uint64(rows[q])
            j = slot[q]
            add_pair(out, (j, fa, codes[r, fa]), g[q], 1.0 if unit else h[q])


@njit(cache=True, nogil=True)
def _block(codes, g, h, unit, rows, slot, out, slots, feats, i0, i1):  # pragma: no cover
    """The features ``feats[i0:i1]`` of every node (``out[slots]``): cleared, then filled
    four features per pass over the rows (two per pass measured the same on 16 nodes)."""
    for i in range(i0, i1):
        for j in range(slots.shape[0]):
            out[slots[j], feats[i]] = 0.0
    i = i0
    while i < i1:
        k = 4 if i1 - i >= 4 else 1
        _features_pass(codes, g, h, unit, rows, slot, out, feats[i:i + k])
        i += k


@njit(parallel=True, cache=True, nogil=True)
def _blocks_par(codes, g, h, unit, rows, slot, out, slots, feats, fblock):  # pragma: no cover
    n_blocks = (feats.shape[0] + fblock - 1) // fblock
    for t in prange(n_blocks):
        _block(codes, g, h, unit, rows, slot, out, slots, feats, t * fblock,
               min((t + 1) * fblock, feats.shape[0]))


@njit(cache=True, nogil=True)
def _blocks_ser(codes, g, h, unit, rows, slot, out, slots, feats, fblock):  # pragma: no cover
    n_blocks = (feats.shape[0] + fblock - 1) // fblock
    for t in range(n_blocks):
        _block(codes, g, h, unit, rows, slot, out, slots, feats, t * fblock,
               min((t + 1) * fblock, feats.shape[0]))


def merged_hist_into(codes, stats, order, starts, ends, out, slots, feats, *, unit_last: bool,
                     fblock: int, n_rows: int) -> bool:
    """Histograms of the nodes ``order[starts[j]:ends[j]]`` of the dense features
    ``feats`` into ``out[slots[j]]`` (``(n_slots, d, n_bins, 2)``), all nodes in one pass
    per block of features, rows in ascending id. ``stats (n, 2)``: gradient and hessian
    per row id (``unit_last``: the hessian is 1 for every row, counted, never read).
    Returns False, having written nothing, when some node's rows are not ascending.

    IN: all but ``out``; OUT: ``out[slots]`` (the features ``feats``)."""
    n_total = codes.shape[0]
    mark = np.full(n_total, -1, dtype=np.int32)
    rows = np.empty(n_total + 1, dtype=np.int64)
    slot = np.empty(n_total + 1, dtype=np.int32)
    slots = np.asarray(slots, dtype=np.int64)
    m = _merge_nodes(order, starts, ends, slots, mark, rows, slot)
    if m < 0:
        return False
    stored = 1 if unit_last else 2
    gh = np.empty((stored, m))
    _gather_stats(stats, rows, m, stored, gh)
    parallel = par.use_parallel(int(n_rows * feats.size), par.HIST_PARALLEL_MIN_WORK)
    (_blocks_par if parallel else _blocks_ser)(
        codes, gh[0], gh[stored - 1], bool(unit_last), rows[:m], slot[:m], out, slots,
        feats, int(fblock))
    return True
