"""DPStumpClassifier: a depth-1 tree whose split is drawn from the public feature domain
(no data used) and whose two leaves release noisy class counts (exact discrete Laplace,
sensitivity 1, disjoint records: parallel composition, epsilon in all)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.privacy import Accountant
from dpexp.privacy.budget import charges_budget
from dpexp.privacy.public import public_classes
from dpexp.privacy.randomness import estimator_streams


class DPStumpClassifier(ClassifierMixin, BaseEstimator):
    def __init__(self, epsilon=1.0, feature_domain=None, classes=None, random_state=None,
                 noise_rng=None, accountant=None):
        self.epsilon = epsilon
        self.feature_domain = feature_domain
        self.classes = classes
        self.random_state = random_state
        self.noise_rng = noise_rng
        self.accountant = accountant  # a BudgetAccountant across fits (None: none)

    @charges_budget  # checks `accountant` before the fit, charges what the fit spent after
    def fit(self, X, y):
        X, y = validate_data(self, X, y)
        self.classes_ = public_classes(y, self.classes)
        acc = Accountant(epsilon=self.epsilon)
        if self.feature_domain is None:  # falls back on the data: not DP, and says so
            domain = np.column_stack([X.min(axis=0), X.max(axis=0)])
            acc.mark_not_dp("feature domain taken from the private data")
        else:
            domain = np.asarray(self.feature_domain, dtype=float)
        streams = estimator_streams(self.random_state, self.noise_rng)
        structure = np.random.default_rng(streams.structure)
        self.feature_ = int(structure.integers(X.shape[1]))
        lo, hi = domain[self.feature_]
        self.threshold_ = float(structure.uniform(lo, hi))
        left = X[:, self.feature_] <= self.threshold_
        codes = np.searchsorted(self.classes_, y)
        noise = streams.noise_generator()
        counts = []
        with acc.parallel("two leaves"):
            for side in (left, ~left):
                exact = np.bincount(codes[side], minlength=len(self.classes_))
                # drawn and charged in one call: exact discrete Laplace counts
                counts.append(acc.discrete_laplace(exact, epsilon=self.epsilon, rng=noise,
                                                   what="leaf class counts"))
        self.leaf_counts_ = np.array(counts)
        self.accountant_ = acc
        return self

    def predict_proba(self, X):
        """The leaf's noisy class counts, clipped at 0 and normalised (post-processing);
        uniform where every count is clipped."""
        check_is_fitted(self, "leaf_counts_")
        X = validate_data(self, X, reset=False)
        counts = np.maximum(self.leaf_counts_, 0).astype(float)
        totals = counts.sum(axis=1, keepdims=True)
        proba = np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0),
                         1.0 / len(self.classes_))
        leaf = (X[:, self.feature_] > self.threshold_).astype(int)
        return proba[leaf]

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
