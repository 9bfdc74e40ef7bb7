"""The README's example plugin joins an experiment it is not in, through the CLI (issue 44).

``docs/examples/dp_stump_paper`` is installed as pip leaves a package (the package beside a
``.dist-info`` with its ``dpexp.papers`` entry point, on ``PYTHONPATH``: no network, no
build step). ``dpexp run SPEC --algorithms dp_stump`` then computes the stump's cells only,
skips the regression dataset with one note, and leaves every other series' numbers as a
run without the plugin wrote them, bit for bit; a fresh run of a mixed list
(``--algorithms GBDT,dp_stump``) computes the same numbers for the spec's own series.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import install_example_plugin

import dpexp

ROOT = Path(dpexp.__file__).resolve().parents[1]
PACKAGE = ROOT / "docs" / "examples" / "dp_stump_paper" / "src" / "dp_stump_paper"
GBDT = "Gaussian BDT"
SPEC = {
    "id": "join-quick", "paper": "gaussian-bdt-peinemann-slides", "artefact": "toy",
    "kind": "figure", "caption": "a private series on a classification and a regression set",
    "datasets": ["synthA", "weather_temperature"],
    "algorithms": [{"name": "gaussian_bdt", "label": GBDT,
                    "params": {"n_trees": 3, "max_depth": 2}}],
    "epsilons": [1.0, 4.0], "cv": {"folds": 2},
    "metrics": {"classification": ["accuracy"], "regression": ["rmse"]},
    "plot": {"x": "epsilon", "y": "accuracy", "panels": "dataset"},
    "scales": {"smoke": {"max_rows": 300}},
}
#: The columns a cell's numbers are in (not its timings or provenance).
NUMBERS = ["dataset", "label", "params", "epsilon", "fold", "metric", "step", "value",
           "epsilon_spent", "private", "not_dp_reason"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example installed: its package and a dist-info declaring the entry point."""
    return install_example_plugin(tmp_path_factory.mktemp("site"), PACKAGE)


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("spec") / "join-quick.yaml"
    path.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    return path


def _cli(cwd: Path, *args: str, plugin: Path | None = None) -> subprocess.CompletedProcess:
    path = [str(plugin)] if plugin else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT)]),
           "DPEXP_DATA_DIR": str(cwd / "data")}
    res = subprocess.run([sys.executable, "-m", "dpexp.cli", *args], capture_output=True,
                         text=True, env=env, cwd=cwd, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    return res


def _numbers(results: Path) -> pd.DataFrame:
    """The rows of every metric (not the diagnostics, some of which are timings)."""
    frame = pd.read_csv(results / "join-quick" / "results-smoke.csv")
    frame = frame[(frame.metric_kind == "metric") | frame.metric.str.startswith("sigma_")]
    return frame[NUMBERS].sort_values(NUMBERS[:7]).reset_index(drop=True)


def test_the_plugin_joins_an_experiment_and_leaves_the_others_bit_identical(
        site, spec_file, tmp_path):
    before = tmp_path / "before"
    _cli(tmp_path, "run", str(spec_file), "--results-dir", str(before), "--no-render", "-q")
    baseline = _numbers(before)
    assert set(baseline.label) == {GBDT} and len(baseline)

    # plan counts the grid run computes: the stump on synthA only (2 epsilons x 2 folds)
    plan = _cli(tmp_path, "plan", str(spec_file), "--algorithms", "dp_stump", "--results-dir",
                str(before), "--no-calibrate", "--json", plugin=site)
    assert json.loads(plan.stdout)["cells"] == 4
    joined = _cli(tmp_path, "run", str(spec_file), "--algorithms", "dp_stump", "--results-dir",
                  str(before), "--figures-dir", str(tmp_path / "figures"), "-q", plugin=site)
    assert "join-quick (smoke, seed 0): 4 cells, 4 computed, 0 from cache" in joined.stdout
    notes = [line for line in joined.stderr.splitlines() if "dp_stump" in line]
    assert notes == ["note: dp_stump: skipped 1 regression dataset (weather_temperature): "
                     "it supports classification only"]
    after = _numbers(before)
    stump = after[after.label == "dp_stump"]
    assert set(stump.dataset) == {"synthA"} and set(stump.epsilon) == {1.0, 4.0}
    assert (stump.metric == "accuracy").any() and (stump.epsilon_spent <= stump.epsilon).all()
    others = after[after.label != "dp_stump"].reset_index(drop=True)
    pd.testing.assert_frame_equal(others, baseline, check_exact=True)
    # the rendered figure and table show the joined series beside the spec's own
    assert (tmp_path / "figures" / "join-quick" / "join-quick-smoke.png").exists()
    table = (before / "join-quick" / "join-quick-smoke.csv").read_text()
    assert "dp_stump" in table and GBDT in table

    # a mixed list on an empty results directory computes the same numbers for the spec's
    # own series: its cells do not depend on who joins them
    fresh = tmp_path / "fresh"
    _cli(tmp_path, "run", str(spec_file), "--algorithms", f"{GBDT},dp_stump", "--results-dir",
         str(fresh), "--no-render", "-q", plugin=site)
    mixed = _numbers(fresh)
    pd.testing.assert_frame_equal(mixed[mixed.label == GBDT].reset_index(drop=True), baseline,
                                  check_exact=True)
    pd.testing.assert_frame_equal(mixed[mixed.label == "dp_stump"].reset_index(drop=True),
                                  stump.reset_index(drop=True), check_exact=True)


def test_the_installed_plugin_is_audited_end_to_end(site, tmp_path):
    """Installed as the README says, the example leaves no release path of its own
    unaudited (the coverage test of `make test` passes with it) and `dpexp audit` flags its
    broken twin."""
    code = ("from dpexp.audit.catalogue import audit_targets; "
            "from dpexp.audit.paths import uncovered_paths; "
            "from dpexp.registry import all_algorithms; "
            "private = [n for n, i in all_algorithms().items() if i.private and i.not_dp is None]; "
            "assert 'dp_stump' in private; "
            "print(uncovered_paths(private, audit_targets().values()))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr
    res = subprocess.run([sys.executable, "-m", "dpexp.cli", "audit",
                          "dp_stump_defaults_noise_from_random_state", "--quick"], env=env,
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    # a target whose bound exceeds its claim exits 1, even when that is what is expected
    assert "known unprivate, flagged as expected" in res.stdout, res.stdout + res.stderr
