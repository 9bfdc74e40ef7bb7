"""The faster paths of DPBoost's split step (issue 20 speed) give the values and draws of
the plain ones bit for bit: packed candidate gains (:func:`candidate_gains`) against
:func:`split_gains` at the public candidates, and :class:`ExponentialSplit` against the
gather-and-draw it replaced, on histograms with the empty bins, zero statistics and
varying candidate grids that small DPBoost trees produce."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.privacy import Accountant, exponential_mechanism
from dpexp.trees.grower import SplitContext
from dpexp.trees.policies import ExponentialSplit, candidate_index
from dpexp.trees.split_search import candidate_gains, candidate_offsets, split_gains


def _hist(rng, nb: int, n_bins: np.ndarray, width: int, rows_per_node: int,
          k: int = 2) -> np.ndarray:
    """Histograms of ``rows_per_node`` random rows per node: most bins empty; feature
    ``f`` uses bins below ``n_bins[f]`` only (the others stay zero, as in the grower)."""
    hist = np.zeros((nb, n_bins.size, width, k))
    for j in range(nb):
        g = rng.uniform(-1, 1, rows_per_node)
        g[: rows_per_node // 4] = 0.0  # rows with a zero gradient: a bin of zero sum
        for f, nbf in enumerate(n_bins):
            if nbf == 0:
                continue
            codes = rng.integers(0, nbf, rows_per_node)
            np.add.at(hist[j, f, :, 0], codes, g)
            np.add.at(hist[j, f, :, 1], codes, 1.0)
            if k > 2:
                np.add.at(hist[j, f, :, 2], codes, g * g)
    return hist


def _padded_at_candidates(hist, lam, n_valid) -> np.ndarray:
    """The reference: split_gains' padded array gathered at the public candidates."""
    gains = split_gains(hist, lam, n_valid)
    idx = candidate_index(n_valid, gains.shape[2])
    return gains.reshape(gains.shape[0], -1)[:, idx]


@pytest.mark.parametrize("rows_per_node", [0, 1, 3, 40, 2000])
@pytest.mark.parametrize("k", [2, 3])
def test_candidate_gains_equal_split_gains_bit_for_bit(rows_per_node, k):
    rng = np.random.default_rng(rows_per_node + 10 * k)
    width = 17
    n_bins = np.array([17, 2, 0, 1, 9, 17, 5])
    n_valid = np.maximum(n_bins - 1, 0)
    hist = _hist(rng, 6, n_bins, width, rows_per_node, k)
    ref = _padded_at_candidates(hist, 0.1, n_valid)
    for kwargs in ({}, {"n_bins": n_bins}, {"offsets": candidate_offsets(n_valid, width)}):
        got = candidate_gains(hist, 0.1, n_valid, **kwargs)
        assert got.shape == ref.shape == (6, int(n_valid.sum()))
        assert np.array_equal(got.view(np.int64), ref.view(np.int64))  # every bit


@pytest.mark.parametrize("width", [6, 40])  # a short scan, and the wide one (> 16 bins)
@pytest.mark.parametrize("n_valid", [5, 39])
def test_candidate_gains_negative_zero_and_cancelling_sums(width, n_valid):
    # bins of -0.0 and a bin whose gradients cancel to exactly 0 (rows present)
    hist = np.zeros((1, 1, width, 2))
    hist[0, 0, :6, 0] = [-0.0, 0.5, -0.0, -0.5, 0.0, 0.25]
    hist[0, 0, :6, 1] = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    hist[0, 0, 4] = [0.0, 2.0]  # two rows whose gradients sum to 0
    hist[0, 0, width - 1] = [-0.75, 3.0]  # the last bin: past the candidates when n_valid = 5
    n_valid = np.array([min(n_valid, width - 1)])
    ref = _padded_at_candidates(hist, 0.1, n_valid)
    got = candidate_gains(hist, 0.1, n_valid)
    assert np.array_equal(got.view(np.int64), ref.view(np.int64))


