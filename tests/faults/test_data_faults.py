"""Fault injection on data files (issue 40, "data are parsed strictly"): each malformed
file is written the way it happens, and loading it must be one DatasetError line naming
the file, the line (1-based) and the column -- never a library traceback, never a value
silently changed. A truncated download without a published checksum must be deleted,
never trusted.

Before (issue 40): an empty field in a ``categorical: auto`` CSV turned the column
categorical; ``3:nan`` passed a declared [0, 1] domain; short/long rows, empty files and
``abc`` tokens gave pandas/svmlight tracebacks (a short row: "label(s) [''] not in declared
classes"); a truncated ``.bz2`` printed "Aborted!" and had its hash recorded as verified.
"""

from __future__ import annotations

import bz2
import hashlib
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import tiny_spec
from mirror_server import serve_directory
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.datasets import download, load_dataset
from dpexp.datasets.registry import get_dataset_info, parse_registry
from dpexp.errors import DatasetError, SpecError

SVM_ROWS = 40
SVM = "".join(f"{(-1) ** i} 1:{(i % 4) / 4} 2:{(i % 3) / 3} 3:1\n" for i in range(SVM_ROWS)).encode()
USER_CSV = "age,colour,income,label\n31,red,1200.5,1\n45,blue,800,0\n27,red,950,1\n52,green,1020,0\n"


def _entry(parser: str, file: str, **extra) -> dict:
    entry = {"description": "test data", "task": "classification", "papers": {},
             "files": [{"name": file.split("/")[-1], "url": None, "sha256": None, "mirror_path": file}],
             "parser": parser, "classes": [-1, 1] if parser == "libsvm" else [0, 1]}
    entry.update(extra)
    return entry


REGISTRY = {
    "svm": _entry("libsvm", "svm/data.svm", options={"n_features": 3}, rows=SVM_ROWS, features=3,
                  feature_domain={"declared": {"low": 0, "high": 1}}),
    "svm_bz2": _entry("libsvm", "svm_bz2/data.bz2", options={"n_features": 3}, rows=SVM_ROWS, features=3),
    "user_csv": {
        "description": "a user-supplied CSV", "task": "classification", "papers": {},
        "local_only": {"file": "user.csv", "instructions": "put it there"}, "parser": "csv",
        "options": {"header": True, "label": "label", "categorical": ["colour"]},
        "rows": 4, "features": 3, "classes": [0, 1],
    },
    "uci": _entry("csv", "uci/uci.data",
                  options={"columns": ["length", "colour", "label"], "label": "label",
                           "categorical": ["colour"], "na_values": ["?"], "drop_missing": True},
                  rows=3, features=2, classes=["yes", "no"]),
}


class Data:
    """The test registry active, an empty data dir and a mirror folder to write into."""

    def __init__(self, root: Path):
        self.mirror, self.data = root / "mirror", root / "data"

    def put(self, mirror_path: str, content: bytes) -> Path:
        path = self.mirror / mirror_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        return path

    def user_file(self, content: str) -> Path:
        path = self.data / "user_csv" / "user.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        return path


@pytest.fixture
def data(tmp_path, monkeypatch) -> Data:
    home = tmp_path / "home"
    (home / "experiments").mkdir(parents=True)
    (home / "datasets.yaml").write_text(yaml.safe_dump(REGISTRY, sort_keys=False))
    monkeypatch.setenv("DPEXP_HOME", str(home))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(home / "experiments"))
    d = Data(tmp_path)
    d.mirror.mkdir()
    monkeypatch.setenv("DPEXP_DATA_DIR", str(d.data))
    monkeypatch.setenv("DPEXP_DATA_MIRROR", str(d.mirror))
    return d


def _invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_error_line(res, *expected: str) -> str:
    """The CLI printed one ``error:`` line holding ``expected`` and no traceback."""
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "Aborted" not in res.output, res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.output
    for text in expected:
        assert text in lines[0], res.output
    return lines[0]


# ------------------------------------------------------------------- user-supplied CSVs

