"""The report reads top-down (issue 42): verdicts with a totals row per paper and overall,
then each artefact with its caveats collapsed under a one-line summary (no global wall of
caveats); its environment names a revision that regenerating the report does not dirty,
and no absolute path."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dpexp.paths import project_root
from dpexp.render.provenance import report_revision, shown_path
from dpexp.render.report import write_report

COMMITTED = ("fletcher-fig11", "xgbdp-fig2")


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = project_root() / "results"
    if not all((root / e / "results-paper.csv.gz").exists() for e in COMMITTED):
        pytest.skip("the committed tables of " + ", ".join(COMMITTED) + " are not in this checkout")
    tmp = tmp_path_factory.mktemp("report")
    r, f = tmp / "results", tmp / "figures"
    for exp in COMMITTED:
        (r / exp).mkdir(parents=True)
        shutil.copy(root / exp / "results-paper.csv.gz", r / exp)
    md, html = write_report(r, f)
    return md.read_text(), html.read_text(), tmp


def test_verdict_table_has_totals_per_paper_and_overall(written):
    md, html, _ = written
    table = md[md.index("## Verdicts"):md.index("\n## ", md.index("## Verdicts") + 3)]
    totals = [line for line in table.splitlines() if line.startswith("| **Total, ")]
    papers = [line for line in table.splitlines() if line.startswith("| **") and "Total" not in line]
    assert len(totals) == len(papers) + 1 and totals[-1].startswith("| **Total, all papers**")
    assert html.count('<tr class="total">') == len(totals)


def test_caveats_are_collapsed_per_artefact(written):
    md, html, _ = written
    assert "Not-DP results in this report" not in md  # the old global box
    section = md[md.index('<a id="fletcher-fig11">'):]
    summary = section[section.index("<details><summary>") + 18:section.index("</summary>")]
    assert " not DP: " in summary and summary.endswith(" — details")
    assert section.index("<details>") < section.index("![fletcher-fig11]")  # before the figure
    assert '<details class="caveats"><summary>' in html and "<details open" not in html


def test_figure_caption_under_the_figure(written):
    md, _, _ = written
    section = md[md.index('<a id="fletcher-fig11">'):]
    after = section[section.index("![fletcher-fig11]"):].splitlines()
    assert after[2].startswith("*Feature domain:")  # the caption line right under the image


def test_environment_has_no_absolute_path(written):
    md, _, tmp = written
    env = md[md.index("## Appendix: environment"):]
    assert str(tmp) not in env and "/work/" not in env and "/home/" not in env


def test_revision_is_not_dirtied_by_the_report_outputs(monkeypatch):
    status = {"out": ""}

    def fake(cmd, **_kw):
        out = "0123456789ab\n" if "rev-parse" in cmd else status["out"]
        return subprocess.CompletedProcess(cmd, 0, out, "")

    monkeypatch.setattr(subprocess, "run", fake)
    status["out"] = " M results/REPORT.md\n M figures/x/x.png\n M results/x/results-paper.csv.gz\n"
    assert report_revision() == "0123456789ab"
    status["out"] += " M dpexp/render/report.py\n"
    assert report_revision() == "0123456789ab-dirty"


def test_shown_path_is_relative_or_a_name(tmp_path):
    assert shown_path(project_root() / "results") == "results"
    assert shown_path(tmp_path / "elsewhere") == "elsewhere"
    assert not Path(shown_path(tmp_path)).is_absolute()
