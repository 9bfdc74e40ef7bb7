"""A plain scikit-learn ``Pipeline`` whose scaler learns from the data is not DP (issue 42).

``Pipeline([MinMaxScaler(), DP estimator(feature_domain=[0, 1] per feature)])`` used to
report ``accountant_.is_dp = True``: the declared domain does describe the scaled data, but
the scaler's min and max are statistics of the private data that no accountant charged.
Every private estimator's ``fit`` (through ``charges_budget``) now looks for the pipeline
it is the last step of: a step that read the data uncharged gives a ``PrivacyLeakWarning``
and marks the fit not DP; public or DP scalers do not.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, StandardScaler

from dpexp.errors import PrivacyLeakWarning
from dpexp.papers.gaussian_bdt.estimators import GaussianBDTClassifier
from dpexp.preprocessing import (
    DPFeatureDomain,
    PublicMinMaxScaler,
    make_public_pipeline,
)
from dpexp.privacy import BudgetAccountant, DataDependentWarning, seeded_noise

N_FEATURES = 3
UNIT = [[0.0, 1.0]] * N_FEATURES


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(5.0, 3.0, size=(300, N_FEATURES))
    return X, (X[:, 0] > 5.0).astype(int)


def _model(**kw) -> GaussianBDTClassifier:
    """A DP classifier told its input lies in [0, 1] (true after a MinMaxScaler)."""
    return GaussianBDTClassifier(n_trees=2, max_depth=2, feature_domain=UNIT, classes=[0, 1],
                                 random_state=0, noise_rng=seeded_noise(0), **kw)


@pytest.mark.parametrize("scaler", [MinMaxScaler(), StandardScaler()], ids=type)
def test_a_scaler_that_learns_from_the_data_is_a_privacy_leak(scaler):
    X, y = _data()
    pipe = Pipeline([("scale", scaler), ("model", _model())])
    with pytest.warns(PrivacyLeakWarning, match=rf"scale \({type(scaler).__name__}\)"):
        pipe.fit(X, y)
    acc = pipe[-1].accountant_
    assert not acc.is_dp
    assert acc.not_dp_reasons == [
        f"preprocessing read the private data uncharged: scale ({type(scaler).__name__})"]


def test_the_same_model_alone_or_after_public_scaling_stays_dp():
    X, y = _data()
    Xs = (X - X.min(axis=0)) / np.ptp(X, axis=0)  # scaled outside: not the model's business
    public = make_pipeline(PublicMinMaxScaler(feature_domain=[[-10.0, 20.0]] * N_FEATURES),
                           _model())
    dp_bounds = make_pipeline(DPFeatureDomain(epsilon=0.5, random_state=0,
                                              noise_rng=seeded_noise(1)),
                              FunctionTransformer(lambda Z: Z, accept_sparse=False), _model())
    dp_bounds.steps[1][1].dp_stateless = True  # declared: reads nothing from the data
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        alone = _model().fit(Xs, y)
        public.fit(X, y)
        dp_bounds.fit(X, y)
    assert alone.accountant_.is_dp and public[-1].accountant_.is_dp
    assert dp_bounds[-1].accountant_.is_dp


def test_nested_pipelines_and_cross_validation_are_checked():
    X, y = _data()
    inner = Pipeline([("nothing", "passthrough"), ("model", _model())])
    outer = Pipeline([("scale", MinMaxScaler()), ("inner", inner)])
    with pytest.warns(PrivacyLeakWarning, match=r"scale \(MinMaxScaler\)"):
        outer.fit(X, y)
    assert not outer[-1][-1].accountant_.is_dp
    with pytest.warns(PrivacyLeakWarning):  # clones fitted by scikit-learn's own loop
        cross_val_score(make_pipeline(StandardScaler(), _model()), X, y, cv=2)


def test_the_warning_is_both_a_privacy_leak_and_data_dependent_and_charged_once():
    X, y = _data()
    budget = BudgetAccountant(epsilon=10.0, delta=1.0)
    pipe = Pipeline([("scale", MinMaxScaler()), ("model", _model(accountant=budget))])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe.fit(X, y)
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1 and issubclass(leaks[0].category, DataDependentWarning)
    assert budget.total_spent[0] == pytest.approx(pipe[-1].accountant_.epsilon_spent)
    # dpexp's own pipeline reports its leaking step once, not once more from the model
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_public_pipeline(MinMaxScaler(), _model()).fit(X, y)
    assert len([w for w in caught if issubclass(w.category, PrivacyLeakWarning)]) == 1
