"""Public input and randomness of XGBoost-DP, its comparators and the Gaussian BDT
(issue 16 items 2, 7, 8, 9): declared classes, reg_lambda > 0, noise vs structure streams,
not-DP marking (the paper variant's feature selection, data-derived domains)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpexp.papers.gaussian_bdt.estimators import GaussianBDTClassifier
from dpexp.papers.xgbdp.comparators import (
    DPAdaBoostXGBDPClassifier,
    DPRandomForestXGBDPClassifier,
    NPAdaBoostXGBDPClassifier,
    NPRandomForestXGBDPClassifier,
)
from dpexp.papers.xgbdp.estimators import NPXGBoostClassifier, XGBoostDPClassifier
from dpexp.privacy.public import DataDependentClassesWarning
from dpexp.registry import get_algorithm

META = {
    "feature_domain": np.tile([0.0, 1.0], (3, 1)),
    "categorical_features": np.zeros(3, dtype=bool),
    "n_categories": np.zeros(3, dtype=np.int64),
}
SMALL = {"n_trees": 3, "max_depth": 2}
PRIVATE = [XGBoostDPClassifier, DPRandomForestXGBDPClassifier, DPAdaBoostXGBDPClassifier,
           GaussianBDTClassifier]
CLASSIFIERS = [*PRIVATE, NPXGBoostClassifier, NPRandomForestXGBDPClassifier,
               NPAdaBoostXGBDPClassifier]
LAMBDA = [XGBoostDPClassifier, DPRandomForestXGBDPClassifier, DPAdaBoostXGBDPClassifier,
          NPXGBoostClassifier, NPRandomForestXGBDPClassifier, NPAdaBoostXGBDPClassifier]


def _data(n: int = 80, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    return X, (X[:, 0] + 0.2 * X[:, 1] > 0.6).astype(int)


def _make(cls, **kw):
    params = {**SMALL, **META, "random_state": 0, **kw}
    if "epsilon" in cls().get_params():
        params.setdefault("epsilon", 5.0)
    return cls(**params)


def _trees_equal(a, b, *, values: bool = True) -> bool:
    return all(
        np.array_equal(s.feature, t.feature)
        and np.array_equal(s.threshold, t.threshold, equal_nan=True)  # NaN at leaves
        and (not values or np.array_equal(s.value, t.value))
        for s, t in zip(a.trees_, b.trees_, strict=True)
    )


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_absent_class_keeps_declared_classes(cls):
    X, _ = _data()
    y = np.full(X.shape[0], "neg")  # a training fold without the positive class
    m = _make(cls, classes=["neg", "pos"]).fit(X, y)
    assert m.classes_.tolist() == ["neg", "pos"]
    proba = m.predict_proba(X[:4])
    assert proba.shape == (4, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(m.predict(X).tolist()) <= {"neg", "pos"}
    if cls in PRIVATE:
        assert m.accountant_.is_dp


@pytest.mark.parametrize("cls", PRIVATE)
def test_classes_from_data_warn_and_mark_not_dp(cls):
    X, y = _data()
    with pytest.warns(DataDependentClassesWarning):
        m = _make(cls).fit(X, y)
    assert not m.accountant_.is_dp


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_declared_classes_must_be_binary_and_cover_y(cls):
    X, y = _data()
    with pytest.raises(ValueError, match="outside the declared classes"):
        _make(cls, classes=[0, 5]).fit(X, y)
    with pytest.raises(ValueError, match="exactly 2"):
        _make(cls, classes=[0, 1, 2]).fit(X, y)


@pytest.mark.parametrize("cls", LAMBDA)
@pytest.mark.parametrize("lam", [0.0, -1.0])
def test_reg_lambda_must_be_positive(cls, lam):
    X, y = _data()
    with pytest.raises(ValueError, match="reg_lambda"):
        _make(cls, classes=[0, 1], reg_lambda=lam).fit(X, y)


@pytest.mark.parametrize("cls", PRIVATE)
def test_same_seeds_same_model_other_noise_other_model(cls):
    X, y = _data()

    # min_noisy_count=0: every node splits, so the trees have room to differ
    stop = {"min_noisy_count": 0} if "min_noisy_count" in cls().get_params() else {}

    def fit(noise_seed):
        return _make(cls, classes=[0, 1], noise_rng=np.random.default_rng(noise_seed),
                     **stop).fit(X, y)

    a, b, c = fit(1), fit(1), fit(2)
    assert _trees_equal(a, b)
    assert not _trees_equal(a, c)




def test_adaboost_resampling_is_structure_keyed_by_record(monkeypatch):
    """The resampling uniforms come from random_state (the same for any noise_rng) and
    from a keyed hash of each record's id (removing the last record moves no other)."""
    X, y = _data()
    seen: list[np.ndarray] = []
    real = DPAdaBoostXGBDPClassifier._resample_uniforms

    def spy(ids, rng):
        out = real(ids, rng)
        seen.append(out)
        return out

    monkeypatch.setattr(DPAdaBoostXGBDPClassifier, "_resample_uniforms", staticmethod(spy))
    for noise_seed in (1, 2):
        _make(DPAdaBoostXGBDPClassifier, classes=[0, 1],
              noise_rng=np.random.default_rng(noise_seed)).fit(X, y)
    _make(DPAdaBoostXGBDPClassifier, classes=[0, 1],
          noise_rng=np.random.default_rng(1)).fit(X[:-1], y[:-1])
    T = SMALL["n_trees"]
    assert len(seen) == 3 * T
    for t in range(T):
        np.testing.assert_array_equal(seen[t], seen[T + t])  # noise_rng: same uniforms
        np.testing.assert_array_equal(seen[t][:-1], seen[2 * T + t])  # record-stable
    assert not np.array_equal(seen[0], seen[1])  # a fresh key per round


def test_paper_variant_is_marked_not_dp():
    X, y = _data()
    m = _make(XGBoostDPClassifier, classes=[0, 1], variant="paper",
              n_selected_features=1).fit(X, y)
    assert not m.accountant_.is_dp
    assert any("non-private" in r for r in m.accountant_.not_dp_reasons)
    assert get_algorithm("xgboost_dp_paper").not_dp
    assert get_algorithm("xgboost_dp").not_dp is None
    ok = _make(XGBoostDPClassifier, classes=[0, 1]).fit(X, y)
    assert ok.accountant_.is_dp


@pytest.mark.parametrize("cls", PRIVATE)
def test_data_derived_domain_or_quantile_bins_mark_not_dp(cls):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nodom = cls(classes=[0, 1], random_state=0, **SMALL).fit(X, y)
        quant = _make(cls, classes=[0, 1], binning="quantile").fit(X, y)
    assert any("feature range" in r for r in nodom.accountant_.not_dp_reasons)
    assert any("quantile" in r for r in quant.accountant_.not_dp_reasons)
