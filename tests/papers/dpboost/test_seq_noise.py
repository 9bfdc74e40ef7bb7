"""SEQ (Section 4): every tree on all rows with epsilon/T, leaves epsilon/(2T) with
Delta V = g*/(1+lambda), no GLC -- the Laplace scale 2 T Delta V / epsilon (90.9 at T = 50,
epsilon = 1) that makes SEQ a coin flip in Fig. 2 (issue 20: not a bug)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.papers.dpboost.estimators import DPBoostClassifier


@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_seq_leaf_noise_scale_is_2T_delta_v_over_epsilon(eps):
    rng = np.random.default_rng(0)
    X = rng.random((300, 3))
    y = (X[:, 0] > 0.5).astype(int)
    T = 50
    m = DPBoostClassifier(epsilon=eps, mode="seq", n_trees=T, max_depth=2,
                          feature_domain=[[0.0, 1.0]] * 3, classes=[0, 1],
                          random_state=0).fit(X, y)
    leaves = [e for e in m.accountant_.ledger() if e["mechanism"] == "laplace"]
    assert len(leaves) == T  # one leaf release per tree, every tree on all rows
    scales = np.array([e["sensitivity"] / e["epsilon"] for e in leaves])
    np.testing.assert_allclose(scales, 2 * T * (1 / 1.1) / eps)  # 90.9 at epsilon 1
    assert all(e["scope_kinds"] == ["sequential"] for e in leaves)  # no parallel split
    assert m.accountant_.epsilon_spent == pytest.approx(eps)
