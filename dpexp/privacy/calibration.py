"""Noise calibration: how much noise a release needs, before anything is drawn.

* parameter checks: :func:`check_delta`, :func:`check_sensitivity`;
* the Gaussian mechanism's σ: :func:`gaussian_sigma_classic` (Dwork & Roth Thm A.1),
  :func:`analytic_gaussian_sigma` and its exact privacy profile :func:`gaussian_delta`
  (Balle & Wang 2018, Theorem 8);
* the exact samplers' integer parameters (Canonne, Kamath & Steinke 2020):
  :func:`discrete_laplace_scale` (a scale rounded *up* to t/s), and for the discrete
  Gaussian :func:`discrete_gaussian_variance` (σ² rounded up to t·m) and
  :func:`discrete_gaussian_delta` (its δ(ε), CKS Theorem 7).

Everything here is computed from the privacy parameters only, never from the data.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.special import log_ndtr, ndtr

from dpexp.errors import check_epsilon
from dpexp.privacy.sampler_limits import SCALE_LIMIT, SIGMA2_LIMIT

__all__ = [
    "analytic_gaussian_sigma",
    "check_delta",
    "check_sensitivity",
    "discrete_gaussian_delta",
    "discrete_gaussian_variance",
    "discrete_laplace_scale",
    "gaussian_delta",
    "gaussian_sigma_classic",
]


# --------------------------------------------------------------------------- validation


def check_delta(delta: Any, *, name: str = "delta") -> float:
    """``delta`` must be a number strictly inside (0, 1)."""
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in (0, 1), got {delta!r}") from None
    if not (0.0 < value < 1.0):  # also false for NaN
        raise ValueError(f"{name} must be a number in (0, 1), got {delta!r}")
    return value


def check_sensitivity(
    sensitivity: Any, *, name: str = "sensitivity", allow_zero: bool = True
) -> float:
    """``sensitivity`` must be finite and >= 0 (> 0 when ``allow_zero`` is false)."""
    try:
        value = float(sensitivity)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number >= 0, got {sensitivity!r}") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {sensitivity!r}")
    return value


# --------------------------------------------------------------------------- Gaussian


def gaussian_sigma_classic(*, epsilon: float, delta: float, sensitivity: float) -> float:
    """sigma = sqrt(2 ln(1.25/delta)) * sensitivity / epsilon, valid only for epsilon < 1.

    The classic Gaussian mechanism (Dwork & Roth Thm A.1; the calibration in Peinemann's
    Gaussian BDT slides, "DP-Proof": sigma > sqrt(2 ln(1.25/delta)) L / epsilon for
    epsilon in (0, 1)). ``sensitivity`` is the L2 sensitivity.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    sensitivity = check_sensitivity(sensitivity)
    if epsilon >= 1.0:
        raise ValueError(
            f"epsilon must be < 1 for the classic Gaussian calibration, got {epsilon!r}; "
            "use the analytic calibration (analytic_gaussian_sigma) for epsilon >= 1"
        )
    return math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / epsilon


def gaussian_delta(*, epsilon: float, sigma: float, sensitivity: float) -> float:
    """The exact delta(epsilon) of the Gaussian mechanism N(0, sigma^2) with L2 sensitivity.

    Balle & Wang 2018, Theorem 8:
    delta = Phi(D/(2s) - e s/D) - exp(e) Phi(-D/(2s) - e s/D). Computed in log space for
    the second term, so it is accurate for large epsilon.
    """
    if sensitivity == 0:
        return 0.0
    if sigma <= 0:
        return 1.0
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = float(ndtr(a - b))
    second = math.exp(min(epsilon + float(log_ndtr(-a - b)), 700.0))
    return max(0.0, first - second)


