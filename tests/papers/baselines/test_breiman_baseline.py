"""breiman_rf (the non-private reference, dpexp.papers.baselines.estimators) over declared classes."""

from __future__ import annotations

import numpy as np

from dpexp.papers.baselines.estimators import BreimanForestClassifier
from dpexp.registry import make_estimator


def _data():
    rng = np.random.default_rng(0)
    X = rng.random((60, 2))
    return X, np.where(X[:, 0] > 0.5, "b", "a")


def test_fold_without_a_class_predicts_over_the_declared_classes():
    X, y = _data()
    m = BreimanForestClassifier(n_estimators=10, classes=["a", "b", "c"], random_state=0)
    m.fit(X, y)
    assert m.classes_.tolist() == ["a", "b", "c"]
    proba = m.predict_proba(X)
    assert proba.shape == (60, 3)
    np.testing.assert_array_equal(proba[:, 2], 0.0)
    np.testing.assert_array_equal(m.predict(X), m.classes_[np.argmax(proba, axis=1)])
    assert m.score(X, y) > 0.9


def test_without_classes_it_is_scikit_learns_forest():
    X, y = _data()
    m = BreimanForestClassifier(n_estimators=10, random_state=0).fit(X, y)
    assert m.classes_.tolist() == ["a", "b"]
    assert m.predict_proba(X).shape == (60, 2)


def test_runner_passes_the_declared_classes():
    est = make_estimator("breiman_rf", "classification", {}, epsilon=None, random_state=0,
                         public={"classes": np.array(["a", "b", "c"])})
    assert list(est.classes) == ["a", "b", "c"]
