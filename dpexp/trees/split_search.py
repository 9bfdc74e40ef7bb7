"""Split search over histograms: the gain of Eq. (3) of Li et al. 2020 for every candidate
(:func:`split_gains`, the utility of DPBoost's exponential mechanism) and the greedy,
non-private best candidate per node (:func:`best_splits`).

A candidate ``(feature f, bin b)`` sends the bins ``<= b`` of ``f`` left; the candidates
``b < n_valid[f]`` of a feature are public (from the bin mapper), whatever the data.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dpexp.jit import njit, prange
from dpexp.trees import parallel as par


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
    All arguments are IN; the gains are a new array.
    """
    hist = np.ascontiguousarray(hist, dtype=np.float64)
    n_valid = np.asarray(n_valid, dtype=np.int64)
    nb, d, n_bins, _ = hist.shape
    out = np.empty((nb, d, max(n_bins - 1, 0)))
    if out.size and int(n_valid.min()) < out.shape[2]:
        out.fill(np.nan)  # only public non-candidates stay NaN; skipped when there are none
    if par.use_parallel(hist.size, par.LEVEL_PARALLEL_MIN_WORK):
        _gains_par(hist, float(lam), n_valid, out)
    else:
        _gains_ser(hist, float(lam), n_valid, out)
    return out


#: A feature with at most this many bins in use is scanned with one branch per bin, adding
#: the non-empty bins into its totals and listing them in one pass (a binary feature: the
#: fewest operations); a wider one first lists its non-empty bins without a branch (with a
#: few rows per node most of 255 bins are empty, and a branch per bin mispredicts at every
#: non-empty one: 32 nodes x 8 features of 255 bins, 200 -> 146 us).
_SHORT_SCAN_BINS = 16
#: The greedy search (:func:`_best_block_totals`) runs over a feature's non-empty bins
#: only from this many candidates on (below it the list costs more than it saves).
LIST_MIN_BINS = 16
#: ... and when fewer than one bin in this many holds rows (the list costs about as much
#: as the gains it saves when a third of 255 bins hold rows; 32 nodes x 8 features).
LIST_MAX_SHARE = 2


@njit(cache=True, nogil=True)
def _wide_feature_gains(hj, f, nv, n_used, lam, oj, c, nonempty):  # pragma: no cover
    """The gains of feature ``f`` of one node (``hj``: its ``(d, B, K)`` histogram) into
    ``oj[c:c + nv]`` (see :func:`_candidate_gains_node`) for a feature of many bins in
    use (``n_used``): its non-empty bins listed first without a branch (every bin index
    is stored, the count advances only past a non-empty one), then the totals summed
    over that list in bin order (the same sums: the skipped terms are zeros), then the
    gains at bin 0 and at the listed bins below ``nv``, each copied over the run of
    empty bins after it."""
    n_nonempty = 0
    for b in range(n_used):
        nonempty[n_nonempty] = b
        n_nonempty += (hj[f, b, 0] != 0.0) | (hj[f, b, 1] != 0.0)
    gt = 0.0
    ht = 0.0
    for i in range(n_nonempty):
        b = nonempty[i]
        gt += hj[f, b, 0]
        ht += hj[f, b, 1]
    gl = 0.0
    hl = 0.0
    b = 0  # the first candidate's gain is always computed
    i = 1 if n_nonempty > 0 and nonempty[0] == 0 else 0  # the next listed bin past b
    while True:
        gl += hj[f, b, 0]
        hl += hj[f, b, 1]
        gr = gt - gl
        hr = ht - hl
        v = gl * gl / (hl + lam) + gr * gr / (hr + lam)
        run_end = min(nonempty[i], nv) if i < n_nonempty else nv
        for q in range(c + b, c + run_end):
            oj[q] = v
        if run_end == nv:
            return
        b = run_end
        i += 1


