"""The real-library references of Table 2's no_noise row (dpexp.papers.xgbdp.libraries)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from dpexp.errors import DpexpError
from dpexp.experiments.catalog import resolve
from dpexp.experiments.runner import drop_unavailable
from dpexp.papers.xgbdp.libraries import (
    LibraryAdaBoostClassifier,
    LibraryRandomForestClassifier,
    LibraryXGBoostClassifier,
    encode_features,
)
from dpexp.registry import get_algorithm

HAS_XGBOOST = importlib.util.find_spec("xgboost") is not None
CAT = np.array([False, True])
N_CAT = np.array([0, 3])


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x0 = rng.normal(size=n)
    code = rng.integers(0, 3, size=n)
    y = ((x0 + (code == 2) * 1.5) > 0.5).astype(int)
    return np.column_stack([x0, code]).astype(float), y


def test_onehot_uses_the_declared_categories():
    X = np.array([[0.5, 0.0], [1.5, 2.0], [2.5, 7.0]])
    out = encode_features(X, "onehot", CAT, N_CAT)
    np.testing.assert_array_equal(out, [[0.5, 1, 0, 0], [1.5, 0, 0, 1], [2.5, 0, 0, 0]])
    assert encode_features(X, "label", CAT, N_CAT) is X
    with pytest.raises(ValueError, match="encoding must be one of"):
        encode_features(X, "target", CAT, N_CAT)
    with pytest.raises(ValueError, match="needs n_categories"):
        encode_features(X, "onehot", CAT, None)


@pytest.mark.parametrize("cls", [LibraryRandomForestClassifier, LibraryAdaBoostClassifier])
@pytest.mark.parametrize("encoding", ["label", "onehot"])
def test_sklearn_models_learn_the_signal(cls, encoding):
    X, y = _data()
    m = cls(max_depth=3, n_estimators=20, encoding=encoding, categorical_features=CAT,
            n_categories=N_CAT, classes=[0, 1], random_state=0).fit(X, y)
    assert m.n_encoded_features_ == (2 if encoding == "label" else 4)
    Xt, yt = _data(seed=1)
    assert np.mean(m.predict(Xt) == yt) > 0.85


def test_adaboost_depth_sets_the_weak_learner():
    X, y = _data()
    stump = LibraryAdaBoostClassifier(n_estimators=5, random_state=0).fit(X, y)
    deep = LibraryAdaBoostClassifier(n_estimators=5, max_depth=4, random_state=0).fit(X, y)
    assert {e.get_depth() for e in stump.model_.estimators_} == {1}
    assert max(e.get_depth() for e in deep.model_.estimators_) > 1


def test_declared_classes_survive_a_one_class_fold():
    X, _ = _data()
    m = LibraryRandomForestClassifier(n_estimators=3, classes=[0, 1]).fit(X, np.zeros(len(X), int))
    assert m.classes_.tolist() == [0, 1]
    assert set(m.predict(X).tolist()) == {0}
    with pytest.raises(ValueError, match="exactly 2 classes"):
        LibraryRandomForestClassifier(n_estimators=3).fit(X, np.zeros(len(X), int))


@pytest.mark.skipif(not HAS_XGBOOST, reason="xgboost not installed")
def test_xgboost_defaults_and_depth():
    X, y = _data()
    default = LibraryXGBoostClassifier(classes=[0, 1]).fit(X, y)
    assert default.model_.get_params()["max_depth"] is None  # the library's own default
    d2 = LibraryXGBoostClassifier(max_depth=2, n_estimators=5, classes=[0, 1]).fit(X, y)
    assert d2.model_.get_params()["max_depth"] == 2
    Xt, yt = _data(seed=1)
    assert np.mean(default.predict(Xt) == yt) > 0.85
    sq = LibraryXGBoostClassifier(objective="reg:squarederror", n_estimators=5).fit(X, y)
    p = sq.predict_proba(Xt)
    assert ((p >= 0) & (p <= 1)).all()


def test_xgboost_is_declared_optional():
    assert get_algorithm("lib_xgboost").requires == ("xgboost",)
    assert not get_algorithm("lib_xgboost").private


def test_missing_xgboost_gives_a_pip_hint(monkeypatch):
    """Without the package the runner names it and how to install it, before any fit."""
    import dpexp.experiments.runner as runner

    real = runner.optional_unavailable
    monkeypatch.setattr(runner, "optional_unavailable",
                        lambda req: "xgboost (ModuleNotFoundError: No module named 'xgboost')"
                        if "xgboost" in req else real(req))
    spec = resolve("xgbdp-table2")
    kept, notes = drop_unavailable(spec, require_optional=False)
    assert all(a.name != "lib_xgboost" for a in kept.algorithms)
    assert any("pip install" in n and "xgboost" in n for n in notes)
    with pytest.raises(DpexpError, match="pip install"):
        drop_unavailable(spec, require_optional=True)
