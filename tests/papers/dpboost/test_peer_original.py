"""The DPBoost-original peer script (bench/peers/dpboost_original.py).

The authors' fork is not built in the test suite; the pipeline is checked with the stock
LightGBM of the test environment standing in for it (same Python API, it warns about and
ignores the fork's DP parameters), so what is tested is dpexp's side: folds, labels,
metrics, cells in the results schema, and that ``dpexp results`` shows the peer column.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

PEER = Path(__file__).resolve().parents[3] / "bench" / "peers" / "dpboost_original.py"


@pytest.fixture(scope="module")
def peer():
    spec = importlib.util.spec_from_file_location("dpboost_original_peer", PEER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_settings_follow_the_paper_and_the_authors_scripts(peer):
    paper = peer.fork_params("paper", "classification", 1.0, 50)
    assert (paper["objective"], paper["learning_rate"], paper["boost_from_average"]) == (
        "regression", 0.01, False)
    authors = peer.fork_params("authors", "classification", 4.0, 50)
    assert (authors["objective"], authors["learning_rate"], authors["num_leaves"],
            authors["bagging_fraction"], authors["total_budget"]) == ("binary", 0.1, 31, 0.5, 4.0)
    # both settings switch on the fork's DPBoost partition and filtering (its Bagging())
    assert all((peer.fork_params(s, "classification", 1.0, 50)["bagging_freq"],
                peer.fork_params(s, "classification", 1.0, 50)["bagging_fraction"]) == (1, 0.5)
               for s in ("paper", "authors"))
    # regression with the authors' script boosts from the label mean (LightGBM's default)
    assert "boost_from_average" not in peer.fork_params("authors", "regression", 1.0, 50)
    assert peer.branch_for("authors", "classification") == "bin"
    assert peer.branch_for("paper", "classification") == "reg"
    assert "logistic hessians" in peer.not_dp_reason("authors", "classification")
    assert "label mean" in peer.not_dp_reason("authors", "regression")
    assert "hessian" not in peer.not_dp_reason("paper", "classification")
    with pytest.raises(ValueError, match="setting"):
        peer.fork_params("other", "classification", 1.0, 50)


def test_runs_on_dpexp_folds_and_writes_cells_render_shows(peer, tmp_path, monkeypatch):
    pytest.importorskip("lightgbm")
    root = tmp_path / "original"
    for branch in ("bin", "reg"):
        (root / branch / "python-package").mkdir(parents=True)
    results = tmp_path / "results"
    code = peer.main([
        "fig2", "--original", str(root), "--python", sys.executable, "--dataset", "adult",
        "--setting", "paper", "--setting", "authors", "--epsilons", "1",
        "--results-dir", str(results),
    ])
    assert code == 0
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.results import cached_results

    spec = resolve("fig2").at_scale("smoke")
    frame = cached_results(spec, "smoke", results).frame
    peer_rows = frame[frame["algorithm"] == "dpboost_original"]
    assert set(peer_rows["label"]) == {"DPBoost (original, paper)", "DPBoost (original, authors)"}
    assert len(peer_rows) == 2 * spec.cv.folds  # one error row per setting and fold
    assert not peer_rows["private"].any() and peer_rows["epsilon_spent"].isna().all()
    # written through the results layer: the runner's schema, its wall time included
    from dpexp.experiments.noise import PEER_NOISE

    assert (peer_rows["wall_seconds"] >= peer_rows["fit_seconds"]).all()
    assert set(peer_rows["noise"]) == {PEER_NOISE}
    errors = peer_rows["value"].to_numpy(float)
    assert np.all((errors > 0.0) & (errors < 0.5)), errors
    # the same rows and folds as dpexp's own cells
    from dpexp.experiments.execute import load_for_cell, split_indices

    adult = next(d for d in spec.datasets if d.name == "adult")
    ds = load_for_cell(adult, spec.max_rows("smoke"), 0, None)
    _, te = split_indices(ds, spec.cv, 0, 0, 0)
    assert set(peer_rows[peer_rows["fold"] == 0]["n_test"]) == {len(te)}
    # the fork's settings are in the cell's params, and a cell's rows share one row key
    # (what the committed table is read back by): a fresh clone sees the cell once, not twice
    from dpexp.experiments.committed import row_key
    from dpexp.experiments.results import read_cells

    payloads = [p for p in read_cells(results, spec.id, "smoke")
                if p["cell"]["algorithm"] == "dpboost_original"]
    assert len(payloads) == 2 * spec.cv.folds
    for p in payloads:
        assert len({row_key(r) for r in p["rows"]}) == 1  # one cell, one row key
        assert p["cell"]["data_version"] and p["rows"][0]["data_version"] == p["cell"]["data_version"]
        fork = p["cell"]["params"]["fork"]
        assert "total_budget" not in fork  # the budget is the cell's epsilon
        assert fork["learning_rate"] == (0.01 if p["cell"]["params"]["setting"] == "paper" else 0.1)


@pytest.mark.skipif(not all(__import__("shutil").which(t) for t in ("git", "cmake", "make", "tar")),
                    reason="needs git, cmake, make and tar")
def test_build_exports_both_branches_and_builds_them(peer, tmp_path):
    """``--build`` from a bare mirror: each branch exported and built with CMake into its
    folder (a stand-in repository whose ``_lightgbm`` target writes the library), the
    venv checked to import each branch's package; a second build keeps what exists."""
    import subprocess

    work = tmp_path / "work"
    work.mkdir()
    git = ["git", "-C", str(work), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", "-b", "master", str(work)], check=True)
    for branch in ("master", "binary-classification"):
        if branch != "master":
            subprocess.run([*git, "checkout", "-q", "-b", branch], check=True)
        (work / "python-package" / "lightgbm").mkdir(parents=True, exist_ok=True)
        (work / "python-package" / "lightgbm" / "__init__.py").write_text(f"BRANCH = {branch!r}\n")
        (work / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.5)\nproject(stand_in NONE)\n"
            "add_custom_target(_lightgbm COMMAND ${CMAKE_COMMAND} -E touch "
            "${CMAKE_SOURCE_DIR}/lib_lightgbm.so)\n")
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", branch], check=True)
    mirror = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(work), str(mirror)], check=True)
    root = tmp_path / "root"
    (root / "venv" / "bin").mkdir(parents=True)
    (root / "venv" / "bin" / "python").symlink_to(sys.executable)
    said: list[str] = []
    peer.build_original(str(mirror), root, jobs=1, log=said.append)
    assert (root / "bin" / "lib_lightgbm.so").exists() and (root / "reg" / "lib_lightgbm.so").exists()
    assert "binary-classification" in (root / "bin" / "python-package" / "lightgbm" / "__init__.py").read_text()
    assert "master" in (root / "reg" / "python-package" / "lightgbm" / "__init__.py").read_text()
    said.clear()
    peer.build_original(str(mirror), root, jobs=1, log=said.append)
    assert sum("already built" in s for s in said) == 2


