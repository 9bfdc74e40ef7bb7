"""scikit-learn estimator checks (DP-specific expected failures are marked with reasons)."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from dpexp.papers.fletcher.comparators import FSTreeClassifier, JPWForestClassifier
from dpexp.papers.fletcher.forest import (
    FletcherForestClassifier,
    FletcherNonPrivateForestClassifier,
)

_NOISY = ("differentially private: on the checks' tiny data sets the privacy noise "
          "(and, for the forest, one disjoint subset of a few records per tree) dominates")


def _expected(est):
    if isinstance(est, FletcherNonPrivateForestClassifier):
        return {}
    return {"check_classifiers_train": _NOISY}


@parametrize_with_checks(
    [FletcherForestClassifier(random_state=0), FletcherNonPrivateForestClassifier(random_state=0),
     JPWForestClassifier(random_state=0), FSTreeClassifier(random_state=0)],
    expected_failed_checks=_expected,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
