"""Per printed value: our 95% interval, the paper's value, a verdict (issues 19, 21).

reproduced = within the spec's tolerance or the paper's value inside the interval that
accounts for both sources of variation; explained = a miss whose spec entry carries
``explained:`` evidence; unexplained = any other miss; None at smoke scale and for
diagnostics. Claims carry ``explained:`` too; the Wilcoxon table has a stable API.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import t as student_t
from scipy.stats import ttest_ind_from_stats
from test_render_partial import cache_cells

from dpexp.errors import SpecError
from dpexp.experiments.spec import parse_spec, resolve
from dpexp.render.aggregate import (
    DIAGNOSTIC_VERDICT,
    NO_MEAN_VERDICT,
    NO_TOLERANCE_VERDICT,
    SMOKE_VERDICT,
    attach_paper_values,
    comparison_interval,
    comparison_summary,
    judge_value,
    mean_interval,
    paper_runs,
)
from dpexp.render.claims import NOT_EVALUATED_SMOKE, check_claims
from dpexp.render.render import render_experiment, render_frame
from dpexp.render.significance import (
    SIGNIFICANCE_COLUMNS,
    significance_markdown,
    significance_table,
)

EVIDENCE = "ablation fletcher-fig11-depth: depth 5 instead of 6 costs 0.04 accuracy (0.86 vs 0.90)"


def _spec(values: list[dict], *, tolerance: float | None = 0.001, folds: int = 10, repeats: int = 1,
          claims: list | None = None) -> object:
    pv: dict = {"source": "Table X", "values": values}
    if tolerance is not None:
        pv["tolerance"] = tolerance
    raw = {"id": "t", "paper": "p", "artefact": "Table X", "kind": "table", "caption": "c",
           "datasets": ["d"], "algorithms": [{"name": "a", "label": "A"}, {"name": "b", "label": "B"}],
           "epsilons": [1], "cv": {"scheme": "kfold", "folds": folds, "repeats": repeats},
           "metrics": ["accuracy"], "paper_values": pv, "claims": claims or []}
    return parse_spec(raw, Path("t.yaml"))


def _agg(rows: list[tuple]) -> pd.DataFrame:
    """Aggregated rows (label, mean, std, n[, diagnostic]) on dataset d at epsilon 1."""
    out = []
    for r in rows:
        label, mean, std, n = r[:4]
        out.append({"dataset": "d", "label": label, "series": label, "params": "{}", "epsilon": 1.0,
                    "metric": "accuracy", "step": math.nan, "mean": mean, "std": std, "n": n,
                    "diagnostic": bool(r[4]) if len(r) > 4 else False})
    return pd.DataFrame(out)


def _entry(label: str, value: float, **extra) -> dict:
    return {"dataset": "d", "algorithm": label, "epsilon": 1, "metric": "accuracy", "value": value, **extra}


def test_mean_interval_is_student_t_with_n_minus_1_dof():
    low, high = mean_interval(0.8, 0.1, 4)
    half = student_t.ppf(0.975, 3) * 0.1 / 2
    assert low == pytest.approx(0.8 - half) and high == pytest.approx(0.8 + half)
    assert half == pytest.approx(0.1591, abs=1e-4)
    assert all(math.isnan(x) for x in mean_interval(0.8, 0.0, 1))  # n = 1: no interval


def test_value_inside_and_outside_our_interval():
    # mean 0.80, std 0.02, n 10: our interval is 0.80 ± 0.0143; the tolerance (0.001) misses both.
    spec = _spec([_entry("A", 0.81), _entry("B", 0.85)])
    agg = attach_paper_values(_agg([("A", 0.80, 0.02, 10), ("B", 0.80, 0.02, 10)]), spec, "paper")
    a, b = agg.iloc[0], agg.iloc[1]
    assert a["ci_low"] == pytest.approx(0.7857, abs=1e-4) and a["ci_high"] == pytest.approx(0.8143, abs=1e-4)
    assert a["within_tolerance"] is False and a["paper_in_ci"] is True and a["value_verdict"] == "reproduced"
    assert a["verdict"] == "✓ (by interval)"  # reproduced, but farther than the tolerance
    assert b["within_tolerance"] is False and b["paper_in_ci"] is False and b["value_verdict"] == "unexplained"
    assert b["verdict"] == "✗" and b["explanation"] == ""
    summary = comparison_summary(agg, spec, "paper")
    assert (summary.reproduced, summary.explained, summary.unexplained) == (1, 0, 1)
    assert summary.verdict_cell() == "1 / 0 / 1"
    assert "of 2 judged values, 1 are reproduced" in summary.text()


def test_within_tolerance_alone_reproduces():
    spec = _spec([_entry("A", 0.85)], tolerance=0.06)
    row = attach_paper_values(_agg([("A", 0.80, 0.02, 10)]), spec, "paper").iloc[0]
    assert row["within_tolerance"] is True and row["paper_in_ci"] is False
    assert row["value_verdict"] == "reproduced" and row["verdict"] == "✓"


def test_explained_miss_carries_the_evidence():
    spec = _spec([_entry("A", 0.85, explained=EVIDENCE)])
    row = attach_paper_values(_agg([("A", 0.80, 0.02, 10)]), spec, "paper").iloc[0]
    assert row["value_verdict"] == "explained" and row["explanation"] == EVIDENCE
    assert row["verdict"] == "✗ (explained)"
    # the evidence never turns a hit into a miss
    hit = attach_paper_values(_agg([("A", 0.849, 0.02, 10)]), spec, "paper").iloc[0]
    assert hit["value_verdict"] == "reproduced"


def test_n_equal_1_has_no_interval():
    spec = _spec([_entry("A", 0.80)], tolerance=0.01)
    row = attach_paper_values(_agg([("A", 0.805, 0.0, 1)]), spec, "paper").iloc[0]
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"]) and row["paper_in_ci"] is None
    assert row["value_verdict"] == "reproduced"  # by the tolerance alone
    miss = attach_paper_values(_agg([("A", 0.90, 0.0, 1)]), spec, "paper").iloc[0]
    assert miss["value_verdict"] == "unexplained"
    # neither a tolerance nor an interval: no verdict, and the column says why
    none = attach_paper_values(_agg([("A", 0.90, 0.0, 1)]), _spec([_entry("A", 0.80)], tolerance=None), "paper")
    assert none.iloc[0]["value_verdict"] is None and none.iloc[0]["verdict"] == NO_TOLERANCE_VERDICT
    # without a tolerance, the interval alone judges (n >= 2)
    by_ci = attach_paper_values(_agg([("A", 0.90, 0.01, 5)]), _spec([_entry("A", 0.80)], tolerance=None), "paper")
    assert by_ci.iloc[0]["within_tolerance"] is None and by_ci.iloc[0]["value_verdict"] == "unexplained"


def test_paper_std_widens_the_interval_like_a_welch_test():
    # 0.83 is outside our own interval (0.80 ± 0.0143) but the paper's std 0.05 over its 10
    # runs (the spec's cv: 10 folds x 1 repeat) makes the difference insignificant.
    spec = _spec([_entry("A", 0.83, std=0.05)])
    assert paper_runs(spec) == 10
    row = attach_paper_values(_agg([("A", 0.80, 0.02, 10)]), spec, "paper").iloc[0]
    assert not (row["ci_low"] <= 0.83 <= row["ci_high"])  # ours alone excludes it
    assert row["match_low"] < row["ci_low"] and row["match_high"] > row["ci_high"]
    assert row["paper_in_ci"] is True and row["value_verdict"] == "reproduced"
    assert attach_paper_values(_agg([("A", 0.80, 0.02, 10)]), _spec([_entry("A", 0.83)]),
                               "paper").iloc[0]["value_verdict"] == "unexplained"
    # the rule is a two-sided Welch t-test at 5 %: inside <=> p >= 0.05
    for paper in (0.81, 0.83, 0.836, 0.84, 0.86):
        low, high = comparison_interval(0.80, 0.02, 10, 0.05, 10)
        p = ttest_ind_from_stats(0.80, 0.02 * math.sqrt(10 / 9), 10, paper, 0.05 * math.sqrt(10 / 9), 10,
                                 equal_var=False).pvalue
        assert (low <= paper <= high) == (p >= 0.05), paper
    # more paper runs (10 x 10-fold) shrink its standard error: 0.836 falls outside again
    many = _spec([_entry("A", 0.836, std=0.05)], repeats=10)
    assert paper_runs(many) == 100
    assert attach_paper_values(_agg([("A", 0.80, 0.02, 10)]), many, "paper").iloc[0]["paper_in_ci"] is False


def test_smoke_and_timings_get_no_verdict():
    spec = _spec([_entry("A", 0.81), _entry("B", 0.81)])
    smoke = attach_paper_values(_agg([("A", 0.80, 0.02, 10), ("B", 0.80, 0.02, 10)]), spec, "smoke")
    assert smoke["value_verdict"].isna().all() and smoke["paper_in_ci"].isna().all()
    assert smoke["within_tolerance"].isna().all() and set(smoke["verdict"]) == {SMOKE_VERDICT}
    assert smoke["ci_low"].notna().all()  # our interval is still shown
    assert comparison_summary(smoke, spec, "smoke").verdict_cell() == SMOKE_VERDICT
    # a diagnostic count or fraction the paper prints is judged; a timing is not
    diag = attach_paper_values(_agg([("A", 0.80, 0.02, 10, True), ("B", 0.80, 0.02, 10)]), spec, "paper")
    assert diag.iloc[0]["value_verdict"] == "reproduced" and diag.iloc[1]["value_verdict"] == "reproduced"
    timing_spec = _spec([_entry("A", 0.81, metric="seconds_per_tree")])
    timing = attach_paper_values(_agg([("A", 0.80, 0.02, 10, True)]).assign(metric="seconds_per_tree"),
                                 timing_spec, "paper")
    assert timing.iloc[0]["value_verdict"] is None and timing.iloc[0]["verdict"] == DIAGNOSTIC_VERDICT
    # an undefined mean of ours (e.g. a metric NaN on every fold) is not a miss
    nan_mean = attach_paper_values(_agg([("A", math.nan, math.nan, 10)]), spec, "paper").iloc[0]
    assert nan_mean["value_verdict"] is None and nan_mean["within_tolerance"] is None
    assert nan_mean["verdict"] == NO_MEAN_VERDICT


def test_judge_value_rule():
    assert judge_value(None, None, EVIDENCE) is None
    assert judge_value(False, True, "") == "reproduced"
    assert judge_value(True, None, "") == "reproduced"
    assert judge_value(False, False, EVIDENCE) == "explained"
    assert judge_value(None, False, "") == "unexplained"


def test_spec_validates_explained_and_entries():
    _spec([_entry("A", 0.8, explained=EVIDENCE)], claims=[
        {"text": "A beats B", "better": "A", "than": ["B"], "metric": "accuracy", "explained": EVIDENCE}])
    bad = [
        ([_entry("A", 0.8, explained=True)], [], "paper_values.values[0].explained"),
        ([_entry("A", 0.8, explained="  ")], [], "paper_values.values[0].explained"),
        ([_entry("A", 0.8, std=-0.1)], [], "paper_values.values[0].std"),
        ([_entry("A", "high")], [], "paper_values.values[0].value"),
        ([_entry("A", 0.8, explaned=EVIDENCE)], [], "did you mean 'explained'"),
        ([], [{"text": "x", "better": "A", "than": ["B"], "metric": "accuracy", "explained": 1}],
         "claims[0].explained"),
    ]
    for values, claims, needle in bad:
        with pytest.raises(SpecError, match=__import__("re").escape(needle)):
            _spec(values, claims=claims)
    with pytest.raises(SpecError, match="paper_values.tolerance"):
        _spec([_entry("A", 0.8)], tolerance=-1)


def test_claims_return_their_explanation():
    agg = _agg([("A", 0.70, 0.01, 10), ("B", 0.80, 0.01, 10)])
    claims = [{"text": "A beats B", "better": "A", "than": ["B"], "metric": "accuracy",
               "direction": "higher", "explained": EVIDENCE},
              {"text": "B beats A", "better": "B", "than": ["A"], "metric": "accuracy", "direction": "higher"}]
    tasks = {"d": "classification"}
    fail, ok = check_claims(claims, agg, tasks, "paper")
    assert (fail.status, fail.explanation) == ("fail", EVIDENCE)
    assert (ok.status, ok.explanation) == ("pass", "")
    smoke = check_claims(claims, agg, tasks, "smoke")
    assert smoke[0].status == NOT_EVALUATED_SMOKE and smoke[0].explanation == EVIDENCE


FIG11_MEANS = {"Ours (2017 smooth sensitivity)": 0.9, "Ours (2021 ROSNAM)": 0.85, "JPW": 0.6,
               "FS": 0.55, "Breiman's": 0.95}


def test_tables_show_markers_and_significance_api(tmp_path):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, "fletcher-fig11", datasets=["synthA"], metric="accuracy", means=FIG11_MEANS, not_dp=())
    spec = resolve("fletcher-fig11")
    smoke = render_experiment(spec.at_scale("smoke"), "smoke", r, f)
    text = smoke.files[0].read_text()
    assert "(paper 0.906)" in text and "✓" not in text and "✗" not in text  # no marker at smoke
    paper = render_frame(spec, "paper", smoke.frame.assign(scale="paper"), r, f)
    md = paper.files[0].read_text()
    # ours 0.9 ± 0.01 vs 0.906 (tolerance 0.03): reproduced; JPW 0.6 vs 0.537: a miss the spec
    # explains (the data draw, fletcher-ablation-synth-draws); FS 0.55 vs 0.553: reproduced
    assert "(paper 0.906 ✓)" in md and "(paper 0.537 ✗ (explained))" in md and "(paper 0.553 ✓)" in md
    assert "Markers beside the paper's values: ✓ reproduced" in md
    csv = pd.read_csv(paper.files[1])
    assert {"ci_low", "ci_high", "paper_in_ci", "value_verdict", "explanation"} <= set(csv.columns)
    # the report's Wilcoxon table: spec + raw frame
    table = significance_table(spec, paper.frame)
    assert list(table.columns) == SIGNIFICANCE_COLUMNS
    # Breiman's (non-private, epsilon = inf) has no pair at epsilon = 1: context only, as in the paper
    assert set(table["comparator"]) == {"Ours (2021 ROSNAM)", "JPW", "FS"}
    assert (table["n_pairs"] == 2).all()  # smoke cv: 2 folds x 1 repeat
    text = significance_markdown(spec, paper.frame, "smoke", {"synthA": "SynthA"})
    assert text.startswith("**Significance (smoke") and "| SynthA | 1 | JPW |" in text
    assert significance_markdown(resolve("xgbdp-table2"), paper.frame, "paper") == ""
    assert significance_table(resolve("xgbdp-table2"), paper.frame).empty


def test_better_claims_average_each_task_on_its_own_metric():
    # A wins clearly on the classification set and loses slightly on a regression set
    # whose RMSE is in the hundreds: a mean of error and RMSE together would say "A wins".
    rows = [("cls", "A", "error", 0.10), ("cls", "B", "error", 0.30),
            ("reg", "A", "rmse", 201.0), ("reg", "B", "rmse", 200.0)]
    agg = pd.DataFrame([{"dataset": d, "label": s, "series": s, "params": "{}", "epsilon": 1.0,
                         "metric": m, "step": math.nan, "mean": v, "std": 0.0, "n": 5,
                         "diagnostic": False} for d, s, m, v in rows])
    claim = {"text": "A beats B", "better": "A", "than": ["B"],
             "metric": {"classification": "error", "regression": "rmse"}}
    (result,) = check_claims([claim], agg, {"cls": "classification", "reg": "regression"}, "paper")
    assert result.status == "fail"
    assert "mean over 1 classification dataset(s); holds" in result.detail
    assert "mean over 1 regression dataset(s); does not hold" in result.detail
    (one_task,) = check_claims([claim], agg[agg.dataset == "cls"], {"cls": "classification"}, "paper")
    assert one_task.status == "pass" and "mean over 1 dataset(s)" in one_task.detail
