"""Fault injection (issue 40) on a tiny experiment: each fault is done the way it happens,
and the run must lose nothing finished, serve nothing wrong, say what it is in one line
naming the thing, and give, once rerun, the reference table bit for bit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import rewrite_cached_cell, tiny_spec
from joblib.externals.loky.process_executor import TerminatedWorkerError
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments import backends
from dpexp.experiments.cache import cell_files

SPEC = tiny_spec("faulty", algorithms=[{"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 5}}],
                 epsilons=[1.0])


def _invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _run(results, *extra):
    return _invoke("run", "faulty", "--results-dir", results, "--no-render", "-q", *extra)


def _values(results) -> pd.DataFrame:
    table = pd.read_csv(results / "faulty" / "results-smoke.csv")
    cols = ["dataset", "label", "params", "epsilon", "fold", "repeat", "metric", "step"]
    table = table[~table["metric"].str.contains("second")]
    return table.sort_values(cols)[[*cols, "value"]].reset_index(drop=True)


@pytest.fixture()
def reference(tmp_path, monkeypatch):
    """The spec installed, and a clean run: (results dir, its values, its cell files)."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "faulty.yaml").write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    results = tmp_path / "results"
    res = _run(results)
    assert res.exit_code == 0, res.output
    return results, _values(results), cell_files(results, "faulty", "smoke")


def _rewrite(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _edit_value(data):
    data["rows"][0]["value"] = 0.123456


def _drop_row(data):
    del data["rows"][0]


@pytest.mark.parametrize("fault", [
    lambda p: _rewrite(p, _edit_value),            # a number edited, the JSON still valid
    lambda p: _rewrite(p, _drop_row),              # one metric row deleted
    lambda p: p.write_bytes(b"\xff\xfe\x00 not utf-8"),
    lambda p: p.write_text("[]"),
    lambda p: _rewrite(p, lambda d: d.update(rows=None)),
], ids=["edited-value", "row-deleted", "non-utf8", "empty-list", "rows-null"])
def test_a_corrupt_cached_cell_is_named_moved_aside_and_recomputed(reference, fault):
    results, values, files = reference
    fault(files[0])
    # read-only commands skip it with one line naming it, and do not crash (`list` counts
    # cells without reading their values: it only must not crash)
    for args in (["results", "faulty", "--results-dir", results],
                 ["plan", "faulty", "--results-dir", results, "--no-calibrate"],
                 ["list", "--results-dir", results]):
        res = _invoke(*args)
        assert res.exit_code == 0 and "Traceback" not in res.output, (args, res.output)
        assert args[0] == "list" or f"warning: cached cell {files[0]}" in res.output, (args, res.output)
    # the run moves it aside and takes the cell from the table (or, without it, recomputes)
    for table in (True, False):
        if not table:
            fault(files[0])
            (results / "faulty" / "results-smoke.csv").unlink()
        res = _run(results)
        assert res.exit_code == 0, res.output
        assert f"warning: cached cell {files[0]}" in res.output and "moved to" in res.output
        assert ("0 computed" if table else "1 computed") in res.output, res.output
        pd.testing.assert_frame_equal(_values(results), values)  # the reference, bit for bit
    moved = results / "cache" / "quarantine" / files[0].relative_to(results / "cache")
    assert moved.exists()
    pd.testing.assert_frame_equal(_values(results), values)  # the reference, bit for bit


def test_a_worker_that_dies_is_replaced_and_its_cells_run_again(reference, monkeypatch):
    results, values, files = reference
    for f in [*files[:2], results / "faulty" / "results-smoke.csv"]:
        f.unlink()
    real = backends.joblib.Parallel
    calls = []

    class DiesOnce:
        def __init__(self, *args, **kwargs):
            self.parallel = real(*args, **kwargs)

        def __call__(self, tasks):
            calls.append(1)
            if len(calls) == 1:
                raise TerminatedWorkerError("A worker process was terminated abruptly (SIGKILL)")
            return self.parallel(tasks)

    monkeypatch.setattr(backends.joblib, "Parallel", DiesOnce)
    res = _run(results)
    assert res.exit_code == 0, res.output
    assert "warning: a worker process died" in res.output and len(calls) == 2
    pd.testing.assert_frame_equal(_values(results), values)


def test_a_worker_that_keeps_dying_stops_the_run_with_the_resume_command(reference, monkeypatch):
    results, _, files = reference
    for f in (files[0], results / "faulty" / "results-smoke.csv"):
        f.unlink()

    def dies(*args, **kwargs):
        def call(tasks):
            raise TerminatedWorkerError("A worker process was terminated abruptly (SIGKILL)")
        return call

    monkeypatch.setattr(backends.joblib, "Parallel", dies)
    res = _run(results)
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "died 3 times" in res.output and "run the same command to resume" in res.output


@pytest.mark.parametrize(("change", "needle"), [
    ({"epsilons": [float("inf")]}, "epsilon"),
    ({"algorithms": [{"name": "breiman_rf", "label": "RF", "params": {"n_estimators": "ten"}}]},
     "n_estimators must be a positive integer, got 'ten'"),
    ({"algorithms": [{"name": "breiman_rf", "label": "RF", "params": {"n_estimators": -5}}]},
     "n_estimators must be a positive integer, got -5"),
    ({"algorithms": [{"name": "breiman_rf", "label": "RF", "grid": {"max_depth": [3, 0]}}]},
     "max_depth must be a positive integer, got 0"),
], ids=["epsilon-inf", "count-text", "count-negative", "depth-zero-in-grid"])
def test_a_bad_spec_value_is_one_line_before_any_work(tmp_path, monkeypatch, change, needle):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "faulty.yaml").write_text(yaml.safe_dump({**SPEC, **change}))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    res = _run(tmp_path / "results")
    assert res.exit_code != 0 and needle in res.output and "Traceback" not in res.output
    assert "faulty.yaml" in res.output
    assert not (tmp_path / "results" / "cache").exists()


