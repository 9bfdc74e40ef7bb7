"""Committed cells outside the spec's grid (peer columns, override runs) on a fresh clone
(dpexp/experiments/committed.py, issue 20): render and report show them, ``dpexp run``
never takes them for grid cells."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments import cache
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import expand
from dpexp.experiments.committed import (
    adopt_committed,
    committed_payloads,
    row_key,
    table_path,
    write_table,
)
from dpexp.experiments.results import ResultFilter, cached_keys, cached_results

PEER = "Peer code (other setting)"
PEER_PARAMS = {"fork": {"objective": "binary"}, "setting": "other"}


def _run(results, *extra):
    res = CliRunner().invoke(app, ["run", "quickstart", "--results-dir", str(results),
                                   "--no-render", "-q", *extra])
    assert res.exit_code == 0, res.output
    return res.output


def _with_extra_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The table plus a peer column (its own label and algorithm) on every fold of the
    first epsilon, and an override cell of a grid series at an epsilon the spec lacks."""
    base = table[(table["epsilon"] == table["epsilon"].min()) & (table["metric"] == "accuracy")]
    base = base[base["label"] == base["label"].iloc[0]]
    peer = base.assign(label=PEER, algorithm="peer_code", private=False,
                       params=json.dumps(PEER_PARAMS, sort_keys=True, separators=(",", ":")),
                       value=0.5, not_dp_reason="another code's own accounting")
    override = base.iloc[:1].assign(epsilon=123.0, value=0.25)
    return pd.concat([table, peer, override], ignore_index=True)


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory):
    """A results dir holding only the committed table (grid + peer + override rows)."""
    results = tmp_path_factory.mktemp("peers") / "results"
    _run(results)
    path = table_path(results, "quickstart", "smoke")
    table = pd.read_csv(path)
    extended = _with_extra_rows(table)
    write_table(extended, results, "quickstart", "smoke")
    shutil.rmtree(results / "cache")
    return results, table, extended


def test_payloads_hold_the_grid_then_the_other_cells(fresh_clone):
    results, table, extended = fresh_clone
    spec = resolve("quickstart").at_scale("smoke")
    grid = {c.key: c for c in expand(spec, "smoke", 0)}
    every = committed_payloads(spec, "smoke", results)
    only_grid = committed_payloads(spec, "smoke", results, grid_only=True)
    assert [p["key"] for p in only_grid] == [p["key"] for p in every if p["grid"]]
    assert {p["key"] for p in only_grid} == set(grid)
    # grid cells exactly as before: the record is the spec's cell
    assert all(p["cell"] == grid[p["key"]].to_dict() for p in only_grid)
    others = [p for p in every if not p["grid"]]
    n_folds = spec.cv.folds
    assert len(others) == n_folds + 1  # one peer cell per fold, one override cell
    peer = [p for p in others if p["cell"]["label"] == PEER]
    assert len(peer) == n_folds
    cell = peer[0]["cell"]
    assert cell["params"] == PEER_PARAMS and cell["algorithm"] == "peer_code"
    assert cell["procedure"] is None and cell["dataset_name"] == "synthA"
    assert cell["data_version"] == table["data_version"].iloc[0]
    # one row key per cell; the cache identity is the content of the cell (not in the grid)
    assert all(len({row_key(r) for r in p["rows"]}) == 1 and p["key"] not in grid for p in others)
    # seeds narrow the other cells too
    assert committed_payloads(spec, "smoke", results, seeds=[1]) == []


def test_a_fresh_clone_shows_the_peer_column(fresh_clone):
    results, table, extended = fresh_clone
    spec = resolve("quickstart")
    frame = cached_results(spec, "smoke", results, current_only=True).frame
    assert len(frame) == len(extended)
    peer = frame[frame["label"] == PEER]
    assert len(peer) == spec.at_scale("smoke").cv.folds and set(peer["value"]) == {0.5}
    assert set(peer["p_setting"]) == {"other"}
    # the filters of `dpexp results` keep it like a cached peer cell; nothing is missing
    picked = cached_results(spec, "smoke", results, ResultFilter(datasets=("synthA",)))
    assert PEER in set(picked.frame["label"]) and not picked.missing
    # `dpexp list`: the grid is complete, the other cells are counted beside it
    keys = cached_keys(spec, "smoke", results)
    grid = {c.key for c in expand(spec.at_scale("smoke"), "smoke", 0)}
    assert grid <= keys and len(keys - grid) == spec.at_scale("smoke").cv.folds + 1


def test_render_and_report_show_the_peer_column(fresh_clone, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(fresh_clone[0], results)
    figures = tmp_path / "figures"
    res = CliRunner().invoke(app, ["render", "quickstart", "--results-dir", str(results),
                                   "--figures-dir", str(figures)])
    assert res.exit_code == 0, res.output
    assert (figures / "quickstart" / "quickstart-smoke.png").exists()
    table = (results / "quickstart" / "quickstart-smoke.md").read_text()
    assert PEER in table and "Missing cells" not in table
    res = CliRunner().invoke(app, ["report", "--scale", "smoke", "--results-dir", str(results),
                                   "--figures-dir", str(figures)])
    assert res.exit_code == 0, res.output
    assert PEER in (results / "REPORT-smoke.md").read_text()
    # the verdict row counts the grid's cells only: the peer's cells are shown, not counted
    summary = json.loads((results / "summary-smoke.json").read_text()) if (
        results / "summary-smoke.json").exists() else json.loads((results / "summary.json").read_text())
    row = next(r for r in summary if r["artefact"] == "quickstart")
    grid = len(expand(resolve("quickstart").at_scale("smoke"), "smoke", 0))
    assert row["cells_done"] == row["cells_total"] == grid


def test_run_adopts_only_grid_cells_and_keeps_the_others(fresh_clone, tmp_path):
    committed, _, extended = fresh_clone
    results = tmp_path / "results"
    shutil.copytree(committed, results)
    shutil.rmtree(results / "cache", ignore_errors=True)
    spec = resolve("quickstart").at_scale("smoke")
    grid = expand(spec, "smoke", 0)
    assert adopt_committed(spec, "smoke", results, grid) == len(grid)
    cached = [json.loads(p.read_text())
              for p in cache.cell_files(results, "quickstart", "smoke")]
    assert sorted(p["key"] for p in cached) == sorted(c.key for c in grid)
    shutil.rmtree(results / "cache")
    out = _run(results)
    assert " 0 computed" in out, out
    assert len(list(cache.cell_files(results, "quickstart", "smoke"))) == len(grid)
    # the rewritten table still holds the peer and override rows, once each
    after = pd.read_csv(table_path(results, "quickstart", "smoke"))
    assert len(after) == len(extended)
    assert (after["label"] == PEER).sum() == spec.cv.folds
    assert (after["epsilon"] == 123.0).sum() == 1


def test_a_stale_row_of_a_grid_series_stays_hidden(fresh_clone, tmp_path):
    """A grid label with parameters the spec no longer has is an earlier version of the
    series: returned as a committed cell, but render's current-only reading drops it."""
    committed, table, extended = fresh_clone
    results = tmp_path / "results"
    shutil.copytree(committed, results)
    label = table["label"].iloc[0]
    old = extended[extended["label"] == label].iloc[:1].assign(params='{"old":1}', value=0.0)
    write_table(pd.concat([extended, old], ignore_index=True), results, "quickstart", "smoke")
    spec = resolve("quickstart")
    everything = cached_results(spec, "smoke", results).frame
    current = cached_results(spec, "smoke", results, current_only=True).frame
    assert len(everything) == len(extended) + 1 and len(current) == len(extended)
