"""Results you can trust: seeds in the cell key, every cached cell visible, checks before
computing, the plan, spec files and the results schema (issue 17, issue 16 item 9).

A tiny spec (synthA, 300 rows, 2 folds, a 5-tree forest and the DP forest) keeps each run
to a few seconds.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import require_datasets, tiny_spec
from typer.testing import CliRunner

from dpexp.cli import app

TINY = tiny_spec("tiny")


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture()
def env(tmp_path, monkeypatch):
    """A DPEXP_EXPERIMENTS_DIR with the tiny spec, and results/figures dirs."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    return specs, tmp_path / "results", tmp_path / "figures"


def run_tiny(env, *extra, render=False):
    _, r, f = env
    return invoke("run", "tiny", "--results-dir", r, "--figures-dir", f, "-q",
                  *([] if render else ["--no-render"]), *extra)


def results_frame(env, *extra) -> tuple[pd.DataFrame, str]:
    res = invoke("results", "tiny", "--results-dir", env[1], *extra)
    assert res.exit_code == 0, res.output
    from io import StringIO

    return pd.read_csv(StringIO(res.stdout)), res.stderr


# ------------------------------------------------------------------ 1: the seed is in the cell


def test_two_seeds_give_two_cached_sets(env):
    first = run_tiny(env, "--seed", "0")
    assert first.exit_code == 0, first.output
    second = run_tiny(env, "--seed", "1")
    assert second.exit_code == 0, second.output
    # 2 folds x (2 epsilons for the DP forest + 1 for RF) = 6 cells per seed, none shared
    assert "6 computed, 0 from cache" in second.output
    cache = env[1] / "cache" / "tiny" / "smoke"
    assert len(list((cache / "seed-0").glob("*.json"))) == 6
    assert len(list((cache / "seed-1").glob("*.json"))) == 6
    frame, _ = results_frame(env)
    assert sorted(frame["seed"].unique()) == [0, 1]
    only1, _ = results_frame(env, "--seed", "1")
    assert set(only1["seed"]) == {1}
    # and the seeds give different numbers (the DP forest's noise differs)
    dp = frame[(frame.label == "DP forest") & (frame.metric == "accuracy")]
    assert dp.groupby("seed")["value"].apply(tuple).nunique() == 2


# ------------------------------------------------------------------ 2: every cached cell shows


def test_override_runs_are_visible_and_add_up(env):
    assert run_tiny(env, "--epsilons", "0.5").exit_code == 0
    union = pd.read_csv(env[1] / "tiny" / "results-smoke.csv")
    assert set(union["epsilon"]) == {0.5, math.inf}
    frame, note = results_frame(env)
    assert set(frame["epsilon"]) == {0.5, math.inf}
    assert "4 cached cells" in note and "4 cells of the tiny grid" in note  # eps 1 and 3 missing
    # a second override run adds to the union instead of replacing it
    assert run_tiny(env, "--epsilons", "2", "--dataset", "synthB").exit_code == 0
    union = pd.read_csv(env[1] / "tiny" / "results-smoke.csv")
    assert set(union["epsilon"]) == {0.5, 2.0, math.inf}
    assert set(union["dataset"]) == {"synthA", "synthB"}
    frame, _ = results_frame(env)
    assert len(frame) == len(union)
    narrowed, note = results_frame(env, "--dataset", "synthB", "--epsilons", "2")
    assert set(narrowed["dataset"]) == {"synthB"} and set(narrowed["epsilon"]) == {2.0, math.inf}
    assert "0 cells of the tiny grid" in note
    by_algo, _ = results_frame(env, "--algorithms", "RF")
    assert set(by_algo["label"]) == {"RF"}
    listing = json.loads(invoke("list", "--json", "--results-dir", env[1]).stdout)
    tiny = next(r for r in listing if r["id"] == "tiny")
    # 8 cells done, of which the 2 non-private ones are cells of the spec's own grid
    smoke = tiny["cells"]["smoke"]
    assert (smoke["done"], smoke["here"], smoke["grid"], smoke["outside"]) == (2, 6, 6, 6)
    assert smoke["text"] == "2 / 6 / 6 +6"


