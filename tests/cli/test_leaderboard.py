"""``dpexp leaderboard`` end to end at smoke scale on a small leaderboard spec (synthetic
data, one epsilon, a few entries of both tasks): the plan first, the runner's cells, the
ranking tables with real numbers, the CD diagram, and everything from the cache the second
time; a missing optional package is one line naming the extra."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpexp.cli import app

runner = CliRunner()

SPEC = """
id: leaderboard-mini
paper: leaderboard
artefact: Leaderboard (test)
kind: figure
caption: A small leaderboard.
datasets: [synthA, synthB, weather_temperature]
algorithms:
- {name: fletcher_forest, label: Fletcher-Islam forest, params: {n_trees: 5}}
- {name: dpboost_honest, label: DPBoost (clipped), params: {n_trees: 5, trees_per_ensemble: 5}}
- {name: dp_ebm, label: DP-EBM, params: {max_rounds: 30}}
- {name: hgb_default, label: HistGradientBoosting (defaults)}
- {name: breiman_rf, label: RandomForest (defaults), params: {n_estimators: 10}}
epsilons: [1]
cv: {scheme: kfold, folds: 3}
metrics: {classification: [error], regression: [rmse]}
plot: {x: epsilon, y: {classification: error, regression: rmse}, panels: dataset}
scales:
  smoke: {max_rows: 600}
"""


@pytest.fixture()
def spec_file(tmp_path):
    path = tmp_path / "leaderboard-mini.yaml"
    path.write_text(SPEC)
    return path


def invoke(spec_file, tmp_path, *extra):
    return runner.invoke(app, ["leaderboard", "--spec", str(spec_file), "--scale", "smoke",
                               "--results-dir", str(tmp_path / "results"),
                               "--figures-dir", str(tmp_path / "figures"), "--quiet",
                               *map(str, extra)])


def test_the_leaderboard_ranks_real_numbers_and_draws_the_cd_diagram(spec_file, tmp_path):
    pytest.importorskip("autorank", reason="the leaderboard extra (autorank) is not installed")
    res = invoke(spec_file, tmp_path)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("plan: leaderboard-mini (smoke, seed 0): ")
    assert "skipped 1 regression dataset (weather_temperature)" in res.output
    ranks = pd.read_csv(tmp_path / "results" / "leaderboard-mini" / "leaderboard-mini-ranks-smoke.csv")
    cls = ranks[ranks.task == "classification"].set_index("entry")
    reg = ranks[ranks.task == "regression"].set_index("entry")
    assert set(cls.index) == {"Fletcher-Islam forest", "DPBoost (clipped)", "DP-EBM",
                              "HistGradientBoosting (defaults)", "RandomForest (defaults)"}
    assert "Fletcher-Islam forest" not in reg.index and len(reg) == 4
    # mean ranks of 5 entries sum to 1 + ... + 5; errors are real errors
    assert cls["mean_rank"].sum() == pytest.approx(15.0)
    assert cls["mean_error"].between(0.0, 0.6).all() and reg["mean_rmse"].gt(0).all()
    assert all(math.isfinite(v) for v in ranks["mean_rank"])
    # weather_temperature declares its domains: DP-EBM's rows are (epsilon, delta)-DP there;
    # the synth sets' domains are observed: not DP, with the reason
    assert reg.loc["DP-EBM", "status"] == "(ε, δ = 1e-06)-DP"
    assert cls.loc["DP-EBM", "status"].startswith("not DP on 2 of 2 datasets: domain observed")
    assert cls.loc["HistGradientBoosting (defaults)", "status"] == "non-private reference"
    # 2 datasets x 3 folds = 6 paired blocks: tested, one CD diagram (regression: 3 blocks)
    assert "Friedman p = " in res.output and "not tested" in res.output
    png = tmp_path / "figures" / "leaderboard-mini" / "leaderboard-mini-cd-classification-eps1-smoke.png"
    assert png.exists() and png.stat().st_size > 5_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (png.parent / "leaderboard-mini-cd-regression-eps1-smoke.png").exists()
    price = pd.read_csv(tmp_path / "results" / "leaderboard-mini" / "leaderboard-mini-price-of-privacy-smoke.csv")
    assert set(price["reference"]) <= {"HistGradientBoosting (defaults)", "RandomForest (defaults)"}
    assert (price["gap"] == price["score"] - price["reference_score"]).all()
    # the second time every cell comes from the cache, and the ranks are the same
    again = invoke(spec_file, tmp_path, "--no-render")
    assert again.exit_code == 0, again.output
    assert "42 cells, 0 computed, 42 from cache" in again.output
    pd.testing.assert_frame_equal(ranks, pd.read_csv(
        tmp_path / "results" / "leaderboard-mini" / "leaderboard-mini-ranks-smoke.csv"))
    # a new entry computes only its own cells; every other entry's numbers stay bit for bit
    added = invoke(spec_file, tmp_path, "--no-render", "--add", "gaussian_bdt")
    assert added.exit_code == 0, added.output
    # 3 datasets (2 classification, 1 regression) x 3 folds
    assert "9 cells, 9 computed, 0 from cache" in added.output
    after = pd.read_csv(tmp_path / "results" / "leaderboard-mini" / "leaderboard-mini-ranks-smoke.csv")
    assert set(after["entry"]) == set(ranks["entry"]) | {"gaussian_bdt"}
    before_scores = ranks.set_index(["task", "entry"])[["mean_error", "mean_rmse"]]
    after_scores = after.set_index(["task", "entry"])[["mean_error", "mean_rmse"]]
    pd.testing.assert_frame_equal(before_scores, after_scores.loc[before_scores.index])
    status = after.set_index(["task", "entry"])["status"]
    assert status[("regression", "gaussian_bdt")] == "(ε, δ = 1e-05)-DP"  # its default delta
    assert status[("classification", "gaussian_bdt")].startswith("not DP on 2 of 2 datasets")


def test_a_missing_optional_package_names_the_extra(spec_file, tmp_path, monkeypatch):
    import dpexp.experiments.environment as environment

    def unavailable(requires):
        return "interpret (No module named 'interpret')" if "interpret" in requires else None

    monkeypatch.setattr(environment, "optional_unavailable", unavailable)
    res = invoke(spec_file, tmp_path)
    assert res.exit_code != 0
    assert 'needs the optional package interpret' in res.output
    assert 'pip install "dpexp[leaderboard]"' in res.output
    assert "Traceback" not in res.output