def analytic_gaussian_sigma(*, epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest sigma with ``gaussian_delta(epsilon, sigma) <= delta`` (any epsilon > 0).

    The analytic Gaussian mechanism of Balle & Wang, ICML 2018 (Theorem 8 and Algorithm
    1): instead of the classic sufficient condition, calibrate to the exact privacy
    profile. Found by bisection on log(sigma); ``delta`` is decreasing in sigma. The
    result is rounded *up* (relative precision 1e-12), so it is never too small.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    sensitivity = check_sensitivity(sensitivity)
    if sensitivity == 0:
        return 0.0

    def too_small(s: float) -> bool:
        return gaussian_delta(epsilon=epsilon, sigma=s, sensitivity=sensitivity) > delta

    lo, hi = sensitivity * 1e-3, sensitivity
    while not too_small(lo):
        lo /= 2.0
    while too_small(hi):
        hi *= 2.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if too_small(mid):
            lo = mid
        else:
            hi = mid
        if hi / lo - 1.0 < 1e-12:
            break
    return hi


# --------------------------------------------------------------------------- exact samplers


@lru_cache(maxsize=1024)
def discrete_laplace_scale(*, epsilon: float, sensitivity: int | float | Fraction) -> tuple[int, int]:
    """The discrete Laplace scale ``(t, s)``, t/s >= sensitivity/epsilon, both < 2**48.

    Computed exactly with :class:`fractions.Fraction` from the doubles given: the exact
    ratio when its numerator and denominator fit, else ``t = ceil(ratio * s)`` with the
    largest power of two ``s <= 2**47`` that keeps ``t < 2**48`` (relative excess at most
    max(2**-46, 2**-47 / ratio)); so the released noise is never smaller than claimed, and
    DLap(t/s) with integer sensitivity Δ is (Δ s / t <= epsilon)-DP (CKS 2020, Prop. 5
    / Dwork & Roth Thm 3.6 for the geometric mechanism).
    """
    epsilon = check_epsilon(epsilon)
    ratio = Fraction(sensitivity) / Fraction(epsilon)
    if ratio <= 0:
        raise ValueError(f"sensitivity must be > 0, got {sensitivity!r}")
    if ratio.numerator < SCALE_LIMIT and ratio.denominator < SCALE_LIMIT:
        return ratio.numerator, ratio.denominator
    k = 47
    while k >= 0 and math.ceil(ratio * (1 << k)) >= SCALE_LIMIT:
        k -= 1
    if k < 0:
        raise ValueError(
            f"sensitivity / epsilon = {float(ratio):.3g} is too large for the discrete "
            f"Laplace sampler (limit {SCALE_LIMIT})")
    up = Fraction(math.ceil(ratio * (1 << k)), 1 << k)  # reduced: t/s in lowest terms
    return up.numerator, up.denominator


def discrete_gaussian_variance(sigma2: int | float | Fraction) -> tuple[int, int]:
    """``(t, m)`` with t·m >= ``sigma2`` (exact, rounded up by less than t ≈ σ), t =
    floor(sqrt(ceil(sigma2))) + 1 and m = ceil(ceil(sigma2) / t): the form
    :func:`~dpexp.privacy.samplers.discrete_gaussian` takes."""
    target = math.ceil(Fraction(sigma2))
    if not 0 < target < SIGMA2_LIMIT:
        raise ValueError(f"sigma2 must be in (0, 2**52), got {sigma2!r}")
    t = math.isqrt(target) + 1
    m = -(-target // t)
    if t * m >= SIGMA2_LIMIT:
        raise ValueError(f"sigma2 must be in (0, 2**52), got {sigma2!r}")
    return t, m


#: Up to this σ the δ of a discrete Gaussian is summed from its pmf term by term.
_EXACT_DELTA_SIGMA = 4096.0


def _tail_bounds(k: int, sigma: float) -> tuple[float, float]:
    """Lower and upper bounds on sum_{y >= k} exp(-y²/(2σ²)) / (sqrt(2π) σ), k >= 1.

    The terms decrease from k - 1 on, so the sum lies between the integrals from k and
    from k - 1: Gaussian tails, ``ndtr(-x/σ)``."""
    return float(ndtr(-k / sigma)), float(ndtr(-(k - 1) / sigma))


def _upper_tail(x: Fraction, sigma: float, upper: bool) -> float:
    """A bound (upper or lower) on P[Y > x], Y ~ N_Z(0, σ²), for large σ.

    Z = sum_y exp(-y²/(2σ²)) = sqrt(2π) σ (1 + 2 sum_k exp(-2π²k²σ²)) (Poisson
    summation): for σ > 4096 it is sqrt(2π) σ to far below double precision, the
    correction being < e**-(3 * 10**8)."""
    k = math.floor(x) + 1  # y > x  <=>  y >= k
    if k >= 1:
        lo, hi = _tail_bounds(k, sigma)
        return hi if upper else lo
    lo, hi = _tail_bounds(1 - k, sigma)  # P[Y >= k] = 1 - P[Y >= 1 - k] by symmetry
    return 1.0 - (lo if upper else hi)


def discrete_gaussian_delta(*, epsilon: float, sigma2: int, sensitivity: int) -> float:
    """δ(ε) of the discrete Gaussian N_Z(0, sigma2) with integer sensitivity: CKS 2020,
    Theorem 7, δ = P[Y > εσ²/Δ - Δ/2] - e^ε P[Y > εσ²/Δ + Δ/2], Y ~ N_Z(0, σ²).

    For σ <= 4096 summed numerically from the pmf on |y| <= 50 σ + Δ (the mass beyond is
    below e**-1250; terms summed without cancellation, relative error ~1e-13). For larger
    σ an upper bound: each tail bounded by Gaussian integrals (the first from above, the
    second from below; the slack, a few per cent of δ at σ = 4096, shrinks as 1/σ).
    """
    sigma = math.sqrt(sigma2)
    mid = Fraction(epsilon) * sigma2 / sensitivity
    a, b = mid - Fraction(sensitivity, 2), mid + Fraction(sensitivity, 2)
    if sigma > _EXACT_DELTA_SIGMA:
        first = _upper_tail(a, sigma, upper=True)
        second = _upper_tail(b, sigma, upper=False)
        return max(0.0, first - math.exp(epsilon) * second)
    half = math.ceil(50 * sigma) + int(sensitivity) + 1
    y = np.arange(-half, half + 1, dtype=np.int64)
    w = np.exp(-(y.astype(np.float64) ** 2) / (2.0 * sigma2))
    total = w.sum()
    first = w[y >= math.floor(a) + 1].sum() / total
    second = w[y >= math.floor(b) + 1].sum() / total
    return max(0.0, float(first - math.exp(epsilon) * second))
