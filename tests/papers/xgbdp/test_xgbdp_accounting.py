"""Budget accounting of XGBoost-DP and its comparators (Shi et al. 2021
Table 1 / Section 5.1)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.papers.xgbdp.comparators import (
    DPAdaBoostXGBDPClassifier,
    DPRandomForestXGBDPClassifier,
    adaboost_round_budgets,
)
from dpexp.papers.xgbdp.estimators import XGBoostDPClassifier
from dpexp.papers.xgbdp.tree import per_node_half_budget, per_tree_budget

META = {"feature_domain": np.array([[-3.0, 3.0]] * 4)}


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, 4)), -3, 3)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


def test_table1_budget_split():
    assert per_tree_budget(1.0, 4) == 0.25
    assert per_node_half_budget(0.25, 7) == pytest.approx(0.25 / 16)


@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 7.0])
@pytest.mark.parametrize("cls", [XGBoostDPClassifier, DPRandomForestXGBDPClassifier,
                                 DPAdaBoostXGBDPClassifier])
def test_spend_is_exactly_the_budget_when_grown_to_depth(cls, eps):
    X, y = _data()
    m = cls(epsilon=eps, n_trees=3, max_depth=3, min_noisy_count=0, random_state=1,
            **META).fit(X, y)
    assert m.accountant_.epsilon_spent == pytest.approx(eps, rel=1e-12)
    assert m.accountant_.epsilon_spent <= eps * (1 + 1e-9)


@pytest.mark.parametrize("cls", [XGBoostDPClassifier, DPRandomForestXGBDPClassifier,
                                 DPAdaBoostXGBDPClassifier])
def test_spend_never_exceeds_budget_with_early_stopping(cls):
    X, y = _data(300)
    for eps in (0.01, 0.5, 3.0):
        m = cls(epsilon=eps, n_trees=2, max_depth=4, random_state=2, **META).fit(X, y)
        assert m.accountant_.epsilon_spent <= eps * (1 + 1e-9)
        assert m.diagnostics_["epsilon_unused"] >= 0


def test_ledger_has_count_then_split_per_node_and_leaf_sums():
    X, y = _data()
    m = XGBoostDPClassifier(epsilon=1.0, n_trees=1, max_depth=2, min_noisy_count=0,
                            random_state=0, **META).fit(X, y)
    led = m.accountant_.ledger()
    half = per_node_half_budget(1.0, 2)
    assert all(e["epsilon"] == pytest.approx(half) for e in led)
    releases = {}
    for e in led:  # a depth's counts and the leaves' sums are one entry each (disjoint nodes)
        kind = e["what"].split()[-1]
        releases[kind] = releases.get(kind, 0) + e.get("releases", 1)
    # 1 + 2 internal nodes (count + split), 4 depth-2 counts, 4 leaf sums
    assert releases == {"split": 3, "counts": 3 + 4, "sums": 4}
    assert [e["mechanism"] for e in led if e["what"].endswith("counts")] == ["discrete_laplace"] * 3


def test_adaboost_round_budget_adds_up():
    tree, err = adaboost_round_budgets(0.5, 7)
    assert tree + 2 * err == pytest.approx(0.5)
    assert tree / 8 == pytest.approx(2 * err)  # every layer gets the same share


def test_paper_variant_flags_nonprivate_selection_and_paper_claim():
    X, y = _data()
    m = XGBoostDPClassifier(epsilon=1.0, variant="paper", n_trees=4, n_selected_features=2,
                            max_depth=3, random_state=0, **META).fit(X, y)
    d = m.diagnostics_
    assert d["nonprivate_feature_selection"] == 1.0
    assert d["n_features_used"] == 2.0
    assert d["paper_claimed_epsilon"] == pytest.approx(0.25)
    assert m.accountant_.epsilon_spent <= 1.0 * (1 + 1e-9)
    used = {int(f) for t in m.trees_ for f in t.feature[t.feature >= 0]}
    assert len(used) <= 2
