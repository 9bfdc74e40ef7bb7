"""What a parser returns, the registry's shape check, and the one form of a data-file error.

Every parser is strict: a malformed file is a :class:`DatasetError` that names the file,
the line (1-based, as an editor numbers it) and the column, never a library traceback.
The checks run vectorised over the parsed arrays; only once one fails is the file read
again, line by line, to say where.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpexp.datasets.registry import DatasetInfo
from dpexp.errors import DatasetError


@dataclass
class Parsed:
    X: Any
    y: np.ndarray
    feature_names: list[str]
    categorical: np.ndarray
    X_test: Any = None
    y_test: np.ndarray | None = None
    #: Declared number of categories per feature (0 where the file's values decide).
    n_categories: np.ndarray | None = None
    #: File and 1-based line of row ``i`` (train rows, then test rows), for the error
    #: messages of checks made after parsing (a label outside the declared classes).
    row_origin: Callable[[int], tuple[Path, int]] | None = None


def data_error(path: Path, problem: str, *, line: int | None = None, column: str | None = None) -> DatasetError:
    """``<file>, line L, column C: <problem>`` as a :class:`DatasetError`."""
    where = str(path)
    if line is not None:
        where += f", line {line}"
    if column is not None:
        where += f", column {column}"
    return DatasetError(f"{where}: {problem}")


def check_shape(info: DatasetInfo, parsed: Parsed, expected_rows: int | None) -> None:
    """Rows, features and test rows against the registry (a different file is an error)."""
    name, X = info.name, parsed.X
    if expected_rows is not None and X.shape[0] != expected_rows:
        raise DatasetError(
            f"Dataset {name!r}: loaded {X.shape[0]} rows but the registry expects "
            f"{expected_rows}; the file may be a different version. Delete it from the data "
            f"directory and download again."
        )
    if info.features is not None and X.shape[1] != info.features:
        raise DatasetError(
            f"Dataset {name!r}: loaded {X.shape[1]} features but the registry expects {info.features}."
        )
    if info.test_rows is not None and (parsed.X_test is None or parsed.X_test.shape[0] != info.test_rows):
        got = None if parsed.X_test is None else parsed.X_test.shape[0]
        raise DatasetError(f"Dataset {name!r}: test part has {got} rows, expected {info.test_rows}.")
