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

PEER = Path(__file__).resolve().parents[2] / "bench" / "peers" / "dpboost_original.py"


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
    from dpexp.experiments.results import cached_results
    from dpexp.experiments.spec import resolve

    spec = resolve("fig2").at_scale("smoke")
    frame = cached_results(spec, "smoke", results).frame
    peer_rows = frame[frame["algorithm"] == "dpboost_original"]
    assert set(peer_rows["label"]) == {"DPBoost (original, paper)", "DPBoost (original, authors)"}
    assert len(peer_rows) == 2 * spec.cv.folds  # one error row per setting and fold
    assert not peer_rows["private"].any() and peer_rows["epsilon_spent"].isna().all()
    errors = peer_rows["value"].to_numpy(float)
    assert np.all((errors > 0.0) & (errors < 0.5)), errors
    # the same rows and folds as dpexp's own cells
    from dpexp.experiments.runner import load_for_cell, split_indices

    adult = next(d for d in spec.datasets if d.name == "adult")
    ds = load_for_cell(adult, spec.max_rows("smoke"), 0, None)
    _, te = split_indices(ds, spec.cv, 0, 0, 0)
    assert set(peer_rows[peer_rows["fold"] == 0]["n_test"]) == {len(te)}
    # the fork's settings are in the cell's params, and each row's key (what the committed
    # table is read back by) is its cell's: a fresh clone sees the cell once, not twice
    from dpexp.experiments.committed import row_key
    from dpexp.experiments.results import read_cells

    payloads = [p for p in read_cells(results, spec.id, "smoke")
                if p["cell"]["algorithm"] == "dpboost_original"]
    assert len(payloads) == 2 * spec.cv.folds
    for p in payloads:
        assert {row_key(r) for r in p["rows"]} == {p["key"]}
        assert p["cell"]["data_version"] and p["rows"][0]["data_version"] == p["cell"]["data_version"]
        fork = p["cell"]["params"]["fork"]
        assert "total_budget" not in fork  # the budget is the cell's epsilon
        assert fork["learning_rate"] == (0.01 if p["cell"]["params"]["setting"] == "paper" else 0.1)
