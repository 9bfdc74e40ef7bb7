"""The estimators as a library (issue 23): a budget across fits, predict_proba on every
classifier, ``dpexp algorithms`` import paths, DP-aware preprocessing, the examples."""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, cross_val_score

from dpexp.errors import BudgetExceededError
from dpexp.papers.fletcher.forest import FletcherForestClassifier
from dpexp.privacy import BudgetAccountant, seeded_noise
from dpexp.registry import all_algorithms, common_test_params, make_estimator, package_unavailable

ROOT = Path(__file__).resolve().parents[1]
N_FEATURES = 3
DOMAIN = np.tile([0.0, 1.0], (N_FEATURES, 1))


def _data(n: int = 240, seed: int = 0, n_features: int = N_FEATURES):
    rng = np.random.default_rng(seed)
    X = rng.random((n, n_features))
    return X, (X[:, 0] + 0.3 * X[:, 1] > 0.65).astype(int)


def _forest(budget=None, **params):
    return FletcherForestClassifier(
        epsilon=1.0, n_trees=5, feature_domain=DOMAIN, classes=np.array([0, 1]),
        random_state=0, accountant=budget, **params)


# ------------------------------------------------------------------ BudgetAccountant


def test_budget_accountant_basics():
    b = BudgetAccountant(epsilon=3.0, delta=1e-5)
    assert b.total_spent == (0.0, 0.0) and b.remaining() == (3.0, 1e-5)
    b.spend(1.0, 5e-6, estimator="A")
    b.spend(0.5)
    assert b.total_spent == (1.5, 5e-6)
    assert b.remaining() == pytest.approx((1.5, 5e-6))
    assert [(f.estimator, f.epsilon, f.delta) for f in b.fits] == [("A", 1.0, 5e-6), ("", 0.5, 0.0)]
    assert b.check(1.5, 5e-6)
    with pytest.raises(BudgetExceededError):
        b.check(1.6)
    with pytest.raises(BudgetExceededError):
        b.check(0.1, 1e-5)
    with pytest.raises(BudgetExceededError):
        b.spend(2.0)
    assert len(b.fits) == 2
    unbounded = BudgetAccountant()
    unbounded.spend(1e6)
    assert unbounded.remaining()[0] == float("inf")


def test_deepcopy_and_clone_keep_the_same_accountant():
    b = BudgetAccountant(epsilon=10)
    assert copy.deepcopy(b) is b and copy.copy(b) is b
    est = _forest(b)
    assert clone(est).accountant is b
    assert clone(est).get_params()["accountant"] is b


def test_each_fit_charges_what_its_accountant_spent():
    b = BudgetAccountant(epsilon=10)
    X, y = _data()
    est = _forest(b).fit(X, y)
    assert b.total_spent[0] == pytest.approx(est.accountant_.epsilon_spent)
    assert b.fits[0].estimator == "FletcherForestClassifier"
    est.fit(X, y)  # a refit charges again
    assert b.total_spent[0] == pytest.approx(2 * est.accountant_.epsilon_spent)


def test_a_fit_that_would_exceed_raises_before_fitting():
    b = BudgetAccountant(epsilon=1.5)
    X, y = _data()
    est = _forest(b).fit(X, y)
    first = est.seeds_.copy() if hasattr(est, "seeds_") else None
    fitted = est.accountant_
    with pytest.raises(BudgetExceededError, match="budget exceeded"):
        est.set_params(random_state=1).fit(X, y)
    assert est.accountant_ is fitted  # nothing was fitted
    if first is not None:
        np.testing.assert_array_equal(est.seeds_, first)
    assert len(b.fits) == 1 and b.total_spent[0] == pytest.approx(1.0)
    # a cheaper fit still fits in what remains
    _forest(b, ).set_params(epsilon=0.5).fit(X, y)
    assert b.total_spent[0] == pytest.approx(1.5)
    assert b.remaining()[0] == pytest.approx(0.0, abs=1e-12)


def test_gridsearch_with_a_shared_accountant_counts_every_fit():
    b = BudgetAccountant()
    X, y = _data()
    grid = GridSearchCV(_forest(b), {"n_trees": [3, 5], "max_depth": [2, 3]}, cv=3,
                        scoring="roc_auc", n_jobs=1)
    grid.fit(X, y)
    n_fits = 4 * 3 + 1  # candidates x splits + refit
    assert len(b.fits) == n_fits
    assert b.total_spent[0] == pytest.approx(n_fits * 1.0)
    assert grid.best_estimator_.accountant is b


def test_cross_val_score_stops_at_the_budget():
    b = BudgetAccountant(epsilon=2.0)
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(BudgetExceededError):
            cross_val_score(_forest(b), X, y, cv=3, error_score="raise")
    assert len(b.fits) == 2


