"""Public input: what may shape a release without being paid for with budget.

A DP release may depend freely on *public* input -- values fixed before the data is seen
and the same for every pair of neighbouring datasets -- and on the data only through
mechanisms charged to the accountant. Class labels, feature and label domains and row
counts are public only when declared (by the user, or by the dataset registry for the
runner). When an estimator has to fall back on the private data for one of them it warns
with a :class:`DataDependentWarning` subclass and the release is no longer DP.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

__all__ = [
    "DataDependentClassesWarning",
    "DataDependentDomainWarning",
    "DataDependentWarning",
    "public_classes",
    "warn_outside_package",
]

#: The installed ``dpexp`` package folder (with a trailing separator): frames whose file
#: lies below it are the library's own, skipped when aiming a warning at the user's code.
_PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "")


def _in_package(filename: str) -> bool:
    """Whether ``filename`` (a frame's code file) is one of dpexp's own modules."""
    return os.path.realpath(filename).startswith(_PACKAGE_DIR)


def warn_outside_package(message: str, category: type[Warning]) -> None:
    """``warnings.warn(message, category)`` attributed to the first frame outside dpexp.

    A fixed ``stacklevel`` counts the library's frames between the ``warn`` call and the
    user's ``fit`` call, and that count changes with the path taken (a
    :func:`~dpexp.privacy.budget.charges_budget` wrapper, a mixin, a helper called from
    two depths), so the warning named a dpexp file. Skipping every frame whose file lies
    in the package instead names the line that called into dpexp: the user's own, or the
    third-party caller's (e.g. scikit-learn's ``cross_validate``).
    """
    level, frame = 1, sys._getframe(0)  # level 1 is this function's own frame
    while frame is not None and _in_package(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


class DataDependentWarning(UserWarning):
    """Public metadata was missing, so it was read from the private data (not DP)."""


class DataDependentDomainWarning(DataDependentWarning):
    """A feature or label domain was taken from the private data."""


class DataDependentClassesWarning(DataDependentWarning):
    """The label set was taken from the private training labels."""


def public_classes(y, classes=None, *, binary: bool = False,
                   stacklevel: int | None = None) -> np.ndarray:
    """The sorted public label set of a classifier.

    ``classes`` (the declared label set) is what ``classes_``, ``predict_proba``'s columns
    and every per-class release are built on: removing the only record of a class must
    not change the shape of a release. Labels of ``y`` outside ``classes`` are an error;
    classes absent from ``y`` are fine (a fold without nursery's 2-row class). Without
    ``classes`` the set comes from ``y`` with a :class:`DataDependentClassesWarning`.
    ``binary`` requires exactly two classes (with a clear error, not a shape error).
    The warning names the first caller outside dpexp (:func:`warn_outside_package`), or
    the frame ``stacklevel`` levels up when one is given.
    """
    check_classification_targets(y)
    y = np.asarray(y)
    if classes is None:
        message = ("classes not given: taking the label set from the training labels (not "
                   "differentially private: removing a class's only record changes "
                   "classes_); pass classes= (the runner passes the dataset's declared "
                   "classes)")
        if stacklevel is None:
            warn_outside_package(message, DataDependentClassesWarning)
        else:
            warnings.warn(message, DataDependentClassesWarning, stacklevel=stacklevel)
        out = np.unique(y)
    else:
        out = np.unique(np.asarray(classes))
        if out.size != np.asarray(classes).size:
            raise ValueError(f"classes must not repeat a label, got {list(classes)!r}")
        unknown = np.setdiff1d(np.unique(y), out)
        if unknown.size:
            raise ValueError(
                f"y has label(s) {unknown.tolist()!r} outside the declared classes {out.tolist()!r}"
            )
    if binary and out.size != 2:
        raise ValueError(
            "Only binary classification is supported by this estimator: it needs exactly 2 "
            f"classes, got {out.size} class(es) ({out.tolist()!r})."
        )
    if out.size < 1:
        raise ValueError("classes must hold at least one label")
    return out
