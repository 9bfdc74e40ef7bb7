"""A committed results table read column by column.

A paper-scale report reads ~500,000 committed rows (issue 43). Making a dict per row
(and then a frame from the dicts) was a third of its time, so a table is read once into
columns of the values a row dict would hold (:class:`TableColumns`) and each cell's rows
are its positions in them (:class:`CellRows`): a row dict is made only where one is
asked for (a reconciliation, an adoption into the cache), and the results frame is taken
from the columns (:func:`rows_frame`) with the dtypes a frame made from the row dicts has.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpexp.experiments.noise import row_noise
from dpexp.experiments.row_keys import KEY_FIELDS, row_keys
from dpexp.experiments.schema import CELL_COLUMNS, METRIC

__all__ = ["CellRows", "TableColumns", "read_cell_rows", "rows_frame"]

#: Text columns whose empty value is "" (not missing).
TEXT_COLUMNS = ("not_dp_reason", "domain_source", "noise", "label", "git_revision",
                "dpexp_version", "data_version")

#: Columns read as text (object), never inferred: what a row dict holds is the CSV's text.
_READ_AS_TEXT = (*TEXT_COLUMNS, "experiment", "scale", "dataset", "algorithm", "params",
                 "metric", "metric_kind", "timestamp")


@dataclass(frozen=True, eq=False)
class TableColumns:
    """A results table's columns (its ``p_`` columns left out: they are derived again from
    ``params``), each an object array of the Python values a row dict holds: None for a
    missing optional value, ``value`` a float, ``noise`` filled in."""

    names: tuple[str, ...]
    arrays: dict[str, np.ndarray]

    def row(self, position: int) -> dict[str, Any]:
        """The row at ``position`` as a dict (columns in the table's order)."""
        return {name: self.arrays[name][position] for name in self.names}


@dataclass(frozen=True, eq=False)
class CellRows(Sequence):
    """The rows of one cell of a table: their positions in the table's columns, read as
    row dicts on demand. Equal to any sequence of the same row dicts."""

    table: TableColumns
    positions: np.ndarray

    def __len__(self) -> int:
        return len(self.positions)

    def first(self, name: str) -> Any:
        """Column ``name`` of the cell's first row (a cell column: every row's)."""
        return self.table.arrays[name][self.positions[0]]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self.table.row(int(p)) for p in self.positions[index]]
        return self.table.row(int(self.positions[index]))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self.table.row(int(p)) for p in self.positions)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable


