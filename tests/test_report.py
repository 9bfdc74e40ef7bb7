"""`dpexp report`: renders from the cache alone; paper values beside ours; claims checked
at paper scale only; not-DP rows in a caveat box; spec text shown literally."""

from __future__ import annotations

import math
import re

import pandas as pd
from test_render_partial import cache_cells
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments.spec import resolve
from dpexp.render.claims import NOT_EVALUATED_SMOKE, check_claim, check_claims
from dpexp.render.render import render_experiment, render_frame
from dpexp.render.report import write_report


def test_report_from_cache(tmp_path):
    runner = CliRunner()
    r, f = tmp_path / "results", tmp_path / "figures"
    res = runner.invoke(app, ["report", "--results-dir", str(r), "--figures-dir", str(f)])
    assert res.exit_code == 0, res.output
    text = (r / "REPORT.md").read_text()
    assert "| quickstart |" in text and "not run" in text  # nothing cached yet: says so
    assert runner.invoke(app, ["run", "quickstart", "--results-dir", str(r), "--figures-dir", str(f),
                               "--no-render"]).exit_code == 0
    res = runner.invoke(app, ["report", "--results-dir", str(r), "--figures-dir", str(f)])
    assert res.exit_code == 0, res.output
    text = (r / "REPORT.md").read_text()
    # A smoke run is a pipeline check: its claim is "not evaluated (smoke)", never "1/1"
    # passed (this line used to read "... | 15/15 | — | 1/1 |", issue 17 item 4).
    line = next(x for x in text.splitlines() if x.startswith("| quickstart |"))
    assert line.startswith("| quickstart | fletcher-islam-2017 | Quick start | smoke | ")
    assert "| not evaluated (smoke) |" in line and "1/1" not in line
    html = (r / "report.html").read_text()
    assert "data:image/png;base64," in html  # self-contained
    assert "git revision" in text and "cores" in text


def _agg(rows):
    return pd.DataFrame(rows, columns=["dataset", "series", "epsilon", "metric", "step", "mean"])


def test_claims_are_checked_both_ways():
    nan = math.nan
    agg = _agg([
        ("adult", "DPBoost", 1.0, "error", nan, 0.20),
        ("adult", "PARA", 1.0, "error", nan, 0.25),
        ("adult", "SEQ", 1.0, "error", nan, 0.24),
        ("abalone", "DPBoost", 1.0, "rmse", nan, 3.0),
        ("abalone", "PARA", 1.0, "rmse", nan, 2.0),
    ])
    tasks = {"adult": "classification", "abalone": "regression"}
    claim = {"text": "DPBoost beats PARA and SEQ", "better": "DPBoost", "than": ["PARA", "SEQ"],
             "metric": {"classification": "error"}, "epsilon": 1}
    assert check_claim(claim, agg, tasks).status == "pass"
    claim_reg = {"text": "DPBoost beats PARA (regression)", "better": "DPBoost", "than": ["PARA"],
                 "metric": "rmse"}
    assert check_claim(claim_reg, agg, tasks).status == "fail"
    assert check_claim("free text", agg, tasks).status == "not checked"
    assert check_claim({**claim, "better": "NP"}, agg, tasks).status == "no data"


def test_wilcoxon_pairs_by_fold_repeat_and_epsilon():
    import numpy as np

    from dpexp.render.significance import wilcoxon_table

    rng = np.random.default_rng(0)
    rows = [{"dataset": "d", "label": lab, "metric": "accuracy", "epsilon": eps, "step": math.nan,
             "fold": f, "repeat": r, "value": base + rng.normal(0, 0.01)}
            for eps in (0.1, 1.0) for f in range(10) for r in range(10)
            for lab, base in (("Ours", 0.9), ("JPW", 0.7))]
    out = wilcoxon_table(pd.DataFrame(rows), "Ours")
    assert len(out) == 2 and set(out["epsilon"]) == {0.1, 1.0}
    assert (out["comparator"] == "JPW").all() and (out["n_pairs"] == 100).all()
    assert (out["p_value"] < 1e-10).all()
    same = [dict(r, value=0.5) for r in rows]
    assert (wilcoxon_table(pd.DataFrame(same), "Ours")["p_value"] == 1.0).all()


