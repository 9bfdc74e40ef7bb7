"""The audit's statistics: Clopper-Pearson bounds, the score of an event, GDP epsilon.

One-sided Clopper-Pearson bounds ``p_A >= p_A_lower`` and ``p_B <= p_B_upper`` give the
lower bound of an event (see :mod:`dpexp.audit`):

* pure epsilon claims: ``ln(p_A_lower) - ln(p_B_upper)`` (with a delta claim:
  ``ln((p_A_lower - delta) / p_B_upper)``);
* Gaussian releases, tested through Gaussian DP (Dong, Roth & Su 2019):
  ``mu_lower = Phi^-1(p_A_lower) - Phi^-1(p_B_upper)``; :func:`gdp_epsilon` turns it into
  the epsilon at the headline delta of a ``mu_lower``-GDP mechanism.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import ndtri

from dpexp.privacy.calibration import gaussian_delta

__all__ = ["ALPHA", "clopper_pearson_lower", "clopper_pearson_upper", "gdp_epsilon", "score"]

#: The audit's level: the probability of a false alarm per tested release.
ALPHA = 1e-6


def clopper_pearson_lower(k: Any, n: int, alpha: float) -> np.ndarray:
    """One-sided (1 - alpha) Clopper-Pearson lower bound of a binomial proportion."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lo = stats.beta.ppf(alpha, k, n - k + 1)
    return np.where(k <= 0, 0.0, lo)


def clopper_pearson_upper(k: Any, n: int, alpha: float) -> np.ndarray:
    """One-sided (1 - alpha) Clopper-Pearson upper bound of a binomial proportion."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        hi = stats.beta.ppf(1.0 - alpha, k + 1, n - k)
    return np.where(k >= n, 1.0, hi)


def score(p_a_lo: np.ndarray, p_b_hi: np.ndarray, delta: float, gaussian: bool) -> np.ndarray:
    """The lower bound implied by (p_A_lower, p_B_upper): epsilon, or mu for Gaussian."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if gaussian:
            return ndtri(np.clip(p_a_lo, 0, 1)) - ndtri(np.clip(p_b_hi, 0, 1))
        num = p_a_lo - delta
        out = np.log(num) - np.log(p_b_hi)
    return np.where(num > 0, out, -np.inf)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Epsilon at ``delta`` of a mu-GDP mechanism (Gaussian with sensitivity 1, sigma 1/mu)."""
    if not mu > 0:
        return 0.0
    if math.isinf(mu):
        return math.inf
    sigma = 1.0 / mu
    if gaussian_delta(epsilon=0.0, sigma=sigma, sensitivity=1.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gaussian_delta(epsilon=hi, sigma=sigma, sensitivity=1.0) > delta:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(epsilon=mid, sigma=sigma, sensitivity=1.0) > delta:
            lo = mid
        else:
            hi = mid
    return lo