def test_binary_feature_gains_every_zero_and_empty_bin():
    """The binary features' path (two bins in use, one candidate: no scan of the empty
    bins) on every pair of bins drawn from empty ones of either zero's sign, rows whose
    gradients cancel, and ordinary sums: the padded reference's bits."""
    cells = [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, 2.0), (0.0, 3.0), (0.5, 1.0),
             (-0.5, 1.0), (1e-300, 1.0), (0.3, -0.0)]
    pairs = [(a, b) for a in cells for b in cells]
    hist = np.zeros((len(pairs), 3, 4, 2))
    for j, (a, b) in enumerate(pairs):
        hist[j, 1, 0], hist[j, 1, 1] = a, b  # feature 1: binary in a wider histogram
        hist[j, 0, :3, 0] = [0.25, -0.0, 0.5]  # its neighbours: a scanned feature ...
        hist[j, 0, :3, 1] = [1.0, 0.0, 2.0]
        hist[j, 2, 0], hist[j, 2, 1] = b, a  # ... and another binary one
    n_bins = np.array([3, 2, 2])
    n_valid = np.array([2, 1, 1])
    ref = _padded_at_candidates(hist, 0.1, n_valid)
    got = candidate_gains(hist, 0.1, n_valid, n_bins=n_bins)
    assert np.array_equal(got.view(np.int64), ref.view(np.int64))


def _ctx(hist, n_valid, rng, acc, n_bins=None) -> SplitContext:
    nb = hist.shape[0]
    return SplitContext(
        depth=1, max_depth=3, hist=hist, totals=hist[:, 0].sum(axis=1),
        n_candidates=n_valid, n_rows=np.zeros(nb, dtype=np.int64),
        node_ids=np.arange(3, 3 + nb), rng=rng, accountant=acc, label="t", n_bins=n_bins,
    )


def _old_split(hist, n_valid, lam, eps, sens, rng) -> tuple[np.ndarray, np.ndarray]:
    """The gather-and-draw of ExponentialSplit before the packed gains (the reference)."""
    util = _padded_at_candidates(hist, lam, n_valid)
    idx = candidate_index(n_valid, hist.shape[2] - 1)
    choice = np.atleast_1d(exponential_mechanism(util, epsilon=eps, sensitivity=sens,
                                                 rng=rng)).astype(np.int64)
    c = idx[choice]
    return c // (hist.shape[2] - 1), c % (hist.shape[2] - 1)


@pytest.mark.parametrize("eps", [1e-3, 0.5, 50.0])
def test_exponential_split_draws_as_before(eps):
    rng = np.random.default_rng(3)
    width = 12
    policy = ExponentialSplit(0.1, eps, 3.0)  # one policy: its candidate layout is kept
    for n_bins in (np.array([12, 2, 7, 0, 12]), np.array([12, 12, 3]),
                   np.array([12, 2, 7, 0, 12])):
        n_valid = np.maximum(n_bins - 1, 0)
        for rows in (2, 30):
            hist = _hist(rng, 4, n_bins, width, rows)
            seed = int(rng.integers(1 << 30))
            want = _old_split(hist, n_valid, 0.1, eps, 3.0, np.random.default_rng(seed))
            got = policy(_ctx(hist, n_valid, np.random.default_rng(seed),
                              Accountant(float("inf")), n_bins))
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            assert all((0 <= b < n_valid[f]) for f, b in zip(*got, strict=True))


def test_exponential_split_ledger_lists_the_nodes():
    acc = Accountant(epsilon=1.0)
    n_bins = np.array([5, 5])
    hist = _hist(np.random.default_rng(4), 3, n_bins, 5, 10)
    ExponentialSplit(0.1, 0.25, 3.0)(_ctx(hist, n_bins - 1, np.random.default_rng(0), acc))
    (entry,) = acc.ledger()
    assert entry["nodes"] == [3, 4, 5] and all(type(i) is int for i in entry["nodes"])
    assert entry["releases"] == 3 and acc.epsilon_spent == 0.25
