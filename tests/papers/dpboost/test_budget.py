"""epsilon_spent never exceeds the epsilon asked for, in every mode."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.papers.dpboost.estimators import DPBoostClassifier, DPBoostRegressor


def _data(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    return X, (X[:, 0] > 0.5).astype(int), X[:, 1] * 10


@pytest.mark.parametrize("mode", ["dpboost", "seq", "para"])
@pytest.mark.parametrize("n_trees,te", [(7, 3), (6, 6), (5, 50)])
@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_epsilon_spent_never_exceeds_budget(mode, n_trees, te, epsilon):
    X, yc, yr = _data()
    kw = dict(epsilon=epsilon, mode=mode, n_trees=n_trees, trees_per_ensemble=te, max_depth=3,
              feature_domain=np.tile([0.0, 1.0], (4, 1)), random_state=1)
    clf = DPBoostClassifier(**kw).fit(X, yc)
    reg = DPBoostRegressor(label_domain=(0.0, 10.0), **kw).fit(X, yr)
    for est in (clf, reg):
        spent = est.accountant_.epsilon_spent
        assert spent <= epsilon * (1 + 1e-9)
        # the whole budget is used (Theorems 7 and 8)
        assert spent == pytest.approx(epsilon)
        assert len(est.trees_) == n_trees
        assert set(est.diagnostics_) >= {"seconds_per_tree", "n_filtered", "n_instances_used"}
        assert len(list(est.staged_predict(X[:10]))) == n_trees


def test_ledger_structure_dpboost():
    X, yc, _ = _data()
    est = DPBoostClassifier(epsilon=2.0, n_trees=4, trees_per_ensemble=2, max_depth=2,
                            feature_domain=np.tile([0.0, 1.0], (4, 1)), random_state=0)
    ledger = est.fit(X, yc).accountant_.ledger()
    # 2 ensembles x 2 trees x (depth 0 split, depth 1 splits, leaf values): one entry per
    # batch of releases on disjoint nodes, 1 + 2 split nodes + 4 leaves per tree
    assert len(ledger) == 2 * 2 * 3
    assert [e.get("releases", 1) for e in ledger[:3]] == [1, 2, 4]
    assert est.accountant_.summary()["n_releases"] == 2 * 2 * 7
    split = [e for e in ledger if e["mechanism"] == "exponential"][0]
    leaf = [e for e in ledger if e["mechanism"] == "laplace"][0]
    assert split["epsilon"] == pytest.approx(1.0 / 2 / 2)  # eps_t / (2 Depth_max)
    assert leaf["epsilon"] == pytest.approx(1.0 / 2)  # eps_t / 2
    assert split["sensitivity"] == 3.0
    assert split["scope_kinds"][:2] == ["sequential", "parallel"]


@pytest.mark.parametrize("per_ensemble", [True, False])
def test_glc_decay_restarts_with_each_ensemble_unless_asked_not_to(per_ensemble):
    X, yc, _ = _data()
    est = DPBoostClassifier(epsilon=2.0, n_trees=4, trees_per_ensemble=2, max_depth=1,
                            learning_rate=0.5, glc_per_ensemble=per_ensemble,
                            feature_domain=np.tile([0.0, 1.0], (4, 1)), random_state=0)
    leaves = [e for e in est.fit(X, yc).accountant_.ledger() if e["mechanism"] == "laplace"]
    # Corollary 2: min(g*/(1+lambda), 2 g* (1-eta)^(t-1)) with g* = 1, lambda = 0.1, eta = 0.5
    index = [1, 2, 1, 2] if per_ensemble else [1, 2, 3, 4]
    expect = [min(1 / 1.1, 2 * 0.5 ** (t - 1)) for t in index]
    assert [e["sensitivity"] for e in leaves] == pytest.approx(expect)
