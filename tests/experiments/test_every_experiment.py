"""Every registered experiment runs at smoke scale through the CLI and renders real numbers.

This is what `make reproduce-smoke` does, one test per spec (in-process, typer's
CliRunner, one shared results directory so the numba caches and datasets are warm).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments.catalog import all_specs
from dpexp.experiments.cells import dataset_task, expand, format_epsilon

SPECS = sorted(all_specs())


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("smoke-results"), tmp_path_factory.mktemp("smoke-figures")


@pytest.mark.parametrize("experiment", SPECS)
def test_experiment_runs_at_smoke_scale(experiment, out):
    results, figures = out
    res = CliRunner().invoke(app, ["run", experiment, "--scale", "smoke", "-q",
                                   "--results-dir", str(results), "--figures-dir", str(figures)])
    assert res.exit_code == 0, res.output
    spec = all_specs()[experiment]
    # a spec showing another's cells (cells_from) adds them to that experiment's table
    table = pd.read_csv(results / spec.cells_id / "results-smoke.csv")
    if spec.cells_from:
        table = table[table["label"].isin({a.label for a in spec.algorithms})]
    # every cell of the smoke grid has rows, and nothing else does
    grid = {(c.label, c.dataset.key, format_epsilon(c.epsilon), c.fold, c.repeat)
            for c in expand(spec.at_scale("smoke"), "smoke", 0)}
    got = {(r.label, r.dataset, format_epsilon(float(r.epsilon)), int(r.fold), int(r.repeat))
           for r in table.itertuples()}
    # (a cells_from view shows part of its source's table, which may hold more)
    assert grid <= got if spec.cells_from else got == grid
    # every fitted series has a finite value of each metric the spec asks of its task
    values = pd.to_numeric(table["value"], errors="coerce")
    table = table.assign(value=values)
    for algo in (a for a in spec.at_scale("smoke").algorithms if a.name):
        rows = table[table["label"] == algo.label]
        task = dataset_task(rows["dataset"].iloc[0])
        for metric in spec.metrics_for(task):
            finite = rows.loc[rows["metric"] == metric, "value"].dropna().map(math.isfinite)
            assert len(finite) and finite.all(), (algo.label, metric)
    private = table[table["epsilon"] != math.inf]
    spent = pd.to_numeric(private["epsilon_spent"], errors="coerce").dropna()
    assert (spent <= private.loc[spent.index, "epsilon"] * (1 + 1e-9)).all()
    md = (results / experiment / f"{experiment}-smoke.md").read_text()
    assert "±" in md  # a rendered number with its spread
    if spec.kind == "figure":
        png = figures / experiment / f"{experiment}-smoke.png"
        assert png.exists() and png.stat().st_size > 5_000
