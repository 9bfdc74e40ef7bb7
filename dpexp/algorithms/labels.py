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
