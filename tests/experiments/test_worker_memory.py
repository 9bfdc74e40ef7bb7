"""The worker count a plan recommends from the cores and the measured per-worker peak."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.errors import DpexpError
from dpexp.experiments.catalog import resolve
from dpexp.experiments.worker_memory import (
    WorkerPeak,
    available_memory_gib,
    read_worker_peaks,
    recommended_workers,
    record_worker_peaks,
    worker_advice,
)


@pytest.mark.parametrize(("cores", "available", "peak", "expected"), [
    (2, 16.0, 3.0, 2),     # the cores bind
    (8, 16.0, 3.0, 5),     # memory binds: floor(16 / 3)
    (4, 2.0, 3.0, 1),      # less than one peak: still one worker
    (4, 16.0, None, 4),    # nothing measured: the cores
])
def test_recommended_workers_is_the_smaller_of_cores_and_memory(cores, available, peak, expected):
    assert recommended_workers(cores, available, peak) == expected


def test_a_non_positive_peak_is_a_clear_error():
    with pytest.raises(DpexpError, match="peak memory must be > 0"):
        recommended_workers(2, 8.0, 0.0)


def test_a_peak_scales_with_the_rows_above_the_base():
    p = WorkerPeak("synthetic_cls", "np_gbdt", rows=200_000, base_gib=0.5, peak_gib=1.5)
    assert p.at_rows(1_000_000) == pytest.approx(0.5 + 1.0 * 5)
    assert p.at_rows(200_000) == pytest.approx(1.5)


def test_available_memory_is_positive():
    assert available_memory_gib() > 0


def test_peaks_are_recorded_replacing_the_same_measurement(tmp_path):
    path = tmp_path / "peaks.json"
    assert read_worker_peaks(path) == []
    a = WorkerPeak("synthetic_cls", "np_gbdt", 200_000, 0.4, 1.0)
    b = WorkerPeak("synthetic_cls", "dpboost", 200_000, 0.4, 1.2)
    record_worker_peaks([a, b], path)
    newer = WorkerPeak("synthetic_cls", "np_gbdt", 200_000, 0.4, 1.1)
    record_worker_peaks([newer], path)
    assert sorted(read_worker_peaks(path), key=lambda p: p.algorithm) == [b, newer]
    path.write_text("{not json")
    with pytest.raises(DpexpError, match="not a list of worker peaks"):
        read_worker_peaks(path)


def test_the_advice_takes_the_largest_peak_of_the_planned_pairs_at_their_rows():
    spec = resolve("quickstart").at_scale("smoke")  # synthA, 6,000 rows at smoke scale
    peaks = [WorkerPeak("synthA", "breiman_rf", 3_000, 0.5, 2.5),      # 4.5 GiB at 6,000 rows
             WorkerPeak("synthA", "fletcher_forest", 6_000, 0.5, 1.0),
             WorkerPeak("synthA", "np_gbdt", 6_000, 0.5, 50.0)]        # not in the spec
    advice = worker_advice([spec], "smoke", peaks=peaks, cores=4, available_gib=10.0)
    assert advice.peak == peaks[0] and advice.peak_rows == 6_000
    assert advice.peak_gib == pytest.approx(4.5) and advice.workers == 2
    assert "2 recommended" in advice.text() and "measured at 3,000" in advice.text()
    none = worker_advice([spec], "smoke", peaks=peaks[2:], cores=4, available_gib=10.0)
    assert none.workers == 4 and none.peak is None and "no measured" in none.text()


def test_plan_shows_the_recommended_workers(tmp_path, monkeypatch):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path / "data"))
    record_worker_peaks([WorkerPeak("synthA", "breiman_rf", 6_000, 0.1, 1e6)])  # 1 PB: one worker
    args = ["plan", "quickstart", "--no-calibrate", "--jobs", "2", "--results-dir", str(tmp_path / "r")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "workers: 1 recommended" in res.output and "may run out of memory" in res.output
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["worker_advice"]["workers"] == 1