@njit(cache=True, nogil=True)
def _candidate_gains_node(hist, lam, n_valid, n_used, offset, j, out):  # pragma: no cover
    """The gains of :func:`_gains_task` for every feature ``f`` of node ``j``, written to
    ``out[j, offset[f] + b]``; a feature's totals sum its bins below ``n_used[f]`` (the
    bins past it hold zeros, whose addition would not change a bit). An empty bin (every
    statistic exactly 0) leaves the left and right sums as they are (``x + 0.0 == x``:
    the running sums start at +0.0 and a sum of non-zero doubles is never -0.0), so its
    gain is its predecessor's, bit for bit: with a few rows per node most of the 255
    bins are empty. So only the non-empty bins are added into the totals; the gains are
    computed at bin 0 and at the non-empty bins only and copied over the runs of empty
    bins after them. One call per node, the features looped inside: a call per (node,
    feature) cost ten times the work of a binary feature; the node's histogram and
    output are indexed directly, without a view per feature (which cost six times a
    binary feature's gains: 172 -> 27 us for 32 nodes x 123 binary features).
    :func:`~dpexp.trees.fused_levels.level_after_split` calls these kernels, and numba's
    ``cache=True`` checks only the caller's own file: after changing them, delete the
    cached ``fused_levels`` kernels (``dpexp/trees/__pycache__/fused_levels.*.nbi``,
    ``*.nbc``), or the level loop keeps running the old code."""
    hj = hist[j]
    oj = out[j]
    nonempty = np.empty(hj.shape[1] + 1, dtype=np.int64)
    for f in range(hj.shape[0]):
        nv = n_valid[f]
        if nv == 0:
            continue
        c = offset[f]
        if n_used[f] == 2 and nv == 1:
            # a binary feature (one-hot columns: all of adult's 123): its one candidate
            # without the scan. The loop below skips empty bins; adding them here
            # changes no bit (a running sum from +0.0 of non-zero doubles is never
            # -0.0, so adding a zero of either sign leaves it as it is)
            gl = 0.0 + hj[f, 0, 0]
            hl = 0.0 + hj[f, 0, 1]
            gr = (gl + hj[f, 1, 0]) - gl
            hr = (hl + hj[f, 1, 1]) - hl
            oj[c] = gl * gl / (hl + lam) + gr * gr / (hr + lam)
            continue
        if n_used[f] > _SHORT_SCAN_BINS:
            _wide_feature_gains(hj, f, nv, n_used[f], lam, oj, c, nonempty)
            continue
        # a short feature, here rather than in a function of its own: a call per binary
        # feature cost as much as its gains
        gt = 0.0
        ht = 0.0
        m = 1
        nonempty[0] = 0  # the first candidate's gain is always computed
        for b in range(n_used[f]):
            g = hj[f, b, 0]
            h = hj[f, b, 1]
            if (g != 0.0) | (h != 0.0):
                gt += g
                ht += h
                nonempty[m] = b  # kept only for a candidate past the first
                m += (b > 0) & (b < nv)
        nonempty[m] = nv  # sentinel: the end of the last run
        gl = 0.0
        hl = 0.0
        for i in range(m):
            b = nonempty[i]
            gl += hj[f, b, 0]
            hl += hj[f, b, 1]
            gr = gt - gl
            hr = ht - hl
            v = gl * gl / (hl + lam) + gr * gr / (hr + lam)
            for q in range(c + b, c + nonempty[i + 1]):
                oj[q] = v


@njit(parallel=True, cache=True, nogil=True)
def candidate_gains_par(hist, lam, n_valid, n_used, offset, out):  # pragma: no cover
    for j in prange(hist.shape[0]):
        _candidate_gains_node(hist, lam, n_valid, n_used, offset, j, out)


@njit(cache=True, nogil=True)
def candidate_gains_ser(hist, lam, n_valid, n_used, offset, out):  # pragma: no cover
    for j in range(hist.shape[0]):
        _candidate_gains_node(hist, lam, n_valid, n_used, offset, j, out)


