"""Neighbouring datasets of the audit, shared by several target lists.

Every pair differs by adding/removing one record (the papers' neighbour relation).

* Mechanisms (:mod:`dpexp.audit.mechanism_targets`, :mod:`dpexp.audit.broken_targets`):
  values clipped to [0, 1] whose sum is released (:func:`clipped_sum`), and class labels
  whose counts are released (:func:`class_counts`).
* Tiny estimator fits (the end-to-end targets of the boosting papers, with
  :mod:`dpexp.audit.estimator_releases`): one feature in the public domain [0, 1].
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "LABEL_DATASETS",
    "LABEL_EDGE",
    "LABEL_EXTREME",
    "LABEL_PAIRS",
    "LAST_OF_CLASS",
    "PROBE",
    "SUM_DATASETS",
    "SUM_PAIRS",
    "class_counts",
    "clipped_sum",
]

#: Datasets of values clipped to [0, 1]; the released statistic is their sum
#: (sensitivity 1 under add/remove in both L1 and L2).
SUM_DATASETS = (np.array([]), np.array([1.0]), np.array([1.0, 1.0]))
SUM_PAIRS = ((0, 1), (1, 2))

#: Datasets of class labels; the statistic is the class counts.
LABEL_DATASETS = (np.array([], dtype=int), np.array([0]), np.array([0, 0]), np.array([0, 1]))
LABEL_PAIRS = ((0, 1), (1, 2), (1, 3))


def clipped_sum(data: np.ndarray) -> float:
    """The sum of ``data`` clipped to [0, 1] (sensitivity 1 under add/remove)."""
    return float(np.clip(data, 0.0, 1.0).sum())


def class_counts(data: np.ndarray, n_classes: int = 2) -> np.ndarray:
    """The counts of the labels ``0 .. n_classes - 1`` in ``data``, as floats."""
    return np.bincount(np.asarray(data, dtype=int), minlength=n_classes).astype(float)


# ------------------------------------------------------------------ tiny estimator datasets

#: Five records of class 0 and the only record of class 1 (x = 0.9); its removal leaves a
#: training set without class 1.
_X_CLS = np.array([[0.1], [0.2], [0.3], [0.4], [0.6], [0.9]])
_Y_CLS = np.array([0, 0, 0, 0, 0, 1])
LAST_OF_CLASS = ((_X_CLS, _Y_CLS), (_X_CLS[:-1], _Y_CLS[:-1]))

#: Regression labels in the public domain [0, 1]; the added record's label is the edge 1.
_X_REG = np.array([[0.1], [0.3], [0.5], [0.7], [0.9]])
_Y_REG = np.array([0.0, 0.2, 0.1, 0.3, 1.0])
LABEL_EDGE = ((_X_REG[:-1], _Y_REG[:-1]), (_X_REG, _Y_REG))
#: The same with an extreme label far outside anything a declared domain would allow:
#: only a data-derived domain is moved by it.
LABEL_EXTREME = ((_X_REG[:-1], _Y_REG[:-1]), (_X_REG, np.array([0.0, 0.2, 0.1, 0.3, 50.0])))

#: Probe points of the one-feature datasets above (in the public domain [0, 1]).
PROBE = np.array([[0.15], [0.5], [0.9]])
