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


def test_a_cells_own_joblib_calls_stay_in_its_worker():
    """Issue 43: through joblib's dask bridge a cell's ``Parallel(n_jobs=1)`` (scikit-learn's
    forests build their trees with one) became tasks on the cluster, its data pickled."""
    from dpexp.experiments.backends import dask_client, dask_map_unordered

    def cell(i: int, offset: int) -> tuple[int, list[int]]:
        import os

        import joblib

        inner = joblib.Parallel(n_jobs=1)(joblib.delayed(os.getpid)() for _ in range(4))
        return os.getpid(), [p + offset for p in inner]

    with dask_client(None, 2, single_threaded=True) as client:
        out = list(dask_map_unordered(client, cell, range(6), 0))
        prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    # the cells and their scattered argument; before: also batch_of_getpid_..._calls tasks
    assert prefixes == ["in_worker", "int"]
    assert len(out) == 6 and all(inner == [pid] * 4 for pid, inner in out)


def test_a_cell_error_reaches_the_caller_and_no_cell_keeps_running():
    from dpexp.errors import DpexpError
    from dpexp.experiments.backends import dask_client, dask_map_unordered

    def cell(i: int) -> int:
        import time

        from dpexp.errors import DpexpError

        if i == 0:
            raise DpexpError("cell 0 failed")
        time.sleep(0.2)
        return i

    with dask_client(None, 2, single_threaded=True) as client:
        with pytest.raises(DpexpError, match="cell 0 failed"):
            list(dask_map_unordered(client, cell, range(8)))
        left = client.run_on_scheduler(
            lambda dask_scheduler: sum(ts.state == "processing" for ts in dask_scheduler.tasks.values()))
    assert left == 0