def candidate_offsets(n_valid, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """``(n_valid, offset)`` of :func:`candidate_gains`: the candidates per feature (at
    most ``n_bins - 1``) and the packed column of each feature's first candidate."""
    n_valid = np.minimum(np.asarray(n_valid, dtype=np.int64), max(n_bins - 1, 0))
    offset = np.zeros(n_valid.shape[0], dtype=np.int64)
    np.cumsum(n_valid[:-1], out=offset[1:])
    return n_valid, offset


def candidate_gains(hist, lam, n_valid, offsets: tuple[np.ndarray, np.ndarray] | None = None,
                    n_bins=None) -> np.ndarray:
    """The gains of :func:`split_gains` at the public candidates only, packed:
    ``(nb, sum(n_valid))``, candidate ``(f, b)`` at column ``sum(n_valid[:f]) + b``
    (features in order, bins ascending), no NaN fillers. Bit for bit the values of
    ``split_gains(hist, lam, n_valid)`` at those candidates (the utilities of DPBoost's
    exponential mechanism, Li et al. 2020 Algorithm 1 line 6), without the gather of the
    candidates out of the padded array. ``offsets``: :func:`candidate_offsets` of
    ``n_valid``, when the caller keeps it. ``n_bins[f]``: the caller's promise that the
    bins of feature ``f`` from ``n_bins[f]`` on hold zeros (as the grower's histograms
    do): a feature's totals then stop there (default: every bin of the array). All
    arguments are IN; the gains are a new array."""
    hist = np.ascontiguousarray(hist, dtype=np.float64)
    nb, width = hist.shape[0], hist.shape[2]
    n_valid, offset = candidate_offsets(n_valid, width) if offsets is None else offsets
    n_used = (np.full(n_valid.shape[0], width, dtype=np.int64) if n_bins is None
              else np.minimum(np.asarray(n_bins, dtype=np.int64), width))
    out = np.empty((nb, int(offset[-1] + n_valid[-1]) if n_valid.size else 0))
    if nb > 1 and par.use_parallel(hist.size, par.LEVEL_PARALLEL_MIN_WORK):
        candidate_gains_par(hist, float(lam), n_valid, n_used, offset, out)
    else:
        candidate_gains_ser(hist, float(lam), n_valid, n_used, offset, out)
    return out


class SplitRule(NamedTuple):
    """The settings of the greedy search (a numba-compatible named tuple of floats):
    ``reg_lambda`` (lambda of Eq. 3), the children's least hessian sum
    (``min_child_weight``) and row count (``min_child_count``), and the least gain
    improvement of a split (``min_gain``)."""

    reg_lambda: float
    min_child_weight: float
    min_child_count: float
    min_gain: float


# numpy's error model: a float division by zero gives inf or nan instead of raising
# (lambda > 0 is checked where the estimators take it), so the gains loop has no zero
# test per division and compiles to vector divisions
@njit(cache=True, nogil=True, error_model="numpy")
def _best_block_totals(hj, n_valid, gt, ht, lam, mcw, mcc, f0, f1, best_gain,
                       best_bin):  # pragma: no cover
    """:func:`_best_block` of one node ``hj (d, B, 2)`` whose parent sums ``(gt, ht)``
    are given and whose row counts are its hessians, in two passes per feature: the
    running left sums into ``left`` (one chain of additions, in bin order), then every
    candidate's gain, masked to -inf when a child is too small, with no dependency
    between candidates (vector divisions); then the first best. Every gain is the
    one-pass loop's expression of the same sums, so the same bits; a masked candidate
    never beats ``best`` (from -inf, strict ``>``), as a rejected one never does there.
    About a fifth less time than the one-pass loop on 255-bin features (cod-rna).

    A feature of at least :data:`LIST_MIN_BINS` candidates runs over bin 0 and the bins
    after it that hold anything only (cod-rna: 10-30% of the bins below the root): an
    empty bin ``b > 0`` adds zeros to the left sums (which can change the sign of a zero
    sum only, and every sum is squared or added to a non-zero one), so its gain is the
    previous bin's, bit for bit, and never beats it (strict ``>``): the same best."""
    n_bins = hj.shape[1]
    left = np.empty((2, n_bins))
    gains = np.empty(n_bins)
    # the listed search's own scratch
    list_scratch = (np.empty((2, n_bins)), np.empty(n_bins),
                    np.empty(n_bins, dtype=np.int64))
    listed = np.zeros(f1, dtype=np.bool_)
    gl_run, hl_run = left[0], left[1]
    parent = gt * gt / (ht + lam)
    for f in range(f0, f1):  # the wide features whose bins are mostly empty first
        nv = n_valid[f]
        if nv < LIST_MIN_BINS:
            continue
        hf = hj[f]
        used = 0
        for b in range(nv):  # a vector count: is the list worth making?
            used += hf[b, 1] != 0.0
        listed[f] = used * LIST_MAX_SHARE < nv
        if listed[f]:
            best_gain[f], best_bin[f] = _listed_best(hf, nv, gt, ht, lam, mcw, mcc, parent,
                                                     *list_scratch)
    for f in range(f0, f1):  # then the others (no call in this loop: vectorised as is)
        nv = n_valid[f]
        hf = hj[f]
        if listed[f]:
            continue
        gl = 0.0
        hl = 0.0
        for b in range(nv):
            gl += hf[b, 0]
            hl += hf[b, 1]
            gl_run[b] = gl
            hl_run[b] = hl
        for b in range(nv):
            gl = gl_run[b]
            hl = hl_run[b]
            hr = ht - hl
            gr = gt - gl
            gain = gl * gl / (hl + lam) + gr * gr / (hr + lam) - parent
            # no counts: a child's count is its hessian sum (cl = hl, cr = ct - cl = hr)
            bad = (hl < mcw) | (hr < mcw) | (hl < mcc) | (hr < mcc)
            gains[b] = -np.inf if bad else gain
        best = -np.inf
        arg = -1
        for b in range(nv):
            if gains[b] > best:
                best = gains[b]
                arg = b
        best_gain[f] = best
        best_bin[f] = arg


@njit(cache=True, nogil=True, error_model="numpy")
def _listed_best(hf, nv, gt, ht, lam, mcw, mcc, parent, left, gains,
                 listed):  # pragma: no cover
    """:func:`_best_block_totals`' search of one feature ``hf (B, 2)`` over bin 0 and the
    bins after it that hold anything; returns ``(best gain, its bin)``. IN: ``hf`` and
    the scalars; OUT (scratch): ``left``, ``gains``, ``listed``."""
    gl_run, hl_run = left[0], left[1]
    listed[0] = 0
    n = 1
    for b in range(1, nv):  # branch-free
        listed[n] = b
        n += (hf[b, 0] != 0.0) | (hf[b, 1] != 0.0)
    gl = 0.0
    hl = 0.0
    for i in range(n):
        b = listed[i]
        gl += hf[b, 0]
        hl += hf[b, 1]
        gl_run[i] = gl
        hl_run[i] = hl
    for i in range(n):
        gl = gl_run[i]
        hl = hl_run[i]
        hr = ht - hl
        gr = gt - gl
        gain = gl * gl / (hl + lam) + gr * gr / (hr + lam) - parent
        bad = (hl < mcw) | (hr < mcw) | (hl < mcc) | (hr < mcc)
        gains[i] = -np.inf if bad else gain
    best = -np.inf
    arg = -1
    for i in range(n):
        if gains[i] > best:
            best = gains[i]
            arg = i
    return best, (listed[arg] if arg >= 0 else -1)


@njit(cache=True, nogil=True)
def _best_block(hist, n_valid, counts, totals, rule, j, f0, f1, best_gain,
                best_bin):  # pragma: no cover
    """IN: ``hist``, ``n_valid``, ``counts``, ``totals``, ``rule``; OUT: ``best_gain``,
    ``best_bin`` (row ``j``, features ``f0:f1``).

    Best (gain, bin) of the features ``f0:f1`` of node ``j`` into ``best_gain[j, f]``,
    ``best_bin[j, f]``; (-inf, -1) when none is valid. The parent's sums are
    ``totals[j]`` when given (every feature then sees the same parent), else each
    feature's own bin sums. One call per block of features: a call per (node, feature)
    cost more than the search of a binary feature itself."""
    lam, mcw, mcc = rule.reg_lambda, rule.min_child_weight, rule.min_child_count
    n_bins = hist.shape[2]
    use_counts = counts.shape[0] > 0
    use_totals = totals.shape[0] > 0
    if use_totals and not use_counts:  # the grower's search: the two-pass form below
        _best_block_totals(hist[j], n_valid, totals[j, 0], totals[j, 1], lam, mcw, mcc,
                           f0, f1, best_gain[j], best_bin[j])
        return
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
def best_splits_par(hist, n_valid, counts, totals, rule, fblock):  # pragma: no cover
    """Best candidate per node (:func:`best_splits`): (node, block of features) tasks."""
    nb, d = hist.shape[0], hist.shape[1]
    best_gain = np.empty((nb, d))
    best_bin = np.empty((nb, d), dtype=np.int64)
    n_blocks = (d + fblock - 1) // fblock
    for task in prange(nb * n_blocks):
        j = task // n_blocks
        f0 = (task % n_blocks) * fblock
        _best_block(hist, n_valid, counts, totals, rule, j, f0, min(f0 + fblock, d),
                    best_gain, best_bin)
    return _reduce_best(best_gain, best_bin, rule.min_gain)


@njit(cache=True, nogil=True)
def best_splits_ser(hist, n_valid, counts, totals, rule, fblock):  # pragma: no cover
    """:func:`best_splits_par` on one thread (one task per node: ``fblock`` is not used)."""
    nb, d = hist.shape[0], hist.shape[1]
    best_gain = np.empty((nb, d))
    best_bin = np.empty((nb, d), dtype=np.int64)
    for j in range(nb):
        _best_block(hist, n_valid, counts, totals, rule, j, 0, d, best_gain, best_bin)
    return _reduce_best(best_gain, best_bin, rule.min_gain)


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
    caller has it already. All arguments are IN.
    """
    hist = np.ascontiguousarray(hist, dtype=np.float64)
    totals = (_NO_TOTALS if totals is None
              else np.ascontiguousarray(np.asarray(totals, dtype=np.float64)[:, :2]))
    if totals.shape[0] not in (0, hist.shape[0]):
        raise ValueError(f"totals has {totals.shape[0]} rows for {hist.shape[0]} nodes")
    n_valid = np.asarray(n_valid, dtype=np.int64)
    rule = SplitRule(float(lam), float(min_child_weight), float(min_child_count),
                     float(min_gain))
    total = int(n_valid.sum()) if n_valid_total is None else int(n_valid_total)
    parallel = par.use_parallel(total * hist.shape[0], par.SPLIT_PARALLEL_MIN_CANDIDATES)
    kernel = best_splits_par if parallel else best_splits_ser
    return kernel(hist, n_valid, np.asarray(counts, dtype=np.float64), totals, rule,
                  par.FEATURE_BLOCK)

