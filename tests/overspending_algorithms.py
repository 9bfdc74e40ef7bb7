"""Deliberately broken or special private estimators for the runner's checks (tests only).

A fake paper: the tests register it with
``monkeypatch.setattr(dpexp.registry, "EXTRA_PAPERS", ["overspending_algorithms"])``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from dpexp.privacy import Accountant
from dpexp.registry import AlgorithmInfo, PaperManifest


@dataclass
class _ClaimedSpend:
    epsilon_spent: float
    delta_spent: float = 0.0


class ReportsTooMuch(ClassifierMixin, BaseEstimator):
    """Fits a majority vote but reports twice its budget (no accountant raised)."""

    def __init__(self, epsilon=1.0, random_state=None):
        self.epsilon = epsilon
        self.random_state = random_state

    def fit(self, X, y):
        self.classes_, counts = np.unique(y, return_counts=True)
        self.majority_ = self.classes_[np.argmax(counts)]
        self.accountant_ = _ClaimedSpend(epsilon_spent=2 * self.epsilon)
        return self

    def predict(self, X):
        return np.full(len(X), self.majority_)


class SpendsTooMuch(ReportsTooMuch):
    """Spends through a real Accountant, which must refuse the second release."""

    def fit(self, X, y):
        acc = Accountant(epsilon=self.epsilon)
        acc.release(lambda: None, epsilon=self.epsilon, what="first release")
        acc.release(lambda: None, epsilon=self.epsilon, what="second release")
        return super().fit(X, y)


class MarksNotDp(ReportsTooMuch):
    """Spends within budget but marks its fit not DP (like the 2017 smooth-sensitivity rule)."""

    def fit(self, X, y):
        super().fit(X, y)
        acc = Accountant(epsilon=self.epsilon)
        acc.release(lambda: None, epsilon=self.epsilon / 2, what="a release")
        acc.mark_not_dp("test: a leaf rule that is not DP")
        self.accountant_ = acc
        return self


ALGORITHMS = [
    AlgorithmInfo("reports_too_much", {"classification": f"{__name__}:ReportsTooMuch"}, True, "test", "broken"),
    AlgorithmInfo("spends_too_much", {"classification": f"{__name__}:SpendsTooMuch"}, True, "test", "broken"),
    AlgorithmInfo("marks_not_dp", {"classification": f"{__name__}:MarksNotDp"}, True, "test", "not DP"),
    AlgorithmInfo("needs_missing_package", {"classification": f"{__name__}:ReportsTooMuch"}, True, "test",
                  "an optional package that is not installed", requires=("dpexp_no_such_optional_package",)),
]

#: Registered by the tests through ``dpexp.registry.EXTRA_PAPERS`` (a fake paper).
MANIFEST = PaperManifest(paper="test", algorithms=ALGORITHMS)
