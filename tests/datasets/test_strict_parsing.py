"""The strict CSV reader's line model (field counts on the raw bytes, line numbers) and the
declared-type conversions, on files written here (offline). The faults themselves, through
``load_dataset`` and the CLI, are in tests/faults/test_data_faults.py."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.datasets.csv_files import _scan_lines, read_table
from dpexp.datasets.parsers import parse_csv
from dpexp.errors import DatasetError

OPTIONS = {"columns": ["a", "b", "label"], "label": "label"}


@pytest.mark.parametrize(
    ("data", "fields", "blank", "numbers"),
    [
        (b"1,2,3\n4,5,6\n", [3, 3], [False, False], [1, 2]),
        (b"1,2,3\r\n\r\n4,5,6", [3, 1, 3], [False, True, False], [1, 2, 3]),  # CRLF, no final newline
        (b'1,"x,y",3\n  \t\n"a\nb",2,3\n', [3, 1, 3], [False, True, False], [1, 2, 3]),  # quoted , and newline
        (b"\n\n", [1, 1], [True, True], [1, 2]),
        (b"", [], [], []),
    ],
)
def test_line_model(data, fields, blank, numbers):
    lines = _scan_lines(data)
    assert list(lines.fields) == fields and list(lines.blank) == blank
    assert list(lines.numbers) == numbers


@pytest.mark.parametrize(
    ("data", "empty"),
    [
        (b"1,2,3\n4,5,6\n", []),
        (b",2,3\n4, ,6\r\n7,8,\n9,8,7", [(0, 0), (1, 1), (2, 2)]),  # first, blank-only, last
        (b'1,"",3\n\n4,",",\n', [(1, 0), (2, 2)]),  # a blank line is one empty field; "," is one
    ],
)
def test_empty_fields_are_found_with_their_line_and_position(data, empty):
    lines = _scan_lines(data)
    assert list(zip(lines.empty_line.tolist(), lines.empty_position.tolist(), strict=True)) == empty


def test_quoted_empty_field_is_empty(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b'1,"x",a\n2,"",b\n')
    with pytest.raises(DatasetError, match=r"t.csv, line 2, column 'b' \(2\): empty field"):
        read_table(path, OPTIONS)


def test_crlf_file_reads_like_lf(tmp_path):
    lf, crlf = tmp_path / "lf.csv", tmp_path / "crlf.csv"
    lf.write_bytes(b"1, 2.5, x\n3, 4, y\n")
    crlf.write_bytes(b"1, 2.5, x\r\n3, 4, y\r\n")
    a, b = parse_csv([lf], OPTIONS), parse_csv([crlf], OPTIONS)
    np.testing.assert_array_equal(a.X, b.X)
    assert list(a.y) == list(b.y) == ["x", "y"]


def test_skipped_lines_count_in_line_numbers(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"|a title line\n1,2,x\n\n3,4\n")
    with pytest.raises(DatasetError, match=r"t.csv, line 4, column 'label' \(3\): the row ends here"):
        read_table(path, OPTIONS, skip=1)


def test_empty_field_declared_as_missing_marker_is_nan(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"1,,x\n3,4,y\n")
    parsed = parse_csv([path], {**OPTIONS, "na_values": [""]})
    assert np.isnan(parsed.X[0, 1]) and parsed.X[1, 1] == 4
    with pytest.raises(DatasetError, match=r"line 1, column 'b' \(2\): empty field"):
        parse_csv([path], OPTIONS)


def test_missing_label_marker_is_an_error_unless_its_row_is_dropped(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"1,2,x\n3,4,?\n")
    with pytest.raises(DatasetError, match=r"line 2, column 'label' \(3\): missing label"):
        parse_csv([path], {**OPTIONS, "na_values": ["?"]})
    parsed = parse_csv([path], {**OPTIONS, "na_values": ["?"], "drop_missing": True})
    assert parsed.X.shape == (1, 2)


def test_declared_category_outside_the_list_names_its_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"1,red,x\n3,blue,y\n")
    options = {**OPTIONS, "categorical": ["b"], "categories": {"b": ["red", "green"]}}
    with pytest.raises(DatasetError, match=r"line 2, column 'b' \(2\): column 'b' has value\(s\) \['blue'\]"):
        parse_csv([path], options)


def test_header_file_with_an_unnamed_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,,label\n1,2,x\n")
    with pytest.raises(DatasetError, match="line 1: the header row has an empty column name"):
        read_table(path, {"header": True})
