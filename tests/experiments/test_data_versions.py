"""A cell computed on another version of a dataset (another ``data_version``, e.g. rows
written before data versions were recorded) is not one of the current grid: it is never
averaged with the current cells of the same setting, and a rewritten table drops it. The
committed paper-scale tables held 8,760 such rows (dpboost-ablation, -fig4, -fig5, -fig6):
each of their entries averaged n = 10 where the grid has 5."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from conftest import tiny_spec
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import dataset_version, other_data_version
from dpexp.experiments.results import cached_results


@pytest.fixture()
def env(tmp_path, monkeypatch):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tiny.yaml").write_text(yaml.safe_dump(tiny_spec("tiny")))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    return tmp_path / "results"


def run_tiny(results):
    return CliRunner().invoke(app, ["run", "tiny", "--results-dir", str(results), "-q",
                                    "--no-render"])


def test_other_data_version_compares_with_the_registry():
    current = dataset_version("adult")
    assert current
    assert not other_data_version("adult", current)
    assert other_data_version("adult", "")  # written before versions were recorded
    assert other_data_version({"name": "adult"}, "0" * 12)
    assert not other_data_version("no_such_dataset", "")  # nothing to compare against


def test_rows_of_another_data_version_are_neither_averaged_nor_kept(env):
    results = env
    assert run_tiny(results).exit_code == 0
    table = results / "tiny" / "results-smoke.csv"
    current = pd.read_csv(table, keep_default_na=False, dtype=str)
    assert (current["data_version"] != "").all()
    old = current.assign(data_version="", value="123456.0", timestamp="2026-11-23T15:00:00+00:00")
    pd.concat([current, old]).to_csv(table, index=False)
    spec = resolve("tiny")
    frame = cached_results(spec, "smoke", results, current_only=True).frame
    assert len(frame) == len(current)
    assert not (frame["value"] == 123456.0).any()
    assert run_tiny(results).exit_code == 0  # every cell cached: the table is written again
    rewritten = pd.read_csv(table, keep_default_na=False, dtype=str)
    assert len(rewritten) == len(current)
    assert (rewritten["data_version"] != "").all()