def test_render_shows_override_cells(env):
    res = run_tiny(env, "--epsilons", "0.5", render=True)
    assert res.exit_code == 0, res.output
    png = env[2] / "tiny" / "tiny-smoke.png"
    assert png.exists()
    again = invoke("render", "tiny", "--results-dir", env[1], "--figures-dir", env[2])
    assert again.exit_code == 0, again.output
    assert "Traceback" not in again.output
    md = (env[1] / "tiny" / "tiny-smoke.md").read_text()
    assert "0.5" in md


# ------------------------------------------------------------------ schema (issue 16 item 9)


def test_schema_columns_private_and_diagnostics(env):
    assert run_tiny(env, "--epsilons", "1").exit_code == 0
    frame, _ = results_frame(env)
    from dpexp.experiments.schema import RESULT_COLUMNS

    # the parameters as columns, after the schema's, sorted; None (empty) where absent
    assert list(frame.columns) == [*RESULT_COLUMNS, "p_n_estimators", "p_n_trees"]
    union = pd.read_csv(env[1] / "tiny" / "results-smoke.csv")
    assert list(union.columns) == list(frame.columns)
    dp = frame[frame.algorithm == "fletcher_forest"]
    rf = frame[frame.algorithm == "breiman_rf"]
    # synthA's domain is observed: the DP forest's rows are not DP, and say why (issue #38)
    assert not dp["private"].any() and not rf["private"].any()
    assert (rf["not_dp_reason"] == "non-private algorithm").all()
    assert (dp["not_dp_reason"] == "domain observed (not DP: domain from data: all 5 features)").all()
    assert frame["domain_source"].notna().all()
    from dpexp.experiments.noise import NO_NOISE, SEEDED_NOISE

    assert (dp["noise"] == SEEDED_NOISE).all() and (rf["noise"] == NO_NOISE).all()
    assert set(dp["metric_kind"]) == {"metric", "diagnostic"}  # the forest has diagnostics_
    assert set(dp[dp.metric == "accuracy"]["metric_kind"]) == {"metric"}
    assert (dp["p_n_trees"] == 3).all() and dp["p_n_estimators"].isna().all()
    assert (rf["p_n_estimators"] == 5).all() and rf["p_n_trees"].isna().all()
    assert all(json.loads(p)["n_trees"] == 3 for p in dp["params"])  # params is kept
    as_json = invoke("results", "tiny", "--results-dir", env[1], "--format", "json")
    records = json.loads(as_json.stdout)
    assert {(r["label"], r["p_n_trees"], r["p_n_estimators"]) for r in records} == {
        ("DP forest", 3, None), ("RF", None, 5)}


def test_param_columns_are_derived_from_params():
    from dpexp.experiments.cells import canonical_json
    from dpexp.experiments.results import with_param_columns
    from dpexp.experiments.schema import RESULT_COLUMNS

    params = [{"n_trees": 3, "rate": 0.5}, {"n_trees": 10, "split": "exp", "bins": None},
              {}, {"flag": True, "depths": [1, 2]}]
    frame = pd.DataFrame({c: [None] * 4 for c in RESULT_COLUMNS})
    frame["params"] = [canonical_json(p) for p in params]
    out = with_param_columns(frame)
    assert list(out.columns) == [*RESULT_COLUMNS, "p_bins", "p_depths", "p_flag", "p_n_trees",
                                 "p_rate", "p_split"]
    assert out["p_n_trees"].tolist() == [3, 10, None, None]  # ints stay ints, absent is None
    assert type(out["p_n_trees"].iloc[0]) is int
    assert out["p_rate"].tolist() == [0.5, None, None, None]
    assert out["p_split"].tolist() == [None, "exp", None, None]
    assert out["p_flag"].tolist() == [None, None, None, True]
    assert out["p_depths"].iloc[3] == [1, 2]
    assert out["params"].tolist() == frame["params"].tolist()
    assert with_param_columns(out).equals(out)  # derived again, not doubled
    stale = out.assign(p_gone=1)
    assert "p_gone" not in with_param_columns(stale)
    empty = pd.DataFrame(columns=RESULT_COLUMNS)
    assert list(with_param_columns(empty).columns) == RESULT_COLUMNS


