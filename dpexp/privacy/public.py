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
from sklearn.pipeline import Pipeline
from sklearn.utils.multiclass import check_classification_targets

from dpexp.errors import PrivacyLeakWarning

__all__ = [
    "DataDependentClassesWarning",
    "DataDependentDomainWarning",
    "DataDependentPreprocessingWarning",
    "DataDependentWarning",
    "check_enclosing_pipeline",
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


class DataDependentPreprocessingWarning(DataDependentWarning, PrivacyLeakWarning):
    """A pipeline step computed uncharged statistics of the private data (not DP). Both a
    :class:`DataDependentWarning` and a :class:`~dpexp.errors.PrivacyLeakWarning`, so a
    filter on either catches it."""


def _reads_data_uncharged(step) -> bool:
    """Whether a fitted pipeline step learned from the data without paying: not a public
    or DP transformer (``feature_domain_out_``, see :mod:`dpexp.preprocessing`), not one
    declared ``dp_stateless``, not ``"passthrough"``/None."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return False
    return not (hasattr(step, "feature_domain_out_") or getattr(step, "dp_stateless", False))


def _pipeline_leaks(estimator) -> list[str]:
    """The steps ahead of ``estimator`` in the ``Pipeline`` fits on the call stack (nested
    pipelines included) that read the private data uncharged, as ``"name (Class)"``.

    ``Pipeline.fit`` fits (and stores) every transformer before it fits the final step, so
    when a private estimator's ``fit`` runs, the frames above it hold the pipeline whose
    last step it is, with its transformers fitted. A pipeline that reports its leaks
    itself (``reports_preprocessing_leaks``: :class:`dpexp.preprocessing.PublicDomainPipeline`)
    is left to do so."""
    leaks: list[str] = []
    target, frame = estimator, sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if (isinstance(owner, Pipeline) and owner is not target and owner.steps
                and owner.steps[-1][1] is target):
            if not getattr(owner, "reports_preprocessing_leaks", False):
                leaks += [f"{name} ({type(step).__name__})" for name, step in owner.steps[:-1]
                          if _reads_data_uncharged(step)]
            target = owner  # a pipeline inside a pipeline: the outer one's steps come first
        frame = frame.f_back
    return leaks


def check_enclosing_pipeline(estimator) -> None:
    """After a private ``estimator`` was fitted: when it is the final step of a plain
    scikit-learn ``Pipeline`` whose earlier steps learned from the private data (a
    ``MinMaxScaler``'s bounds, a ``StandardScaler``'s mean and std), warn with
    :class:`DataDependentPreprocessingWarning` (a :class:`~dpexp.errors.PrivacyLeakWarning`)
    and mark its ``accountant_`` not DP: the declared domain it was given describes the
    scaled data, but the scaling itself released the data's statistics uncharged.

    Called by :func:`dpexp.privacy.budget.charges_budget`, which wraps every private
    estimator's ``fit``; :class:`dpexp.preprocessing.PublicDomainPipeline` checks its
    own steps."""
    leaks = _pipeline_leaks(estimator)
    if not leaks:
        return
    acc = getattr(estimator, "accountant_", None)
    if acc is not None and hasattr(acc, "mark_not_dp"):
        acc.mark_not_dp("preprocessing read the private data uncharged: " + ", ".join(leaks))
    warn_outside_package(
        f"pipeline step(s) {', '.join(leaks)} learned from the private data what no "
        f"accountant charges before {type(estimator).__name__} was fitted: not differentially "
        "private (its accountant_ is marked not DP); scale with "
        "dpexp.preprocessing.PublicMinMaxScaler(feature_domain=...) or "
        "DPFeatureDomain(epsilon=...) in make_public_pipeline", DataDependentPreprocessingWarning)


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
