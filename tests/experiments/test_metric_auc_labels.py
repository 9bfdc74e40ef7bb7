"""``auc_labels``: the AUC of hard predicted labels (Fletcher & Islam Fig. 12 ablation, issue 21)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpexp.experiments.metrics import METRICS, Evaluation


class _Fixed:
    """An estimator whose predictions and probabilities are given."""

    def __init__(self, pred, proba, classes=(0, 1)):
        self._pred, self._proba = np.asarray(pred), np.asarray(proba, dtype=float)
        self.classes_ = np.asarray(classes)

    def predict(self, X):
        return self._pred

    def predict_proba(self, X):
        return self._proba


def _ev(y_test, pred, proba=None, y_train=None, classes=(0, 1)):
    y_test = np.asarray(y_test)
    if proba is None:
        proba = np.eye(len(classes))[np.searchsorted(classes, pred)]
    y_train = np.asarray(y_train if y_train is not None else y_test)
    return Evaluation(_Fixed(pred, proba, classes), np.zeros((len(y_test), 1)), y_test, y_train,
                      classes=np.asarray(classes))


def test_equals_the_balanced_accuracy():
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])   # minority: 1
    pred = np.array([1, 1, 1, 0, 0, 0, 0, 0, 1, 1])  # recall(1) = 3/4, recall(0) = 4/6
    assert METRICS["auc_labels"](_ev(y, pred)) == pytest.approx((3 / 4 + 4 / 6) / 2)


def test_differs_from_the_probability_auc():
    y = np.array([0, 0, 0, 1, 1, 1])
    pred = np.array([0, 0, 1, 1, 1, 0])
    # The scores order 8 of the 9 (positive, negative) pairs right; the labels, one
    # operating point, give the mean recall 2/3.
    proba1 = np.array([0.1, 0.2, 0.55, 0.6, 0.7, 0.45])
    ev = _ev(y, pred, np.c_[1 - proba1, proba1], y_train=np.array([0, 0, 0, 0, 1, 1]))
    assert METRICS["auc"](ev) == pytest.approx(8 / 9)
    assert METRICS["auc_labels"](ev) == pytest.approx(2 / 3)


def test_symmetric_in_the_positive_class():
    # Balanced accuracy does not depend on which class is positive: the minority of the
    # training labels (0 here) gives the same value as class 1 would.
    y = np.array([0, 0, 1, 1, 1, 1, 1])
    pred = np.array([0, 1, 1, 1, 1, 0, 0])
    ev = _ev(y, pred, y_train=np.array([0, 1, 1]))
    assert METRICS["auc_labels"](ev) == pytest.approx((1 / 2 + 3 / 5) / 2)


def test_constant_predictions_score_one_half():
    y = np.array([0, 1, 0, 1, 0])
    assert METRICS["auc_labels"](_ev(y, np.zeros(5, dtype=int))) == pytest.approx(0.5)


def test_one_class_in_the_test_fold_is_nan():
    ev = _ev(np.ones(4, dtype=int), np.array([1, 0, 1, 1]), y_train=np.array([0, 1, 1]))
    assert math.isnan(METRICS["auc_labels"](ev))


def test_multiclass_is_refused():
    y = np.array([0, 1, 2])
    with pytest.raises(ValueError, match="binary"):
        METRICS["auc_labels"](_ev(y, y, classes=(0, 1, 2)))


def test_existing_metrics_are_unchanged():
    y = np.array([1, 1, 0, 0, 0])
    pred = np.array([1, 0, 0, 0, 1])
    ev = _ev(y, pred)
    assert METRICS["accuracy"](ev) == pytest.approx(0.6)
    assert METRICS["f1_minority"](ev) == pytest.approx(0.5)
