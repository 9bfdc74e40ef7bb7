"""CLI smoke runs of every XGBoost-DP / Gaussian BDT table and figure, and the Table 2
no-noise reproduction at smoke scale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import require_spec_data

ROOT = Path(__file__).resolve().parents[3]
SPECS = ["xgbdp-table2", "xgbdp-fig1", "xgbdp-fig2", "xgbdp-fig3", "gaussian-bdt-dpboost",
         "gaussian-bdt-temperature"]
#: Table 2's no_noise row, Shi et al. 2021 (accuracy as a fraction).
PAPER_NO_NOISE = {"Random forest (no noise)": 0.86109, "Adaboost (no noise)": 0.85321,
                  "Xgboost (no noise)": 0.87082}
#: Smoke scale trains on 2,000 of the 30,162 rows with 3 trees (full 15,060-row test
#: split), so we only ask for the no-noise accuracies to be within 5 points of the paper's
#: (measured: about 2.4-3.9 points below). At paper scale the spec judges them by an
#: equivalence test within 0.006 (docs/SPEC_FORMAT.md, "Verdicts on printed values").
SMOKE_TOLERANCE = 0.05


def _run(spec: str, tmp_path: Path, render: bool = True) -> pd.DataFrame:
    require_spec_data(spec)  # the run is a subprocess: the in-process download guard misses it
    cmd = [sys.executable, "-m", "dpexp.cli", "run", spec, "--scale", "smoke", "-q",
           "--results-dir", str(tmp_path / "r"), "--figures-dir", str(tmp_path / "f")]
    if not render:
        cmd.append("--no-render")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return pd.read_csv(tmp_path / "r" / spec / "results-smoke.csv")


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS)
def test_smoke_run(spec, tmp_path):
    df = _run(spec, tmp_path)
    assert len(df) and df["value"].notna().any()
    private = df[pd.to_numeric(df["epsilon"]) < float("inf")]
    spent = pd.to_numeric(private["epsilon_spent"], errors="coerce").dropna()
    assert (spent <= pd.to_numeric(private.loc[spent.index, "epsilon"]) * (1 + 1e-9)).all()
    assert (tmp_path / "r" / spec / f"{spec}-smoke.md").exists()
    if spec != "xgbdp-table2":
        assert (tmp_path / "f" / spec / f"{spec}-smoke.png").exists()
    if spec == "xgbdp-fig2":
        roc = df[df.metric == "roc_tpr"]
        assert roc.step.min() == 0 and roc.step.max() == 100
        assert (roc.groupby("label").value.max() == 1.0).all()
    if spec == "xgbdp-fig1":
        assert df.metric.str.startswith("importance:").sum() >= 2 * 14


@pytest.mark.slow
def test_table2_no_noise_row_within_tolerance(tmp_path):
    df = _run("xgbdp-table2", tmp_path, render=False)
    acc = df[(df.metric == "accuracy")].groupby("label").value.mean()
    for label, paper in PAPER_NO_NOISE.items():
        assert abs(acc[label] - paper) <= SMOKE_TOLERANCE, (label, acc[label], paper)
    # every private column exists at both smoke budgets
    for label in ("Random forest", "Adaboost", "Xgboost"):
        assert df[(df.label == label) & (df.metric == "accuracy")].epsilon.nunique() == 2


def test_specs_load_at_both_scales_with_a_smaller_smoke_grid():
    from dpexp.experiments.cells import expand
    from dpexp.experiments.spec_parse import load_spec_file
    from dpexp.registry import get_algorithm

    for spec in SPECS:
        s = load_spec_file(ROOT / "experiments" / f"{spec}.yaml")
        smoke, paper = (len(expand(s.at_scale(scale), scale)) for scale in ("smoke", "paper"))
        assert 0 < smoke < paper, (spec, smoke, paper)
        assert all(get_algorithm(a.name).name == a.name for a in s.algorithms if a.name)