def read_cell_rows(path: Path | io.BytesIO, compression: str | None = "infer",
                   name: str | None = None) -> dict[str, CellRows]:
    """A results table's rows grouped by cell key (:func:`row_key`), cells in the order
    of their first row, each cell's rows in table order. Rows of one cell whose params are
    spelt two ways share a key."""
    # text read as text: a fingerprint or revision of hex digits only ("123e4567...") must
    # not be read as a number; the p_ columns are not read (derived again from params)
    frame = pd.read_csv(path, keep_default_na=True, dtype=dict.fromkeys(_READ_AS_TEXT, object),
                        usecols=lambda c: not str(c).startswith("p_"), low_memory=False,
                        compression=compression)
    if frame.empty:
        return {}
    for col in TEXT_COLUMNS:  # CSV writes "" as an empty field, read back as NaN
        if col in frame.columns:
            frame[col] = frame[col].astype(object).fillna("")
    missing = [c for c in CELL_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{name or path}: not a dpexp results table (no column(s) {missing})")
    arrays = {str(c): _object_column(frame[c]) for c in frame.columns}
    arrays["value"] = frame["value"].astype(float).to_numpy(dtype=object)
    arrays["noise"] = _noise_column(arrays)
    table = TableColumns(tuple(arrays), arrays)
    return {key: CellRows(table, positions) for key, positions in _cell_positions(frame, table)}


def _object_column(column: pd.Series) -> np.ndarray:
    """A column's values as Python scalars (int, float, bool, str), None for NaN."""
    values = column.to_numpy(dtype=object)
    if column.dtype.kind in "iub":  # no NaN in an integer or boolean column
        return values
    # a missing value read from a CSV is NaN (or None already): None
    missing = column.isna().to_numpy()
    if missing.any():
        values = values.copy()  # the frame's own values are read-only (copy on write)
        values[missing] = None
    return values


def _noise_column(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Every row's ``noise``: the table's where it has one, else derived from the row's
    algorithm and epsilon (:func:`dpexp.experiments.noise.row_noise`)."""
    n = len(arrays["algorithm"])
    given = arrays.get("noise")
    out = np.empty(n, dtype=object) if given is None else given.copy()
    todo = range(n) if given is None else [
        i for i, v in enumerate(given) if not (isinstance(v, str) and v)]
    derived: dict[tuple[Any, Any], str] = {}  # a function of the two: few pairs a table
    algorithms, epsilons = arrays["algorithm"], arrays["epsilon"]
    for i in todo:
        pair = (algorithms[i], epsilons[i])
        if pair not in derived:
            derived[pair] = row_noise({"algorithm": pair[0], "epsilon": pair[1]})
        out[i] = derived[pair]
    return out


def _cell_positions(frame: pd.DataFrame, table: TableColumns) -> list[tuple[str, np.ndarray]]:
    """(row key, row positions in table order) of every cell, cells in the order of their
    first row: rows are grouped by the key's columns, the key made from each group's first
    row, and groups whose keys coincide (params spelt two ways) merged."""
    by = [c for c in (*CELL_COLUMNS, "data_version") if c in frame.columns]
    codes = frame.groupby(by, sort=False, dropna=False).ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    groups = np.split(order, bounds)
    firsts = np.array([g[0] for g in groups], dtype=np.intp)
    empty = np.full(len(firsts), None, dtype=object)
    keys = row_keys([table.arrays[c][firsts] if c in table.arrays else empty for c in KEY_FIELDS])
    merged: dict[str, list[np.ndarray]] = {}
    for key, positions in zip(keys, groups, strict=True):
        merged.setdefault(key, []).append(positions)
    # groups are numbered by first appearance, so the keys are in first-row order
    return [(key, parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts)))
            for key, parts in merged.items()]


def rows_frame(sources: Sequence[Sequence[dict[str, Any]]], columns: Sequence[str],
               shown_metrics: set[str] | None = None) -> pd.DataFrame:
    """A frame of ``columns`` holding the rows of ``sources`` in order (a row lacking a
    column: NaN), with the dtypes ``pd.DataFrame.from_records`` gives those row dicts.
    A source that is :class:`CellRows` is taken from its table's columns, no dict made.
    ``shown_metrics``: keep only these metrics' rows (and every non-metric row)."""
    blocks = _blocks(sources)
    arrays = []
    for col in columns:
        parts = [_block_column(block, col) for block in blocks]
        arrays.append(np.concatenate(parts) if parts else np.empty(0, dtype=object))
    if shown_metrics is not None and len(arrays[0]):
        kinds, metrics = (arrays[list(columns).index(c)] for c in ("metric_kind", "metric"))
        keep = (kinds != METRIC) | pd.Series(metrics, dtype=object).isin(list(shown_metrics)).to_numpy()
        arrays = [a[keep] for a in arrays]
    if not len(arrays[0]):
        return pd.DataFrame(columns=list(columns))
    # object columns, then the dtypes their values allow: what from_records infers from
    # the row dicts (tests/experiments/test_table_rows.py), without making them
    return pd.DataFrame(dict(zip(columns, arrays, strict=True)), copy=False).infer_objects()


@dataclass
class _Run:
    """Consecutive cells of one table (built up by :func:`_blocks`)."""

    table: TableColumns
    parts: list[np.ndarray]


def _blocks(sources: Sequence[Sequence[dict[str, Any]]]) -> list[Sequence[dict[str, Any]]]:
    """``sources`` with consecutive cells of one table joined into one :class:`CellRows`."""
    blocks: list[Any] = []
    for src in sources:
        last = blocks[-1] if blocks else None
        if isinstance(src, CellRows) and isinstance(last, _Run) and last.table is src.table:
            last.parts.append(src.positions)
        elif isinstance(src, CellRows):
            blocks.append(_Run(src.table, [src.positions]))
        else:
            blocks.append(src)
    return [CellRows(b.table, np.concatenate(b.parts)) if isinstance(b, _Run) else b
            for b in blocks]


def _block_column(block: Sequence[dict[str, Any]], col: str) -> np.ndarray:
    """The values of column ``col`` in ``block``'s rows, NaN where a row lacks it."""
    if isinstance(block, CellRows):
        values = block.table.arrays.get(col)
        if values is None:
            return np.full(len(block), np.nan, dtype=object)
        return values[block.positions]
    return np.fromiter((r.get(col, np.nan) for r in block), dtype=object, count=len(block))
