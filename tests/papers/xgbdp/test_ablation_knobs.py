"""XGBoost-DP's ablation knobs (grad_clip, count_share, noiseless): the accounting follows
them, the paper's setting is unchanged, and switching noise off is never called DP."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.boosting.gbdt import split_sensitivity
from dpexp.papers.xgbdp.estimators import XGBoostDPClassifier
from dpexp.papers.xgbdp.tree import parse_noiseless, per_node_budgets, per_node_half_budget

META = {"feature_domain": np.array([[-3.0, 3.0]] * 4), "classes": [0, 1]}


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, 4)), -3, 3)
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def _fit(**kw):
    X, y = _data()
    return XGBoostDPClassifier(epsilon=1.0, n_trees=2, max_depth=2, min_noisy_count=0,
                               random_state=0, **META, **kw).fit(X, y)


def test_count_share_half_is_the_papers_split():
    assert per_node_budgets(0.3, 5)[0] == pytest.approx(per_node_half_budget(0.3, 5))
    c, o = per_node_budgets(0.3, 5, 0.2)
    assert c + o == pytest.approx(0.3 / 6) and c == pytest.approx(0.2 * 0.3 / 6)
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="count_share"):
            per_node_budgets(1.0, 3, bad)


def test_count_share_moves_budget_and_keeps_the_total():
    m = _fit(count_share=0.2)
    led = m.accountant_.ledger()
    counts = [e["epsilon"] for e in led if e["what"].endswith("counts")]
    others = [e["epsilon"] for e in led if not e["what"].endswith("counts")]
    eps_c, eps_o = per_node_budgets(0.5, 2, 0.2)
    assert counts and others
    assert np.allclose(counts, eps_c) and np.allclose(others, eps_o)
    assert m.accountant_.epsilon_spent == pytest.approx(1.0)
    assert m.accountant_.is_dp


def test_grad_clip_sets_the_sensitivities_and_leaf_range():
    m = _fit(grad_clip=0.25)
    led = m.accountant_.ledger()
    assert np.allclose([e["sensitivity"] for e in led if e["what"].endswith("split")],
                       split_sensitivity(0.25))
    assert np.allclose([e["sensitivity"] for e in led if e["what"].endswith("sum")], 0.25)
    leaves = np.concatenate([t.value[t.leaves, 0] for t in m.trees_])
    assert np.abs(leaves).max() <= 0.25
    with pytest.raises(ValueError, match="grad_clip"):
        _fit(grad_clip=2.0)


def test_noiseless_is_never_dp_and_removes_the_noise():
    assert parse_noiseless("") == frozenset()
    assert parse_noiseless("leaf, split") == {"leaf", "split"}
    with pytest.raises(ValueError, match="noiseless"):
        parse_noiseless("leaves")
    m = _fit(noiseless="count,split,leaf")
    assert not m.accountant_.is_dp
    # without any noise two different noise seeds give the same model
    X, y = _data()
    a, b = (XGBoostDPClassifier(epsilon=1.0, n_trees=2, max_depth=2, min_noisy_count=0,
                                noiseless="count,split,leaf", random_state=0,
                                noise_rng=np.random.default_rng(s), **META).fit(X, y)
            for s in (1, 2))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert _fit().accountant_.is_dp