def test_user_csv_loads_with_declared_column_types(data):
    data.user_file(USER_CSV)
    ds = load_dataset("user_csv", progress=False)
    assert list(ds.categorical_features) == [False, True, False]
    np.testing.assert_array_equal(ds.X[:, 1], [2, 0, 2, 1])  # codes of blue, green, red (observed)
    np.testing.assert_array_equal(ds.X[:, 2], [1200.5, 800, 950, 1020])


def test_one_empty_field_does_not_retype_a_column(data):
    """Before: with ``categorical: auto`` the whole 'income' column became categorical and
    every code shifted. Now the empty field itself is the error, at its line and column."""
    path = data.user_file(USER_CSV.replace("800", ""))
    with pytest.raises(DatasetError) as exc:
        load_dataset("user_csv", progress=False)
    assert str(exc.value).startswith(f"{path}, line 3, column 'income' (3): empty field")


def test_text_in_an_undeclared_column_names_the_declaration(data):
    path = data.user_file(USER_CSV.replace("27,red", "n/a,red"))
    with pytest.raises(DatasetError) as exc:
        load_dataset("user_csv", progress=False)
    msg = str(exc.value)
    assert msg.startswith(f"{path}, line 4, column 'age' (1): 'n/a' is not a finite number")
    assert "options.categorical" in msg


def test_auto_column_types_are_refused_by_the_registry():
    entry = dict(REGISTRY["user_csv"], options={"header": True, "label": "label", "categorical": "auto"})
    with pytest.raises(SpecError, match=r"options.categorical' must be 'all' or a list.*'auto' guessed"):
        parse_registry({"x": entry})


def test_declared_categorical_column_must_exist(data):
    data.user_file(USER_CSV.replace("colour", "color"))
    with pytest.raises(DatasetError, match=r"declared categorical column\(s\) \['colour'\] are not"):
        load_dataset("user_csv", progress=False)


# ------------------------------------------------------------------- rows and fields

@pytest.mark.parametrize(
    ("content", "where"),
    [
        # a short row: before, "label(s) [''] are not in the declared classes"
        (USER_CSV.replace("45,blue,800,0", "45,blue,800"), "line 3, column 'label' (4): the row ends here: 3 fields, expected 4"),
        (USER_CSV.replace("27,red,950,1", "27,red,950,1,7"), "line 4, column 5: extra field: 5 fields, expected 4"),
        (USER_CSV.replace("1020", "inf"), "line 5, column 'income' (3): 'inf' is not a finite number"),
        (USER_CSV.replace("1020", "nan"), "line 5, column 'income' (3): 'nan' is not a finite number"),
        (USER_CSV.replace("52,green,1020,0", "\n\n52,green,1020,"), "line 7, column 'label' (4): empty field"),
    ],
)
def test_malformed_csv_rows_name_file_line_and_column(data, content, where):
    path = data.user_file(content)
    with pytest.raises(DatasetError) as exc:
        load_dataset("user_csv", progress=False)
    assert str(exc.value).startswith(f"{path}, {where}")


@pytest.mark.parametrize("content", ["", "\n\n", "age,colour,income,label\n"])
def test_empty_csv_file(data, content):
    path = data.user_file(content)
    with pytest.raises(DatasetError, match="the file is empty") as exc:
        load_dataset("user_csv", progress=False)
    assert str(exc.value).startswith(str(path))


def test_line_numbers_count_skipped_and_blank_lines_and_quotes(data):
    """Declared missing markers ('?') are dropped rows, not errors; quoted commas are one
    field; the line named is the file's own line, blank lines included."""
    text = '1.5,"red",yes\n\n2,"b,lue",no\n3,?,yes\n4,red,no\n\nx5,red,no\n'
    data.put("uci/uci.data", text.encode())
    with pytest.raises(DatasetError) as exc:
        load_dataset("uci", progress=False)
    # 'b,lue' is one field and '?' a declared marker: the first fault is 'x5' on line 7
    cached = data.data / "uci" / "uci.data"
    assert f"{cached}, line 7, column 'length' (1): 'x5' is not a finite number" in str(exc.value)
    assert not cached.exists()  # no published checksum: a first download that fails is deleted


