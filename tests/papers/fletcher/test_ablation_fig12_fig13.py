"""The Figs. 12/13 ablation spec (issue 21): AUC of labels vs probabilities, F1, on one fit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dpexp.experiments.spec_parse import load_spec_file

ROOT = Path(__file__).resolve().parents[3] / "experiments"
SPEC = ROOT / "fletcher-ablation-fig12-fig13.yaml"


def test_spec_covers_figs_12_and_13():
    spec = load_spec_file(SPEC)
    fig12 = load_spec_file(ROOT / "fletcher-fig12.yaml")
    names = {d.name for d in spec.datasets}
    assert {d.name for d in fig12.datasets} <= names
    # the default-generator draws of every synthetic set, 8 each
    for letter in "ABCDEFG":
        seeds = sorted(d.params["seed"] for d in spec.datasets if d.name == f"synth{letter}_sep1")
        assert seeds == list(range(8))
    assert spec.metrics_for("classification") == ["accuracy", "auc", "auc_labels", "f1_minority"]
    labels = {a.label for a in spec.algorithms}
    assert labels == {"Ours (2017 smooth sensitivity)", "JPW"}
    # the paper's Section 5.2 forest: 2017 rule; JPW with its own defaults
    ours = next(a for a in spec.algorithms if a.label.startswith("Ours"))
    assert ours.params["leaf_rule"] == "smooth_2017"


@pytest.mark.slow
def test_smoke_run_scores_labels_as_balanced_accuracy(tmp_path):
    cmd = [sys.executable, "-m", "dpexp.cli", "run", str(SPEC), "--scale", "smoke", "--jobs", "1",
           "--results-dir", str(tmp_path / "results"), "--figures-dir", str(tmp_path / "figs"), "--no-render"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    df = pd.read_csv(tmp_path / "results" / "fletcher-ablation-fig12-fig13" / "results-smoke.csv")
    wide = df.pivot_table(index=["label", "fold"], columns="metric", values="value")
    assert len(wide) == 4  # 2 series x 2 folds of synthA
    # synthA is balanced (flip_y aside) and the folds stratified, so the balanced accuracy
    # (the label AUC) equals the accuracy up to |p - 1/2| |TPR - TNR| < 0.01.
    assert (wide.auc_labels - wide.accuracy).abs().max() < 0.01
    # the probability AUC ranks by vote shares / summed counts: a different number
    assert (wide.auc - wide.auc_labels).abs().max() > 0.01
    assert wide.f1_minority.between(0, 1).all()
