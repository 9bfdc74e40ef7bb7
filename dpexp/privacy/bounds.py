"""A differentially private feature domain, for datasets whose documentation declares none.

The registry's ``observed`` domains (min/max over the file) are not DP: a threshold or an
un-scaled prediction can reveal an extreme record. :func:`dp_feature_domain` replaces them
with a range released under epsilon-DP, so that no public value is read from the data.

Mechanism (per feature; a noisy-histogram range estimate in the spirit of the Laplace
histogram of Dwork & Roth, Section 3.3, with a public logarithmic binning):

* public bins: the signed powers of two ``±2^k`` for ``k = min_exponent .. max_exponent``
  (plus 0) cut the line into ``K = 2 (max_exponent - min_exponent + 1)`` bins; a value
  beyond ``±2^max_exponent`` is counted in the outermost bin (public clipping);
* each record falls in exactly one bin of each of the ``d`` features, so under add/remove
  of one record the ``d x K`` count matrix changes by at most ``d`` in L1: the Laplace
  mechanism with sensitivity ``d`` and budget ``epsilon`` (Li et al. 2020, Eq. 7 /
  Dwork & Roth Thm 3.6) makes the whole matrix epsilon-DP;
* post-processing: a feature's range runs from the lowest to the highest bin whose noisy
  count exceeds ``T = (d / epsilon) ln(d K / (2 beta))``; an empty bin passes ``T`` with
  probability at most ``beta`` over all ``d K`` bins. A feature with no bin above ``T``
  gets the contiguous run of bins around its largest noisy count that stay above half of
  it (still post-processing), or the whole public range ``[-2^max_exponent, 2^max_exponent]``
  when no noisy count is positive.

Budget: exactly ``epsilon`` (one ledger entry, in the accountant given or a fresh one), to be taken
from the run's total like any other release. The range may leave out a few extreme
records (that is what makes it private): estimators clip to the domain they are given.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpexp.errors import check_epsilon
from dpexp.privacy.accountant import Accountant


def log2_bin_edges(min_exponent: int, max_exponent: int) -> np.ndarray:
    """Public bin edges ``-2^max .. -2^min, 0, 2^min .. 2^max`` (ascending)."""
    if not (isinstance(min_exponent, int) and isinstance(max_exponent, int)) or min_exponent > max_exponent:
        raise ValueError(
            f"min_exponent and max_exponent must be integers with min_exponent <= max_exponent, "
            f"got {min_exponent!r}, {max_exponent!r}"
        )
    pos = 2.0 ** np.arange(min_exponent, max_exponent + 1)
    return np.concatenate([-pos[::-1], [0.0], pos])


def _bin_counts(X: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``d x K`` counts; values beyond the outer edges go to the outer bins, NaN nowhere."""
    lo, hi = edges[0], edges[-1]
    counts = np.zeros((X.shape[1], len(edges) - 1), dtype=np.int64)
    for j in range(X.shape[1]):
        col = X[:, j]
        col = np.clip(col[~np.isnan(col)], lo, hi)
        counts[j] = np.histogram(col, bins=edges)[0]
    return counts


def dp_feature_domain(
    X,
    epsilon: float,
    rng: np.random.Generator,
    *,
    accountant: Accountant | None = None,
    min_exponent: int = -10,
    max_exponent: int = 40,
    beta: float = 1e-3,
) -> np.ndarray:
    """An epsilon-DP ``[low, high]`` per feature of ``X`` (see the module docstring).

    ``rng`` must be a noise stream (``estimator_streams(...).noise_generator()`` or
    ``secure_generator()``), never a seed that is published. ``accountant`` (a fresh one
    when None) is charged ``epsilon`` (exact discrete Laplace counts, sensitivity ``d``).
    """
    epsilon = check_epsilon(epsilon)
    if sp.issparse(X):
        raise ValueError("X must be a dense array (a sparse format's implicit zeros need a declared domain)")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"X must be a 2-D array with at least one feature, got shape {X.shape}")
    if not (0.0 < float(beta) < 1.0):
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator (a noise stream), got {type(rng).__name__}")
    edges = log2_bin_edges(min_exponent, max_exponent)
    d, k = X.shape[1], len(edges) - 1
    if accountant is None:  # the release is charged all the same, to a budget of its own
        accountant = Accountant(epsilon=epsilon)
    # one record adds 1 to one bin of each of the d features: L1 sensitivity d
    noisy = accountant.discrete_laplace(
        _bin_counts(X, edges), epsilon=epsilon, sensitivity=d, rng=rng,
        what="feature domain (DP range estimate)", bins=k)
    threshold = (d / epsilon) * np.log(d * k / (2.0 * beta))
    domain = np.tile([edges[0], edges[-1]], (d, 1))
    for j in range(d):
        above = np.flatnonzero(noisy[j] > threshold)
        if not above.size:  # post-processing of the same release: no budget
            above = _run_around_peak(noisy[j])
        if above.size:
            domain[j] = [edges[above[0]], edges[above[-1] + 1]]
    return domain


def _run_around_peak(noisy: np.ndarray) -> np.ndarray:
    """Bins of the contiguous run around the largest noisy count whose noisy counts stay
    above half of it: the fallback when no bin passes the threshold (small data, a small
    share of epsilon, many columns). Where the data are concentrated in a few bins, as a
    price label or a scaled measurement is, the peak stands out of noise far below the
    union-bound threshold; where it does not, the run is some noisy bin, a range no worse
    than the whole public one for an estimator that clips to it. Empty when the largest
    noisy count is not positive (no information: the whole public range)."""
    peak = int(np.argmax(noisy))
    if noisy[peak] <= 0:
        return np.empty(0, dtype=np.int64)
    half = noisy[peak] / 2.0
    lo = peak
    while lo > 0 and noisy[lo - 1] > half:
        lo -= 1
    hi = peak
    while hi < len(noisy) - 1 and noisy[hi + 1] > half:
        hi += 1
    return np.arange(lo, hi + 1)
