"""DPStumpClassifier: a depth-1 tree whose split is drawn from the public feature domain
(no data used) and whose two leaves release noisy class counts.

Privacy (add/remove-one-record neighbours, docs/PRIVACY.md): the feature and threshold come
from ``random_state`` and the public ``feature_domain`` only, so they cost nothing. A record
falls in one leaf and raises one of that leaf's class counts by 1: the L1 sensitivity of a
leaf's count vector is 1, and each leaf's counts get exact discrete Laplace noise of scale
1/epsilon (epsilon-DP). The two leaves hold disjoint records, so they compose in parallel:
one fit spends ``epsilon`` in all, charged to its own ``accountant_`` and, when one is given,
to the ``accountant`` (a BudgetAccountant across fits). Predictions are post-processing.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.privacy import Accountant
from dpexp.privacy.budget import charges_budget
from dpexp.privacy.public import public_classes
from dpexp.privacy.randomness import estimator_streams


class DPStumpClassifier(ClassifierMixin, BaseEstimator):
    """A DP decision stump: one public random split, two leaves of noisy class counts."""

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
        proba = self.predict_proba(X)  # first: it raises NotFittedError before a fit
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # one split on a random feature cannot reach scikit-learn's 0.83 training accuracy
        tags.classifier_tags.poor_score = True
        return tags
