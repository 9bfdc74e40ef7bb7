"""End-to-end CLI runs (typer's CliRunner) at smoke scale, bad input, and exports."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpexp.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture()
def dirs(tmp_path):
    return tmp_path / "results", tmp_path / "figures"


def run_quickstart(dirs, *extra):
    r, f = dirs
    return invoke("run", "quickstart", "--scale", "smoke", "--results-dir", r, "--figures-dir", f, *extra)


def test_run_produces_real_numbers_and_figures(dirs):
    res = run_quickstart(dirs)
    assert res.exit_code == 0, res.output
    r, f = dirs
    table = pd.read_csv(r / "quickstart" / "results-smoke.csv")
    acc = table[table.metric == "accuracy"]
    # 3 folds x (4 epsilons for the DP forest + 1 run of the non-private forest)
    assert len(acc) == 15 and acc["value"].between(0.5, 1.0).all()
    assert table["git_revision"].notna().all() and (table["n_train"] > 0).all()
    private = table[table.algorithm == "fletcher_forest"]
    assert (private["epsilon_spent"] <= private["epsilon"] * (1 + 1e-9)).all()
    assert (private["epsilon_spent"] > 0).all()
    assert set(private["epsilon"]) == {0.1, 0.3, 1.0, 3.0}
    png = f / "quickstart" / "quickstart-smoke.png"
    assert png.exists() and png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (r / "quickstart" / "quickstart-smoke.md").read_text()
    assert "±" in md and "0." in md
    # second run: everything from cache
    again = run_quickstart(dirs)
    assert again.exit_code == 0 and "0 computed, 15 from cache" in again.output


def test_results_identical_for_any_jobs(tmp_path):
    a = (tmp_path / "a", tmp_path / "fa")
    b = (tmp_path / "b", tmp_path / "fb")
    assert run_quickstart(a, "--jobs", "1", "--no-render").exit_code == 0
    assert run_quickstart(b, "--jobs", "2", "--no-render").exit_code == 0
    cols = ["dataset", "label", "epsilon", "fold", "metric", "value"]
    ta = pd.read_csv(a[0] / "quickstart" / "results-smoke.csv")[cols].sort_values(cols[:5]).reset_index(drop=True)
    tb = pd.read_csv(b[0] / "quickstart" / "results-smoke.csv")[cols].sort_values(cols[:5]).reset_index(drop=True)
    pd.testing.assert_frame_equal(ta, tb)


def test_results_export_json_and_ledger(dirs):
    res = run_quickstart(dirs, "--no-render", "--ledger", "--epsilons", "1")
    assert res.exit_code == 0, res.output
    ledgers = json.loads((dirs[0] / "quickstart" / "ledger-smoke-seed0.json").read_text())
    assert ledgers and all(e["ledger"] for e in ledgers)
    total = sum(x["epsilon"] for x in ledgers[0]["ledger"])
    assert total >= 1.0  # parallel composition over trees: the sum of entries exceeds the spend
    res = invoke("results", "quickstart", "--format", "json", "--results-dir", dirs[0])
    rows = json.loads(res.stdout)
    assert {"experiment", "epsilon_spent", "metric", "value", "seed"} <= set(rows[0])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "quikstart"], "Did you mean 'quickstart'"),
        (["run", "quickstart", "--dataset", "adlut"], "Did you mean 'adult'"),
        (["run", "quickstart", "--epsilons", "1,-2"], "epsilon must be a finite number > 0"),
        (["run", "quickstart", "--epsilons", "nan"], "epsilon must be a finite number > 0"),
        (["run", "quickstart", "--epsilons", "0"], "epsilon must be a finite number > 0"),
        (["run", "quickstart", "--algorithms", "dpbost"], "Unknown algorithm"),
        (["run", "quickstart", "--scale", "huge"], "Unknown scale"),
        (["show", "fgi2"], "Unknown experiment"),
        (["datasets", "info", "gss", "--no-load"], None),
        (["datasets", "info", "gss", "--load"], "cannot be downloaded publicly"),
    ],
)
def test_bad_input_gives_clear_error_without_traceback(args, needle, tmp_path):
    res = invoke(*args, *(["--results-dir", tmp_path] if args[0] == "run" else []))
    if needle is None:
        assert res.exit_code == 0, res.output
        return
    assert res.exit_code != 0
    assert needle in res.output
    assert "Traceback" not in res.output


def test_bad_input_leaves_cache_intact(dirs):
    assert run_quickstart(dirs, "--no-render").exit_code == 0
    before = sorted(p.read_bytes() for p in (dirs[0] / "cache").rglob("*.json"))
    bad = run_quickstart(dirs, "--epsilons", "-1")
    assert bad.exit_code != 0
    after = sorted(p.read_bytes() for p in (dirs[0] / "cache").rglob("*.json"))
    assert before == after


def test_label_the_algorithm_cannot_use(tmp_path):
    """A classification-only algorithm on regression datasets only: nothing left to run,
    a clear error naming what was skipped (issue 44: the grid skips such pairs)."""
    res = invoke("run", "quickstart", "--dataset", "abalone", "--algorithms", "fletcher_forest",
                 "--results-dir", tmp_path)
    assert res.exit_code == 2 and "no cell left to compute" in res.output
    assert "skipped 1 regression dataset (abalone): it supports classification only" in res.output
    assert "Traceback" not in res.output


def test_list_show_and_datasets_commands():
    res = invoke("list", "--json")
    assert res.exit_code == 0
    ids = {r["id"] for r in json.loads(res.stdout)}
    assert "quickstart" in ids
    assert invoke("show", "quickstart").exit_code == 0
    ds = json.loads(invoke("datasets", "list", "--json").stdout)
    assert any(d["name"] == "adult" and d["rows"] == 32561 for d in ds)
    info = invoke("datasets", "info", "abalone", "--json", "--load")
    assert info.exit_code == 0, info.output
    data = json.loads(info.stdout)
    assert data["loaded"]["rows"] == 4177 and data["files"][0]["status"] == "ok"
    dl = invoke("datasets", "download", "nursery")
    assert dl.exit_code == 0 and "sha256 ok" in dl.output
    assert invoke("validate").exit_code == 0
    assert invoke("algorithms", "--json").exit_code == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "quickstart", "--jobs", "0"], "must be >= 1 or -1, got 0"),
        (["run", "quickstart", "--seed", "-1"], "Invalid value for '--seed'"),
        (["run", "quickstart", "--backend", "mpi"], "Unknown backend 'mpi'; use one of loky, threading, dask"),
        (["plan", "quickstart", "--jobs", "0"], "Invalid value for '--jobs'"),
        (["results", "quickstart", "--format", "xml"], "Unknown format 'xml'; use one of csv, json"),
        (["report", "--scale", "big"], "Unknown scale 'big'"),
        (["render", "quickstart", "--seed", "-2"], "Invalid value for '--seed'"),
        (["run", "--no-such-option"], "No such option: --no-such-option"),
        (["no-such-command"], "No such command 'no-such-command'"),
    ],
)
def test_typer_validation_errors_are_one_line(args, needle, tmp_path):
    """Values typer checks itself fail as one ``error:`` line (exit 2), like library errors,
    before anything runs or is written."""
    res = invoke(*args, *(["--results-dir", tmp_path / "r"] if args[0] in ("run", "plan", "results", "report") else []))
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], res.output
    assert not (tmp_path / "r").exists()


def test_no_arguments_prints_the_help():
    res = invoke()
    assert res.exit_code == 2 and "Usage:" in res.output and "error" not in res.output
    sub = invoke("datasets")
    assert sub.exit_code == 2 and "download" in sub.output and "error" not in sub.output


def test_python_dash_m_runs_the_same_app():
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "dpexp.cli", "--version"], capture_output=True, text=True,
                         timeout=300)
    import dpexp

    assert res.returncode == 0 and res.stdout.strip() == f"dpexp {dpexp.__version__}"
