"""Kill a run with SIGKILL midway: nothing finished is lost or recomputed on resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import yaml

SPEC = {
    "id": "resume-probe",
    "paper": "test",
    "artefact": "resume test",
    "kind": "table",
    "caption": "A slow grid to interrupt.",
    "datasets": ["synthA"],
    "algorithms": [{"name": "breiman_rf", "params": {"n_estimators": 60},
                    "grid": {"max_depth": [2, 3, 4, 5, 6, 7, 8, 9]}}],
    "cv": {"folds": 5, "repeats": 1},
    "metrics": ["accuracy"],
    "table": {"rows": "param:max_depth", "columns": "algorithm", "metric": "accuracy"},
    "scales": {"smoke": {"max_rows": 6000}},
}


def test_sigkill_then_resume(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "resume-probe.yaml").write_text(yaml.safe_dump(SPEC))
    results = tmp_path / "results"
    env = {**os.environ, "DPEXP_EXPERIMENTS_DIR": str(specs)}
    cmd = [sys.executable, "-m", "dpexp.cli", "run", "resume-probe", "--results-dir", str(results),
           "--no-render", "-q"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    cache = results / "cache" / "resume-probe" / "smoke" / "seed-0"
    deadline = time.time() + 120
    while time.time() < deadline:
        if cache.exists() and len(list(cache.glob("*.json"))) >= 5:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = {p.name: p.read_bytes() for p in cache.glob("*.json")}
    assert 5 <= len(finished) < 40, "the run must be interrupted midway"
    for blob in finished.values():  # every file on disk is a complete cell
        assert json.loads(blob)["rows"]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert f"{40 - len(finished)} computed, {len(finished)} from cache" in res.stdout
    for name, blob in finished.items():  # untouched: not recomputed, not lost
        assert (cache / name).read_bytes() == blob
    assert len(list(cache.glob("*.json"))) == 40
    assert not list(cache.glob(".*.tmp"))
