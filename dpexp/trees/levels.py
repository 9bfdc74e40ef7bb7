"""Per-depth bookkeeping of the level-wise grower: which nodes split, their children's
row ranges and statistic totals, which child of each split to build, and the sibling
histograms by subtraction (the "subtraction trick": a child's histogram is its parent's
minus its sibling's, so only the smaller child of every split is built).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dpexp.jit import njit, prange
from dpexp.trees import parallel as par

if TYPE_CHECKING:
    from dpexp.trees.row_stores import GrowWorkspace


@njit(cache=True, nogil=True)
def _subtract_one(parent, p, out, small, big, n_bins):  # pragma: no cover
    for f in range(out.shape[1]):
        for b in range(n_bins[f]):
            for k in range(out.shape[3]):
                out[big, f, b, k] = parent[p, f, b, k] - out[small, f, b, k]


@njit(cache=True, nogil=True)
def _subtract_one_flat(parent, p, out, small, big, n_bins):  # pragma: no cover
    """:func:`_subtract_one` for C-contiguous histograms: a feature's first ``n_bins[f]``
    bins are one run of the flat node histogram, subtracted as one vectorisable loop
    (the four-index form cost about four times as much; the same differences)."""
    width = out.shape[2] * out.shape[3]
    po = parent[p].reshape(-1)
    so = out[small].reshape(-1)
    bo = out[big].reshape(-1)
    for f in range(out.shape[1]):
        q0 = f * width
        for q in range(q0, q0 + n_bins[f] * out.shape[3]):
            bo[q] = po[q] - so[q]


@njit(parallel=True, cache=True, nogil=True)
def _subtract_par(parent, pidx, out, small, big, n_bins):  # pragma: no cover
    for i in prange(small.shape[0]):
        _subtract_one(parent, pidx[i], out, small[i], big[i], n_bins)


@njit(parallel=True, cache=True, nogil=True)
def subtract_flat_par(parent, pidx, out, small, big, n_bins):  # pragma: no cover
    for i in prange(small.shape[0]):
        _subtract_one_flat(parent, pidx[i], out, small[i], big[i], n_bins)


@njit(cache=True, nogil=True)
def subtract_flat_ser(parent, pidx, out, small, big, n_bins):  # pragma: no cover
    for i in range(small.shape[0]):
        _subtract_one_flat(parent, pidx[i], out, small[i], big[i], n_bins)


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
    ``n_bins_total``: ``sum(n_bins)``, when the caller has it already.
    IN: ``parent``, ``small``, ``big``, ``parent_index``; IN/OUT: ``out`` (reads the
    small children, writes the big ones)."""
    pidx = (np.arange(small.shape[0], dtype=np.int64) if parent_index is None
            else np.asarray(parent_index, dtype=np.int64))
    n_bins = (np.full(out.shape[1], out.shape[2], dtype=np.int64) if n_bins is None
              else np.minimum(np.asarray(n_bins, dtype=np.int64), out.shape[2]))
    _subtract(parent, out, small, big, pidx, n_bins,
              int(n_bins.sum() if n_bins_total is None else n_bins_total))


def _subtract(parent, out, small, big, pidx, n_bins, n_bins_total: int) -> None:
    """:func:`subtract_siblings` once its arguments are checked: int64 ``pidx``,
    ``n_bins`` at most the histogram width, ``n_bins_total = sum(n_bins)``."""
    flat = parent.flags.c_contiguous and out.flags.c_contiguous  # the grower's buffers
    if small.shape[0] > 1 and par.use_parallel(
            n_bins_total * out.shape[3] * small.shape[0], par.LEVEL_PARALLEL_MIN_WORK):
        (subtract_flat_par if flat else _subtract_par)(parent, pidx, out, small, big, n_bins)
    else:
        (subtract_flat_ser if flat else _subtract_ser)(parent, pidx, out, small, big, n_bins)


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



class HistogramLevels:
    """Histogram arrays of consecutive depths, alternating between two zeroed workspace
    buffers (a depth's children are built while its own histograms are read).
    ``n_bins[f]`` bounds feature ``f``'s codes: bins past it are never written, so they
    stay zero and are neither cleared nor subtracted again."""

    def __init__(self, ws: GrowWorkspace, hist_shape: tuple[int, ...], n_bins) -> None:
        self.ws = ws
        self.hist_shape = hist_shape
        self.n_bins = np.asarray(n_bins, dtype=np.int64)  # <= max_bins = hist_shape[1]
        self.n_bins_total = int(self.n_bins.sum())
        # the bounds subtract_siblings would clip to the width: once per tree, not per depth
        self._sub_bins = np.minimum(self.n_bins, hist_shape[1])
        self.turn = 0

    def next(self, n_nodes: int) -> np.ndarray:
        """The (zeroed where it matters) histogram array of the next depth's nodes."""
        self.turn ^= 1
        return self.ws.zeros(f"hist{self.turn}", (n_nodes, *self.hist_shape))

    def reserve(self, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
        """Both buffers with room for ``n_nodes`` nodes (the one :meth:`next` hands out
        next first), for a caller that alternates them itself; :meth:`next` then hands
        out views of the same buffers."""
        first = self.ws.zeros(f"hist{self.turn ^ 1}", (n_nodes, *self.hist_shape))
        second = self.ws.zeros(f"hist{self.turn}", (n_nodes, *self.hist_shape))
        return first, second

    def subtract(self, parent: np.ndarray, out: np.ndarray, small, big, parent_index) -> None:
        """:func:`subtract_siblings` with the bounds of this tree's features."""
        _subtract(parent, out, small, big, np.asarray(parent_index, dtype=np.int64),
                  self._sub_bins, self.n_bins_total)
