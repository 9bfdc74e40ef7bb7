"""The dask.distributed backend: a real LocalCluster (2 worker processes on 127.0.0.1)."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpexp.cli import app

pytest.importorskip("dask.distributed")

COLS = ["dataset", "label", "epsilon", "fold", "repeat", "metric", "value"]


def _table(results_dir):
    t = pd.read_csv(results_dir / "quickstart" / "results-smoke.csv")[COLS]
    return t.sort_values(COLS[:6]).reset_index(drop=True)


def test_dask_backend_matches_loky(tmp_path):
    runner = CliRunner()
    a, b = tmp_path / "loky", tmp_path / "dask"
    res = runner.invoke(app, ["run", "quickstart", "--results-dir", str(a), "--no-render", "--jobs", "2"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["run", "quickstart", "--results-dir", str(b), "--no-render",
                              "--backend", "dask", "--jobs", "2"])
    assert res.exit_code == 0, res.output
    pd.testing.assert_frame_equal(_table(a), _table(b))


def test_unknown_backend_is_a_clear_error(tmp_path):
    res = CliRunner().invoke(app, ["run", "quickstart", "--results-dir", str(tmp_path), "--backend", "spark"])
    assert res.exit_code == 2 and "Unknown backend 'spark'" in res.output


def test_cluster_info_reports_workers():
    import json

    res = CliRunner().invoke(app, ["cluster", "info", "--workers", "2", "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    assert info["workers"] == 2 and info["threads"] == 2
    assert info["scheduler"].startswith("tcp://127.0.0.1:")


def test_unreachable_scheduler_is_a_clear_error():
    res = CliRunner().invoke(app, ["cluster", "info", "--scheduler", "tcp://127.0.0.1:1"])
    assert res.exit_code == 2 and "Cannot reach the dask scheduler" in res.output
