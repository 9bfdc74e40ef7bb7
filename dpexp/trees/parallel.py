"""When the tree kernels use numba's thread pool, and how they cut work into chunks.

Every parallel kernel of :mod:`dpexp.trees` has a serial twin. The callers pick the
parallel one only when a call has enough work (the thresholds below), because a
fork/join of the thread pool, and the less optimised code numba emits inside ``prange``
bodies, cost more than small calls -- much more when other processes share the cores.
Work is cut by the data's shape alone (:func:`row_chunks`), and every sum runs in an
order that cut fixes, never by the number of threads: results are deterministic and the
same with one thread or many, so a threshold never changes a bit of a result.

The thresholds are read from this module at call time (``parallel.X``), so tests can
force either path with ``monkeypatch.setattr(parallel, "X", ...)``. The measurements
behind their values are in ``bench/HISTORY.md``.
"""

from __future__ import annotations

import numba
import numpy as np

from dpexp.jit import njit

# Elementary updates below which a kernel runs on one thread (about 10 ms of serial work).
PARALLEL_MIN_WORK = 1 << 24
# The dense histogram kernel splits even one node into (node, rows, columns) tasks, so
# it pays off for much smaller builds than the other kernels.
HIST_PARALLEL_MIN_WORK = 1 << 16
# Per-level scans of whole histograms (split gains, sibling subtraction): histogram entries.
LEVEL_PARALLEL_MIN_WORK = 1 << 18
# Row partitions and score updates: rows in one call.
PARTITION_PARALLEL_MIN_ROWS = 1 << 17
# The in-place partition of a depth's nodes, nodes in parallel: rows of its split nodes.
IN_PLACE_PARALLEL_MIN_ROWS = 1 << 13
# The greedy split search: candidates (node x bin) in a level.
SPLIT_PARALLEL_MIN_CANDIDATES = 1 << 14
# Rows per chunk of a chunked (parallel) partition or score update.
PARTITION_CHUNK_ROWS = 1 << 15
# Features per task of the dense histogram and split-search kernels, at most.
FEATURE_BLOCK = 64


def use_parallel(work: int, threshold: int | None = None) -> bool:
    """Whether a call with ``work`` elementary updates should use the thread pool
    (``threshold`` defaults to :data:`PARALLEL_MIN_WORK`)."""
    limit = PARALLEL_MIN_WORK if threshold is None else threshold
    return work >= limit and numba.get_num_threads() > 1


def n_threads() -> int:
    """Threads numba uses for the parallel kernels."""
    return int(numba.get_num_threads())


@njit(cache=True, nogil=True)
def row_chunks(starts, ends, size):  # pragma: no cover
    """Chunks of ``size`` positions of every node ``starts[j]:ends[j]`` (IN).

    Returns (OUT) ``(p0, p1, first)``: chunk ``c`` covers positions ``p0[c]:p1[c]``;
    node ``j`` owns chunks ``first[j]:first[j+1]`` (``first[-1]``: the chunk count)."""
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
def chunk_nodes(first):  # pragma: no cover
    """The node of every chunk, from the ``first`` array of :func:`row_chunks`."""
    node = np.empty(first[-1], dtype=np.int64)
    for j in range(first.shape[0] - 1):
        node[first[j]:first[j + 1]] = j
    return node


@njit(cache=True, nogil=True)
def lpt_groups(cost, n_groups):  # pragma: no cover
    """Items of positive ``cost`` dealt to ``n_groups`` groups of about equal cost: the
    costliest first, each to the group of least cost so far (items of cost 0 are left
    out). Returns ``(members, first)``: group ``g`` is ``members[first[g]:first[g+1]]``,
    in item order. For kernels whose items write disjoint outputs, each item's work
    done the same way whatever its group, so the deal never changes a result; a
    ``prange`` over the groups balances the threads where numba's equal blocks of
    items would not (items of very different cost, e.g. nodes of a depth)."""
    n = cost.shape[0]
    by_cost = np.argsort(-cost, kind="mergesort")
    load = np.zeros(n_groups, dtype=cost.dtype)
    group = np.full(n, -1, dtype=np.int64)
    count = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(n):
        t = by_cost[i]
        if cost[t] <= 0:
            break
        g = np.argmin(load)
        group[t] = g
        load[g] += cost[t]
        count[g + 1] += 1
    first = np.cumsum(count)
    members = np.empty(first[n_groups], dtype=np.int64)
    at = first[:n_groups].copy()
    for t in range(n):
        g = group[t]
        if g >= 0:
            members[at[g]] = t
            at[g] += 1
    return members, first
