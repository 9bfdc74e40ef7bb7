"""Download, parsing and public metadata on tiny files the suite writes itself (offline)."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from mirror_server import serve_directory
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.datasets import download, load_dataset
from dpexp.datasets.registry import get_dataset_info, parse_registry
from dpexp.errors import DatasetError, SpecError


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_libsvm_download_verifies_and_declares_everything(tiny):
    ds = load_dataset("tiny_svm", progress=False)
    assert ds.X.shape == (4, 3)
    np.testing.assert_array_equal(ds.y, [0, 1, 0, 1])  # codes of the declared [-1, 1]
    assert ds.class_names == ["-1", "1"]
    assert ds.domain_source == "declared" and ds.domain_is_public
    np.testing.assert_array_equal(ds.feature_domain, [[0, 1]] * 3)
    (state,) = download.checksum_status(get_dataset_info("tiny_svm"))
    assert state["status"] == "ok"


def test_uci_declared_categories_classes_and_observed_columns(tiny):
    ds = load_dataset("tiny_uci", progress=False)
    assert ds.X.shape == (4, 3) and ds.X_test.shape == (2, 3)  # the '?' row was dropped
    # classes are the declared set, even though the file has no label 2
    np.testing.assert_array_equal(ds.classes, [0, 1, 2])
    assert ds.summary()["class_balance"] == {"0": 0.5, "1": 0.5, "2": 0.0}
    # colour codes follow the declared list (red, green, blue, white), not the file's values
    np.testing.assert_array_equal(ds.X[:, 1], [0, 1, 0, 1])
    np.testing.assert_array_equal(ds.X_test[:, 1], [2, 0])
    assert ds.n_categories[1] == 4 and list(ds.feature_domain[1]) == [0, 3]
    assert list(ds.feature_domain[0]) == [0, 10]  # declared, not the observed [2.5, 9]
    assert list(ds.feature_domain[2]) == [10, 60]  # observed over train and test rows
    assert ds.feature_domain_sources == ["declared", "declared", "observed"]
    assert ds.domain_source == "observed (not DP: domain from data: 1 of 3 features)"
    assert not ds.domain_is_public


def test_regression_observed_label_range_is_flagged(tiny):
    ds = load_dataset("tiny_reg", progress=False)
    assert ds.label_domain == (10.0, 45.0) and ds.label_domain_source == "observed"
    assert ds.domain_source == "observed (not DP: domain from data: all 2 features, label range)"
    assert ds.public_metadata()["classes"] is None


def _with_entry(tiny, name: str, **changes) -> None:
    """Rewrite the tiny registry with ``changes`` applied to dataset ``name``."""
    import yaml

    reg = json.loads(json.dumps(tiny.registry))
    reg[name].update(changes)
    (tiny.home / "datasets.yaml").write_text(yaml.safe_dump(reg, sort_keys=False))


@pytest.fixture
def editable(tiny, tmp_path, monkeypatch):
    """Like ``tiny`` but with a private copy of the registry that a test may change."""
    import shutil

    home = tmp_path / "home"
    shutil.copytree(tiny.home, home)
    monkeypatch.setenv("DPEXP_HOME", str(home))
    return replace(tiny, home=home)


def test_label_outside_declared_classes_is_a_clear_error(editable):
    _with_entry(editable, "tiny_svm", classes=[1, 2])
    with pytest.raises(DatasetError, match=r"label\(s\) \['-1'\] are not in the declared classes"):
        load_dataset("tiny_svm", progress=False)


def test_category_outside_declared_list_is_a_clear_error(editable):
    opts = dict(editable.registry["tiny_uci"]["options"], categories={"colour": ["red", "green"]})
    _with_entry(editable, "tiny_uci", options=opts)
    with pytest.raises(DatasetError, match="'colour' has value.*blue.*outside the categories declared"):
        load_dataset("tiny_uci", progress=False)


def test_value_outside_declared_domain_is_a_clear_error(editable):
    _with_entry(editable, "tiny_uci", feature_domain={"declared_columns": {"length": [0, 5]}})
    with pytest.raises(DatasetError, match=r"feature 'length' has values in \[2.5, 9\], outside"):
        load_dataset("tiny_uci", progress=False)


def test_unknown_declared_column_is_a_clear_error(editable):
    _with_entry(editable, "tiny_uci", feature_domain={"declared_columns": {"lenght": [0, 5]}})
    with pytest.raises(DatasetError, match="names 'lenght', which is not a feature"):
        load_dataset("tiny_uci", progress=False)


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"task": "classification", "parser": "synthetic"}, "classes"),
        ({"task": "classification", "parser": "synthetic", "classes": [1]}, "classes"),
        ({"task": "classification", "parser": "synthetic", "classes": [1, "1"]}, "duplicate"),
        ({"task": "regression", "parser": "synthetic", "classes": [0, 1]}, "classes"),
        ({"task": "regression", "parser": "synthetic", "feature_domain": "guess"}, "feature_domain"),
        ({"task": "regression", "parser": "synthetic",
          "feature_domain": {"declared": {"low": 2, "high": 1}}}, "low <= high"),
        ({"task": "regression", "parser": "synthetic",
          "feature_domain": {"declared_columns": {"a": [0]}}}, "declared_columns"),
        ({"task": "regression", "parser": "synthetic", "label_domain": {"declared": {"low": 0}}},
         "label_domain"),
    ],
)
def test_registry_rejects_undeclared_or_malformed_public_metadata(entry, key):
    with pytest.raises(SpecError, match=key):
        parse_registry({"x": entry})


def test_truncated_download_is_rejected_and_cache_untouched(tiny, tmp_path):
    good = download.fetch_dataset(get_dataset_info("tiny_svm"), progress=False)[0]
    bad_root = tmp_path / "bad-mirror" / "tiny_uci"
    bad_root.mkdir(parents=True)
    data = (tiny.root / "tiny_uci" / "tiny.data").read_bytes()
    (bad_root / "tiny.data").write_bytes(data[: len(data) // 2])
    server, url = serve_directory(bad_root.parent)
    try:
        with pytest.raises(DatasetError, match="sha256 check") as exc:
            download.fetch_dataset(get_dataset_info("tiny_uci"), mirror=url, progress=False)
    finally:
        server.shutdown()
    assert "dpexp datasets download tiny_uci" in str(exc.value)
    assert not (good.parent.parent / "tiny_uci" / "tiny.data").exists()
    assert download.sha256_of(good) == get_dataset_info("tiny_svm").files[0].sha256


def test_corrupted_cached_copy_is_named_when_the_refetch_fails(tiny, tmp_path, monkeypatch):
    (path,) = download.fetch_dataset(get_dataset_info("tiny_svm"), progress=False)
    path.write_bytes(path.read_bytes()[:10])  # truncated in the cache
    monkeypatch.setenv("DPEXP_DATA_MIRROR", str(tmp_path / "empty-mirror"))  # offline
    with pytest.raises(DatasetError) as exc:
        load_dataset("tiny_svm", progress=False)
    msg = str(exc.value)
    assert f"the cached copy {path} failed its sha256 check" in msg and "could not download" in msg


def test_corrupted_cached_copy_is_replaced_when_the_mirror_answers(tiny):
    (path,) = download.fetch_dataset(get_dataset_info("tiny_svm"), progress=False)
    path.write_bytes(b"garbage")
    (again,) = download.fetch_dataset(get_dataset_info("tiny_svm"), progress=False)
    assert download.sha256_of(again) == get_dataset_info("tiny_svm").files[0].sha256


def test_folder_mirror_and_missing_file(tiny, tmp_path, monkeypatch):
    (path,) = download.fetch_dataset(get_dataset_info("tiny_reg"), mirror=tiny.root, progress=False)
    assert path.read_bytes() == (tiny.root / "tiny_reg" / "reg.csv").read_bytes()
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    with pytest.raises(DatasetError, match="could not download"):
        load_dataset("tiny_uci", mirror=str(empty))


def test_trust_on_first_use_records_and_enforces(tiny):
    info = get_dataset_info("tiny_tofu")
    with pytest.warns(UserWarning, match="no published checksum"):
        (path,) = download.fetch_dataset(info, progress=False)
    assert download.checksum_status(info)[0]["status"] == "ok"
    path.write_bytes(b"1 1:1\n")
    assert download.checksum_status(info)[0]["status"] == "checksum mismatch"
    with warnings.catch_warnings(), pytest.raises(DatasetError, match="no longer matches"):
        warnings.simplefilter("error")
        download.fetch_dataset(info, progress=False)


def test_datasets_info_never_downloads_and_shows_the_registry(tiny, tmp_path):
    res = invoke("datasets", "info", "tiny_uci", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [f["status"] for f in data["files"]] == ["missing", "missing"]
    assert data["classes"] == [0, 1, 2] and data["registry_rows"] == 4
    assert "declared for length, colour (categories)" in data["public_domain"]["features"]
    assert data["files"][0]["mirror_path"] == "tiny_uci/tiny.data"
    assert not (tmp_path / "data").exists()  # nothing downloaded or copied
    text = invoke("datasets", "info", "tiny_uci")
    assert text.exit_code == 0 and "not loaded (nothing was downloaded or copied)" in text.output
    assert "observed (not DP: domain from data)" in text.output


def test_datasets_info_load_and_checksum_state(tiny, tmp_path):
    res = invoke("datasets", "info", "tiny_uci", "--load", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["loaded"]["rows"] == 4 and data["loaded"]["observed_features"] == ["weight"]
    assert [f["status"] for f in data["files"]] == ["ok", "ok"]
    cached = tmp_path / "data" / "tiny_uci" / "tiny.data"
    cached.write_bytes(cached.read_bytes()[:5])
    text = invoke("datasets", "info", "tiny_uci")
    assert text.exit_code == 0
    assert "checksum mismatch" in text.output and "failed its sha256 check" in text.output


def test_datasets_info_of_user_supplied_and_unknown(tiny, monkeypatch):
    monkeypatch.setenv("DPEXP_HOME", str(Path(__file__).resolve().parents[2]))  # the real registry
    res = invoke("datasets", "info", "gss", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["user_supplied"]["status"] == "missing" and "GSS" in data["user_supplied"]["instructions"]
    assert data["public_domain"]["features"].startswith("observed (not DP")
    bad = invoke("datasets", "info", "gsss")
    assert bad.exit_code == 2 and "Did you mean 'gss'" in bad.output and "Traceback" not in bad.output


def test_shape_mismatch_fails_clearly(tiny, monkeypatch):
    """A file that verifies but parses to the wrong shape (e.g. a changed registry)."""
    import dpexp.datasets.core as core

    info = get_dataset_info("tiny_svm")
    monkeypatch.setattr(core, "get_dataset_info", lambda name: replace(info, rows=5))
    with pytest.raises(DatasetError, match="expects 5"):
        core.load_dataset("tiny_svm", progress=False)


def test_claves_parser_drops_rows_without_exactly_one_class(tmp_path):
    from dpexp.datasets.parsers import parse_claves

    onset = " ".join(["1", "0"] * 8)
    lines = [f"{onset} 0 1 0 0", f"{onset} 0 0 0 0", f"{onset} 1 0 0 1 a trailing note", f"{onset} 0 0 0 1"]
    path = tmp_path / "claves.txt"
    path.write_text("\n".join(lines) + "\n\n")
    parsed = parse_claves([path], {})
    assert parsed.X.shape == (2, 16) and list(parsed.y) == [1, 3]
    path.write_text(f"{onset} 0 1\n")
    with pytest.raises(DatasetError, match="line 1: expected 20 values"):
        parse_claves([path], {})
