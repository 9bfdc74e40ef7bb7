"""scikit-learn API conformance of the InPrivate estimators (parametrize_with_checks)."""

from __future__ import annotations

import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

from dpexp.papers.inprivate.estimators import (
    InPrivateClassifier,
    InPrivateNPClassifier,
    InPrivateNPRegressor,
    InPrivateRegressor,
)

_SMALL = {"n_participants": 2, "depth": 4, "n_rounds": 1}
ESTIMATORS = [
    InPrivateClassifier(epsilon=50.0, random_state=0, **_SMALL),
    InPrivateRegressor(epsilon=50.0, random_state=0, **_SMALL),
    InPrivateNPClassifier(random_state=0, **_SMALL),
    InPrivateNPRegressor(random_state=0, **_SMALL),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)