def test_a_pickled_accountant_refuses_spends_from_another_process():
    b = BudgetAccountant(epsilon=5)
    copied = pickle.loads(pickle.dumps(b))  # what a joblib worker receives
    assert copied is not b
    copied._pid = -1  # as if unpickled in a worker process
    with pytest.raises(BudgetExceededError, match="n_jobs=1"):
        copied.check(1.0)
    X, y = _data()
    with pytest.raises(BudgetExceededError, match="n_jobs=1"):
        _forest(copied).fit(X, y)


def test_accountant_must_be_a_budget_accountant():
    X, y = _data()
    with pytest.raises(TypeError, match="BudgetAccountant"):
        _forest(object()).fit(X, y)


# ------------------------------------------------------------------ every classifier


def _installed(info) -> bool:
    return all(package_unavailable(r) is None for r in info.requires)


CLASSIFIERS = [pytest.param(name, id=name) for name, info in all_algorithms().items()
               if "classification" in info.targets and _installed(info)]
PRIVATE = [pytest.param(name, task, id=f"{name}-{task}")
           for name, info in all_algorithms().items() if info.private and _installed(info)
           for task in info.targets]
PUBLIC = {"feature_domain": DOMAIN, "categorical_features": np.zeros(N_FEATURES, dtype=bool),
          "n_categories": np.zeros(N_FEATURES, dtype=np.int64), "label_domain": (0.0, 1.0),
          "classes": np.array([0, 1])}