def test_trend_claims():
    from dpexp.render.claims import check_trend

    rows = []
    for n, acc, mae in ((1, 0.70, 3.0), (4, 0.74, 2.5), (8, 0.78, 2.0)):
        # the axis is read from the p_ column; params is the cell's identity only
        rows.append(("adult", "InPrivate", "InPrivate", f"cell {n}", 1.0, "accuracy", math.nan, acc, n))
        rows.append(("abalone", "InPrivate", "InPrivate", f"cell {n}", 1.0, "mae", math.nan, mae, n))
    agg = pd.DataFrame(rows, columns=["dataset", "series", "label", "params", "epsilon", "metric", "step",
                                      "mean", "p_n_participants"])
    tasks = {"adult": "classification", "abalone": "regression"}
    claim = {"text": "t", "series": "InPrivate", "metric": {"classification": "accuracy", "regression": "mae"},
             "trend": {"classification": "increasing", "regression": "decreasing"},
             "over": "param:n_participants", "mode": "each"}
    assert check_trend(claim, agg, tasks).status == "pass"
    flipped = {**claim, "trend": "decreasing"}
    assert check_trend(flipped, agg, tasks).status == "fail"


FIG11_MEANS = {"Ours (2017 smooth sensitivity)": 0.9, "Ours (2021 ROSNAM)": 0.85, "JPW": 0.6,
               "FS": 0.55, "Breiman's": 0.95}


def test_smoke_report_evaluates_no_claim_and_boxes_not_dp_rows(tmp_path):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, "fletcher-fig11", datasets=["synthA", "synthF"], metric="accuracy",
                means=FIG11_MEANS, not_dp=("Ours (2017 smooth sensitivity)",))
    md_path, html_path = write_report(r, f, "smoke")
    text = md_path.read_text()
    line = next(x for x in text.splitlines() if x.startswith("| fletcher-fig11 |"))
    assert "| not evaluated (smoke) |" in line and "3/3" not in line
    assert "| not compared (smoke) |" in line  # paper values: shown, no verdict
    assert "✓" not in text and "✗" not in text
    section = text[text.index("### Figure 11"):]
    assert section.startswith("### Figure 11 — `fletcher-fig11` (smoke — not the paper's setting)")
    assert section.count("not evaluated (smoke)") == 3
    assert "> **Not DP — run with a budget" in section
    assert "> - Ours (2017 smooth sensitivity) on synthA (ε = 1): quantile bins" in section
    assert "Ours (2017 smooth sensitivity) (not DP)" in section  # in the comparison table
    html = html_path.read_text()
    assert "<blockquote>" in html and "Not DP — run with a budget" in html
    # The same numbers at paper scale do get verdicts: only the smoke rule withholds them.
    spec = resolve("fletcher-fig11")
    rendered = render_experiment(spec.at_scale("smoke"), "smoke", r, f)
    tasks = rendered.context.tasks
    assert [c.status for c in check_claims(spec.claims, rendered.agg, tasks, "paper")] == ["pass"] * 3
    assert {c.status for c in check_claims(spec.claims, rendered.agg, tasks, "smoke")} == {NOT_EVALUATED_SMOKE}
    paper = render_frame(spec, "paper", rendered.frame.assign(scale="paper"), r, f)
    footer = paper.files[0].read_text()
    assert "6 of the 42 values printed in Figure 11" in footer  # 3 series x 2 datasets
    assert re.search(r"\d of 6 compared values are within the spec's tolerance ±0.03", footer)


def test_table2_footer_counts_what_it_compares(tmp_path):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, "table2", datasets=["adult", "abalone"], metric="seconds_per_tree",
                kind="diagnostic", not_dp=())
    spec = resolve("table2")
    rep = render_experiment(spec.at_scale("smoke"), "smoke", r, f)
    md = rep.files[0].read_text()
    assert "0 of the 20 values printed in Table 2 of the paper" in md  # smoke epsilon is 20, the paper's 500
    assert "not compared (smoke)" in md and "0 of 0" not in md
    assert "Diagnostics (exact quantities of the run" in md and "seconds\\_per\\_tree" in md
    at_500 = rep.frame.assign(scale="paper", epsilon=500.0, epsilon_spent=500.0)
    paper = render_frame(spec, "paper", at_500, r, f)
    md = paper.files[0].read_text()
    assert "4 of the 20 values printed in Table 2 of the paper" in md
    assert "4 diagnostic values are shown without a verdict" in md
    assert "no value is judged against the spec's tolerance ±1" in md
    assert set(paper.agg["verdict"]) == {"diagnostic (no verdict)"}


def test_spec_text_is_literal_in_markdown_and_html(tmp_path):
    md_path, html_path = write_report(tmp_path / "results", tmp_path / "figures")
    text, html = md_path.read_text(), html_path.read_text()
    assert "g\\*\\_l = 1" in text  # escaped in the Markdown (dpboost-fig2's notes)
    assert "g*_l = 1" in html and "3 g*^2" in html
    # the only italics are the report's own ("*paper*", "*Notes:*")
    assert set(re.findall(r"<em>(.*?)</em>", html)) <= {"paper", "Notes:"}
