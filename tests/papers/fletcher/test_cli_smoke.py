"""CLI smoke run of fletcher-fig11 (and the formula tables) at smoke scale."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest


@pytest.mark.slow
def test_fig11_smoke_run(tmp_path):
    cmd = [sys.executable, "-m", "dpexp.cli", "run", "fletcher-fig11", "--scale", "smoke",
           "--results-dir", str(tmp_path / "results"), "--figures-dir", str(tmp_path / "figs"), "--no-render"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    df = pd.read_csv(tmp_path / "results" / "fletcher-fig11" / "results-smoke.csv")
    acc = df[df.metric == "accuracy"].groupby("label").value.mean()
    assert {"Ours (2017 smooth sensitivity)", "Ours (2021 ROSNAM)", "JPW", "FS", "Breiman's"} <= set(acc.index)
    assert (acc > 0.5).all()
    assert {"empty_leaf_fraction", "tree_depth"} <= set(df.metric)


def test_fletcher_specs_validate():
    from pathlib import Path

    from dpexp.experiments.spec_parse import load_spec_file

    root = Path(__file__).resolve().parents[3] / "experiments"
    ids = sorted(p.stem for p in root.glob("fletcher-*.yaml"))
    expected = {"fletcher-table2", "fletcher-table3", "fletcher-table4", "fletcher-table5", "fletcher-table6",
                *(f"fletcher-fig{i}" for i in range(4, 15))}
    # the paper's artefacts, plus our ablations (fletcher-ablation-*: they explain misses)
    assert expected <= set(ids) and "fletcher-ablation-comparators" in ids
    assert all(i.startswith("fletcher-ablation-") for i in set(ids) - expected)
    for i in ids:
        spec = load_spec_file(root / f"{i}.yaml")
        assert spec.id == i
