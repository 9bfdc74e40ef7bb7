"""The public release grids (dpexp.privacy.grids): they depend on the privacy parameters
only, cover the rounding, meet delta, and every release lies on them (Mironov 2012)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpexp.privacy.calibration import analytic_gaussian_sigma, discrete_gaussian_delta
from dpexp.privacy.grids import gaussian_grid, laplace_grid
from dpexp.privacy.mechanisms import gaussian_mechanism, laplace_mechanism

N = 100_000
EPSILONS = [0.1, 1 / 3, 1.0, 0.7, 2.5, 1e-6, 8.125, 0.123456789, 100.0]


def rng(seed: int = 2024) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("sens", [1.0, 0.37, 2.0**-30, 1e6])
def test_laplace_grid_depends_on_parameters_only_and_covers_rounding(eps, sens):
    plan = laplace_grid(epsilon=eps, sensitivity=sens)
    g = Fraction(2) ** plan.exponent
    assert plan.steps * g > Fraction(sens)  # floor(sens / g) + 1 steps
    assert 2**20 <= Fraction(sens) / g < 2**21
    assert Fraction(plan.t, plan.s) >= Fraction(plan.steps) / Fraction(eps)


@pytest.mark.parametrize("eps,delta,calibration", [
    (1.0, 1e-5, "analytic"), (0.5, 1e-6, "classic"), (0.1, 1e-5, "analytic"),
    (4.0, 1e-8, "analytic"), (0.9, 1e-3, "classic"), (0.001, 1e-5, "analytic"),
])
def test_gaussian_grid_meets_delta(eps, delta, calibration):
    plan = gaussian_grid(epsilon=eps, delta=delta, sensitivity=1.5, calibration=calibration)
    assert plan.steps * Fraction(2) ** plan.exponent > Fraction(1.5)
    assert discrete_gaussian_delta(epsilon=eps, sigma2=plan.sigma2, sensitivity=plan.steps) <= delta
    if calibration == "analytic":
        sigma = analytic_gaussian_sigma(epsilon=eps, delta=delta, sensitivity=float(plan.steps))
        assert plan.sigma2 >= sigma**2


def on_grid(x: np.ndarray, exponent: int) -> bool:
    k = np.ldexp(np.asarray(x, dtype=np.float64), -exponent)
    return bool(np.all(k == np.rint(k)) and np.all(np.abs(k) < 2**53))


def test_value_0_and_value_1_release_on_the_same_grid():
    """The exact-float-bits distinguisher: with a textbook sampler the doubles reachable
    from value 1 are not those reachable from value 0 (Mironov 2012); here both are the
    public grid g*Z, of which every point has positive probability."""
    plan = laplace_grid(epsilon=1.0, sensitivity=1.0)
    a = laplace_mechanism(np.zeros(N), epsilon=1.0, sensitivity=1.0, rng=rng(1))
    b = laplace_mechanism(np.ones(N), epsilon=1.0, sensitivity=1.0, rng=rng(2))
    assert on_grid(a, plan.exponent) and on_grid(b, plan.exponent)
    # the textbook sampler fails the same check: the test can fail
    old = 1.0 + rng(3).laplace(0.0, 1.0, size=1000)
    assert not on_grid(old, plan.exponent)
    gplan = gaussian_grid(epsilon=1.0, delta=1e-5, sensitivity=1.0, calibration="analytic")
    for value in (0.0, 1.0, 0.3):
        x = gaussian_mechanism(np.full(1000, value), epsilon=1.0, delta=1e-5, sensitivity=1.0,
                               rng=rng(4), calibration="analytic")
        assert on_grid(x, gplan.exponent)


def test_grid_release_law_is_the_discrete_laplace_around_the_rounded_value():
    plan = laplace_grid(epsilon=1.0, sensitivity=1.0)
    x = laplace_mechanism(np.full(N, 0.3), epsilon=1.0, sensitivity=1.0, rng=rng(6))
    k = np.ldexp(x, -plan.exponent).astype(np.int64) - int(np.rint(0.3 * 2.0**-plan.exponent))
    # scale t/s = steps/epsilon ~ 2**20 grid steps: check the law on coarse bins
    assert stats.kstest(k / (plan.t / plan.s), stats.laplace.cdf).pvalue > 1e-4
