"""A committed table read column-wise (:mod:`dpexp.experiments.table_rows`): a cell's rows
read as the row dicts a per-row reading gives, and the results frame taken from the
columns has the values and dtypes ``from_records`` gives those dicts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpexp.experiments.table_rows import CellRows, TableColumns, rows_frame

#: Columns whose values stress the dtype a frame infers: missing values among numbers,
#: booleans and text, a column with no value at all, mixed types.
_COLUMNS = {
    "none": [None, None, None, None], "int_none": [1, None, 3, 4], "ints": [1, 2, 3, 2**62],
    "float_nan": [1.5, math.nan, 2.0, 0.1], "bool_none": [True, None, False, True],
    "bools": [True, False, True, False], "text": ["a", "", "c", "d"],
    "text_none": ["a", None, "c", "d"], "mixed": [1, "a", 2.5, None], "bool_int": [True, 1, 0, 2],
}


def _table() -> TableColumns:
    return TableColumns(tuple(_COLUMNS), {c: np.array(v, dtype=object) for c, v in _COLUMNS.items()})


def _dicts(positions: list[int]) -> list[dict]:
    return [{c: v[i] for c, v in _COLUMNS.items()} for i in positions]


def test_cell_rows_read_as_row_dicts():
    rows = CellRows(_table(), np.array([2, 0]))
    assert len(rows) == 2 and rows == _dicts([2, 0]) and list(rows) == _dicts([2, 0])
    assert rows[1] == _dicts([0])[0] and rows[-1] == rows[1] and rows[:1] == _dicts([2])
    assert rows.first("ints") == 3
    with pytest.raises(IndexError):
        rows[2]


@pytest.mark.parametrize("split", [0, 1, 3])
def test_the_frame_is_the_one_from_records_gives(split):
    """Cells from a table and row dicts (a cell file's) mixed, a column no row has, and a
    filter on the metrics shown."""
    table = _table()
    sources = [CellRows(table, np.array([3, 1])), _dicts([0, 2])[:split], CellRows(table, np.array([2]))]
    columns = [*_COLUMNS, "absent"]
    expected = pd.DataFrame.from_records(
        [r for s in sources for r in s], columns=columns)
    got = rows_frame(sources, columns)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_only_the_metrics_shown_are_kept():
    table = TableColumns(("metric", "metric_kind", "value"), {
        "metric": np.array(["auc", "rmse", "n_leaves", "auc"], dtype=object),
        "metric_kind": np.array(["metric", "metric", "diagnostic", "metric"], dtype=object),
        "value": np.array([0.9, 1.5, 7.0, 0.8], dtype=object)})
    got = rows_frame([CellRows(table, np.arange(4))], ["metric", "metric_kind", "value"], {"auc"})
    assert got["metric"].tolist() == ["auc", "n_leaves", "auc"] and got["value"].dtype == float


def test_no_rows_give_an_empty_frame_of_the_columns():
    got = rows_frame([], ["a", "b"])
    assert list(got.columns) == ["a", "b"] and got.empty
