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
