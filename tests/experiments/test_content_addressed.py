"""Cells are content-addressed (issue 39): a cell's seeds and cache identity come from what
determines its numbers, not from the experiment or label that asked. A copy of fig2's spec
under another id and label gets fig2's numbers for the same cell, computed once; a copy
that changes what determines the numbers (the CV scheme) computes its own."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import expand
from dpexp.experiments.committed import table_path
from dpexp.paths import project_root

SELECT = ["--dataset", "adult", "--algorithms", "dpboost", "--epsilons", "1"]


def _copy_of_fig2(directory, new_id, **changes):
    raw = yaml.safe_load((project_root() / "experiments" / "dpboost-fig2.yaml").read_text())
    raw = {k: v for k, v in raw.items() if k not in ("aliases", "paper_values", "claims")}
    raw["id"] = new_id
    raw["algorithms"] = [{**a, "label": "DPBoost, my copy"} for a in raw["algorithms"]
                         if a["name"] == "dpboost"]
    for key, value in changes.items():
        raw.setdefault("scales", {}).setdefault("smoke", {})[key] = value
    (directory / f"{new_id}.yaml").write_text(yaml.safe_dump(raw))


def _run(experiment, results, *extra):
    res = CliRunner().invoke(app, ["run", experiment, "--scale", "smoke", "-q", "--no-render",
                                   "--results-dir", str(results), *extra])
    assert res.exit_code == 0, res.output
    return res.output


def _values(results, experiment):
    table = pd.read_csv(table_path(results, experiment, "smoke"))
    return table.sort_values(["fold", "metric"])[["fold", "metric", "value"]].reset_index(drop=True)


@pytest.fixture
def specs(tmp_path, monkeypatch):
    d = tmp_path / "specs"
    d.mkdir()
    _copy_of_fig2(d, "fig2-copy")
    _copy_of_fig2(d, "fig2-three-folds", cv={"folds": 3, "repeats": 1})
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(d))
    return d


def test_the_key_and_seeds_leave_out_who_asked(specs):
    mine = expand(resolve("fig2-copy").at_scale("smoke"), "smoke")
    theirs = {c.key: c for c in expand(resolve("fig2").at_scale("smoke"), "smoke")}
    for cell in mine:
        twin = theirs[cell.key]
        assert (twin.experiment, twin.label) != (cell.experiment, cell.label)
        assert twin.seed_key == cell.seed_key and twin.digest == cell.digest
        assert twin.view_key != cell.view_key
    # what determines the numbers is in the key: other folds, other rows kept
    cell = mine[0]
    assert dataclasses.replace(cell, max_rows=None).key != cell.key
    assert dataclasses.replace(cell, cv=dataclasses.replace(cell.cv, folds=9)).seed_key != cell.seed_key


def test_a_copy_of_a_spec_shares_its_cells_computed_once(specs, tmp_path):
    results = tmp_path / "results"
    _run("fig2", results, *SELECT)
    out = _run("fig2-copy", results, *SELECT)
    assert " 0 computed" in out and "computed once" in out, out
    pd.testing.assert_frame_equal(_values(results, "fig2-copy"), _values(results, "dpboost-fig2"))
    copy = pd.read_csv(table_path(results, "fig2-copy", "smoke"))
    assert set(copy["experiment"]) == {"fig2-copy"} and set(copy["label"]) == {"DPBoost, my copy"}


def test_a_copy_with_other_folds_computes_its_own(specs, tmp_path):
    results = tmp_path / "results"
    _run("fig2", results, *SELECT)
    out = _run("fig2-three-folds", results, *SELECT)
    assert " 0 computed" not in out and "computed once" not in out, out


def test_two_series_running_one_cell_compute_it_once(tmp_path):
    """xgbdp-ablation at smoke scale: its "3 trees" series and its Table 2 setting (10
    trees, 3 at smoke scale) are the same cells; both series keep their rows."""
    results = tmp_path / "results"
    out = _run("xgbdp-ablation", results, "--algorithms", "Table 2 setting,3 trees")
    assert "4 cells, 2 computed" in out and "computed once" in out, out
    table = pd.read_csv(table_path(results, "xgbdp-ablation", "smoke"))
    by_label = {label: rows.sort_values(["epsilon", "metric"])["value"].tolist()
                for label, rows in table.groupby("label")}
    assert set(by_label) == {"Table 2 setting", "3 trees"}
    assert by_label["Table 2 setting"] == by_label["3 trees"]
