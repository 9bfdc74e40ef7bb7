"""Strict LIBSVM parsing: scikit-learn's svmlight loader, then vectorised checks.

The loader accepts ``3:nan`` and ``1e40`` (inf in float32) and reports a bad token without
its file or line; a truncated ``.bz2`` surfaces as a bare ``EOFError``. Here any of these
is a :class:`~dpexp.errors.DatasetError` naming the file, the line and the field (the
whitespace-separated token, 1-based, the label being field 1). The common path costs one
``isfinite`` over the stored values; only a file that fails is read again line by line to
say where.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import math
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

from dpexp.datasets.parsed import Parsed, data_error
from dpexp.errors import DatasetError

#: LIBSVM data wider than this stays sparse; narrower data is densified (float32).
DENSE_MAX_FEATURES = 1000
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def parse_libsvm(paths: list[Path], options: dict) -> Parsed:
    path = paths[0]
    n_features = options.get("n_features")
    try:
        # lazy: sklearn.datasets loads scipy (~1 s); reading the registry (dpexp list) needs neither
        from sklearn.datasets import load_svmlight_file

        X, y = load_svmlight_file(str(path), n_features=n_features, dtype=np.float32)
    except (EOFError, OSError) as exc:
        raise data_error(path, f"truncated or corrupt file ({type(exc).__name__}: {exc})") from None
    except ValueError as exc:
        raise _located(path, n_features) or data_error(path, f"not a valid LIBSVM file ({exc})") from None
    if X.shape[0] == 0:
        raise data_error(path, "the file is empty: no data rows")
    if not (np.isfinite(X.data).all() and np.isfinite(y).all()):
        raise _located(path, n_features) or data_error(path, "NaN or inf values (not allowed)")
    X = X.tocsr()
    if X.shape[1] <= DENSE_MAX_FEATURES:
        X = X.toarray()
    names = [f"f{i + 1}" for i in range(X.shape[1])]
    return Parsed(X=X, y=y, feature_names=names, categorical=np.zeros(X.shape[1], bool),
                  row_origin=functools.partial(_row_origin, path))


def _row_origin(path: Path, row: int) -> tuple[Path, int]:
    """File and line of data row ``row`` (read again line by line: error messages only)."""
    for i, (number, _) in enumerate(_data_lines(path)):
        if i == row:
            return path, number
    raise IndexError(row)


def _open(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed by extension as scikit-learn's loader does."""
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _data_lines(path: Path) -> Iterator[tuple[int, list[bytes]]]:
    """(1-based line number, tokens) of each line holding data (comments and blank lines
    skipped, as the loader skips them)."""
    with _open(path) as fh:
        for number, line in enumerate(fh, 1):
            tokens = line.split(b"#", 1)[0].split()
            if tokens:
                yield number, tokens


def _finite(text: bytes) -> float | None:
    """The number, or None if it is not a number finite in float32."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and abs(value) <= _FLOAT32_MAX else None


def _token_problem(token: bytes, previous: int, n_features: int | None) -> tuple[str | None, int]:
    """What is wrong with one ``index:value`` token ('' if nothing), and its index."""
    index_text, sep, value_text = token.partition(b":")
    if not sep or not index_text.isdigit():
        return "not an index:value pair", previous
    index = int(index_text)
    if index <= previous:
        return "feature indices must increase along a line", index
    if n_features is not None and index > n_features:
        return f"feature index {index} exceeds the declared n_features {n_features}", index
    if _finite(value_text) is None:
        return f"value {value_text.decode(errors='replace')!r} is not a finite number", index
    return None, index


def _located(path: Path, n_features: int | None) -> DatasetError | None:
    """The first malformed or non-finite field of ``path`` (a second, line-by-line pass,
    run only after the fast path failed); None if no line is at fault."""
    try:
        for number, tokens in _data_lines(path):
            if _finite(tokens[0]) is None:
                return data_error(path, f"label {tokens[0].decode(errors='replace')!r} is not a finite number",
                                  line=number, column="1")
            previous = -1
            for k, token in enumerate(tokens[1:], 2):
                if token.startswith(b"qid:"):
                    continue
                problem, previous = _token_problem(token, previous, n_features)
                if problem:
                    shown = token.decode(errors="replace")
                    return data_error(path, problem, line=number, column=f"{k} ({shown!r})")
    except (EOFError, OSError) as exc:
        return data_error(path, f"truncated or corrupt file ({type(exc).__name__}: {exc})")
    return None
