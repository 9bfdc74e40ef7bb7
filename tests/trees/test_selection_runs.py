"""The run-length form of the exponential mechanism's inverse CDF
(:func:`dpexp.privacy.mechanisms._add_run`, used by ``inverse_cdf_rows``) against the
plain one-addition-per-candidate loop it replaces: the same partial sums bit for bit,
hence the same draws, on weights built to hit its special cases (ties with the grid,
binade crossings, weights below half an ulp, subnormals, long runs)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.privacy import mechanisms as M


def sequential_sums(weights: np.ndarray) -> np.ndarray:
    """``acc += w; cum[i] = acc``, one rounded addition per candidate (the reference)."""
    cum = np.empty(weights.size)
    acc = 0.0
    for i, w in enumerate(weights.tolist()):
        acc += w
        cum[i] = acc
    return cum


def run_sums(weights: np.ndarray) -> np.ndarray:
    """The partial sums through ``_add_run``, one call per run of equal weights."""
    cum = np.empty(weights.size)
    acc, i = 0.0, 0
    while i < weights.size:
        j = i + 1
        while j < weights.size and weights[j] == weights[i]:
            j += 1
        acc = M._add_run(acc, float(weights[i]), cum, i, j)
        i = j
    return cum


def runs(rng: np.random.Generator, values: list[float], max_len: int) -> np.ndarray:
    """Runs of the given weights, random order and lengths."""
    out = [np.full(int(rng.integers(1, max_len)), rng.choice(values)) for _ in range(40)]
    return np.concatenate(out)


SPECIAL = [1.0, 0.5, 0.75, 1.5, 3.0, 0.1, 1e-3, 2.0 ** -52, 2.0 ** -53, 3 * 2.0 ** -54,
           1e-17, 5e-324, 1e-310, 0.0, 0.999999999, 1 / 3]


@pytest.mark.parametrize("seed", range(12))
def test_run_sums_equal_sequential_sums(seed):
    rng = np.random.default_rng(seed)
    w = runs(rng, SPECIAL + list(rng.random(4)), max_len=3000 if seed % 2 else 40)
    assert np.array_equal(run_sums(w), sequential_sums(w))


def test_ties_and_binade_crossings():
    # from acc = 2**k on, w = 1.5 * ulp is a tie every step; 1.0 crosses binades often
    for w in (1.5 * 2.0 ** -52, 0.5 * 2.0 ** -52, 2.5 * 2.0 ** -52, 1.0, 2.0 ** -40):
        weights = np.concatenate([[1.0], np.full(5000, w), [0.25], np.full(700, w)])
        assert np.array_equal(run_sums(weights), sequential_sums(weights))


@pytest.mark.parametrize("seed", range(4))
def test_draws_match_the_one_by_one_sampler(seed):
    """The whole sampler against a plain-numpy inverse CDF over the same uniforms."""
    rng = np.random.default_rng(seed)
    x = np.repeat(rng.normal(size=(3, 60)), rng.integers(1, 50, size=60), axis=1)
    x[1, 5:300] = x[1, 4]  # a long run
    scale = 0.3
    u = rng.random((25, x.shape[0]))
    out = np.empty((25, x.shape[0]), dtype=np.int64)
    M.inverse_cdf_rows(x, scale, u, out)
    for r in range(x.shape[0]):
        cum = sequential_sums(np.exp((x[r] - x[r].max()) * scale))
        for m in range(u.shape[0]):
            expected = int(np.searchsorted(cum, u[m, r] * cum[-1], side="right"))
            assert out[m, r] == min(expected, x.shape[1] - 1)


@pytest.mark.parametrize("scale", [1e-3, 0.3, 40.0])
def test_draws_of_distinct_utilities_match_the_one_by_one_sampler(scale):
    """Runs of one candidate (the common case, added without ``_add_run``) mixed with a few
    runs, zero weights (-inf) and NaN, against the plain inverse CDF."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4, 3000))
    x[0, 100:140] = x[0, 99]
    x[1, ::7] = -np.inf
    x[2, 17] = np.nan
    u = rng.random((40, x.shape[0]))
    out = np.empty((40, x.shape[0]), dtype=np.int64)
    M.inverse_cdf_rows(x, scale, u, out)
    for r in range(x.shape[0]):
        w = np.nan_to_num(np.exp((x[r] - np.nanmax(x[r])) * scale), nan=0.0)
        cum = sequential_sums(w)
        for m in range(u.shape[0]):
            expected = int(np.searchsorted(cum, u[m, r] * cum[-1], side="right"))
            assert out[m, r] == min(expected, x.shape[1] - 1)
