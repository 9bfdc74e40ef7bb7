"""Unit tests of the primitive mechanisms: validation and distributions (their
calibration: tests/privacy/test_calibration.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpexp.privacy import (
    analytic_gaussian_sigma,
    discrete_laplace_mechanism,
    exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma_classic,
    laplace_mechanism,
    report_noisy_max_one_sided,
    smooth_sensitivity_leaf_2017,
)
from dpexp.privacy import mechanisms as M
from dpexp.privacy.grids import gaussian_grid, laplace_grid
from dpexp.privacy.randomness import SecureGenerator


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


BAD_EPS = [0, -1.0, float("nan"), float("inf"), "abc", None]


@pytest.mark.parametrize("eps", BAD_EPS)
def test_bad_epsilon_names_the_parameter(eps, rng):
    calls = [
        lambda: laplace_mechanism(1.0, epsilon=eps, sensitivity=1.0, rng=rng),
        lambda: discrete_laplace_mechanism([1, 2], epsilon=eps, rng=rng),
        lambda: gaussian_mechanism(0.0, epsilon=eps, delta=1e-5, sensitivity=1.0, rng=rng),
        lambda: exponential_mechanism([1.0, 2.0], epsilon=eps, sensitivity=1.0, rng=rng),
        lambda: report_noisy_max_one_sided([1, 2], epsilon=eps, rng=rng),
        lambda: smooth_sensitivity_leaf_2017([1, 2], epsilon=eps, rng=rng),
        lambda: analytic_gaussian_sigma(epsilon=eps, delta=1e-5, sensitivity=1.0),
        lambda: gaussian_sigma_classic(epsilon=eps, delta=1e-5, sensitivity=1.0),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="epsilon"):
            call()


@pytest.mark.parametrize("delta", [0, 1, 1.5, -0.1, float("nan"), "x"])
def test_bad_delta(delta, rng):
    with pytest.raises(ValueError, match="delta"):
        gaussian_mechanism(0.0, epsilon=0.5, delta=delta, sensitivity=1.0, rng=rng)
    with pytest.raises(ValueError, match="delta"):
        analytic_gaussian_sigma(epsilon=0.5, delta=delta, sensitivity=1.0)


@pytest.mark.parametrize("sens", [-1.0, float("nan"), float("inf")])
def test_bad_sensitivity(sens, rng):
    with pytest.raises(ValueError, match="sensitivity"):
        laplace_mechanism(0.0, epsilon=1.0, sensitivity=sens, rng=rng)
    with pytest.raises(ValueError, match="sensitivity"):
        exponential_mechanism([0.0, 1.0], epsilon=1.0, sensitivity=sens, rng=rng)
    with pytest.raises(ValueError, match="sensitivity"):
        gaussian_sigma_classic(epsilon=0.5, delta=1e-5, sensitivity=sens)


def test_empty_and_nonfinite_utilities(rng):
    with pytest.raises(ValueError, match="utility"):
        exponential_mechanism([], epsilon=1.0, sensitivity=1.0, rng=rng)
    with pytest.raises(ValueError, match="utility"):
        exponential_mechanism([1.0, float("nan")], epsilon=1.0, sensitivity=1.0, rng=rng)
    with pytest.raises(ValueError, match="counts"):
        report_noisy_max_one_sided([], epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="counts"):
        report_noisy_max_one_sided([-1, 2], epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="value"):
        laplace_mechanism([1.0, float("inf")], epsilon=1.0, sensitivity=1.0, rng=rng)


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="rng"):
        laplace_mechanism(0.0, epsilon=1.0, sensitivity=1.0, rng=0)
    with pytest.raises(TypeError, match="rng"):
        exponential_mechanism([0.0], epsilon=1.0, sensitivity=1.0, rng=None)


def test_laplace_shape_and_scale(rng):
    assert isinstance(laplace_mechanism(3.0, epsilon=1.0, sensitivity=1.0, rng=rng), float)
    x = laplace_mechanism(np.zeros((200, 500)), epsilon=0.5, sensitivity=2.0, rng=rng)
    assert x.shape == (200, 500)
    # E|Lap(b)| = b = sensitivity / epsilon = 4
    assert abs(np.mean(np.abs(x)) - 4.0) < 0.05
    assert stats.kstest(x.ravel()[:20000], stats.laplace(scale=4.0).cdf).pvalue > 1e-4


def test_real_releases_are_exact_grid_points(rng):
    """The float-safe releases: g * integer with g = 2**k from the parameters only."""
    x = laplace_mechanism(np.linspace(-3, 3, 1000), epsilon=0.5, sensitivity=2.0, rng=rng)
    k = np.ldexp(x, -laplace_grid(epsilon=0.5, sensitivity=2.0).exponent)
    assert np.all(k == np.rint(k))
    g = gaussian_mechanism(np.linspace(-3, 3, 1000), epsilon=0.5, delta=1e-5, sensitivity=2.0, rng=rng)
    k = np.ldexp(g, -gaussian_grid(epsilon=0.5, delta=1e-5, sensitivity=2.0, calibration="classic").exponent)
    assert np.all(k == np.rint(k))
    # sensitivity 0: nothing to hide, the value comes back unchanged
    assert laplace_mechanism(0.3, epsilon=1.0, sensitivity=0.0, rng=rng) == 0.3


def test_discrete_laplace_mechanism_scale(rng):
    x = discrete_laplace_mechanism(np.zeros(100_000, dtype=np.int64), epsilon=0.5, sensitivity=2, rng=rng)
    q = math.exp(-0.25)  # scale 2 / 0.5 = 4
    assert x.dtype == np.int64
    assert np.var(x) == pytest.approx(2 * q / (1 - q) ** 2, rel=0.03)


def test_gaussian_mechanism_noise_scale(rng):
    x = gaussian_mechanism(
        np.zeros(100_000), epsilon=2.0, delta=1e-5, sensitivity=1.0, rng=rng, calibration="analytic"
    )
    sigma = analytic_gaussian_sigma(epsilon=2.0, delta=1e-5, sensitivity=1.0)
    assert np.std(x) == pytest.approx(sigma, rel=0.02)
    with pytest.raises(ValueError, match="calibration"):
        gaussian_mechanism(
            0.0, epsilon=0.5, delta=1e-5, sensitivity=1.0, rng=rng, calibration="bogus"
        )


def _freq(draws: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(np.asarray(draws).ravel(), minlength=k) / np.size(draws)


def test_exponential_mechanism_distribution(rng):
    u = np.array([0.0, 1.0, 3.0])
    p = np.exp(0.8 * u / (2 * 1.5))
    p /= p.sum()
    draws = exponential_mechanism(u, epsilon=0.8, sensitivity=1.5, rng=rng, size=200_000)
    assert np.allclose(_freq(draws, 3), p, atol=0.005)
    assert isinstance(exponential_mechanism(u, epsilon=0.8, sensitivity=1.5, rng=rng), int)


def test_exponential_mechanism_huge_utilities_and_ties(rng):
    u = np.array([1e300, -1e300, 1e300, 1e300 * (1 - 1e-15)])
    draws = exponential_mechanism(u, epsilon=1.0, sensitivity=1.0, rng=rng, size=20_000)
    f = _freq(draws, 4)
    assert f[1] == 0 and f[3] == 0
    assert abs(f[0] - 0.5) < 0.02 and abs(f[2] - 0.5) < 0.02
    tied = exponential_mechanism(
        np.full(5, 7.0), epsilon=1e6, sensitivity=1.0, rng=rng, size=50_000
    )
    assert np.allclose(_freq(tied, 5), 0.2, atol=0.01)


def test_exponential_mechanism_batched_rows(rng):
    u = np.array([[0.0, 50.0], [50.0, 0.0], [0.0, 0.0]])
    out = exponential_mechanism(u, epsilon=1.0, sensitivity=1.0, rng=rng)
    assert out.shape == (3,)
    assert out[0] == 1 and out[1] == 0
    assert exponential_mechanism(u, epsilon=1.0, sensitivity=1.0, rng=rng, size=7).shape == (7, 3)


def test_rosnam_distribution(rng):
    counts = np.array([5, 10, 0])
    p = np.exp(0.1 * counts)
    p /= p.sum()
    draws = report_noisy_max_one_sided(counts, epsilon=0.1, rng=rng, size=200_000)
    assert np.allclose(_freq(draws, 3), p, atol=0.005)
    # the one-sided exponential-noise variant is a different (also private) law
    alt = report_noisy_max_one_sided(
        counts, epsilon=0.1, rng=rng, size=200_000, noise="exponential"
    )
    assert _freq(alt, 3)[1] > p[1]


def test_smooth_sensitivity_2017_formula(rng):
    # counts (1, 0) at epsilon 1: j = 1, S = e^-1, weight of label 0 = exp(1 / (2 e^-1))
    w = math.exp(0.5 * math.e)
    draws = smooth_sensitivity_leaf_2017([1, 0], epsilon=1.0, rng=rng, size=200_000)
    assert _freq(draws, 2)[0] == pytest.approx(w / (w + 1), abs=0.005)
    # no overflow for huge gaps
    assert smooth_sensitivity_leaf_2017([10_000, 0], epsilon=1.0, rng=rng) == 0
    # ties: both maxima have u = 1 and S = 1
    tie = smooth_sensitivity_leaf_2017([3, 3, 0], epsilon=1.0, rng=rng, size=100_000)
    f = _freq(tie, 3)
    assert f[0] == pytest.approx(f[1], abs=0.01) and f[2] < f[0]


def test_selection_never_returns_a_zero_weight_candidate_at_the_top_uniform():
    """U * total can round up to total: the draw must fall back on the last candidate
    with positive weight, never on a trailing one of probability 0."""
    class TopUniform(SecureGenerator):
        def random(self, size=None):
            return np.full(() if size is None else size, 1.0 - 2.0**-53)

    u = np.array([0.0, 5.0, 5.0, -1e300])
    assert exponential_mechanism(u, epsilon=1.0, sensitivity=1.0, rng=TopUniform()) == 2
    rows = np.stack([u, [5.0, 5.0, -1e300, -1e300]])
    got = exponential_mechanism(rows, epsilon=1.0, sensitivity=1.0, rng=TopUniform())
    assert got.tolist() == [2, 1]


def test_selection_matches_softmax_over_many_candidates(rng):
    u = rng.normal(scale=3.0, size=40)
    p = np.exp(u / 2 - np.max(u / 2))
    p /= p.sum()
    draws = exponential_mechanism(u, epsilon=1.0, sensitivity=1.0, rng=rng, size=200_000)
    counts = np.bincount(draws, minlength=40)
    keep = p * 200_000 >= 5  # pool the rare candidates into one cell
    obs = np.append(counts[keep], counts[~keep].sum()) if (~keep).any() else counts
    exp = (np.append(p[keep], p[~keep].sum()) if (~keep).any() else p) * 200_000
    assert stats.chisquare(obs, exp).pvalue > 1e-4


@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf"), None])
def test_discrete_laplace_mechanism_rejects_bad_epsilon(eps, rng):
    with pytest.raises(ValueError, match="epsilon"):
        discrete_laplace_mechanism([1, 2], epsilon=eps, rng=rng)


@pytest.mark.parametrize("sens", [1.5, -1, float("nan"), float("inf"), True, "a"])
def test_discrete_laplace_mechanism_rejects_non_integer_sensitivity(sens, rng):
    with pytest.raises(ValueError, match="sensitivity"):
        discrete_laplace_mechanism([1, 2], epsilon=1.0, sensitivity=sens, rng=rng)


def test_discrete_laplace_mechanism_values_and_types(rng):
    with pytest.raises(ValueError, match="counts"):
        discrete_laplace_mechanism([1.5, 2], epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="counts"):
        discrete_laplace_mechanism([float("nan")], epsilon=1.0, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        discrete_laplace_mechanism([1], epsilon=1.0, rng=0)
    out = discrete_laplace_mechanism(np.array([[3, 4], [5, 6]]), epsilon=1.0, sensitivity=2.0, rng=rng)
    assert out.dtype == np.int64 and out.shape == (2, 2)
    assert isinstance(discrete_laplace_mechanism(3.0, epsilon=1.0, rng=rng), int)
    np.testing.assert_array_equal(discrete_laplace_mechanism([3, 4], epsilon=1.0, sensitivity=0, rng=rng),
                                  [3, 4])


@pytest.mark.parametrize("seed", range(4))
def test_inverse_cdf_draws_equal_the_sequential_sums(seed):
    """The compiled inverse CDF (runs of equal utilities: short ones added one by one, long
    ones through the binade steps) draws what the plain cumulative sum of the weights gives
    (np.cumsum adds one element after the other), on rows of runs of every length."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(40):
        lengths = rng.integers(1, 40, 30)
        values = rng.choice([-np.inf, *rng.normal(0, 50, 6)], lengths.size)
        values[0] = 1.0  # a finite utility first: every row has a positive weight
        rows.append(np.repeat(values, lengths)[:300])
    width = min(len(r) for r in rows)
    x = np.ascontiguousarray(np.array([r[:width] for r in rows]))
    scale = 0.07
    u = rng.random((5, x.shape[0]))
    u[0, :3] = [0.0, np.nextafter(1.0, 0.0), 0.5]
    out = np.empty(u.shape, dtype=np.int64)
    M.inverse_cdf_rows(x, scale, u, out)
    for r in range(x.shape[0]):
        z = (x[r] - x[r].max()) * scale
        w = np.array([math.exp(v) for v in z])  # the C library's exp, as the kernel's
        cum = np.cumsum(w)
        positive = np.flatnonzero(w > 0)
        for m in range(u.shape[0]):
            i = int(np.searchsorted(cum, u[m, r] * cum[-1], side="right"))
            assert out[m, r] == (i if i < width else positive[-1])
