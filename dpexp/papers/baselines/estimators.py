"""Non-private reference algorithms the papers compare against.

* ``breiman_rf``: Breiman's random forest (scikit-learn), the non-private reference of
  Fletcher & Islam (Section 5, Figs. 10-14). The classifier takes the declared label set
  (``classes``, filled by the runner from the dataset registry) so that a training fold
  without a class still predicts over every class (``predict_proba`` has a column of
  zeros for it), like the private estimators it is compared with.
"""

from __future__ import annotations

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.utils.validation import check_is_fitted

from dpexp.privacy.public import public_classes


class BreimanForestClassifier(RandomForestClassifier):
    """scikit-learn's random forest with a declared label set ``classes``.

    ``classes=None`` keeps scikit-learn's behaviour (the labels of ``y``); otherwise ``classes_`` is the declared set and
    ``predict_proba`` has one column per declared class (0 for classes absent from the
    training fold). Not private.
    """

    def __init__(self, n_estimators=100, *, criterion="gini", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features="sqrt", max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=True, oob_score=False, n_jobs=None, random_state=None, verbose=0,
                 warm_start=False, class_weight=None, ccp_alpha=0.0, max_samples=None,
                 monotonic_cst=None, classes=None):
        super().__init__(
            n_estimators=n_estimators, criterion=criterion, max_depth=max_depth,
            min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf, max_features=max_features,
            max_leaf_nodes=max_leaf_nodes, min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap, oob_score=oob_score, n_jobs=n_jobs,
            random_state=random_state, verbose=verbose, warm_start=warm_start,
            class_weight=class_weight, ccp_alpha=ccp_alpha, max_samples=max_samples,
            monotonic_cst=monotonic_cst,
        )
        self.classes = classes

    def fit(self, X, y, sample_weight=None):
        if self.classes is None:  # scikit-learn's behaviour (a non-private reference)
            super().fit(X, y, sample_weight=sample_weight)
            self._fitted_classes = self.classes_
            self._columns = np.arange(self.classes_.size)
            return self
        declared = public_classes(np.asarray(y).ravel(), self.classes, stacklevel=3)
        super().fit(X, y, sample_weight=sample_weight)
        # the fitted forest's own label set (a subset of the declared one) and where its
        # columns go in the declared set
        self._fitted_classes = self.classes_
        self._columns = np.searchsorted(declared, self._fitted_classes)
        self.classes_ = declared
        return self

    def predict_proba(self, X) -> np.ndarray:
        """One column per declared class, in ``classes_`` order (0 for absent classes)."""
        check_is_fitted(self, "_columns")
        fitted = self.classes_
        self.classes_ = self._fitted_classes  # the forest's own prediction needs its set
        try:
            part = super().predict_proba(X)
        finally:
            self.classes_ = fitted
        out = np.zeros((part.shape[0], fitted.size))
        out[:, self._columns] = part
        return out

    def predict_log_proba(self, X) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
