"""XGBoost-DP's DP AdaBoost comparator: each round resamples record ``i`` by a keyed
uniform of its content id, so a canary inserted at row 0, in the middle or at the end
changes no other record's uniform (its inclusion then depends on its own weight only)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.papers.xgbdp import comparators
from dpexp.papers.xgbdp.comparators import DPAdaBoostXGBDPClassifier
from dpexp.privacy.partition import keyed_uniform

META = {
    "feature_domain": np.tile([0.0, 1.0], (3, 1)),
    "categorical_features": np.zeros(3, dtype=bool),
    "n_categories": np.zeros(3, dtype=np.int64),
}
N = 100


def _uniforms(monkeypatch, X, y) -> list[np.ndarray]:
    """The resampling uniforms of every round (a spy on keyed_uniform)."""
    seen: list[np.ndarray] = []
    def spy(ids, key):
        out = keyed_uniform(ids, key)
        seen.append(out.copy())
        return out

    monkeypatch.setattr(comparators, "keyed_uniform", spy)
    DPAdaBoostXGBDPClassifier(epsilon=5.0, n_trees=3, max_depth=2, classes=[0, 1],
                              random_state=0, **META).fit(X, y)
    return seen


@pytest.mark.parametrize("at", [0, N // 2, N])
def test_a_canary_anywhere_changes_no_other_records_draw(monkeypatch, at):
    X = np.random.default_rng(0).random((N, 3))
    y = (X[:, 0] > 0.5).astype(int)
    before = _uniforms(monkeypatch, X, y)
    after = _uniforms(monkeypatch, np.insert(X, at, [0.2, 0.9, 0.4], axis=0), np.insert(y, at, 1))
    assert len(before) == len(after) == 3
    for u, v in zip(before, after, strict=True):
        np.testing.assert_array_equal(np.delete(v, at), u)