def test_a_key_given_twice_is_an_error_not_the_last_one_wins(tmp_path, monkeypatch):
    specs = tmp_path / "specs"
    specs.mkdir()
    text = yaml.safe_dump(SPEC) + "epsilons: [2.0]\n"  # epsilons a second time
    (specs / "faulty.yaml").write_text(text)
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    res = _run(tmp_path / "results")
    assert res.exit_code != 0 and "'epsilons' is given twice" in res.output
    assert "faulty.yaml" in res.output


def test_a_huge_grid_asks_for_yes_before_expanding_it(tmp_path, monkeypatch):
    specs = tmp_path / "specs"
    specs.mkdir()
    huge = {**SPEC, "algorithms": [{"name": "breiman_rf", "label": "RF",
                                    "grid": {"max_depth": list(range(1, 101)),
                                             "n_estimators": list(range(1, 1001))}}]}
    (specs / "faulty.yaml").write_text(yaml.safe_dump(huge))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    started = time.perf_counter()
    for command in ("run", "plan"):
        res = _invoke(command, "faulty", "--results-dir", tmp_path / "results")
        assert res.exit_code != 0 and "200,000 cells" in res.output and "--yes" in res.output
    assert time.perf_counter() - started < 30  # counted, not expanded
    assert not (tmp_path / "results" / "cache").exists()


