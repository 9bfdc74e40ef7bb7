"""``dpexp plan`` (issue 19): reads only, counts committed cells as done, says how each
estimate was obtained, calibrates each fit once per process on a small sample, and never
loads a dataset that is not there."""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path

import pytest
import yaml
from conftest import tiny_spec
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments import calibration, environment
from dpexp.experiments import plan as plan_mod
from dpexp.experiments.spec import CVScheme, DatasetRef

TINY = tiny_spec("tinyplan", algorithms=[
    {"name": "fletcher_forest", "label": "DP forest", "params": {"n_trees": 30}},
    {"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 5}},
])


@pytest.fixture(autouse=True)
def calibration_store(tmp_path, monkeypatch):
    """Each test its own store of calibrations: a calibration stored by another test would
    stand in for the fits these tests count, fail or budget."""
    monkeypatch.setattr(calibration.CalibrationStore, "default",
                        classmethod(lambda cls: cls(tmp_path / "calibrations")))


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture()
def env(tmp_path, monkeypatch):
    """A spec directory with the tiny spec (and a copy under another id), a results dir."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tinyplan.yaml").write_text(yaml.safe_dump(TINY))
    (specs / "tinyplan2.yaml").write_text(yaml.safe_dump({**TINY, "id": "tinyplan2"}))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    return tmp_path / "results"


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file()}


def test_training_rows_follow_the_cv_scheme_and_max_rows():
    ref = DatasetRef("synthA")  # 30,000 registered rows
    assert calibration.training_rows(ref, CVScheme(folds=5), None) == 24_000
    assert calibration.training_rows(ref, CVScheme(folds=3), 300) == 200
    assert calibration.training_rows(ref, CVScheme(scheme="holdout", test_size=0.25), None) == 22_500
    assert calibration.training_rows(DatasetRef("synthA", {"n_samples": 1000}), CVScheme(folds=2), None) == 500
    assert calibration.training_rows(DatasetRef("adult_uci"), CVScheme(scheme="given"), None) == 30_162


def test_calibration_sample_is_small_even_for_a_million_row_dataset():
    t0 = time.perf_counter()
    sample = calibration.Calibrator().sample(DatasetRef("synthetic_cls"))  # 1,000,000 x 400 registered
    assert sample.X.shape[0] == calibration.CALIBRATION_ROWS
    assert time.perf_counter() - t0 < 30  # the full dataset would be 3.2 GB of float64


def test_plan_reads_only_and_says_how_each_group_is_estimated(env, tmp_path, monkeypatch):
    r = env
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    res = invoke("plan", "tinyplan", "--results-dir", r, "--json")
    assert res.exit_code == 0, res.output
    assert not r.exists() and not any(cwd.iterdir())  # planning created nothing
    p = json.loads(res.stdout)
    assert p["todo_by_kind"] == {"measured": 0, "measured-other": 0, "extrapolated": 6, "unknown": 0,
                                 "unavailable": 0}
    dp = next(g for g in p["groups"] if g["label"] == "DP forest")
    # 30 trees: calibrated with fewer and scaled; 2 folds of 300 rows train on 150
    assert dp["kind"] == "extrapolated" and "to 150 rows and 30 trees" in dp["method"]
    run = invoke("run", "tinyplan", "--results-dir", r, "-q", "--no-render", "--epsilons", "1")
    assert run.exit_code == 0, run.output
    before = snapshot(r)
    text = invoke("plan", "tinyplan", "--results-dir", r)
    assert text.exit_code == 0, text.output
    assert "6 cells, 4 cached, 2 to compute" in text.output
    assert "to compute: 2 measured" in text.output
    assert snapshot(r) == before and not any(cwd.iterdir())


def test_committed_cells_count_as_done_and_give_their_wall_times(env):
    r = env
    assert invoke("run", "tinyplan", "--results-dir", r, "-q", "--no-render", "--epsilons", "1").exit_code == 0
    assert (r / "tinyplan" / "results-smoke.csv").exists()
    shutil.rmtree(r / "cache")  # a fresh clone: only the committed table is left
    p = json.loads(invoke("plan", "tinyplan", "--results-dir", r, "--json").stdout)
    assert (p["cached"], p["todo"]) == (4, 2)
    dp = next(g for g in p["groups"] if g["label"] == "DP forest")
    # the table has each cell's wall time (wall_seconds): not only its fit
    assert dp["method"] == "committed: median of 2 cells" and dp["kind"] == "measured"
    assert dp["seconds_per_cell"] > 0


def test_each_fit_is_calibrated_once_per_process_across_experiments(env, monkeypatch):
    from dpexp.experiments.catalog import resolve

    calls = []
    original = calibration.Calibrator._calibrate

    def counting(self, cell, params):
        calls.append((cell.experiment, cell.dataset.key, cell.algorithm))
        return original(self, cell, params)

    monkeypatch.setattr(calibration.Calibrator, "_calibrate", counting)
    shared = calibration.Calibrator()
    a, b = (plan_mod.make_plan(resolve(e).at_scale("smoke"), "smoke", env, calibrator=shared)
            for e in ("tinyplan", "tinyplan2"))
    assert a.estimated_seconds == b.estimated_seconds > 0
    assert sorted(calls) == [("tinyplan", "synthA", "breiman_rf"), ("tinyplan", "synthA", "fletcher_forest")]
    assert a.todo_by_kind() == {"measured": 0, "measured-other": 0, "extrapolated": 6, "unknown": 0,
                                 "unavailable": 0}


def test_a_dataset_not_available_is_left_out_and_not_loaded(env, monkeypatch):
    monkeypatch.setattr(calibration, "downloaded", lambda *args: False)
    monkeypatch.setattr(environment, "files_present", lambda *args: False)
    monkeypatch.delenv("DPEXP_DATA_MIRROR", raising=False)

    def no_loading(*args, **kwargs):
        raise AssertionError("plan loaded a dataset")

    monkeypatch.setattr(calibration, "load_dataset", no_loading)
    res = invoke("plan", "tinyplan", "--results-dir", env)
    assert res.exit_code == 0, res.output
    assert "cells not estimated" not in res.output and "to compute: 6 unavailable" in res.output
    assert ("left out: 6 cells of datasets not available here (synthA: neither downloaded nor "
            "in a data-mirror folder)") in res.output


def test_no_calibrate_times_nothing(env, monkeypatch):
    monkeypatch.setattr(calibration.Calibrator, "_calibrate", lambda *a: pytest.fail("calibrated"))
    p = json.loads(invoke("plan", "tinyplan", "--results-dir", env, "--no-calibrate", "--json").stdout)
    assert p["unestimated_cells"] == 6 and p["estimated_seconds"] == 0
    assert all(g["method"] == "unknown: not calibrated (--no-calibrate)" for g in p["groups"])


def test_a_failing_calibration_is_reported_not_raised(env, monkeypatch):
    def broken(self, cell, params):
        raise RuntimeError("boom")

    monkeypatch.setattr(calibration.Calibrator, "_calibrate", broken)
    p = json.loads(invoke("plan", "tinyplan", "--results-dir", env, "--json").stdout)
    assert all(g["method"] == "unknown: calibration failed (RuntimeError: boom)" for g in p["groups"])
    assert p["todo_by_kind"]["unknown"] == 6 and not math.isnan(p["estimated_seconds"])


def test_calibration_stops_at_its_time_budget(env):
    from dpexp.experiments.catalog import resolve

    spec = resolve("tinyplan").at_scale("smoke")
    p = plan_mod.make_plan(spec, "smoke", env, calibrator=calibration.Calibrator(budget_seconds=0))
    assert p.todo_by_kind() == {"measured": 0, "measured-other": 0, "extrapolated": 0, "unknown": 6,
                                 "unavailable": 0}
    assert {g.method for g in p.groups} == {"unknown: calibration time budget (0 s) spent "
                                            "(calibrations are stored: the next plan calibrates "
                                            "further groups)"}