def _small(name: str, task: str = "classification", **extra):
    info = all_algorithms()[name]
    params = {**common_test_params(name), **extra}
    epsilon = params.pop("epsilon", 1.0) if info.private else None
    if info.private:
        epsilon = 50.0 if name not in ("fletcher_forest", "jpw", "fs_c45") else 5.0
    # noise seeded: the scores asserted below must not vary from run to run
    return make_estimator(name, task, params, epsilon=epsilon, random_state=0, public=PUBLIC,
                          noise_rng=seeded_noise(0) if info.private else None)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_every_classifier_has_predict_proba_for_roc_auc(name):
    X, y = _data(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _small(name).fit(X, y)
    proba = est.predict_proba(X)
    assert proba.shape == (X.shape[0], 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert ((proba >= 0) & (proba <= 1)).all()
    assert roc_auc_score(y, proba[:, 1]) > 0.6
    if hasattr(est, "decision_function"):
        score = est.decision_function(X)
        assert roc_auc_score(y, score) > 0.6
        # the score and the probability rank alike (a monotone mapping)
        order = np.argsort(score, kind="stable")
        assert (np.diff(proba[order, 1]) >= -1e-12).all()


@pytest.mark.parametrize(("name", "task"), PRIVATE)
def test_every_private_estimator_charges_a_shared_accountant(name, task):
    X, y = _data(200)
    if task == "regression":
        y = X[:, 0]
    b = BudgetAccountant(delta=1e-3)  # delta=0 (the default) refuses the Gaussian BDT
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _small(name, task, accountant=b).fit(X, y)
    assert len(b.fits) == 1
    assert b.total_spent == pytest.approx((est.accountant_.epsilon_spent,
                                           est.accountant_.delta_spent))
    # a budget smaller than the promised epsilon refuses the fit before any work
    tight = BudgetAccountant(epsilon=est.epsilon / 2, delta=1.0)
    with pytest.raises(BudgetExceededError):
        clone(est).set_params(accountant=tight).fit(X, y)
    assert tight.fits == []


# ------------------------------------------------------------------ dpexp algorithms


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpexp.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def test_algorithms_command_shows_class_and_import_path():
    out = _cli("algorithms")
    assert out.returncode == 0, out.stderr
    assert ('seq: classification dpexp.papers.dpboost.estimators:DPBoostClassifier(mode="seq")'
            in out.stdout)
    assert "fletcher_forest: classification dpexp.papers.fletcher.forest:FletcherForestClassifier" \
        in out.stdout
    js = _cli("algorithms", "--json")
    assert js.returncode == 0, js.stderr
    rows = json.loads(js.stdout)
    seq = next(r for r in rows if r["name"] == "seq")
    assert seq["estimators"]["classification"] == {
        "class": "DPBoostClassifier", "module": "dpexp.papers.dpboost.estimators",
        "import_path": "dpexp.papers.dpboost.estimators:DPBoostClassifier",
        "params": {"mode": "seq"},
        "usage": 'dpexp.papers.dpboost.estimators:DPBoostClassifier(mode="seq")',
    }


# ------------------------------------------------------------------ preprocessing


def test_public_minmax_scaler_uses_the_declared_bounds_never_the_data():
    from dpexp.preprocessing import PublicMinMaxScaler

    domain = np.array([[0.0, 10.0], [-1.0, 1.0]])
    X = np.array([[5.0, 0.0], [20.0, -3.0]])  # the second row is outside the domain
    sc = PublicMinMaxScaler(feature_domain=domain).fit(X)
    np.testing.assert_allclose(sc.transform(X), [[0.5, 0.5], [1.0, 0.0]])
    np.testing.assert_array_equal(sc.feature_domain_out_, [[0.0, 1.0], [0.0, 1.0]])
    # the data's min/max play no part: another X gives the same scaling
    np.testing.assert_allclose(PublicMinMaxScaler(feature_domain=domain).fit(X[:1]).transform(X),
                               sc.transform(X))
    with pytest.raises(ValueError, match="feature_domain"):
        PublicMinMaxScaler().fit(X)


def test_pipeline_passes_the_public_domain_to_the_estimator():
    from dpexp.preprocessing import PublicMinMaxScaler, make_public_pipeline

    X, y = _data()
    X = 100.0 * X - 50.0
    declared = np.tile([-50.0, 50.0], (N_FEATURES, 1))
    est = FletcherForestClassifier(epsilon=1.0, n_trees=5, classes=[0, 1], random_state=0)
    pipe = make_public_pipeline(PublicMinMaxScaler(feature_domain=declared), est)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no data-dependent-domain warning
        pipe.fit(X, y)
    np.testing.assert_array_equal(pipe.passed_feature_domain_, np.tile([0.0, 1.0], (N_FEATURES, 1)))
    assert est.get_params()["feature_domain"] is None  # set for the fit only
    assert est.accountant_.is_dp
    assert roc_auc_score(y, pipe.predict_proba(X)[:, 1]) > 0.6
    assert clone(pipe).steps[-1][1].get_params()["feature_domain"] is None


def test_dp_feature_domain_charges_the_budget_and_feeds_the_estimator():
    from dpexp.preprocessing import DPBoundsEstimator, DPFeatureDomain, make_public_pipeline

    assert DPBoundsEstimator is DPFeatureDomain
    X, y = _data(2000)
    b = BudgetAccountant(epsilon=2.0)
    bounds = DPFeatureDomain(epsilon=0.5, random_state=0, accountant=b)
    est = FletcherForestClassifier(epsilon=1.0, n_trees=5, classes=[0, 1], random_state=0,
                                   accountant=b)
    pipe = make_public_pipeline(bounds, est)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe.fit(X, y)
    assert bounds.accountant_.epsilon_spent == pytest.approx(0.5)
    assert [f.estimator for f in b.fits] == ["DPFeatureDomain", "FletcherForestClassifier"]
    assert b.total_spent[0] == pytest.approx(1.5)
    dom = pipe.passed_feature_domain_
    # a DP range may cut off a few extreme records (the low log2 bins are sparse)
    assert (dom[:, 0] < 0.1).all() and (dom[:, 1] >= 1.0).all() and np.isfinite(dom).all()
    with pytest.raises(BudgetExceededError):  # 1.5 + 0.5 + 1.0 > 2
        pipe.fit(X, y)
    assert b.total_spent[0] == pytest.approx(1.5 + 0.5)  # the bounds fit fitted, the forest did not


def test_a_standard_scaler_in_the_pipeline_warns_and_marks_the_fit_not_dp():
    from sklearn.preprocessing import StandardScaler

    from dpexp.preprocessing import DataDependentPreprocessingWarning, make_public_pipeline
    from dpexp.privacy import DataDependentWarning

    X, y = _data()
    est = FletcherForestClassifier(epsilon=1.0, n_trees=5, classes=[0, 1], random_state=0,
                                   feature_domain=np.tile([-5.0, 5.0], (N_FEATURES, 1)))
    pipe = make_public_pipeline(StandardScaler(), est)
    with pytest.warns(DataDependentPreprocessingWarning, match="standardscaler"):
        pipe.fit(X, y)
    assert issubclass(DataDependentPreprocessingWarning, DataDependentWarning)
    assert not est.accountant_.is_dp
    assert any("standardscaler" in r for r in est.accountant_.not_dp_reasons)


# ------------------------------------------------------------------ examples


def test_gridsearch_budget_example_prints_the_total_spend():
    out = subprocess.run([sys.executable, str(ROOT / "docs/examples/gridsearch_budget.py")],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "fits charged: 13 " in out.stdout
    assert "total epsilon spent: 13\n" in out.stdout
    assert "remaining epsilon: 7\n" in out.stdout


@pytest.mark.parametrize("family", ["dpboost", "fletcher", "gaussian_bdt", "inprivate", "xgboost_dp"])
def test_estimator_docs_examples_run_and_charge_the_budget(family):
    import re

    text = (ROOT / "docs" / "estimators" / f"{family}.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    ns: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for block in blocks:
            exec(compile(block, f"{family}.md", "exec"), ns)  # noqa: S102 - our own docs
    spent = ns["budget"].total_spent[0]  # what the fit spent: XGBoost-DP may stop early
    assert 0.5 < spent <= 1.0 + 1e-9
    assert len(ns["budget"].fits) == 1


def test_gridsearch_with_process_workers_fails_instead_of_losing_spends():
    b = BudgetAccountant()
    X, y = _data()
    grid = GridSearchCV(_forest(b), {"n_trees": [3, 5]}, cv=2, n_jobs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="fits failed"):  # every worker fit refused
            grid.fit(X, y)
    assert b.fits == []
