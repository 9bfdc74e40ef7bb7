"""``dpexp plan`` from measured wall times (issue 19: ``make reproduce-all`` within 6 hours on
2 cores, "measure each experiment's wall time at paper scale and sum them"): the results
schema's ``wall_seconds``, the measured-other tier, ``plan --all`` totals and its
``--algorithms`` selection, and single-threaded worker processes.

Three tiny specs on synthA (300 rows, 2 folds, epsilon 1) share settings: planB runs
planA's 5-tree forest under another label, a 7-tree one and a depth-3 one planA lacks;
planC has only the DP forest. No assertion depends on how long anything takes.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import rewrite_cached_cell
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments.committed import table_path

RF5 = {"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 5}}
DP = {"name": "fletcher_forest", "label": "DP forest", "params": {"n_trees": 3}}
BASE = {
    "paper": "test", "artefact": "Figure 0", "kind": "figure", "caption": "c",
    "datasets": ["synthA"], "epsilons": [1.0], "cv": {"folds": 2}, "metrics": ["accuracy"],
    "plot": {"x": "epsilon", "y": "accuracy"}, "scales": {"smoke": {"max_rows": 300}},
}
SPECS = {
    "planA": [RF5, DP],
    "planB": [{**RF5, "label": "Breiman"},
              {"name": "breiman_rf", "label": "RF 7", "params": {"n_estimators": 7}},
              {"name": "breiman_rf", "label": "RF depth 3", "params": {"n_estimators": 5, "max_depth": 3}}],
    "planC": [DP],
}


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture()
def results(tmp_path, monkeypatch) -> Path:
    """The three specs as the only experiments (no built-in ones: ``--all`` plans these),
    and a results directory where planA ran."""
    from dpexp.experiments import catalog as spec_mod

    specs = tmp_path / "specs"
    specs.mkdir()
    (tmp_path / "no-builtin").mkdir()
    monkeypatch.setattr(spec_mod, "builtin_experiments_dir", lambda: tmp_path / "no-builtin")
    for spec_id, algorithms in SPECS.items():
        (specs / f"{spec_id}.yaml").write_text(yaml.safe_dump({**BASE, "id": spec_id,
                                                               "algorithms": algorithms}))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    r = tmp_path / "results"
    res = invoke("run", "planA", "--results-dir", r, "-q", "--no-render")
    assert res.exit_code == 0, res.output
    return r


def cell_files(r: Path, experiment: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((r / "cache" / experiment).rglob("seed-*/*.json"))]


def plan_json(r: Path, *args) -> dict:
    res = invoke("plan", *args, "--results-dir", r, "--no-calibrate", "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def group(plan: dict, label: str) -> dict:
    return next(g for g in plan["groups"] if g["label"] == label)


# ------------------------------------------------------------------ wall_seconds in the schema


def test_wall_seconds_is_a_result_column_after_fit_seconds():
    from dpexp.experiments.schema import RESULT_COLUMNS

    assert RESULT_COLUMNS.index("wall_seconds") == RESULT_COLUMNS.index("fit_seconds") + 1


def test_every_row_of_a_new_cell_has_the_cells_wall_time(results):
    payloads = cell_files(results, "planA")
    assert len(payloads) == 4
    for p in payloads:
        walls = {r["wall_seconds"] for r in p["rows"]}
        assert walls == {p["wall_seconds"]}  # the same on every row, and at the top level
        assert p["wall_seconds"] >= p["rows"][0]["fit_seconds"] > 0  # the fit is part of it
    table = pd.read_csv(table_path(results, "planA", "smoke"))
    assert table["wall_seconds"].notna().all()
    assert sorted(table.groupby("fold")["wall_seconds"].nunique()) == [2, 2]  # per cell, not per row


def test_cells_cached_before_the_column_get_it_from_their_payload(results):
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.results import cached_results

    expected = {}
    for path in (results / "cache" / "planA").rglob("seed-*/*.json"):
        def without_column(p):
            for row in p["rows"]:
                del row["wall_seconds"]  # as the runner wrote them before

        p = rewrite_cached_cell(path, without_column)
        expected[(p["cell"]["label"], p["cell"]["fold"])] = p["wall_seconds"]
    frame = cached_results(resolve("planA"), "smoke", results).frame
    got = {(r.label, r.fold): r.wall_seconds for r in frame.itertuples()}
    assert got == expected


def test_a_table_committed_without_the_column_reads_as_nan(results):
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.results import cached_results

    path = table_path(results, "planA", "smoke")
    before = pd.read_csv(path)
    before.drop(columns=["wall_seconds"]).to_csv(path, index=False)
    shutil.rmtree(results / "cache")  # a fresh clone of an older commit
    frame = cached_results(resolve("planA"), "smoke", results).frame
    assert len(frame) == len(before) and frame["wall_seconds"].isna().all()
    cols = ["label", "fold", "metric"]
    assert (frame.sort_values(cols)["value"].tolist() == before.sort_values(cols)["value"].tolist())
    # the plan falls back to the fit times, and says so
    p = plan_json(results, "planA")
    assert p["cached"] == 4 and p["done_fit_only"] == 4
    fits = before.drop_duplicates(["label", "fold"])["fit_seconds"]
    assert p["done_cell_seconds"] == pytest.approx(fits.sum())
    # a group with cells to compute takes its own committed fit times
    res = invoke("run", "planA", "--results-dir", results, "-q", "--no-render", "--epsilons", "1,2")
    assert res.exit_code == 0, res.output
    path.unlink()
    before.drop(columns=["wall_seconds"]).to_csv(path, index=False)
    shutil.rmtree(results / "cache")
    p = plan_json(results, "planA", "--epsilons", "1,2")
    assert group(p, "DP forest")["method"] == "committed: median of 2 cells (fit only)"


# ------------------------------------------------------------------ the measured-other tier


def test_a_group_without_cells_of_its_own_takes_other_experiments_cells(results):
    walls = [p["wall_seconds"] for p in cell_files(results, "planA") if p["cell"]["label"] == "RF"]
    p = plan_json(results, "planB")
    same = group(p, "Breiman")  # planA's RF: same dataset, algorithm and parameters
    assert same["kind"] == "measured-other"
    assert same["seconds_per_cell"] == pytest.approx(statistics.median(walls))
    assert same["method"] == ("measured-other: median of 2 cells of planA with the same dataset, "
                              "algorithm and parameters")
    # 7 trees: planA's 5-tree cells, scaled linearly in trees
    seven = group(p, "RF 7")
    assert seven["kind"] == "measured-other" and seven["method"].endswith(
        "but other tree counts, scaled linearly in trees")
    assert seven["seconds_per_cell"] == pytest.approx(statistics.median(w * 7 / 5 for w in walls))
    assert group(p, "RF depth 3")["kind"] == "unknown"  # another depth: nobody measured that
    assert p["todo_by_kind"] == {"measured": 0, "measured-other": 4, "extrapolated": 0, "unknown": 2,
                                 "unavailable": 0}
    # once the group has cells of its own, they come first
    res = invoke("run", "planB", "--results-dir", results, "-q", "--no-render", "--algorithms", "RF 7")
    assert res.exit_code == 0, res.output
    own = [q["wall_seconds"] for q in cell_files(results, "planB")]
    seven = group(plan_json(results, "planB", "--seed", "1"), "RF 7")  # seed 1: all to compute
    assert seven["todo"] == 2 and seven["method"] == "cached: median of 2 cells"
    assert seven["seconds_per_cell"] == pytest.approx(statistics.median(own))


def test_fit_times_of_other_experiments_say_so(results):
    path = table_path(results, "planA", "smoke")
    pd.read_csv(path).drop(columns=["wall_seconds"]).to_csv(path, index=False)
    shutil.rmtree(results / "cache")
    same = group(plan_json(results, "planB"), "Breiman")
    assert same["kind"] == "measured-other" and same["method"].endswith("(fit only)")


def test_measured_other_needs_every_cell_to_compute_matched(results, monkeypatch):
    from dataclasses import replace

    from dpexp.experiments import plan as plan_mod
    from dpexp.experiments import timings
    from dpexp.experiments.catalog import resolve

    spec = resolve("planC").at_scale("smoke")
    # epsilon is not part of the setting: planA's epsilon-1 cells time epsilon 2's too
    spec = replace(spec, epsilons=(1.0, 2.0))
    (g,) = plan_mod.make_plan(spec, "smoke", results, calibrate_fits=False).groups
    assert g.kind == "measured-other" and g.todo == 4
    # a grid over the trees: the 4-tree cells take the 3-tree ones, scaled
    spec = replace(spec, algorithms=(replace(spec.algorithms[0], grid={"n_trees": [3, 4]}),))
    (g,) = plan_mod.make_plan(spec, "smoke", results, calibrate_fits=False).groups
    assert g.todo == 8 and g.method == (
        "measured-other: median of 2 cells of planA with the same dataset, algorithm and "
        "parameters (for 1 of 2 parameter settings: other tree counts, scaled linearly in trees)")
    # another depth is another setting, with any tree count
    deeper = replace(spec, algorithms=[replace(spec.algorithms[0], params={"n_trees": 3, "max_depth": 2})])
    (g,) = plan_mod.make_plan(deeper, "smoke", results, calibrate_fits=False).groups
    assert g.method == "unknown: not calibrated (--no-calibrate)"
    # without the scaling the 4-tree cells have no match: then the whole group has none
    monkeypatch.setattr(timings.Measurements, "other_trees", lambda self, setting: [])
    (g,) = plan_mod.make_plan(spec, "smoke", results, calibrate_fits=False).groups
    assert g.todo == 8 and g.method == "unknown: not calibrated (--no-calibrate)"


def test_each_experiment_is_read_once_per_plan(results, monkeypatch):
    from dpexp.experiments import timings

    reads = []
    original = timings.cached_times

    def counting(results_dir, experiment, scale):
        reads.append(experiment)
        return original(results_dir, experiment, scale)

    monkeypatch.setattr(timings, "cached_times", counting)
    assert invoke("plan", "--all", "--results-dir", results, "--no-calibrate").exit_code == 0
    assert sorted(reads) == ["planA", "planB", "planC"]


# ------------------------------------------------------------------ plan --all


def test_plan_all_prints_what_the_done_cells_took_and_the_totals(results):
    walls = [p["wall_seconds"] for p in cell_files(results, "planA")]
    out = plan_json(results, "--all", "--jobs", "2")
    assert [e["experiment"] for e in out["experiments"]] == ["planA", "planB", "planC"]
    a = out["experiments"][0]
    assert (a["cells"], a["cached"], a["todo"], a["done_timed"], a["done_fit_only"]) == (4, 4, 0, 4, 0)
    assert a["done_cell_seconds"] == pytest.approx(sum(walls))
    assert a["done_seconds"] == pytest.approx(sum(walls) / 2)
    t = out["total"]
    assert (t["experiments"], t["cells"], t["cached"], t["todo"]) == (3, 12, 4, 8)
    assert t["done_seconds"] == pytest.approx(sum(walls) / 2)
    assert t["total_seconds"] == pytest.approx(t["done_seconds"] + t["estimated_seconds"])
    assert t["todo_by_kind"] == {"measured": 0, "measured-other": 6, "extrapolated": 0, "unknown": 2,
                                 "unavailable": 0}
    assert out["skipped"] == []
    text = invoke("plan", "--all", "--results-dir", results, "--no-calibrate", "--jobs", "2")
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    row = next(line for line in lines if line.startswith("planB "))
    assert row.split()[1:4] == ["6", "0", "6"] and row.endswith("4 measured-other, 2 unknown")
    assert next(line for line in lines if line.startswith("all ")).split()[1:4] == ["12", "4", "8"]
    assert "measured: the 4 done cells took " in text.output and "(wall time of 4)" in text.output
    assert "not estimated: 2 cells (not calibrated (--no-calibrate))" in text.output


def test_plan_all_with_algorithms_skips_the_experiments_without_them(results):
    out = plan_json(results, "--all", "--algorithms", "Breiman")
    assert [e["experiment"] for e in out["experiments"]] == ["planB"]
    assert out["skipped"] == ["planA", "planC"] and out["total"]["cells"] == 2
    # a name matches a label or an algorithm; each experiment keeps those it has
    out = plan_json(results, "--all", "--algorithms", "breiman_rf,DP forest")
    assert [e["experiment"] for e in out["experiments"]] == ["planA", "planB", "planC"]
    assert [e["cells"] for e in out["experiments"]] == [4, 6, 2]
    text = invoke("plan", "--all", "--algorithms", "RF 7", "--results-dir", results, "--no-calibrate")
    assert text.exit_code == 0, text.output
    assert "skipped 2 experiment(s) without algorithm(s) RF 7: planA, planC" in text.output
    bad = invoke("plan", "--all", "--algorithms", "RF 7,nosuch", "--results-dir", results)
    assert bad.exit_code == 2 and "Unknown algorithm 'nosuch' in any experiment" in bad.output
    one = invoke("plan", "planC", "--algorithms", "RF 7", "--results-dir", results)
    assert one.exit_code == 2 and "Unknown algorithm 'RF 7' in planC" in one.output


# ------------------------------------------------------------------ single-threaded workers


def test_loky_workers_run_single_threaded(tmp_path, monkeypatch):
    import joblib

    from dpexp.experiments.backends import backend as _backend
    from dpexp.experiments.config import RunConfig

    def _threads() -> tuple[str | None, int]:
        # nested, so the workers get it by value: they cannot import this test module by
        # name (autorank installs a top-level package called `tests` that shadows ours)
        import os

        import numba

        return os.environ.get("NUMBA_NUM_THREADS"), numba.get_num_threads()

    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")  # a parent setting does not carry over
    with _backend(RunConfig(results_dir=tmp_path, jobs=2)):
        seen = joblib.Parallel()(joblib.delayed(_threads)() for _ in range(4))
    assert set(seen) == {("1", 1)}


def test_local_dask_workers_run_single_threaded():
    pytest.importorskip("dask.distributed")
    from dpexp.experiments.backends import THREAD_VARIABLES, dask_client

    def env() -> dict[str, str | None]:
        return {v: os.environ.get(v) for v in THREAD_VARIABLES}

    with dask_client(None, 2, single_threaded=True) as client:
        seen = client.run(env)
    assert len(seen) == 2 and all(set(e.values()) == {"1"} for e in seen.values())


def test_results_are_bit_identical_with_threaded_and_single_threaded_kernels(tmp_path, monkeypatch):
    """-j 1 in this process with every tree kernel forced onto numba's thread pool, against
    -j 2 workers of one thread each (the serial kernels): same keys, same numbers."""
    import numba

    from dpexp.trees import parallel

    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "planA.yaml").write_text(yaml.safe_dump({**BASE, "id": "planA", "algorithms": [RF5, DP],
                                                      "epsilons": [1.0, 3.0]}))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    for name in ("PARALLEL_MIN_WORK", "HIST_PARALLEL_MIN_WORK", "LEVEL_PARALLEL_MIN_WORK",
                 "PARTITION_PARALLEL_MIN_ROWS", "SPLIT_PARALLEL_MIN_CANDIDATES"):
        monkeypatch.setattr(parallel, name, 1)
    if numba.get_num_threads() < 2:
        pytest.skip("one core: no threaded kernels to compare with")
    tables = {}
    for jobs in ("1", "2"):
        r = tmp_path / f"r{jobs}"
        res = invoke("run", "planA", "--results-dir", r, "-q", "--no-render", "--jobs", jobs)
        assert res.exit_code == 0, res.output
        tables[jobs] = {p["key"]: sorted((row["metric"], row["step"] or 0, row["value"]) for row in p["rows"])
                        for p in cell_files(r, "planA")}
    assert len(tables["1"]) == 6 and tables["1"] == tables["2"]


def test_typical_time_counts_a_suspended_cell_at_its_groups_median(results, tmp_path):
    """``done_typical_seconds``: each group's done cells at the group's median time, so a
    cell that sat suspended (or on a loaded machine) does not inflate the campaign's time."""
    spec = {**BASE, "id": "planD", "algorithms": [DP], "cv": {"folds": 3}}
    specs = Path(os.environ["DPEXP_EXPERIMENTS_DIR"])
    (specs / "planD.yaml").write_text(yaml.safe_dump(spec))
    res = invoke("run", "planD", "--results-dir", results, "-q", "--no-render")
    assert res.exit_code == 0, res.output
    paths = sorted((results / "cache" / "planD").rglob("seed-*/*.json"))
    walls = [1.0, 2.0, 5000.0]  # the last one sat suspended for over an hour
    for path, wall in zip(paths, walls, strict=True):
        def timed(payload, wall=wall):
            payload["wall_seconds"] = wall
            for row in payload["rows"]:
                row["wall_seconds"] = wall

        rewrite_cached_cell(path, timed)
    d = plan_json(results, "planD", "--jobs", "1")
    assert d["done_cell_seconds"] == pytest.approx(sum(walls))
    assert d["done_typical_seconds"] == pytest.approx(3 * statistics.median(walls))
    text = invoke("plan", "planD", "--results-dir", results, "--no-calibrate")
    assert "at each group's median cell time" in text.output
