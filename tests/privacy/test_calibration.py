"""Noise calibration (dpexp.privacy.calibration): the Gaussian mechanism's sigma (classic,
analytic) and privacy profile, the exact samplers' scales, variances and deltas."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from dpexp.privacy import analytic_gaussian_sigma, gaussian_delta, gaussian_sigma_classic
from dpexp.privacy.calibration import (
    discrete_gaussian_delta,
    discrete_gaussian_variance,
    discrete_laplace_scale,
)
from dpexp.privacy.sampler_kernels import SCALE_LIMIT


def dgauss_pmf(z: np.ndarray, sigma2: int) -> np.ndarray:
    half = int(60 * math.sqrt(sigma2)) + 2
    norm = np.exp(-np.arange(-half, half + 1) ** 2 / (2 * sigma2)).sum()
    return np.exp(-(z.astype(float) ** 2) / (2 * sigma2)) / norm


def test_classic_gaussian_refuses_epsilon_at_least_one():
    with pytest.raises(ValueError, match="epsilon must be < 1"):
        gaussian_sigma_classic(epsilon=1.0, delta=1e-5, sensitivity=1.0)


def test_classic_sigma_formula():
    sigma = gaussian_sigma_classic(epsilon=0.5, delta=1e-5, sensitivity=2.0)
    assert sigma == pytest.approx(math.sqrt(2 * math.log(1.25 / 1e-5)) * 2.0 / 0.5)


def _hockey_stick(eps: float, sigma: float, sens: float) -> float:
    """delta(eps) = integral of (p(x - sens) - e^eps p(x))_+ (independent of the closed form)."""

    def f(x: float) -> float:
        return max(
            0.0, stats.norm.pdf(x, sens, sigma) - math.exp(eps) * stats.norm.pdf(x, 0.0, sigma)
        )

    val, _ = integrate.quad(f, -20 * sigma, 20 * sigma + sens, limit=400, points=[sens / 2])
    return val


@pytest.mark.parametrize("eps,sigma", [(0.5, 2.0), (1.0, 1.0), (2.0, 0.7), (0.1, 5.0)])
def test_gaussian_delta_matches_hockey_stick_integral(eps, sigma):
    assert gaussian_delta(epsilon=eps, sigma=sigma, sensitivity=1.0) == pytest.approx(
        _hockey_stick(eps, sigma, 1.0), rel=1e-4, abs=1e-10
    )


@pytest.mark.parametrize("eps", [0.05, 0.5, 0.99, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_analytic_sigma_is_tight_and_below_classic(eps, delta):
    sigma = analytic_gaussian_sigma(epsilon=eps, delta=delta, sensitivity=1.5)
    assert gaussian_delta(epsilon=eps, sigma=sigma, sensitivity=1.5) <= delta
    assert gaussian_delta(epsilon=eps, sigma=sigma * (1 - 1e-6), sensitivity=1.5) > delta * (
        1 - 1e-3
    )
    if eps < 1:
        assert sigma < gaussian_sigma_classic(epsilon=eps, delta=delta, sensitivity=1.5)


# ------------------------------------------------------------------------ exact samplers


EPSILONS = [0.1, 1 / 3, 1.0, 0.7, 2.5, 1e-6, 8.125, 0.123456789, 100.0]


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("sens", [1, 2, 3, 0.37, 1e-3, 12345.678])
def test_scale_is_never_rounded_down(eps, sens):
    t, s = discrete_laplace_scale(epsilon=eps, sensitivity=sens)
    exact = Fraction(sens) / Fraction(eps)
    assert 0 < t < SCALE_LIMIT and 0 < s < SCALE_LIMIT
    assert Fraction(t, s) >= exact
    assert Fraction(t, s) - exact <= exact * Fraction(1, 2**40) + Fraction(1, 2**46)


@pytest.mark.parametrize("target", [1, 2, 17, 10**6 + 3, Fraction(10**9, 7), 2.5e13])
def test_discrete_gaussian_variance_rounds_up(target):
    t, m = discrete_gaussian_variance(target)
    assert t * m >= target and t * m - Fraction(target) < t + 1
    assert abs(t - m) <= 2 + m // 10**3


@pytest.mark.parametrize("eps,sigma,sens", [(1.0, 5000, 1200), (0.5, 9000, 3000), (3.0, 6000, 4000)])
def test_large_sigma_delta_is_an_upper_bound(eps, sigma, sens):
    """Above sigma = 4096 the delta is bounded by integrals: never below the exact sum."""
    z = np.arange(-60 * sigma, 60 * sigma + 1)
    w = np.exp(-(z.astype(float) ** 2) / (2.0 * sigma**2))
    w /= w.sum()
    mid = Fraction(eps) * sigma**2 / sens
    exact = w[z > mid - Fraction(sens, 2)].sum() - math.exp(eps) * w[z > mid + Fraction(sens, 2)].sum()
    bound = discrete_gaussian_delta(epsilon=eps, sigma2=sigma**2, sensitivity=sens)
    assert exact <= bound <= exact * 1.05


@pytest.mark.parametrize("eps,sigma2,sens", [(1.0, 16, 1), (0.5, 100, 3), (2.0, 2, 1)])
def test_discrete_gaussian_delta_is_the_hockey_stick_divergence(eps, sigma2, sens):
    z = np.arange(-2000, 2001)
    p = dgauss_pmf(z, sigma2)
    q = dgauss_pmf(z - sens, sigma2)
    brute = np.maximum(0.0, q - math.exp(eps) * p).sum()
    assert discrete_gaussian_delta(epsilon=eps, sigma2=sigma2, sensitivity=sens) == pytest.approx(
        brute, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf"), None])
def test_discrete_laplace_scale_rejects_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        discrete_laplace_scale(epsilon=eps, sensitivity=1)