def test_ensembles_split_the_forks_budget_as_the_spec_says(peer):
    fig3 = peer.fork_params("paper", "classification", 500.0, 5000, 50)
    assert (fig3["high_level_boost_round"], fig3["inner_boost_round"], fig3["total_budget"]) == (100, 50, 500.0)
    # one ensemble by default, and never more trees per ensemble than trees
    assert peer.fork_params("paper", "regression", 1.0, 50)["high_level_boost_round"] == 1
    assert peer.fork_params("paper", "regression", 1.0, 5, 50)["inner_boost_round"] == 5
    assert peer.staged_steps(5000)[:3] == [1, 50, 100] and peer.staged_steps(5000)[-1] == 5000
    assert peer.staged_steps(20) == list(range(1, 21))


def test_driver_staged_scores_are_the_boosters_partial_predictions():
    lgb = pytest.importorskip("lightgbm")
    spec = importlib.util.spec_from_file_location("dpboost_driver", PEER.with_name("dpboost_original_driver.py"))
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(float)
    booster = lgb.train({"objective": "regression", "num_leaves": 7, "verbose": -1},
                        lgb.Dataset(X, y), num_boost_round=12)
    raw = booster.predict(X[:50], raw_score=True)
    staged = driver.staged_scores(booster, X[:50], [1, 5, 12], raw)
    for row, k in zip(staged, (1, 5, 12), strict=True):
        np.testing.assert_allclose(row, booster.predict(X[:50], raw_score=True, num_iteration=k), atol=1e-12)


def test_shards_split_the_cells_between_processes(peer, tmp_path):
    """``--shard K/N``: N processes share one grid, each cell computed by one of them."""
    pytest.importorskip("lightgbm")
    root = tmp_path / "original"
    for branch in ("bin", "reg"):
        (root / branch / "python-package").mkdir(parents=True)
    results = tmp_path / "results"
    args = ["fig2", "--original", str(root), "--python", sys.executable, "--dataset", "adult",
            "--setting", "paper", "--setting", "authors", "--epsilons", "1",
            "--results-dir", str(results)]
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.results import read_cells

    folds = resolve("fig2").at_scale("smoke").cv.folds

    def peer_cells():
        return [p for p in read_cells(results, "dpboost-fig2", "smoke")
                if p["cell"]["algorithm"] == "dpboost_original"]

    assert peer.main([*args, "--shard", "2/2"]) == 0
    assert len(peer_cells()) == folds  # every second of the 2 x folds cells
    assert peer.main([*args, "--shard", "1/2"]) == 0
    assert len(peer_cells()) == 2 * folds
    for bad in ("0/2", "3/2", "1", "a/b", "0/0"):
        with pytest.raises(SystemExit):
            peer.main([*args, "--shard", bad])