def test_param_columns_of_repeated_and_missing_params():
    """Rows sharing a params text share its values; a row without params has None."""
    from dpexp.experiments.results import with_param_columns
    from dpexp.experiments.schema import RESULT_COLUMNS

    frame = pd.DataFrame({c: [None] * 5 for c in RESULT_COLUMNS})
    frame["params"] = ['{"d":[1,2],"n":3}', None, '{"n":4}', '{"d":[1,2],"n":3}', '{"n":4}']
    out = with_param_columns(frame)
    assert out["p_n"].tolist() == [3, None, 4, 3, 4]
    assert out["p_d"].tolist() == [[1, 2], None, None, [1, 2], None]
    assert out.index.equals(frame.index)


def test_cell_columns_are_the_row_key_and_the_seeds_leave_out_who_asked():
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.cells import expand
    from dpexp.experiments.schema import (
        CELL_COLUMNS,
        PARAM_PREFIX,
        REPLICATE_COLUMNS,
        RESULT_COLUMNS,
        RUN_COLUMNS,
        cell_columns,
    )

    cell = expand(resolve("fig2").at_scale("smoke"), "smoke", 0)[0]
    # a table's row key is the cell columns and the dataset's registry fingerprint
    assert set(json.loads(cell.view_key)) == set(CELL_COLUMNS) | {"data"}
    # the seeds and the cache identity: what determines the numbers, not who asked
    content = {"dataset", "max_rows", "cv", "fold", "repeat", "algorithm", "params", "epsilon", "seed"}
    assert set(json.loads(cell.seed_key)) == content
    assert set(json.loads(cell.key)) == content | {"data"}
    assert json.loads(cell.key)["data"] == cell.data_version != ""
    assert "data_version" in RESULT_COLUMNS
    assert [c for c in RESULT_COLUMNS if c in CELL_COLUMNS] == CELL_COLUMNS
    assert set(REPLICATE_COLUMNS) | set(RUN_COLUMNS) <= set(CELL_COLUMNS)
    assert not any(c.startswith(PARAM_PREFIX) for c in RESULT_COLUMNS)
    assert cell_columns(without=REPLICATE_COLUMNS) == [c for c in CELL_COLUMNS if c not in REPLICATE_COLUMNS]
    with pytest.raises(ValueError, match="not cell columns"):
        cell_columns(without=["metric"])


def test_not_dp_fit_has_no_epsilon_spent(env, monkeypatch):
    import dpexp.registry as registry

    monkeypatch.setattr(registry, "EXTRA_PAPERS", ["overspending_algorithms"])
    res = run_tiny(env, "--algorithms", "fletcher_forest", "--epsilons", "1")
    assert res.exit_code == 0
    spec = {**TINY, "id": "notdp", "algorithms": [{"name": "marks_not_dp"}]}
    (env[0] / "notdp.yaml").write_text(yaml.safe_dump(spec))
    res = invoke("run", "notdp", "--results-dir", env[1], "--no-render", "-q")
    assert res.exit_code == 0, res.output
    table = pd.read_csv(env[1] / "notdp" / "results-smoke.csv")
    assert not table["private"].any()
    assert table["epsilon_spent"].isna().all()
    assert (table["not_dp_reason"] == "test: a leaf rule that is not DP; domain observed "
                                      "(not DP: domain from data: all 5 features)").all()


# ------------------------------------------------------------------ 3: timing without compilation

TIMING = {
    "id": "timing", "paper": "test", "artefact": "Table 2", "kind": "table", "caption": "c",
    "datasets": ["adult"],
    "algorithms": [{"name": "dpboost", "label": "DPBoost",
                    "params": {"max_depth": 6, "learning_rate": 0.01, "reg_lambda": 0.1,
                               "binning": "domain", "n_trees": 20, "trees_per_ensemble": 5}}],
    "epsilons": [20], "cv": {"folds": 4}, "metrics": ["error"],
    "scales": {"smoke": {"max_rows": 2000}},
}


