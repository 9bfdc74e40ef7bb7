"""scikit-learn API conformance of the InPrivate estimators (parametrize_with_checks)."""

from __future__ import annotations

import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

from dpexp.algorithms.inprivate import (
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


def _expected_failed_checks(estimator):
    out = {}
    if isinstance(estimator, InPrivateRegressor | InPrivateNPRegressor):
        out["check_regressors_train"] = (
            "each participant trains one tree on her own half of the records with Eq. (16) "
            "(no shrinkage); the two-tree ensemble stays below the R^2 the check demands")
    if isinstance(estimator, InPrivateClassifier):
        out["check_classifiers_train"] = (
            "differential privacy: the exponential-mechanism splits and noisy Newton leaves "
            "of two small trees miss the check's accuracy threshold")
    return out


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)