def test_label_outside_the_declared_classes_names_its_line(data):
    path = data.user_file(USER_CSV.replace("27,red,950,1", "27,red,950,2"))
    with pytest.raises(DatasetError, match=rf"label\(s\) \['2'\] are not in the declared classes \[0, 1\] of "
                                           rf"datasets.yaml \(first at {path}, line 4\)"):
        load_dataset("user_csv", progress=False)


# ------------------------------------------------------------------- LIBSVM

@pytest.mark.parametrize(
    ("line", "where"),
    [
        (b"1 3:nan", "line 2, column 2 ('3:nan'): value 'nan' is not a finite number"),  # before: passed [0, 1]
        (b"1 2:1e40", "line 2, column 2 ('2:1e40'): value '1e40' is not a finite number"),  # inf in float32
        (b"-1 abc", "line 2, column 2 ('abc'): not an index:value pair"),
        (b"-1 1:abc", "line 2, column 2 ('1:abc'): value 'abc' is not a finite number"),
        (b"nan 1:1", "line 2, column 1: label 'nan' is not a finite number"),
        (b"1 2:1 1:1", "line 2, column 3 ('1:1'): feature indices must increase"),
        (b"1 7:1", "line 2, column 2 ('7:1'): feature index 7 exceeds the declared n_features 3"),
    ],
)
def test_malformed_libsvm_names_file_line_and_field(data, line, where):
    lines = SVM.splitlines(keepends=True)
    data.put("svm/data.svm", lines[0] + line + b"\n" + b"".join(lines[2:]))
    with pytest.raises(DatasetError) as exc:
        load_dataset("svm", progress=False)
    assert f"data.svm, {where}" in str(exc.value)


def test_libsvm_comment_and_blank_lines_keep_the_line_number(data):
    data.put("svm/data.svm", b"# a comment\n\n" + SVM.replace(b"-1 1:0.25", b"-1 1:inf", 1))
    with pytest.raises(DatasetError, match=r"data.svm, line 4, column 2 \('1:inf'\)"):
        load_dataset("svm", progress=False)


def test_libsvm_label_outside_the_declared_classes_names_its_line(data):
    data.put("svm/data.svm", b"# header comment\n" + SVM.replace(b"-1 1:0.25", b"3 1:0.25", 1))
    with pytest.warns(UserWarning, match="no published checksum; parsed it"), \
            pytest.raises(DatasetError, match=r"label\(s\) \['3'\] .*\(first at .*data.svm, line 3\)"):
        load_dataset("svm", progress=False)  # the file parses (its hash is recorded), the label is wrong


def test_empty_libsvm_file(data):
    data.put("svm/data.svm", b"")
    with pytest.raises(DatasetError, match=r"data.svm: .*the file is empty"):
        load_dataset("svm", progress=False)


# ------------------------------------------------------------------- downloads without a checksum

def _record(data: Data, name: str, file: str) -> Path:
    return data.data / name / f".{file}.sha256"


