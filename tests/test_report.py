"""`dpexp report`: renders from the cache alone; paper values beside ours; claims checked."""

from __future__ import annotations

import math

import pandas as pd
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.render.claims import check_claim


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
    assert "| quickstart | fletcher-islam-2017 | Quick start | smoke | 15/15 | — | 1/1 |" in text
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
    import json

    from dpexp.render.claims import check_trend

    rows = []
    for n, acc, mae in ((1, 0.70, 3.0), (4, 0.74, 2.5), (8, 0.78, 2.0)):
        rows.append(("adult", "InPrivate", "InPrivate", json.dumps({"n_participants": n}), 1.0, "accuracy", math.nan, acc))
        rows.append(("abalone", "InPrivate", "InPrivate", json.dumps({"n_participants": n}), 1.0, "mae", math.nan, mae))
    agg = pd.DataFrame(rows, columns=["dataset", "series", "label", "params", "epsilon", "metric", "step", "mean"])
    tasks = {"adult": "classification", "abalone": "regression"}
    claim = {"text": "t", "series": "InPrivate", "metric": {"classification": "accuracy", "regression": "mae"},
             "trend": {"classification": "increasing", "regression": "decreasing"},
             "over": "param:n_participants", "mode": "each"}
    assert check_trend(claim, agg, tasks).status == "pass"
    flipped = {**claim, "trend": "decreasing"}
    assert check_trend(flipped, agg, tasks).status == "fail"
