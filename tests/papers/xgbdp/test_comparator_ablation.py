"""The Table 2 comparators' ablation knobs (count_share, noiseless; issue 22): the accounting
follows them, the default is the paper's "two halves", and switching noise off is never
called DP."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.papers.xgbdp.comparators import (
    DPAdaBoostXGBDPClassifier,
    DPRandomForestXGBDPClassifier,
)
from dpexp.papers.xgbdp.tree import per_node_budgets, per_node_half_budget

META = {"feature_domain": np.array([[-3.0, 3.0]] * 4), "classes": [0, 1]}
COMPARATORS = [DPRandomForestXGBDPClassifier, DPAdaBoostXGBDPClassifier]


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, 4)), -3, 3)
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def _fit(cls, noise_seed=None, **kw):
    X, y = _data()
    noise = None if noise_seed is None else np.random.default_rng(noise_seed)
    return cls(epsilon=1.0, n_trees=2, max_depth=2, min_noisy_count=0, random_state=0,
               noise_rng=noise, **META, **kw).fit(X, y)


def _tree_spends(model, suffix):
    """Epsilons of the tree's ledger entries whose description ends with ``suffix``."""
    return [e["epsilon"] for e in model.accountant_.ledger() if e["what"].endswith(suffix)]


@pytest.mark.parametrize("cls", COMPARATORS)
def test_default_is_the_papers_two_halves(cls):
    m = _fit(cls)
    counts = _tree_spends(m, "noisy counts")
    assert counts and m.accountant_.is_dp
    # every count and every split spend is the same half of a node's layer budget
    splits = _tree_spends(m, "split")
    assert splits and np.allclose(counts, counts[0]) and np.allclose(splits, counts[0])


@pytest.mark.parametrize("cls", COMPARATORS)
def test_count_share_moves_budget_and_keeps_the_total(cls):
    half = _fit(cls)
    m = _fit(cls, count_share=0.2)
    c_half = _tree_spends(half, "noisy counts")[0]
    # the layer budget is 2 * the paper's half; a 20/80 share of it
    layer = 2.0 * c_half
    eps_c, eps_o = per_node_budgets(layer, 0, 0.2)
    assert np.allclose(_tree_spends(m, "noisy counts"), eps_c)
    assert np.allclose(_tree_spends(m, "split"), eps_o)
    assert np.allclose(_tree_spends(m, "noisy residual sum"), eps_o)
    assert m.accountant_.epsilon_spent == pytest.approx(1.0)
    assert m.accountant_.is_dp


def test_forest_count_half_matches_per_node_half_budget():
    m = _fit(DPRandomForestXGBDPClassifier)
    # forest: eps/n per tree, eps/(2 n (d+1)) per node half (Section 5.1)
    assert np.allclose(_tree_spends(m, "noisy counts"), per_node_half_budget(1.0 / 2, 2))


@pytest.mark.parametrize("cls", COMPARATORS)
@pytest.mark.parametrize("bad", [{"count_share": 1.0}, {"count_share": 0.0},
                                 {"noiseless": "leaves"}])
def test_bad_knobs_are_clear_errors(cls, bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        _fit(cls, **bad)


def test_error_source_is_adaboosts_only():
    with pytest.raises(ValueError, match="noiseless"):
        _fit(DPRandomForestXGBDPClassifier, noiseless="error")
    m = _fit(DPAdaBoostXGBDPClassifier, noiseless="error")
    assert not m.accountant_.is_dp
    # the error sums are still charged: the total is the whole budget
    assert m.accountant_.epsilon_spent == pytest.approx(1.0)


@pytest.mark.parametrize("cls", COMPARATORS)
def test_noiseless_is_never_dp(cls):
    m = _fit(cls, noiseless="split")
    assert not m.accountant_.is_dp
    assert any("split" in r for r in m.accountant_.not_dp_reasons)
    assert _fit(cls).accountant_.is_dp


def test_noiseless_forest_draws_no_noise():
    X, _ = _data()
    a, b = (_fit(DPRandomForestXGBDPClassifier, noise_seed=s, noiseless="count,split,leaf")
            for s in (1, 2))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    c, d = (_fit(DPRandomForestXGBDPClassifier, noise_seed=s) for s in (1, 2))
    assert not np.array_equal(c.predict_proba(X), d.predict_proba(X))


def test_noiseless_adaboost_draws_no_noise():
    X, _ = _data()
    # trees exact, error sums noised: round 0 keeps every record (w = 1), so its tree is
    # exact; the later rounds follow the noisy error estimate
    a, b = (_fit(DPAdaBoostXGBDPClassifier, noise_seed=s, noiseless="count,split,leaf")
            for s in (1, 2))
    np.testing.assert_array_equal(a.trees_[0].feature, b.trees_[0].feature)
    np.testing.assert_array_equal(a.trees_[0].value, b.trees_[0].value)
    assert a.tree_weights_ != b.tree_weights_
    # everything exact: two noise seeds give the same model
    a, b = (_fit(DPAdaBoostXGBDPClassifier, noise_seed=s, noiseless="count,split,leaf,error")
            for s in (1, 2))
    assert a.tree_weights_ == b.tree_weights_
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