@pytest.mark.parametrize("over_http", [False, True])
def test_truncated_bz2_download_is_deleted_and_never_trusted(data, monkeypatch, over_http):
    """Before: bz2 EOFError through click ("Aborted!"), yet the hash was recorded and
    ``datasets info`` said "ok -- cached, sha256 verified"."""
    full = bz2.compress(SVM)
    data.put("svm_bz2/data.bz2", full[: len(full) // 2])
    if over_http:
        server, url = serve_directory(data.mirror)
        monkeypatch.setenv("DPEXP_DATA_MIRROR", url)
    try:
        info = get_dataset_info("svm_bz2")
        with pytest.raises(DatasetError) as exc:
            download.fetch_dataset(info, progress=False)
        msg = str(exc.value)
        assert "data.bz2" in msg and "truncated or corrupt" in msg and "no checksum was recorded" in msg
        assert "\n" not in msg
        assert not (data.data / "svm_bz2" / "data.bz2").exists()
        assert not _record(data, "svm_bz2", "data.bz2").exists()
        assert download.checksum_status(info)[0]["status"] == "missing"
        data.put("svm_bz2/data.bz2", full)  # the mirror serves the whole file again
        with pytest.warns(UserWarning, match=f"parsed it \\({SVM_ROWS} rows, 3 features"):
            download.fetch_dataset(info, progress=False)
    finally:
        if over_http:
            server.shutdown()
    record = _record(data, "svm_bz2", "data.bz2").read_text().split()
    assert record == [hashlib.sha256(full).hexdigest(), f"rows={SVM_ROWS}", "features=3"]
    assert download.checksum_status(info)[0]["status"] == "ok"
    assert load_dataset("svm_bz2", progress=False).X.shape == (SVM_ROWS, 3)


def test_download_cut_at_a_line_boundary_fails_the_row_count(data):
    data.put("svm/data.svm", SVM[: SVM.index(b"\n", len(SVM) // 2) + 1])
    with pytest.raises(DatasetError, match=f"was deleted and no checksum was recorded.*registry expects {SVM_ROWS}"):
        download.fetch_dataset(get_dataset_info("svm"), progress=False)
    assert not (data.data / "svm" / "data.svm").exists()


def test_hash_recorded_without_parsing_is_checked_again(data):
    """A record an older dpexp wrote (hash only) of a truncated file: reported unverified,
    then parsed at the next fetch, and the file deleted."""
    full = bz2.compress(SVM)
    cached = data.data / "svm_bz2" / "data.bz2"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(full[:-20])
    _record(data, "svm_bz2", "data.bz2").write_text(hashlib.sha256(full[:-20]).hexdigest() + "\n")
    info = get_dataset_info("svm_bz2")
    assert download.checksum_status(info)[0]["status"] == "unverified"
    with pytest.raises(DatasetError, match="truncated or corrupt"):
        download.fetch_dataset(info, progress=False)
    assert not cached.exists() and not _record(data, "svm_bz2", "data.bz2").exists()


# ------------------------------------------------------------------- the CLI: one line

def test_cli_download_of_a_truncated_file_is_one_line(data):
    full = bz2.compress(SVM)
    data.put("svm_bz2/data.bz2", full[: len(full) // 2])
    res = _invoke("datasets", "download", "svm_bz2")
    _one_error_line(res, "data.bz2", "truncated or corrupt", "dpexp datasets download svm_bz2")
    assert not (data.data / "svm_bz2" / "data.bz2").exists()


@pytest.mark.parametrize(
    ("name", "write", "expected"),
    [
        ("user_csv", lambda d: d.user_file(USER_CSV.replace("45,blue,800,0", "45,blue,800")),
         "line 3, column 'label' (4)"),
        ("user_csv", lambda d: d.user_file(""), "the file is empty"),
        ("svm", lambda d: d.put("svm/data.svm", SVM.replace(b"1 1:0.25", b"1 1:nan", 1)), "line 2, column 2"),
        ("svm", lambda d: d.put("svm/data.svm", b"1 1:1\n-1 b'abc'\n"), "line 2, column 2"),
    ],
)
def test_cli_datasets_info_load_is_one_line(data, name, write, expected):
    write(data)
    _one_error_line(_invoke("datasets", "info", name, "--load"), expected)


def test_cli_run_on_a_malformed_user_csv_is_one_line(data):
    spec = tiny_spec("bad_data", datasets=["user_csv"], epsilons=[1.0],
                     algorithms=[{"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 3}}])
    (Path(data.data).parent / "home" / "experiments" / "bad_data.yaml").write_text(yaml.safe_dump(spec))
    path = data.user_file(USER_CSV.replace("45,blue,800,0", "45,blue,800"))
    res = _invoke("run", "bad_data", "--results-dir", data.data.parent / "results", "--no-render", "-q")
    _one_error_line(res, str(path), "line 3, column 'label' (4)")