def test_sigterm_stops_like_ctrl_c_and_reaps_the_workers(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    slow = {**SPEC, "algorithms": [{"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 60},
                                    "grid": {"max_depth": [2, 3, 4, 5, 6, 7, 8, 9]}}],
            "cv": {"folds": 5}, "scales": {"smoke": {"max_rows": 6000}}}
    (specs / "faulty.yaml").write_text(yaml.safe_dump(slow))
    results = tmp_path / "results"
    env = {**os.environ, "DPEXP_EXPERIMENTS_DIR": str(specs)}
    cmd = [sys.executable, "-m", "dpexp.cli", "run", "faulty", "--results-dir", str(results),
           "--no-render", "-q", "--jobs", "2"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    cache = results / "cache" / "faulty" / "smoke" / "seed-0"
    deadline = time.time() + 120
    while time.time() < deadline and not (cache.exists() and len(list(cache.glob("*.json"))) >= 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "terminated: every finished cell is cached" in err and "Traceback" not in err
    left = ""
    for _ in range(100):  # the workers are stopped, not left running for minutes
        left = subprocess.run(["pgrep", "-a", "-s", str(proc.pid)], capture_output=True,
                              text=True).stdout.strip()
        if not left:
            break
        time.sleep(0.1)
    assert left == "", f"workers left running 10 s after: {left}"
    assert not list(cache.glob(".*.tmp"))


def test_two_runs_on_one_results_directory_compute_each_cell_once(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    slow = {**SPEC, "algorithms": [{"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 40},
                                    "grid": {"max_depth": [2, 3, 4, 5, 6, 7]}}],
            "cv": {"folds": 3}, "scales": {"smoke": {"max_rows": 4000}}}
    (specs / "faulty.yaml").write_text(yaml.safe_dump(slow))
    results = tmp_path / "results"
    env = {**os.environ, "DPEXP_EXPERIMENTS_DIR": str(specs)}
    cmd = [sys.executable, "-m", "dpexp.cli", "run", "faulty", "--results-dir", str(results),
           "--no-render", "-q"]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cache = results / "cache" / "faulty" / "smoke" / "seed-0"
    deadline = time.time() + 120
    while time.time() < deadline and not (cache.exists() and list(cache.glob("*.json"))):
        time.sleep(0.05)
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    out_first, _ = first.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert "another run is computing faulty" in second.stderr
    assert "18 computed" in out_first and " 0 computed, 18 from cache" in second.stdout
    assert len(pd.read_csv(results / "faulty" / "results-smoke.csv")
               .drop_duplicates(["params", "fold"])) == 18


def test_a_render_killed_while_writing_leaves_the_old_figure_whole(reference, tmp_path, monkeypatch):
    results, _, _ = reference
    figures = tmp_path / "figures"
    assert _invoke("render", "faulty", "--results-dir", results, "--figures-dir", figures).exit_code == 0
    png = next(figures.rglob("*.png"))
    before = png.read_bytes()
    # without its inputs sidecar the figure must be drawn again (a render whose inputs did
    # not change writes nothing, so nothing could be killed mid-write)
    png.with_name(png.name + ".inputs").unlink()
    from dpexp.experiments import cache

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the moment before the rename

    monkeypatch.setattr(cache.os, "replace", killed)
    res = _invoke("render", "faulty", "--results-dir", results, "--figures-dir", figures)
    assert res.exit_code == 130
    assert png.read_bytes() == before and len(before) > 5_000
    assert not [p for p in figures.rglob("*") if p.name.endswith(".tmp")]


def test_many_bad_cell_files_are_one_line_not_one_each(reference):
    """A cache written by an older dpexp (no checksums) must not flood `render`/`results`."""
    results, _, files = reference
    for f in files:
        f.write_text(json.dumps({"rows": []}))
    res = _invoke("results", "faulty", "--results-dir", results)
    assert res.exit_code == 0, res.output
    assert res.output.count("warning: cached cell") == 1 and f"and {len(files) - 1} more" in res.output


def _from_another_revision(value: float):
    def change(data):
        data["rows"][0]["value"] = value
        for row in data["rows"]:
            row["git_revision"] = "0123456789ab"
    return change


def test_a_cached_cell_that_differs_from_the_table_never_replaces_it_silently(reference):
    """A well-formed cell (valid checksum) with other numbers, computed by another revision:
    named in one line, the committed value stands in every output; recomputed with this
    code (--force), the cached numbers are the code's own and the table takes them."""
    results, values, files = reference
    rewrite_cached_cell(files[0], _from_another_revision(0.123456))
    for args in (["results", "faulty", "--results-dir", results],
                 ["run", "faulty", "--results-dir", results, "--no-render", "-q"]):
        res = _invoke(*args)
        assert res.exit_code == 0, res.output
        assert res.output.count("warning:") == 1, res.output
        assert "differ from the committed table" in res.output and "committed values stand" in res.output
        pd.testing.assert_frame_equal(_values(results), values)  # the table is unchanged
    res = _run(results, "--force")
    assert res.exit_code == 0 and "warning:" not in res.output, res.output
    pd.testing.assert_frame_equal(_values(results), values)  # this code computes the reference


def test_a_cell_of_this_revision_replaces_a_differing_committed_row(reference):
    """The other way round: the committed table edited (an older result), the cache holding
    this code's numbers -- the cache's numbers are this code's and stand."""
    results, values, _ = reference
    table = results / "faulty" / "results-smoke.csv"
    frame = pd.read_csv(table)
    frame.loc[0, "value"] = 0.5
    frame["git_revision"] = "0123456789ab"
    frame.to_csv(table, index=False)
    res = _run(results)
    assert res.exit_code == 0 and "warning:" not in res.output, res.output
    pd.testing.assert_frame_equal(_values(results), values)


def test_a_run_renders_under_the_run_lock(reference, tmp_path, monkeypatch):
    """Two runs with different --dataset: the figure written last must be drawn from every
    finished run's cells, so a run renders while holding the experiment's run lock (another
    run cannot be computing between its read of the cells and its write of the figure)."""
    import fcntl

    from dpexp.render import render as render_module

    results, _, _ = reference
    lock = results / "cache" / "faulty" / "smoke" / ".run.lock"
    held = []

    def render_experiment(*args, **kwargs):
        with open(lock, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle, fcntl.LOCK_UN)
                held.append(False)
            except BlockingIOError:
                held.append(True)
        return render_module.RenderReport(files=[], missing_cells=0, total_cells=0)

    monkeypatch.setattr(render_module, "render_experiment", render_experiment)
    res = _invoke("run", "faulty", "--results-dir", results, "--figures-dir", tmp_path / "f", "-q")
    assert res.exit_code == 0, res.output
    assert held == [True]
