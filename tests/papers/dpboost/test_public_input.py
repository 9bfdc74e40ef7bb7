"""Public input and randomness of DPBoost / SEQ / PARA / NP (issue 16 items 2, 7, 8, 9).

* ``classes`` is public: ``classes_`` and ``predict_proba``'s columns are the declared set
  even when the training fold lacks a class (the old code read them from ``y``).
* ``reg_lambda = 0`` is refused up front (it used to crash with a data-dependent
  ZeroDivisionError on an empty node).
* ``noise_rng`` draws the noise, ``random_state`` the structure (record partitions).
* A fit that reads public input from the data is marked not DP.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpexp.papers.dpboost.steps as dpboost_steps
from dpexp.papers.dpboost.estimators import (
    DPBoostClassifier,
    DPBoostRegressor,
    NPGBDTClassifier,
    NPGBDTRegressor,
)
from dpexp.privacy.public import DataDependentClassesWarning
from dpexp.privacy.randomness import seeded_noise

META = {
    "feature_domain": np.tile([0.0, 1.0], (2, 1)),
    "categorical_features": np.zeros(2, dtype=bool),
    "n_categories": np.zeros(2, dtype=np.int64),
    "max_bins": 8,
}
SMALL = {"n_trees": 4, "max_depth": 2, "learning_rate": 0.3}


def _data(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    return X, (X[:, 0] > 0.5).astype(int)


def _trees_equal(a, b) -> bool:
    return all(
        np.array_equal(s.feature, t.feature)
        and np.array_equal(s.threshold, t.threshold, equal_nan=True)  # NaN at leaves
        and np.array_equal(s.value, t.value)
        for s, t in zip(a.trees_, b.trees_, strict=True)
    )


@pytest.mark.parametrize("mode", ["dpboost", "seq", "para"])
def test_absent_class_keeps_declared_classes(mode):
    X, _ = _data()
    y = np.full(X.shape[0], "neg")  # a fold without the positive class
    m = DPBoostClassifier(mode=mode, trees_per_ensemble=2, classes=["neg", "pos"],
                          random_state=0, **SMALL, **META).fit(X, y)
    assert m.classes_.tolist() == ["neg", "pos"]
    proba = m.predict_proba(X[:5])
    assert proba.shape == (5, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(m.predict(X).tolist()) <= {"neg", "pos"}
    assert m.accountant_.is_dp


def test_np_absent_class_keeps_declared_classes():
    X, _ = _data()
    m = NPGBDTClassifier(classes=[0, 1], min_samples_leaf=1, **SMALL, **META).fit(
        X, np.zeros(X.shape[0], dtype=int))
    assert m.classes_.tolist() == [0, 1]
    assert m.predict_proba(X[:3]).shape == (3, 2)


def test_declared_classes_are_checked():
    X, y = _data()
    with pytest.raises(ValueError, match="outside the declared classes"):
        DPBoostClassifier(classes=[0, 2], random_state=0, **SMALL, **META).fit(X, y)
    with pytest.raises(ValueError, match="exactly 2"):
        DPBoostClassifier(classes=[0, 1, 2], random_state=0, **SMALL, **META).fit(X, y)


def test_classes_from_data_warn_and_mark_not_dp():
    X, y = _data()
    with pytest.warns(DataDependentClassesWarning):
        m = DPBoostClassifier(random_state=0, **SMALL, **META).fit(X, y)
    assert not m.accountant_.is_dp
    assert any("classes" in r for r in m.accountant_.not_dp_reasons)


@pytest.mark.parametrize("cls", [DPBoostClassifier, DPBoostRegressor, NPGBDTClassifier,
                                 NPGBDTRegressor])
@pytest.mark.parametrize("lam", [0.0, -0.1, float("nan")])
def test_reg_lambda_must_be_positive(cls, lam):
    X, y = _data()
    extra = {"classes": [0, 1]} if "Classifier" in cls.__name__ else {"label_domain": (0, 1)}
    with pytest.raises(ValueError, match="reg_lambda"):
        cls(reg_lambda=lam, **SMALL, **META, **extra).fit(X, y)


def test_same_seeds_same_model_and_noise_rng_changes_only_the_noise(monkeypatch):
    X, y = _data()
    parts: list[np.ndarray] = []
    real = dpboost_steps.record_partition

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        parts.append(out.copy())
        return out

    monkeypatch.setattr(dpboost_steps, "record_partition", spy)

    def fit(noise_seed: int) -> DPBoostClassifier:
        return DPBoostClassifier(mode="para", classes=[0, 1], random_state=3,
                                 noise_rng=np.random.default_rng(noise_seed),
                                 **SMALL, **META).fit(X, y)

    a, b, c = fit(1), fit(1), fit(2)
    assert _trees_equal(a, b)  # same random_state + same noise seed: same model
    assert not _trees_equal(a, c)  # another noise stream: other noise ...
    assert len(parts) == 3
    np.testing.assert_array_equal(parts[0], parts[2])  # ... but the same partition


def test_noise_rng_none_is_fresh_and_a_seeded_noise_rng_reproducible():
    """Issue #38 item 1: ``random_state`` drives the structure only; the default noise is
    fresh OS entropy, reproducible noise an explicit ``noise_rng=seeded_noise(...)``."""
    X, y = _data()
    a, b = (DPBoostClassifier(classes=[0, 1], random_state=5, **SMALL, **META).fit(X, y)
            for _ in range(2))
    assert not _trees_equal(a, b)
    a, b = (DPBoostClassifier(classes=[0, 1], random_state=5, noise_rng=seeded_noise(5),
                              **SMALL, **META).fit(X, y) for _ in range(2))
    assert _trees_equal(a, b)


def test_label_domain_and_feature_domain_from_data_mark_not_dp():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = DPBoostRegressor(random_state=0, **SMALL, **META).fit(X, y.astype(float))
        nodom = DPBoostClassifier(classes=[0, 1], random_state=0, **SMALL).fit(X, y)
        quant = DPBoostClassifier(classes=[0, 1], binning="quantile", random_state=0,
                                  **SMALL, **META).fit(X, y)
    assert any("label domain" in r for r in reg.accountant_.not_dp_reasons)
    assert any("feature range" in r for r in nodom.accountant_.not_dp_reasons)
    assert any("quantile" in r for r in quant.accountant_.not_dp_reasons)
    ok = DPBoostRegressor(label_domain=(0, 1), random_state=0, **SMALL, **META).fit(X, y)
    assert ok.accountant_.is_dp


@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_predict_proba_agrees_with_predict(loss):
    X, y = _data(200)
    m = DPBoostClassifier(epsilon=20.0, loss=loss, classes=[0, 1], random_state=0,
                          **SMALL, **META).fit(X, y)
    proba = m.predict_proba(X)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_array_equal(m.classes_[(proba[:, 1] > 0.5).astype(int)], m.predict(X))
