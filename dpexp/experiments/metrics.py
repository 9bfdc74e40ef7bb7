"""Metrics recorded for each cell. A metric returns a float, or {step: float} for curves.

``step`` is the number of trees for the staged (convergence) metrics of DPBoost Fig. 3.
F1 uses the least frequent class (in the training labels) as the positive class, as
Fletcher & Islam do (Section 5.2).

Classification metrics work on the dataset's declared classes (public input,
``Dataset.public_metadata()["classes"]``), so a test fold with a class the training fold
lacks (nursery's 2-row class) is scored instead of crashing: the estimator's probability
of a class it does not know is 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Evaluation:
    """Predictions of one fitted estimator on one test fold, computed lazily once."""

    estimator: Any
    X_test: Any
    y_test: np.ndarray
    y_train: np.ndarray
    #: The declared (public) label set; None: the estimator's ``classes_``.
    classes: np.ndarray | None = None
    _cache: dict = field(default_factory=dict)

    def predict(self) -> np.ndarray:
        if "pred" not in self._cache:
            self._cache["pred"] = np.asarray(self.estimator.predict(self.X_test))
        return self._cache["pred"]

    def proba(self) -> np.ndarray:
        if "proba" not in self._cache:
            if not hasattr(self.estimator, "predict_proba"):
                raise ValueError(f"{type(self.estimator).__name__} has no predict_proba (needed for AUC)")
            self._cache["proba"] = np.asarray(self.estimator.predict_proba(self.X_test))
        return self._cache["proba"]

    def label_set(self) -> np.ndarray:
        """The declared classes, else the estimator's (else the probability columns)."""
        if self.classes is not None:
            return np.asarray(self.classes)
        return np.asarray(getattr(self.estimator, "classes_", np.arange(self.proba().shape[1])))

    def proba_on_label_set(self) -> np.ndarray:
        """predict_proba with one column per declared class (0 for classes the model lacks)."""
        proba = self.proba()
        labels = self.label_set()
        own = np.asarray(getattr(self.estimator, "classes_", labels))
        if len(own) == len(labels) and np.array_equal(own, labels):
            return proba
        if len(own) != proba.shape[1]:
            raise ValueError(f"{type(self.estimator).__name__}.predict_proba has {proba.shape[1]} "
                             f"columns but classes_ has {len(own)}")
        unknown = np.setdiff1d(own, labels)
        if len(unknown):
            raise ValueError(f"the estimator predicts labels {unknown.tolist()} outside the declared classes")
        out = np.zeros((proba.shape[0], len(labels)))
        out[:, np.searchsorted(labels, own)] = proba
        return out


def accuracy(ev: Evaluation) -> float:
    return float(np.mean(ev.predict() == ev.y_test))


def error(ev: Evaluation) -> float:
    return 1.0 - accuracy(ev)


def rmse(ev: Evaluation) -> float:
    return float(np.sqrt(np.mean((ev.predict().astype(float) - ev.y_test) ** 2)))


def mae(ev: Evaluation) -> float:
    return float(np.mean(np.abs(ev.predict().astype(float) - ev.y_test)))


def auc(ev: Evaluation) -> float:
    from sklearn.metrics import roc_auc_score

    proba = ev.proba_on_label_set()
    classes = ev.label_set()
    present = np.unique(ev.y_test)
    if len(present) < 2:
        return float("nan")
    if proba.shape[1] == 2:
        return float(roc_auc_score(ev.y_test == classes[1], proba[:, 1]))
    cols = np.isin(classes, present)
    p = proba[:, cols]
    p = p / np.clip(p.sum(axis=1, keepdims=True), 1e-12, None)
    return float(roc_auc_score(ev.y_test, p, multi_class="ovr", labels=classes[cols]))


def minority_class(y_train: np.ndarray):
    vals, counts = np.unique(y_train, return_counts=True)
    return vals[np.argmin(counts)]


def f1_minority(ev: Evaluation) -> float:
    from sklearn.metrics import f1_score

    pos = minority_class(ev.y_train)
    return float(f1_score(ev.y_test == pos, ev.predict() == pos, zero_division=0.0))


def auc_labels(ev: Evaluation) -> float:
    """AUC of the hard predicted labels (``roc_auc_score`` on ``predict()``), an ablation.

    Opt-in diagnostic (issue 21) for Fletcher & Islam's Fig. 12: the paper does not say
    whether its AUC scored probabilities or labels. On labels the ROC curve has one
    operating point, so for a binary task this is the balanced accuracy, the mean of the
    two classes' recalls. Binary tasks only: the positive class is the least frequent one
    in the training labels, as for :func:`f1_minority` (Section 5.2); with one class in
    the test fold it is undefined (NaN), as :func:`auc` is.
    """
    from sklearn.metrics import roc_auc_score

    if len(ev.label_set()) != 2:
        raise ValueError("auc_labels is defined for binary tasks only")
    pos = minority_class(ev.y_train)
    truth = ev.y_test == pos
    if truth.all() or not truth.any():
        return float("nan")
    return float(roc_auc_score(truth, ev.predict() == pos))


def _staged(ev: Evaluation, score: Callable[[np.ndarray, np.ndarray], float]) -> dict[int, float]:
    if not hasattr(ev.estimator, "staged_predict"):
        raise ValueError(f"{type(ev.estimator).__name__} has no staged_predict (needed for curves)")
    stages = list(ev.estimator.staged_predict(ev.X_test))
    n = len(stages)
    every = max(1, n // 100)
    keep = set(range(every, n + 1, every)) | {1, n}
    return {i: score(np.asarray(stages[i - 1]), ev.y_test) for i in sorted(keep)}


def staged_error(ev: Evaluation) -> dict[int, float]:
    return _staged(ev, lambda p, y: float(np.mean(p != y)))


def staged_rmse(ev: Evaluation) -> dict[int, float]:
    return _staged(ev, lambda p, y: float(np.sqrt(np.mean((p.astype(float) - y) ** 2))))


METRICS: dict[str, Callable[[Evaluation], float | dict[int, float]]] = {
    "accuracy": accuracy,
    "error": error,
    "rmse": rmse,
    "mae": mae,
    "auc": auc,
    "f1_minority": f1_minority,
    "auc_labels": auc_labels,
    "staged_error": staged_error,
    "staged_rmse": staged_rmse,
}
