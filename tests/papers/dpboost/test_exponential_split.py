"""The exponential-mechanism split policy: best split at huge epsilon, uniform as eps -> 0."""

from __future__ import annotations

import numpy as np

from dpexp.privacy import Accountant
from dpexp.trees.grower import SplitContext
from dpexp.trees.policies import ExponentialSplit
from dpexp.trees.split_search import split_gains


def _ctx(rng, acc, n_bins=6, d=3):
    hist = np.zeros((1, d, n_bins, 2))
    codes = rng.integers(0, n_bins, size=(200, d))
    g = rng.uniform(-1, 1, 200) + 0.8 * (codes[:, 1] < 2)
    for f in range(d):
        np.add.at(hist[0, f, :, 0], codes[:, f], g)
        np.add.at(hist[0, f, :, 1], codes[:, f], 1.0)
    return SplitContext(
        depth=0, max_depth=3, hist=hist, totals=hist[:, 0].sum(axis=1),
        n_candidates=np.full(d, n_bins - 1), n_rows=np.array([200]), node_ids=np.array([0]),
        rng=rng, accountant=acc, label="t",
    )


def test_huge_epsilon_picks_best_split():
    rng = np.random.default_rng(0)
    ctx = _ctx(rng, Accountant(epsilon=float("inf")))
    gains = split_gains(ctx.hist, 0.1, ctx.n_candidates)[0]
    best = np.unravel_index(np.nanargmax(gains), gains.shape)
    policy = ExponentialSplit(0.1, epsilon=1e6, sensitivity=3.0)
    picks = [tuple(int(a[0]) for a in policy(ctx)) for _ in range(200)]
    assert sum(p == best for p in picks) >= 198


def test_tiny_epsilon_is_uniform_over_all_candidates():
    rng = np.random.default_rng(1)
    ctx = _ctx(rng, Accountant(epsilon=float("inf")))
    policy = ExponentialSplit(0.1, epsilon=1e-9, sensitivity=3.0)
    counts = np.zeros((3, 5))
    for _ in range(3000):
        f, b = policy(ctx)
        counts[f[0], b[0]] += 1
    expected = 3000 / 15
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 36.1  # 14 dof, p ~ 0.001


def test_spends_once_per_node_on_disjoint_rows():
    acc = Accountant(epsilon=1.0)
    ctx = _ctx(np.random.default_rng(2), acc)
    ctx.hist = np.repeat(ctx.hist, 4, axis=0)
    ctx.totals = np.repeat(ctx.totals, 4, axis=0)
    ctx.node_ids = np.arange(4)
    ExponentialSplit(0.1, epsilon=0.25, sensitivity=3.0)(ctx)
    (entry,) = acc.ledger()  # 4 releases on disjoint nodes: parallel composition
    assert acc.epsilon_spent == 0.25 and entry["releases"] == 4
    assert entry["nodes"] == [0, 1, 2, 3]
