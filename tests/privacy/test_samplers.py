"""The exact samplers (dpexp.privacy.samplers, dpexp.privacy.sampler_kernels): laws,
the empty-leaf kernels shared with Fletcher/JPW, word streams, parameter checks.

Law tests compare ~1e5 draws (fixed seeds) with the exact pmf by a chi-square test, and
check that the same test rejects a slightly wrong law, so they can fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpexp.papers.fletcher import audit as fa
from dpexp.papers.fletcher.comparators import JPWForestClassifier
from dpexp.papers.fletcher.trees import (
    draw_empty_leaf_secret,
    empty_leaf_label,
    empty_leaf_laplace,
    empty_leaves,
)
from dpexp.privacy.calibration import discrete_gaussian_variance, discrete_laplace_scale
from dpexp.privacy.mechanisms import discrete_laplace_mechanism, laplace_mechanism
from dpexp.privacy.randomness import SecureGenerator, random_words, secure_generator
from dpexp.privacy.sampler_kernels import SCALE_LIMIT
from dpexp.privacy.samplers import (
    bernoulli,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    uniform_below,
)

N = 100_000


def rng(seed: int = 2024) -> np.random.Generator:
    return np.random.default_rng(seed)


# ------------------------------------------------------------------------ exact laws


def dlap_pmf(z: np.ndarray, t: int, s: int) -> np.ndarray:
    q = math.exp(-s / t)
    return (1 - q) / (1 + q) * q ** np.abs(z)


def dgauss_pmf(z: np.ndarray, sigma2: int) -> np.ndarray:
    half = int(60 * math.sqrt(sigma2)) + 2
    norm = np.exp(-np.arange(-half, half + 1) ** 2 / (2 * sigma2)).sum()
    return np.exp(-(z.astype(float) ** 2) / (2 * sigma2)) / norm


def chi2_pvalue(draws: np.ndarray, pmf) -> float:
    """Chi-square p-value of integer ``draws`` against ``pmf``: one bin per value that
    expects >= 20 draws, the rest pooled into the two tails."""
    window = np.arange(int(draws.min()) - 1000, int(draws.max()) + 1001)
    p = pmf(window)
    keep = np.flatnonzero(p * draws.size >= 20)
    a, b = int(window[keep[0]]), int(window[keep[-1]])
    inside = (draws >= a) & (draws <= b)
    observed = np.concatenate([[np.sum(draws < a)], np.bincount(draws[inside] - a, minlength=b - a + 1),
                               [np.sum(draws > b)]])
    expected = np.concatenate([[p[window < a].sum()], p[(window >= a) & (window <= b)],
                               [p[window > b].sum()]])
    mask = expected * draws.size >= 1e-9
    expected = expected[mask] / expected[mask].sum() * observed[mask].sum()
    return float(stats.chisquare(observed[mask], expected).pvalue)


@pytest.mark.parametrize("t,s", [(1, 1), (10, 3), (7, 2), (1, 4), (1_048_577, 1_048_576)])
def test_discrete_laplace_law(t, s):
    draws = discrete_laplace(t, s, N, rng=rng())
    assert chi2_pvalue(draws, lambda z: dlap_pmf(z, t, s)) > 1e-4
    # the same test rejects a scale 4 % off: it has the power to fail
    assert chi2_pvalue(draws, lambda z: dlap_pmf(z, 104 * t, 100 * s)) < 1e-4


@pytest.mark.parametrize("t,m", [(1, 1), (2, 1), (4, 3), (21, 20), (71, 70), (40, 60)])
def test_discrete_gaussian_law(t, m):
    sigma2 = t * m
    draws = discrete_gaussian(t, m, N, rng=rng(7))
    assert chi2_pvalue(draws, lambda z: dgauss_pmf(z, sigma2)) > 1e-4
    assert chi2_pvalue(draws, lambda z: dgauss_pmf(z, round(sigma2 * 1.06) + 1)) < 1e-4


def within(successes: int, n: int, p: float, z: float = 5.0) -> bool:
    return abs(successes - n * p) <= z * math.sqrt(n * p * (1 - p)) + 1


@pytest.mark.parametrize("num,den", [(1, 1), (5, 2), (3, 10), (1, 7), (10**15, 10**15 + 3)])
def test_bernoulli_exp_law(num, den):
    draws = bernoulli_exp(num, den, N, rng=rng(3))
    p = math.exp(-num / den)
    assert within(int(draws.sum()), N, p)
    assert not within(int(draws.sum()), N, p * 0.9)  # a 10 % error is caught
    assert bernoulli_exp(0, 5, 100, rng=rng()).all()  # exp(0) = 1


@pytest.mark.parametrize("num,den", [(1, 3), (0, 5), (5, 5), (7, 8), (2**63 + 1, 2**64 - 1)])
def test_bernoulli_law(num, den):
    draws = bernoulli(num, den, N, rng=rng(4))
    assert within(int(draws.sum()), N, num / den)


@pytest.mark.parametrize("bound", [1, 2, 7, 10, 2**40 + 3])
def test_uniform_below_law(bound):
    draws = uniform_below(bound, N, rng=rng(5))
    assert draws.dtype == np.uint64 and int(draws.max()) < bound
    if bound == 1:
        assert not draws.any()
    elif bound <= 10:
        counts = np.bincount(draws.astype(np.int64), minlength=bound)
        assert stats.chisquare(counts).pvalue > 1e-4
    else:
        assert stats.kstest(draws.astype(float) / bound, "uniform").pvalue > 1e-4


# ------------------------------------------------------- empty leaves (shared kernels)


def test_empty_and_canary_leaf_counts_share_integers_and_law():
    """JPW: the counts of an empty leaf (keyed words) and of a leaf with one canary (the
    noise rng) are integers from the same kernel and scale: same set, same law."""
    eps = 0.7
    t, s = discrete_laplace_scale(epsilon=eps, sensitivity=1)
    secret = draw_empty_leaf_secret(rng(8))
    empty = empty_leaf_laplace(secret, 0, np.arange(N // 2, dtype=np.uint64), 2, eps)
    canary = discrete_laplace_mechanism(np.tile([1, 0], (N // 2, 1)), epsilon=eps, rng=rng(9))
    assert empty.dtype == np.int64 and canary.dtype == np.int64
    assert chi2_pvalue(empty.ravel(), lambda z: dlap_pmf(z, t, s)) > 1e-4
    assert chi2_pvalue(canary[:, 0] - 1, lambda z: dlap_pmf(z, t, s)) > 1e-4
    assert chi2_pvalue(canary[:, 1], lambda z: dlap_pmf(z, t, s)) > 1e-4
    # a fit's empty-leaf counts are fixed: the same on every call
    again = empty_leaf_laplace(secret, 0, np.arange(N // 2, dtype=np.uint64), 2, eps)
    np.testing.assert_array_equal(empty, again)


def test_jpw_releases_integer_counts_for_empty_and_non_empty_leaves():
    X, y = fa.dataset("jpw")
    est = JPWForestClassifier(n_trees=2, max_depth=1, feature_domain=fa.JPW_DOMAIN, classes=fa.CLASSES,
                              random_state=0, noise_rng=rng(10)).fit(X, y)
    probe = np.vstack([fa.JPW_PROBE, np.random.default_rng(0).random((50, 8))])
    counts = est.tree_counts(probe)
    assert np.all(counts == np.rint(counts))


def test_empty_leaf_label_is_exactly_uniform():
    secret = draw_empty_leaf_secret(rng(11))
    labels = empty_leaf_label(secret, 1, np.arange(N, dtype=np.uint64), 7)
    assert stats.chisquare(np.bincount(labels, minlength=7)).pvalue > 1e-4


# ------------------------------------------------------------------------ word streams


SAMPLERS = {
    "uniform": lambda r, b: uniform_below(10, 500, rng=r, buffer_words=b),
    "bernoulli": lambda r, b: bernoulli(2, 7, 500, rng=r, buffer_words=b),
    "bernoulli_exp": lambda r, b: bernoulli_exp(7, 3, 500, rng=r, buffer_words=b),
    "dlap": lambda r, b: discrete_laplace(10, 3, 500, rng=r, buffer_words=b),
    "dlap_big": lambda r, b: discrete_laplace(2**47 + 5, 2**20, 500, rng=r, buffer_words=b),
    "dgauss": lambda r, b: discrete_gaussian(18, 17, 500, rng=r, buffer_words=b),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_outputs_do_not_depend_on_the_buffer_size(name):
    draw = SAMPLERS[name]
    reference = draw(rng(12), None)
    for buffer_words in (1, 2, 3, 17, 1000):
        np.testing.assert_array_equal(draw(rng(12), buffer_words), reference)


def test_empty_leaf_counts_do_not_depend_on_the_word_chunk():
    secret = draw_empty_leaf_secret(rng(14))
    keys = np.arange(300, dtype=np.uint64)
    tr = np.zeros(300, dtype=np.int64)
    t, s = discrete_laplace_scale(epsilon=0.3, sensitivity=1)
    reference = np.empty((300, 3), dtype=np.int64)
    empty_leaves._empty_discrete_laplace(secret, tr, keys, np.uint64(t), np.uint64(s), reference)
    for chunk in (1, 2, 5, 7):
        out = np.empty((300, 3), dtype=np.int64)
        empty_leaves._empty_discrete_laplace(secret, tr, keys, np.uint64(t), np.uint64(s), out, chunk=chunk)
        np.testing.assert_array_equal(out, reference)
    np.testing.assert_array_equal(empty_leaf_laplace(secret, 0, keys, 3, 0.3), reference)


def test_words_are_the_stream_however_chunked():
    a = random_words(rng(13), 10)
    r = rng(13)
    b = np.concatenate([random_words(r, 3), random_words(r, 7)])
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.uint64


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.PCG64DXSM,
                                           np.random.Philox, np.random.SFC64,
                                           np.random.MT19937])
def test_words_are_the_full_range_integers(bit_generator):
    # the raw-output shortcut gives integers(0, 2**64)'s words and leaves the stream
    # where integers() leaves it (MT19937, 32-bit raw output, takes integers() itself)
    ours, theirs = (np.random.Generator(bit_generator(21)) for _ in range(2))
    for n in (0, 1, 5, 300):
        np.testing.assert_array_equal(
            random_words(ours, n), theirs.integers(0, 2**64, size=n, dtype=np.uint64))
    assert ours.random() == theirs.random()


def test_secure_generator_path():
    g = secure_generator()
    w = random_words(g, 1000)
    assert w.dtype == np.uint64 and w.size == 1000 and np.unique(w).size == 1000
    draws = discrete_laplace(1, 1, 20_000, rng=g)
    q = math.exp(-1)
    assert abs(draws.var() - 2 * q / (1 - q) ** 2) < 0.15
    assert isinstance(laplace_mechanism(1.0, epsilon=1.0, sensitivity=1.0, rng=SecureGenerator()), float)
    assert isinstance(discrete_laplace_mechanism(3, epsilon=1.0, rng=g), int)


# ------------------------------------------------------------------------ validation


def test_sampler_parameters_are_checked():
    with pytest.raises(ValueError, match="t must"):
        discrete_laplace(0, 1, 3, rng=rng())
    with pytest.raises(ValueError, match="s must"):
        discrete_laplace(1, SCALE_LIMIT, 3, rng=rng())
    with pytest.raises(ValueError, match="t must"):
        discrete_gaussian(0, 3, 3, rng=rng())
    with pytest.raises(ValueError, match="2\\*\\*52"):
        discrete_gaussian(2**26, 2**26, 3, rng=rng())
    with pytest.raises(ValueError, match="factor 2"):
        discrete_gaussian(3, 300, 3, rng=rng())
    with pytest.raises(ValueError, match="sigma2"):
        discrete_gaussian_variance(0)
    with pytest.raises(ValueError, match="num"):
        bernoulli(4, 3, 3, rng=rng())
    with pytest.raises(ValueError, match="size"):
        discrete_laplace(1, 1, -1, rng=rng())
    with pytest.raises(TypeError, match="rng"):
        discrete_laplace(1, 1, 3, rng=42)
    with pytest.raises(ValueError, match="too large"):
        discrete_laplace_scale(epsilon=1e-12, sensitivity=1e6)
    with pytest.raises(ValueError, match="value too large"):
        laplace_mechanism(1e300, epsilon=1.0, sensitivity=1.0, rng=rng())
