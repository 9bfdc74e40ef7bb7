"""Binary-label handling shared by the boosted estimators (scores F, labels in {-1, +1}).

The label set is public input (:func:`dpexp.privacy.public.public_classes`): it comes
from the estimator's ``classes`` parameter, never from the private labels, so removing
the only record of a class changes neither ``classes_`` nor the shape of any output.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from dpexp.privacy.public import public_classes


def binary_classes(y, classes=None) -> np.ndarray:
    """The sorted declared label set (exactly 2 labels), checked against ``y``.

    ``classes=None`` falls back on ``np.unique(y)`` with a
    :class:`~dpexp.privacy.public.DataDependentClassesWarning` (not DP). A clear
    ``ValueError`` when the set does not hold exactly two labels or ``y`` has a label
    outside it.
    """
    out = public_classes(y, classes)
    if out.size != 2:
        # the same check as public_classes(binary=True), worded "<k> class(es)" as
        # scikit-learn's estimator checks expect of a one-class fit
        raise ValueError(
            "Only binary classification is supported: this estimator needs exactly 2 "
            f"classes, got {out.size} class(es) ({out.tolist()!r}); declare both with "
            "classes=[negative, positive]"
        )
    return out


def pm1_targets(y, classes: np.ndarray) -> np.ndarray:
    """``+1`` for ``classes[-1]``, ``-1`` otherwise."""
    return np.where(y == classes[-1], 1.0, -1.0)


def labels_from_score(classes: np.ndarray, F: np.ndarray) -> np.ndarray:
    """``classes[1]`` where ``F > 0`` (``classes[0]`` with a single class)."""
    return classes[(np.asarray(F) > 0).astype(int) * (classes.size - 1)]


def proba_from_pm1_score(F: np.ndarray) -> np.ndarray:
    """``(n, 2)`` probabilities from a score that estimates ``E[y]`` for ``y in {-1, +1}``.

    Square loss on ``{-1, +1}`` targets makes ``F(x)`` an estimate of
    ``E[y | x] = 2 P(classes_[1] | x) - 1``, so ``P(classes_[1] | x) = (1 + F(x)) / 2``,
    clipped to ``[0, 1]`` (boosting and noise can push F outside ``[-1, 1]``). The column
    order is ``classes_``; ``P > 1/2`` exactly where ``predict`` says ``classes_[1]``.
    Post-processing of the released trees: no privacy cost.
    """
    p1 = np.clip((1.0 + np.asarray(F, dtype=np.float64)) / 2.0, 0.0, 1.0)
    return np.column_stack([1.0 - p1, p1])


class BinaryScoreClassifierMixin:
    """Binary classifier over an ensemble score F(x), labels as ``{-1, +1}`` targets.

    The estimator provides ``_decision(X)`` and ``_staged_decision(X)`` (a generator after
    each tree) and a fitted ``trees_``; this mixin turns them into scikit-learn's
    ``decision_function``, ``predict`` and ``staged_predict`` (``predict_proba`` is
    per estimator: how a score maps to a probability depends on the loss; see
    :func:`proba_from_pm1_score`).
    ``classes_`` is the declared label set (the estimator's ``classes`` parameter, when it
    has one; see :func:`binary_classes`).
    """

    def _fit_targets(self, X, y):  # noqa: ARG002 - X kept for subclasses' signatures
        declared = getattr(self, "classes", None)
        # True when the label set was read from the private labels (not DP): fit marks it
        self._classes_from_data = declared is None
        self.classes_ = binary_classes(y, declared)
        return pm1_targets(y, self.classes_)

    def decision_function(self, X) -> np.ndarray:
        """The ensemble score F(x); predicts ``classes_[1]`` where F(x) > 0."""
        return self._decision(X)

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "trees_")
        return labels_from_score(self.classes_, self._decision(X))

    def staged_predict(self, X):
        """Predicted classes after each tree of the ensemble."""
        check_is_fitted(self, "trees_")
        for F in self._staged_decision(X):
            yield labels_from_score(self.classes_, F)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # binary only
        return tags
