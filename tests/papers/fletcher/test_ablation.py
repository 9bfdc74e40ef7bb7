"""The Fig. 11 ablation procedure: FS with continuous features as categories (issue 21)."""

from __future__ import annotations

import numpy as np

from dpexp.experiments.procedures import CellContext, get_procedure


class _Data:
    def public_metadata(self):
        return {"classes": np.array([0, 1])}


def _ctx(X_train, y_train, X_test, y_test, epsilon=1.0):
    return CellContext(dataset=_Data(), params={}, epsilon=epsilon,
                       rng=np.random.default_rng(0), random_state=0,
                       X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test)


def test_many_valued_features_leave_fs_at_the_root():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 3))
    y = (X[:, 0] > 0.3).astype(int)  # learnable, 62% majority
    out = get_procedure("fletcher_fs_as_discrete")(_ctx(X[:2500], y[:2500], X[2500:], y[2500:]))
    assert out["largest_domain"] == 3000
    assert out["accuracy"] == out["majority_accuracy"]


def test_few_valued_features_still_split():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 2, size=(4000, 3)).astype(float)
    y = X[:, 0].astype(int)  # one binary feature decides the label
    out = get_procedure("fletcher_fs_as_discrete")(_ctx(X[:3500], y[:3500], X[3500:], y[3500:]))
    assert out["largest_domain"] == 2
    assert out["accuracy"] > 0.95 > out["majority_accuracy"]
