"""Binary-label handling shared by the boosted estimators (scores F, labels in {-1, +1})."""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets, type_of_target


def binary_classes(y) -> np.ndarray:
    """The sorted classes of ``y``; a clear error (scikit-learn's wording) if not binary."""
    check_classification_targets(y)
    classes = np.unique(y)
    y_type = type_of_target(y, input_name="y", raise_unknown=True)
    if classes.size > 2 or y_type not in ("binary", "multiclass"):
        raise ValueError(
            "Only binary classification is supported. The type of the target is "
            f"{y_type} ({classes.size} classes)."
        )
    return classes


def pm1_targets(y, classes: np.ndarray) -> np.ndarray:
    """``+1`` for ``classes[-1]``, ``-1`` otherwise."""
    return np.where(y == classes[-1], 1.0, -1.0)


def labels_from_score(classes: np.ndarray, F: np.ndarray) -> np.ndarray:
    """``classes[1]`` where ``F > 0`` (``classes[0]`` with a single class)."""
    return classes[(np.asarray(F) > 0).astype(int) * (classes.size - 1)]


class BinaryScoreClassifierMixin:
    """Binary classifier over an ensemble score F(x), labels as ``{-1, +1}`` targets.

    The estimator provides ``_decision(X)`` and ``_staged_decision(X)`` (a generator after
    each tree) and a fitted ``trees_``; this mixin turns them into scikit-learn's
    ``decision_function``, ``predict`` and ``staged_predict``.
    """

    def _fit_targets(self, X, y):  # noqa: ARG002 - X kept for subclasses' signatures
        self.classes_ = binary_classes(y)
        return pm1_targets(y, self.classes_)

    def decision_function(self, X) -> np.ndarray:
        """The ensemble score F(x); predicts ``classes_[1]`` where F(x) > 0."""
        return self._decision(X)

    def predict(self, X) -> np.ndarray:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "trees_")
        return labels_from_score(self.classes_, self._decision(X))

    def staged_predict(self, X):
        """Predicted classes after each tree of the ensemble."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "trees_")
        for F in self._staged_decision(X):
            yield labels_from_score(self.classes_, F)
