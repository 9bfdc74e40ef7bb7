"""The README's "Add your method in ten minutes", run as the README writes it, at smoke
scale (issue 44).

The commands are read from the README's section, so the test and the text cannot drift:

1. the template (``docs/examples/dp_stump_paper``) is copied and renamed ``my_method`` by
   the section's first ``bash`` block, run as written;
2. it is installed by the section's offline block (the package beside a ``.dist-info``
   with its ``dpexp.papers`` entry point, on ``PYTHONPATH``: what ``pip install -e`` leaves,
   without the network ``pip`` needs for the build backend);
3. the section's two ``dpexp leaderboard`` commands run on a small leaderboard spec (two
   classification sets, 3 folds: 6 paired blocks, enough for the Friedman test), given with
   ``--spec`` and temporary folders: the first ranks the board, the second computes
   ``my_method``'s cells only -- its row has real numbers, and every other entry's cell
   values are bit-identical to the first run's;
4. the section's ``dpexp report --scale smoke`` shows ``my_method``'s row, ranks and the
   CD diagram in ``REPORT-smoke.md`` and ``report-smoke.html``.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import dpexp

ROOT = Path(dpexp.__file__).resolve().parents[1]
SECTION = "## Add your method in ten minutes"
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


def readme_blocks() -> list[str]:
    """The ``bash`` blocks of the README's walk-through section, dedented."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    section = text[start:text.index("\n## ", start + len(SECTION))]
    blocks = re.findall(r"^( *)```bash\n(.*?)^\1```", section, flags=re.S | re.M)
    return ["\n".join(line[len(indent):] for line in body.splitlines())
            for indent, body in blocks]


def block_with(*words: str) -> str:
    return next(b for b in readme_blocks() if all(w in b for w in words))


def commands(block: str, prefix: str) -> list[list[str]]:
    """The commands of ``block`` starting with ``prefix``, comments dropped."""
    return [shlex.split(line, comments=True) for line in block.splitlines()
            if line.startswith(prefix)]


def _bash(cwd: Path, script: str) -> None:
    res = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, script + "\n" + res.stdout + res.stderr


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory) -> Path:
    """A folder where steps 1 and 2 of the README ran: ``my_method`` and ``site``."""
    cwd = tmp_path_factory.mktemp("newcomer")
    (cwd / "docs").mkdir()
    (cwd / "docs" / "examples").symlink_to(ROOT / "docs" / "examples")  # "from a clone"
    _bash(cwd, block_with("cp -r docs/examples/dp_stump_paper my_method"))
    _bash(cwd, block_with("dist-info", "entry_points.txt"))
    manifest = (cwd / "site" / "my_method" / "__init__.py").read_text()
    assert 'name="my_method"' in manifest and "dp_stump" not in manifest
    (cwd / "specs").mkdir()
    (cwd / "specs" / "leaderboard-walk.yaml").write_text(yaml.safe_dump(SPEC, sort_keys=False))
    return cwd


def _dpexp(cwd: Path, args: list[str], *extra: str) -> str:
    """A README ``dpexp`` command, with the installed plugin, the small spec's folder and
    temporary results and figures folders."""
    assert args[0] == "dpexp"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd / "site"), str(ROOT)]),
           "DPEXP_DATA_DIR": str(cwd / "data"), "DPEXP_EXPERIMENTS_DIR": str(cwd / "specs")}
    res = subprocess.run([sys.executable, "-m", "dpexp.cli", *args[1:], *extra,
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


def test_the_readme_walkthrough_gives_a_new_method_its_row_ranks_and_cd_diagram(newcomer):
    pytest.importorskip("autorank", reason="the leaderboard extra (autorank) is not installed")
    cwd, spec = newcomer, ("--spec", "leaderboard-walk")
    board, add = commands(block_with("dpexp leaderboard", "--add my_method"), "dpexp leaderboard")
    assert "--add" not in board and add[-2:] == ["--add", "my_method"]
    # the board without the new method
    first = _dpexp(cwd, board, *spec)
    assert "leaderboard-walk: 24 cells, 24 computed" in first
    baseline = _numbers(cwd / "results")
    ranks_csv = cwd / "results" / "leaderboard-walk" / "leaderboard-walk-ranks-smoke.csv"
    before = pd.read_csv(ranks_csv).set_index("entry")

    # the method joins: only its 2 datasets x 3 folds are computed
    added = _dpexp(cwd, add, *spec)
    assert "leaderboard-walk: 6 cells, 6 computed, 0 from cache" in added
    after = _numbers(cwd / "results")
    mine = after[after.label == "my_method"]
    assert len(mine) == 6 and (mine.epsilon_spent <= mine.epsilon).all()
    assert mine.value.between(0.0, 1.0).all() and mine.value.nunique() > 1
    others = after[after.label != "my_method"].reset_index(drop=True)
    pd.testing.assert_frame_equal(others, baseline, check_exact=True)
    ranks = pd.read_csv(ranks_csv).set_index("entry")
    assert set(ranks.index) == set(before.index) | {"my_method"}
    row = ranks.loc["my_method"]
    assert 1.0 <= row.mean_rank <= 5.0 and math.isfinite(row.mean_error)
    assert row.mean_error == pytest.approx(mine.value.mean())
    assert row.status.startswith("not DP on 2 of 2 datasets: domain observed")
    assert ranks["mean_rank"].sum() == pytest.approx(15.0)  # 5 entries: 1 + ... + 5
    pd.testing.assert_series_equal(ranks.loc[before.index, "mean_error"], before["mean_error"],
                                   check_exact=True)

    # the report: the method's row with its rank, the tests and the CD diagram
    [report_cmd] = commands(block_with("dpexp report"), "dpexp report")
    _dpexp(cwd, report_cmd)
    section = _section((cwd / "results" / "REPORT-smoke.md").read_text())
    assert "#### The leaderboard (smoke" in section
    line = next(x for x in section.splitlines() if x.startswith("| ") and "| my\\_method |" in x)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert float(cells[2]) == pytest.approx(row.mean_rank, abs=0.005)
    assert float(cells[3]) == pytest.approx(row.mean_error, rel=1e-3)
    assert re.search(r"\*\*Friedman p = [0-9.e-]+\*\*", section)
    image = re.search(r"!\[critical-difference diagram, classification, ε = 1\]\(([^)]+)\)", section)
    assert image, section
    png = (cwd / "results" / image[1]).resolve()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "The price of privacy per dataset" in section
    html = (cwd / "results" / "report-smoke.html").read_text()
    lb = html[html.index('id="leaderboard-walk"'):]
    assert "my_method" in lb
    assert re.search(r'<img src="data:image/png;base64,[^"]+" alt="critical-difference diagram', lb)
