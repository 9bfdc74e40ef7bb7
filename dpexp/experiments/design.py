"""What an experiment's design fixes before any data are seen: the rows of each fold.

A release shaped by the number of training records (InPrivate's participant shares, JPW's
depth) is DP only if that number is public input, i.e. fixed before the data are seen. The
runner takes it from the registry's declared row count (``rows`` in datasets.yaml, a
synthetic dataset's ``n_samples``), the scale's ``max_rows`` and the CV arithmetic, never
from ``len(X)``: scikit-learn's fold sizes depend on the row count alone (KFold and
StratifiedKFold both give the first ``n % k`` folds one test row more; a holdout split has
``ceil(test_size * n)`` test rows), not on the labels. Loaded data that disagree with the
declaration are a :class:`~dpexp.errors.DatasetError`; a dataset without a declared count
gives rows marked not DP (:data:`N_FROM_DATA`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from dpexp.datasets.registry import DatasetInfo, get_dataset_info
from dpexp.errors import DatasetError
from dpexp.experiments.spec import CVScheme, DatasetRef
from dpexp.registry import accepted_params

__all__ = ["N_FROM_DATA", "TrainingSize", "declared_rows", "declared_training_rows",
           "declares_size", "fold_test_rows", "training_size", "with_n_records"]

#: ``not_dp_reason`` of a row whose ``n_records`` had to be read from the data.
N_FROM_DATA = "n_records from the data"


def declared_rows(ref: DatasetRef, max_rows: int | None, info: DatasetInfo | None = None) -> int | None:
    """Rows the loader returns for ``ref`` (the training part of a fixed split), from the
    registry alone: ``n_samples`` of a generated dataset, else the declared ``rows``, capped
    at the scale's ``max_rows`` (the smoke subsample); None if nothing is declared."""
    info = info or get_dataset_info(ref.name)
    declared = ref.params.get("n_samples", info.rows)
    if declared is None:
        return None
    n = int(declared)
    return n if max_rows is None else min(n, int(max_rows))


def fold_test_rows(n: int, cv: CVScheme, fold: int) -> int:
    """Test rows of ``fold`` when ``n`` rows are split by ``cv`` (not for ``given``)."""
    if cv.scheme == "kfold":
        if not 0 <= fold < cv.folds:
            raise ValueError(f"fold {fold} out of range for {cv.folds} folds")
        return n // cv.folds + (1 if fold < n % cv.folds else 0)
    if cv.scheme == "holdout":
        # scikit-learn's train_test_split: a fraction rounds the test part up, a count is exact
        return int(cv.test_size) if cv.test_size >= 1 else math.ceil(cv.test_size * n)
    raise ValueError(f"no test rows to compute for cv scheme {cv.scheme!r}")


def declared_training_rows(ref: DatasetRef, cv: CVScheme, max_rows: int | None, fold: int = 0,
                           info: DatasetInfo | None = None) -> int | None:
    """Training rows of ``fold`` from the registry and the CV scheme; None if undeclared."""
    n = declared_rows(ref, max_rows, info)
    if n is None:
        return None
    if cv.scheme == "given":
        return n  # the declared rows are the training part (the test part is separate)
    return max(n - fold_test_rows(n, cv, fold), 1)


@dataclass(frozen=True)
class TrainingSize:
    """The ``n_records`` a cell declares, and why it is not public input ("" when it is)."""

    n: int
    not_public: str = ""


def training_size(ref: DatasetRef, cv: CVScheme, max_rows: int | None, fold: int,
                  loaded: int) -> TrainingSize:
    """The declared training rows of a cell, checked against the ``loaded`` ones.

    A mismatch means the data are not what the registry declares (another file version, a
    changed generator): a :class:`DatasetError`, never a silent fallback to ``len(X)``. Only
    a dataset that declares no count falls back to the data, marked not public.
    """
    declared = declared_training_rows(ref, cv, max_rows, fold)
    if declared is None:
        return TrainingSize(int(loaded), N_FROM_DATA)
    if declared != int(loaded):
        raise DatasetError(
            f"Dataset {ref.key!r}: fold {fold} has {loaded} training rows but the registry's "
            f"row count and the CV scheme give {declared}; the data disagree with datasets.yaml."
        )
    return TrainingSize(declared)


@functools.lru_cache(maxsize=256)
def _takes_n_records(algorithm: str) -> bool:
    return "n_records" in accepted_params(algorithm)  # builds the classes: once per name


def declares_size(algorithm: str, params: dict[str, Any]) -> bool:
    """Whether the harness passes ``algorithm`` its ``n_records`` (it takes one and
    ``params`` leave it unset)."""
    return _takes_n_records(algorithm) and params.get("n_records") is None


def with_n_records(algorithm: str, params: dict[str, Any], n_train: int) -> dict[str, Any]:
    """``params`` plus ``n_records = n_train`` where :func:`declares_size` (a copy).

    ``n_train`` must be fixed by the design (:func:`training_size`; the runner's warm-up
    and the plan's calibration pass the row counts they fit by construction), never
    ``len(X)`` of private data.
    """
    out = dict(params)
    if declares_size(algorithm, params):
        out["n_records"] = int(n_train)
    return out