def test_first_fold_is_not_a_timing_outlier(tmp_path):
    """A fresh process (no compiled kernels in memory) times fold 0 like the others."""
    require_datasets(*TIMING["datasets"])  # a subprocess: the in-process download guard misses it
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "timing.yaml").write_text(yaml.safe_dump(TIMING))
    env = {**os.environ, "DPEXP_EXPERIMENTS_DIR": str(specs)}
    res = subprocess.run([sys.executable, "-m", "dpexp.cli", "run", "timing", "--results-dir",
                          str(tmp_path / "r"), "--no-render", "-q"], env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    t = pd.read_csv(tmp_path / "r" / "timing" / "results-smoke.csv")
    per_tree = t[t.metric == "seconds_per_tree"].set_index("fold")["value"]
    others = per_tree.drop(0)
    # without the warm-up fold 0 carried numba's compilation: 10-1000x the others
    assert per_tree[0] < 3 * others.median(), per_tree.to_dict()


# ------------------------------------------------------------------ 5: optional dependencies


@pytest.fixture()
def optional_env(env, monkeypatch):
    import dpexp.registry as registry

    monkeypatch.setattr(registry, "EXTRA_PAPERS", ["overspending_algorithms"])
    # as if an extra of dpexp's metadata provided the missing package (its hint then has brackets)
    monkeypatch.setattr(registry, "extra_providing",
                        lambda package: ("peers", package.replace("_", "-")))
    spec = {**TINY, "id": "optional",
            "algorithms": [*TINY["algorithms"], {"name": "needs_missing_package", "label": "peer"}]}
    (env[0] / "optional.yaml").write_text(yaml.safe_dump(spec))
    return env


def test_missing_optional_algorithm_is_skipped_with_a_note(optional_env):
    res = invoke("run", "optional", "--results-dir", optional_env[1], "--no-render", "-q")
    assert res.exit_code == 0, res.output
    assert "skipped peer (needs_missing_package) needs the optional package dpexp_no_such_optional_package" in res.output
    assert 'pip install "dpexp[peers]"' in res.output  # brackets survive rich's markup
    table = pd.read_csv(optional_env[1] / "optional" / "results-smoke.csv")
    assert set(table["algorithm"]) == {"fletcher_forest", "breiman_rf"}


def test_require_optional_fails_before_computing(optional_env):
    res = invoke("run", "optional", "--results-dir", optional_env[1], "--no-render", "--require-optional")
    assert res.exit_code == 2 and "dpexp_no_such_optional_package" in res.output
    assert "Traceback" not in res.output
    assert not (optional_env[1] / "cache").exists()


def test_error_messages_keep_brackets():
    from dpexp.cli import guarded
    from dpexp.errors import DpexpError

    @guarded
    def fails():
        raise DpexpError("needs pip install 'dpexp[peers]'")

    import typer

    app2 = typer.Typer()
    app2.command()(fails)
    res = CliRunner().invoke(app2, [])
    assert "pip install 'dpexp[peers]'" in res.output


# ------------------------------------------------------------------ 6: unusable output dirs


def test_results_dir_that_is_a_file_fails_before_computing(env):
    specs, r, f = env
    r.parent.mkdir(parents=True, exist_ok=True)
    r.write_text("not a directory")
    res = invoke("run", "tiny", "--results-dir", r, "--figures-dir", f)
    assert res.exit_code == 2 and "is a file, not a directory" in res.output
    assert "Traceback" not in res.output


def test_figures_dir_that_is_a_file_fails_before_computing(env):
    specs, r, f = env
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("not a directory")
    res = invoke("run", "tiny", "--results-dir", r, "--figures-dir", f)
    assert res.exit_code == 2 and "figures directory" in res.output
    assert not (r / "cache").exists()  # nothing computed


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes to read-only dirs")
def test_read_only_results_dir_fails_before_computing(env):
    specs, r, f = env
    r.mkdir(parents=True)
    r.chmod(0o555)
    try:
        res = invoke("run", "tiny", "--results-dir", r, "--figures-dir", f)
    finally:
        r.chmod(0o755)
    assert res.exit_code == 2 and "not writable" in res.output
    assert not (r / "cache").exists()


# ------------------------------------------------------------------ 7: option checks


@pytest.mark.parametrize(("args", "needle"), [
    (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --backend dask"),
    (["--epsilons", "1,,2"], "empty item"),
    (["--epsilons", "1,"], "empty item"),
    (["--algorithms", ","], "empty value"),
])
def test_bad_run_options(env, args, needle):
    res = run_tiny(env, *args)
    assert res.exit_code == 2 and needle in res.output
    assert not (env[1] / "cache").exists()


def test_interrupt_advice_after_force(env, monkeypatch):
    import dpexp.experiments.runner as runner

    def interrupted(spec, cfg):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_experiment", interrupted)
    res = run_tiny(env, "--force")
    assert res.exit_code == 130 and "run the same command without --force to resume" in res.output
    res = run_tiny(env)
    assert "run the same command to resume" in res.output


# ------------------------------------------------------------------ 9: plan


def test_plan_counts_and_estimates(env):
    res = invoke("plan", "tiny", "--results-dir", env[1], "--json")
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert (plan["cells"], plan["cached"], plan["todo"]) == (6, 0, 6)
    assert plan["estimated_seconds"] > 0 and plan["unestimated_cells"] == 0
    assert all(g["method"].startswith("calibrated") for g in plan["groups"])
    assert run_tiny(env, "--epsilons", "1").exit_code == 0
    plan = json.loads(invoke("plan", "tiny", "--results-dir", env[1], "--json").stdout)
    assert (plan["cached"], plan["todo"]) == (4, 2)
    dp = next(g for g in plan["groups"] if g["label"] == "DP forest")
    assert dp["method"] == "cached: median of 2 cells" and dp["todo"] == 2
    text = invoke("plan", "tiny", "--results-dir", env[1])
    assert "6 cells, 4 cached, 2 to compute" in text.output and "slowest: synthA / DP forest" in text.output
    assert invoke("plan", "--results-dir", env[1]).exit_code == 2


# ------------------------------------------------------------------ 10: spec files


def test_run_a_spec_file_and_user_specs_add_to_builtin(env, tmp_path):
    specs, r, _ = env
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "tinyfile.yaml").write_text(yaml.safe_dump({**TINY, "id": "tinyfile"}))
    res = invoke("run", other / "tinyfile.yaml", "--results-dir", r, "--no-render", "-q", "--epsilons", "1")
    assert res.exit_code == 0, res.output
    assert (r / "tinyfile" / "results-smoke.csv").exists()
    assert invoke("show", "quickstart").exit_code == 0  # built-ins still there
    assert invoke("show", "tiny").exit_code == 0


def test_a_broken_user_spec_breaks_only_itself(env):
    specs, r, _ = env
    (specs / "broken.yaml").write_text("id: broken\nkind: [unclosed\n")
    listing = invoke("list", "--json", "--results-dir", r)
    assert listing.exit_code == 0
    ids = {row["id"] for row in json.loads(listing.stdout)}
    assert {"quickstart", "tiny", "broken"} <= ids
    res = invoke("run", "broken", "--results-dir", r)
    assert res.exit_code == 2 and "broken.yaml" in res.output and "Traceback" not in res.output
    assert run_tiny(env, "--epsilons", "1").exit_code == 0


def test_user_spec_cannot_shadow_a_builtin(env):
    specs, r, _ = env
    (specs / "quickstart.yaml").write_text(yaml.safe_dump({**TINY, "id": "quickstart"}))
    res = invoke("show", "quickstart")
    assert res.exit_code == 0 and "experiments/quickstart.yaml" in res.output
    listing = invoke("list", "--results-dir", r)
    assert "already used by" in listing.output


# ------------------------------------------------------------------ 11: version, help, list


def test_version_and_help_texts():
    import dpexp

    res = invoke("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"dpexp {dpexp.__version__}"
    for cmd in ("run", "results", "render", "plan", "list"):
        text = invoke(cmd, "--help").output
        assert " ." not in text, cmd
    assert "default: results/" in invoke("run", "--help").output


def test_list_fits_80_columns():
    env = {**os.environ, "COLUMNS": "80"}
    res = subprocess.run([sys.executable, "-m", "dpexp.cli", "list"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) > 10 and max(len(x) for x in lines) <= 80


# ------------------------------------------------------------------ metrics on declared classes


def test_metrics_use_the_declared_classes():
    from dpexp.experiments.metrics import METRICS, Evaluation

    class TwoClassModel:
        classes_ = np.array([0, 1])

        def predict(self, X):
            return np.zeros(len(X), dtype=int)

        def predict_proba(self, X):
            return np.tile([0.7, 0.3], (len(X), 1))

    y_test = np.array([0, 1, 2, 2, 0])  # class 2 is absent from the training fold
    ev = Evaluation(TwoClassModel(), np.zeros((5, 1)), y_test, np.array([0, 1, 1]),
                    classes=np.array([0, 1, 2]))
    assert ev.proba_on_label_set().shape == (5, 3)
    assert np.allclose(ev.proba_on_label_set()[:, 2], 0.0)
    assert math.isfinite(METRICS["auc"](ev))
    assert METRICS["accuracy"](ev) == pytest.approx(0.4)


def test_make_estimator_gets_the_declared_classes():
    from dpexp.registry import make_estimator

    est = make_estimator("fletcher_forest", "classification", {}, epsilon=1.0, random_state=0,
                         public={"classes": np.array([0, 1, 2])})
    assert list(est.get_params()["classes"]) == [0, 1, 2]


# ------------------------------------------------------------------ issue 18: procedure flags


def test_formula_procedures_load_no_data(tmp_path, monkeypatch):
    """needs_data=False (Fletcher Table 2's formulas): the runner loads and splits nothing."""
    import dpexp.experiments.execute as runner

    def no_loading(*args, **kwargs):
        raise AssertionError("a formula-only procedure loaded its dataset")

    monkeypatch.setattr(runner, "load_for_cell", no_loading)
    res = invoke("run", "fletcher-table2", "--results-dir", tmp_path, "--no-render", "-q")
    assert res.exit_code == 0, res.output
    table = pd.read_csv(tmp_path / "fletcher-table2" / "results-smoke.csv")
    assert table["n_train"].isna().all() and not table["private"].any()


def test_a_changed_dataset_entry_invalidates_its_cells_but_not_their_seeds(tmp_path):
    """A cell cached under one version of a dataset's registry entry (say, a synthetic
    generator's class_sep) is not reused once the entry changes; the random streams are
    the same (the seed key has no data version), so unchanged data give the same numbers."""
    import dataclasses

    from dpexp.datasets.registry import load_registry
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.cells import expand
    from dpexp.experiments.committed import row_key

    info = load_registry()["synthA"]
    changed = dataclasses.replace(info, options={**info.options, "class_sep": 9.0})
    assert changed.data_version != info.data_version
    assert dataclasses.replace(info, description="other words").data_version == info.data_version

    cell = expand(resolve("fletcher-fig11").at_scale("smoke"), "smoke", 0)[0]
    moved = dataclasses.replace(cell, data_version=changed.data_version)
    assert moved.key != cell.key and moved.digest != cell.digest
    assert moved.seed_key == cell.seed_key
    row = {**cell.to_dict(), "dataset": cell.dataset.key, "params": json.dumps(cell.params),
           "epsilon": cell.epsilon}
    assert row_key(row) == cell.view_key
    assert "data" not in json.loads(row_key({**row, "data_version": ""}))  # a legacy row


def test_cells_of_an_earlier_version_of_a_series_are_left_out(env):
    """A spec whose series changed its parameters (here the DP forest's n_trees) leaves the
    old cells in the cache; render, report and the committed table show only the current
    series under that label, while `dpexp results` still lists every cached cell."""
    assert run_tiny(env).exit_code == 0
    specs, results, _ = env
    changed = yaml.safe_load((specs / "tiny.yaml").read_text())
    dp = next(a for a in changed["algorithms"] if a["label"] == "DP forest")
    dp.setdefault("params", {})["n_trees"] = 7
    changed.get("scales", {}).get("smoke", {}).get("params", {}).pop("n_trees", None)
    (specs / "tiny.yaml").write_text(yaml.safe_dump(changed))
    assert run_tiny(env).exit_code == 0

    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.results import cached_results

    spec = resolve("tiny")
    everything = cached_results(spec, "smoke", results)
    current = cached_results(spec, "smoke", results, current_only=True)
    trees = lambda f: set(f.loc[f.label == "DP forest", "p_n_trees"])  # noqa: E731
    assert len(trees(everything.frame)) == 2
    assert trees(current.frame) == {7}
    assert set(current.frame.loc[current.frame.label == "RF", "label"]) == {"RF"}
    union = pd.read_csv(results / "tiny" / "results-smoke.csv")
    assert set(union.loc[union.label == "DP forest", "params"].map(lambda p: json.loads(p)["n_trees"])) == {7}
