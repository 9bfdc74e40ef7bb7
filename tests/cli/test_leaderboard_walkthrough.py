"""The README's "Add your method in ten minutes" at smoke scale (issue 44).

The example plugin (``docs/examples/dp_stump_paper``, the README's template) is installed as
pip leaves a package -- the package beside a ``.dist-info`` with its ``dpexp.papers`` entry
point, on ``PYTHONPATH`` (no network, no build step). On a small leaderboard spec (two
classification sets, 3 folds: 6 paired blocks, enough for the Friedman test):

1. ``dpexp leaderboard`` without the plugin ranks the entries (the committed/cached board);
2. ``dpexp leaderboard --add dp_stump`` computes the stump's cells only: its row has real
   numbers and every other entry's cell values are bit-identical to step 1's;
3. ``dpexp report --scale smoke`` shows the stump's row, ranks and the CD diagram in
   ``REPORT-smoke.md`` and ``report-smoke.html``.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import dpexp

ROOT = Path(dpexp.__file__).resolve().parents[1]
PACKAGE = ROOT / "docs" / "examples" / "dp_stump_paper" / "src" / "dp_stump_paper"
SPEC = {
    "id": "leaderboard-walk", "paper": "leaderboard", "artefact": "Leaderboard (walk-through)",
    "kind": "figure", "caption": "A small leaderboard a plugin joins.",
    "datasets": ["synthA", "synthB"],
    "algorithms": [
        {"name": "fletcher_forest", "label": "Fletcher-Islam forest", "params": {"n_trees": 5}},
        {"name": "gaussian_bdt", "label": "Gaussian BDT",
         "params": {"n_trees": 3, "max_depth": 2, "delta": 1.0e-6}},
        {"name": "hgb_default", "label": "HistGradientBoosting (defaults)"},
        {"name": "breiman_rf", "label": "RandomForest (defaults)", "params": {"n_estimators": 10}},
    ],
    "epsilons": [1.0], "cv": {"scheme": "kfold", "folds": 3},
    "metrics": {"classification": ["error"]},
    "plot": {"x": "epsilon", "y": "error", "panels": "dataset"},
    "scales": {"smoke": {"max_rows": 400}},
}
#: The columns a cell's numbers are in (not its timings or provenance).
NUMBERS = ["dataset", "label", "params", "epsilon", "fold", "metric", "step", "value",
           "epsilon_spent", "private", "not_dp_reason"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The template installed: its package and a dist-info declaring the entry point."""
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(PACKAGE, site / "dp_stump_paper")
    info = site / "dp_stump_paper-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dp-stump-paper\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[dpexp.papers]\ndp_stump = dp_stump_paper\n")
    return site


@pytest.fixture(scope="module")
def specs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("specs")
    (folder / "leaderboard-walk.yaml").write_text(yaml.safe_dump(SPEC, sort_keys=False))
    return folder


def _cli(cwd: Path, specs: Path, *args: str, plugin: Path | None = None) -> str:
    path = [str(plugin)] if plugin else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT)]),
           "DPEXP_DATA_DIR": str(cwd / "data"), "DPEXP_EXPERIMENTS_DIR": str(specs)}
    res = subprocess.run([sys.executable, "-m", "dpexp.cli", *args,
                          "--results-dir", str(cwd / "results"),
                          "--figures-dir", str(cwd / "figures")],
                         capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def _numbers(results: Path) -> pd.DataFrame:
    frame = pd.read_csv(results / "leaderboard-walk" / "results-smoke.csv")
    frame = frame[frame.metric_kind == "metric"]
    return frame[NUMBERS].sort_values(NUMBERS[:7]).reset_index(drop=True)


def _section(report: str) -> str:
    """The leaderboard-walk section of REPORT-smoke.md."""
    start = report.index('<a id="leaderboard-walk"></a>')
    end = report.find('<a id="', start + 1)
    return report[start:end if end > 0 else len(report)]


def test_a_plugin_gets_its_leaderboard_row_ranks_and_cd_diagram(site, specs, tmp_path):
    pytest.importorskip("autorank", reason="the leaderboard extra (autorank) is not installed")
    # 1. the board without the plugin
    first = _cli(tmp_path, specs, "leaderboard", "--spec", "leaderboard-walk", "--scale", "smoke",
                 "--quiet", "--no-render")
    assert "leaderboard-walk classification: 24 cells, 24 computed" in first
    baseline = _numbers(tmp_path / "results")
    ranks_csv = tmp_path / "results" / "leaderboard-walk" / "leaderboard-walk-ranks-smoke.csv"
    before = pd.read_csv(ranks_csv).set_index("entry")

    # 2. the method joins: only its 2 datasets x 3 folds are computed
    added = _cli(tmp_path, specs, "leaderboard", "--spec", "leaderboard-walk", "--scale", "smoke",
                 "--add", "dp_stump", "--quiet", plugin=site)
    assert "leaderboard-walk classification: 6 cells, 6 computed, 0 from cache" in added
    after = _numbers(tmp_path / "results")
    stump = after[after.label == "dp_stump"]
    assert len(stump) == 6 and (stump.epsilon_spent <= stump.epsilon).all()
    assert stump.value.between(0.0, 1.0).all() and stump.value.nunique() > 1
    others = after[after.label != "dp_stump"].reset_index(drop=True)
    pd.testing.assert_frame_equal(others, baseline, check_exact=True)
    ranks = pd.read_csv(ranks_csv).set_index("entry")
    assert set(ranks.index) == set(before.index) | {"dp_stump"}
    row = ranks.loc["dp_stump"]
    assert 1.0 <= row.mean_rank <= 5.0 and math.isfinite(row.mean_error)
    assert row.mean_error == pytest.approx(stump.value.mean())
    assert row.status.startswith("not DP on 2 of 2 datasets: domain observed")
    assert ranks["mean_rank"].sum() == pytest.approx(15.0)  # 5 entries: 1 + ... + 5
    pd.testing.assert_series_equal(ranks.loc[before.index, "mean_error"], before["mean_error"],
                                   check_exact=True)

    # 3. the report: the stump's row with its rank, the tests and the CD diagram
    _cli(tmp_path, specs, "report", "--scale", "smoke", plugin=site)
    report = (tmp_path / "results" / "REPORT-smoke.md").read_text()
    section = _section(report)
    assert "#### The leaderboard (smoke" in section
    line = next(x for x in section.splitlines() if x.startswith("| ") and "| dp\\_stump |" in x)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert float(cells[2]) == pytest.approx(row.mean_rank, abs=0.005)
    assert float(cells[3]) == pytest.approx(row.mean_error, rel=1e-3)
    assert re.search(r"\*\*Friedman p = [0-9.e-]+\*\*", section)
    image = re.search(r"!\[critical-difference diagram, classification, ε = 1\]\(([^)]+)\)", section)
    assert image, section
    png = (tmp_path / "results" / image[1]).resolve()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "The price of privacy per dataset" in section
    html = (tmp_path / "results" / "report-smoke.html").read_text()
    lb = html[html.index('id="leaderboard-walk"'):]
    assert "dp_stump" in lb
    assert re.search(r'<img src="data:image/png;base64,[^"]+" alt="critical-difference diagram', lb)
