"""Strict reading of comma-separated files: every row has the declared number of fields,
no field is empty, and each row keeps the file line it came from, for the error messages.

The field counts are checked on the raw bytes with numpy (separators per line, outside
double quotes), so a large file costs a few vectorised passes, not a Python loop per line;
pandas then reads the fields as strings and the parsers convert them column by column.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpexp.datasets.parsed import data_error

_QUOTE, _NEWLINE, _COMMA = ord('"'), ord("\n"), ord(",")


def _empty_from(padded: np.ndarray, field_starts: np.ndarray) -> np.ndarray:
    """Indices of the fields (given by their first byte) holding nothing above space:
    vectorised over the fields, one step per leading blank byte."""
    empty = []
    index, position = np.arange(len(field_starts)), field_starts
    while len(index):
        byte = padded[position]
        end = (byte == _COMMA) | (byte == _NEWLINE)
        empty.append(index[end])
        blank = (byte <= ord(" ")) & ~end
        index, position = index[blank], position[blank] + 1
    return np.sort(np.concatenate(empty)) if empty else np.zeros(0, np.int64)


@dataclass(frozen=True)
class CsvTable:
    """The fields of one file as strings, and the 1-based file line of each row."""

    path: Path
    frame: pd.DataFrame
    lines: np.ndarray
    #: The file's column names, in file order (for "column 'sex' (1)" in messages).
    file_columns: tuple[str, ...]

    def column_label(self, name: str) -> str:
        return f"{name!r} ({self.file_columns.index(name) + 1})"


@dataclass(frozen=True)
class _Lines:
    """Per physical line of a file: its 1-based number, field count and blankness; and
    where the empty fields are (line index, 0-based field position), in file order."""

    numbers: np.ndarray
    fields: np.ndarray
    blank: np.ndarray
    empty_line: np.ndarray
    empty_position: np.ndarray


def _scan_lines(data: bytes) -> _Lines:
    """Field counts and empty fields of every line, vectorised over the positions of
    separators and line ends (those inside double quotes do not count: a quoted field may
    hold either). A field is empty when it holds no byte above space."""
    raw = np.frombuffer(data, dtype=np.uint8)
    if not len(raw):
        none = np.zeros(0, np.int64)
        return _Lines(numbers=none, fields=none, blank=np.zeros(0, bool), empty_line=none, empty_position=none)
    newlines = np.flatnonzero(raw == _NEWLINE)
    commas = np.flatnonzero(raw == _COMMA)
    ends = newlines
    if _QUOTE in raw:
        # inside quotes after an odd number of them (a uint8 running count keeps parity)
        inside = np.cumsum(raw == _QUOTE, dtype=np.uint8) & 1
        commas = commas[inside[commas] == 0]
        ends = newlines[inside[newlines] == 0]
    if not len(ends) or ends[-1] != len(raw) - 1:
        ends = np.append(ends, len(raw))  # the last line has no newline
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    first_comma = np.searchsorted(commas, starts)
    fields = np.searchsorted(commas, ends) - first_comma + 1
    # Empty fields: from each field's start, skip blank bytes; an empty field meets its
    # separator or line end first (neither can be quoted there: blank bytes open no quote).
    padded = np.append(raw, np.uint8(_NEWLINE))
    empty_start = _empty_from(padded, starts)
    empty_after = _empty_from(padded, commas + 1)
    comma_line = np.searchsorted(ends, commas[empty_after])
    empty_line = np.concatenate([empty_start, comma_line])
    empty_position = np.concatenate([np.zeros(len(empty_start), np.int64),
                                     empty_after - first_comma[comma_line] + 1])
    order = np.lexsort((empty_position, empty_line))
    empty_line, empty_position = empty_line[order], empty_position[order]
    blank = np.zeros(len(starts), dtype=bool)
    blank[empty_start[fields[empty_start] == 1]] = True
    numbers = np.searchsorted(newlines, starts) + 1
    return _Lines(numbers=numbers, fields=fields, blank=blank, empty_line=empty_line,
                  empty_position=empty_position)


def read_table(path: Path, options: dict, skip: int = 0) -> CsvTable:
    """The rows of ``path`` after ``skip`` lines (and a header row if ``options.header``),
    every field a string. A row with another number of fields than the header (or the
    declared ``columns``), an empty file or unreadable bytes: :class:`DatasetError` naming
    the file and line."""
    data = path.read_bytes()
    scan = _scan_lines(data)
    data_lines = (np.arange(len(scan.numbers)) >= skip) & ~scan.blank
    index = np.flatnonzero(data_lines)
    header = bool(options.get("header"))
    if header:
        if not len(index):
            raise data_error(path, "the file is empty: no header row and no data rows")
        header_line = int(scan.numbers[index[0]])
        try:
            names = [str(c) for c in pd.read_csv(path, nrows=0, skiprows=skip, skipinitialspace=True).columns]
        except (ValueError, UnicodeDecodeError) as exc:
            raise data_error(path, f"unreadable header row ({exc})", line=header_line) from None
        if any(n == "" or n.startswith("Unnamed: ") for n in names):
            raise data_error(path, "the header row has an empty column name", line=header_line)
        data_lines[index[0]] = False
        index = index[1:]
    else:
        names = [str(c) for c in options.get("columns") or []]
        if not names:
            raise data_error(path, "the registry declares neither 'columns' nor 'header: true'")
    if not len(index):
        raise data_error(path, "the file is empty: no data rows")
    numbers, fields = scan.numbers[index], scan.fields[index]
    wrong = np.flatnonzero(fields != len(names))
    if len(wrong):
        i = int(wrong[0])
        got, n = int(fields[i]), len(names)
        if got < n:
            column, problem = f"{names[got]!r} ({got + 1})", f"the row ends here: {got} fields, expected {n}"
        else:
            column, problem = f"{n + 1}", f"extra field: {got} fields, expected {n} ({', '.join(names)})"
        raise data_error(path, problem, line=int(numbers[i]), column=column)
    markers = [str(v) for v in options.get("na_values") or ()]
    if "" not in markers:
        empty = np.flatnonzero(data_lines[scan.empty_line])
        if len(empty):
            line, position = scan.empty_line[empty[0]], int(scan.empty_position[empty[0]])
            raise data_error(path, "empty field (declare na_values: [''] in datasets.yaml if the "
                                   "file marks missing values so)",
                             line=int(scan.numbers[line]), column=f"{names[position]!r} ({position + 1})")
    try:
        frame = pd.read_csv(
            path, header=0 if header else None, names=None if header else names, skiprows=skip,
            skipinitialspace=True, dtype=object, keep_default_na=False, na_values=markers,
            na_filter=bool(markers), skip_blank_lines=True,
        )
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
        raise data_error(path, f"not a readable CSV file ({exc})") from None
    if len(frame) != len(numbers):  # e.g. quotes that do not pair up
        raise data_error(path, f"{len(frame)} rows read but {len(numbers)} non-blank lines; "
                               "a field spans lines or quotes are unbalanced")
    if b'""' in data and "" not in markers:  # a quoted empty field ("") holds bytes
        quoted_empty = frame.to_numpy(dtype=object) == ""
        if quoted_empty.any():
            row, position = (int(v) for v in np.argwhere(quoted_empty)[0])
            raise data_error(path, "empty field", line=int(numbers[row]),
                             column=f"{names[position]!r} ({position + 1})")
    return CsvTable(path=path, frame=frame, lines=numbers, file_columns=tuple(names))


@dataclass(frozen=True)
class RowOrigins:
    """Where each row of the joined frames came from: which file, which line."""

    tables: tuple[CsvTable, ...]
    table_of_row: np.ndarray
    line_of_row: np.ndarray

    @classmethod
    def of(cls, tables: list[CsvTable], kept: list[np.ndarray]) -> RowOrigins:
        return cls(
            tables=tuple(tables),
            table_of_row=np.concatenate([np.full(k.sum(), i) for i, k in enumerate(kept)]).astype(np.int64),
            line_of_row=np.concatenate([t.lines[k] for t, k in zip(tables, kept, strict=True)]),
        )

    def origin(self, row: int) -> tuple[Path, int]:
        return self.tables[int(self.table_of_row[row])].path, int(self.line_of_row[row])

    def error(self, row: int, column: str, problem: str):
        table = self.tables[int(self.table_of_row[row])]
        return data_error(table.path, problem, line=int(self.line_of_row[row]),
                          column=table.column_label(column))


def numeric_column(values: pd.Series, name: str, origins: RowOrigins) -> np.ndarray:
    """float64 values; NaN only where the file holds a declared missing-value marker (read
    as NaN already). A field that is not a finite number: :class:`DatasetError` naming
    where."""
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
    bad = ~np.isfinite(numbers)
    if bad.any():  # only the non-finite rows are asked whether they are markers
        rows = np.flatnonzero(bad)
        bad[rows[values.iloc[rows].isna().to_numpy()]] = False
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise origins.error(
            i, name, f"{values.iloc[i]!r} is not a finite number (a numeric column; NaN and inf "
                     "are allowed only as declared na_values markers; categorical columns are "
                     "declared in datasets.yaml, options.categorical)")
    return numbers


def first_row_in(values: pd.Series, unknown: set) -> int:
    """Index of the first row whose value is in ``unknown`` (for an error message)."""
    return int(np.flatnonzero(values.isin(list(unknown)).to_numpy())[0])
