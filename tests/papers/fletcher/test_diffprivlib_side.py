"""diffprivlib_rf through the side environment (``dpexp peers setup diffprivlib``).

diffprivlib is random, so the side-environment fit is checked by what must hold whatever
the noise: with a huge epsilon it learns a separable problem, ``predict_proba`` rows sum to
1 over the declared classes, one seed gives bit-identical trees, and dpexp's evaluation of
the returned arrays equals diffprivlib's own ``predict_proba``. Those tests skip without
the side environment (fail under ``DPEXP_TEST_REQUIRE_PEERS=1``, as ``.ci/run`` sets); the
error paths and the availability logic run everywhere.
"""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest
from conftest import require_side_env
from typer.testing import CliRunner

from dpexp import registry, side_envs
from dpexp.cli import app
from dpexp.errors import DpexpError
from dpexp.experiments.environment import optional_unavailable
from dpexp.papers.fletcher import comparators
from dpexp.papers.fletcher.comparators import DiffprivlibForestClassifier
from dpexp.papers.fletcher.diffprivlib_side import SideForest, fit_in_side_env, stop_workers
from dpexp.privacy.randomness import seeded_noise

CLASSES = np.array(["no", "yes", "other"])  # "other" never occurs in y: still a column


@pytest.fixture()
def side_only(monkeypatch):
    """The side path even where diffprivlib imports in this process; workers stopped after."""
    monkeypatch.setattr(comparators, "_in_process_forest", lambda: (None, "forced by the test"))
    yield
    stop_workers()


def _separable(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 1))  # one feature: every random split of diffprivlib's trees is on it
    return X, np.where(X[:, 0] > 0.5, "yes", "no")


def _forest(seed: int = 7, **kw) -> DiffprivlibForestClassifier:
    params = {"epsilon": 1e6, "n_trees": 10, "max_depth": 5, "feature_domain": [[0.0, 1.0]],
              "classes": CLASSES, **kw}
    return DiffprivlibForestClassifier(noise_rng=seeded_noise(seed), **params)


# ------------------------------------------------------------- with the side environment


def test_side_fit_learns_a_separable_problem(side_only):
    require_side_env("diffprivlib")
    X, y = _separable()
    est = _forest().fit(X, y)
    assert est.side_env_ and isinstance(est.forest_, SideForest)
    assert list(est.classes_) == sorted(CLASSES)
    proba = est.predict_proba(X)
    assert proba.shape == (X.shape[0], CLASSES.size)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(est.predict(X)) <= set(CLASSES)
    assert np.mean(est.predict(X) == y) > 0.9
    assert est.accountant_.epsilon_spent == pytest.approx(1e6)


def test_one_seed_gives_bit_identical_trees(side_only):
    require_side_env("diffprivlib")
    X, y = _separable()
    a, b, c = _forest(7).fit(X, y), _forest(7).fit(X, y), _forest(8).fit(X, y)
    for name in ("roots", "children_left", "children_right", "feature", "threshold", "value"):
        assert np.array_equal(getattr(a.forest_, name), getattr(b.forest_, name)), name
    assert not np.array_equal(a.forest_.threshold, c.forest_.threshold)


def test_evaluation_here_equals_diffprivlib_predict_proba(side_only):
    python = require_side_env("diffprivlib")
    rng = np.random.default_rng(1)
    X = rng.random((300, 3))
    y = (X[:, 1] > 0.3).astype(np.int64)
    check = rng.random((500, 3)) * 1.4 - 0.2  # also outside the bounds
    forest, theirs = fit_in_side_env(python, X, y, n_classes=2, lows=np.zeros(3),
                                     highs=np.ones(3), epsilon=2.0, n_estimators=10,
                                     max_depth=4, seed=11, X_check=check)
    assert forest.n_trees == 10
    assert np.array_equal(forest.predict_proba(check), theirs)


def test_fitted_model_pickles_and_predicts_without_the_side_env(side_only, monkeypatch):
    require_side_env("diffprivlib")
    X, y = _separable()
    est = _forest().fit(X, y)
    stop_workers()
    monkeypatch.setenv("DPEXP_DIFFPRIVLIB_PYTHON", "/nonexistent/python")
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.predict_proba(X), est.predict_proba(X))


def test_a_worker_error_is_one_line(side_only):
    python = require_side_env("diffprivlib")
    X, y = _separable()
    with pytest.raises(DpexpError, match="diffprivlib side environment .*n_estimators"):
        fit_in_side_env(python, X, (y == "yes").astype(int), n_classes=2, lows=np.zeros(1),
                        highs=np.ones(1), epsilon=1.0, n_estimators=0, max_depth=2, seed=1)
    # the worker survives a failed request
    fit_in_side_env(python, X, (y == "yes").astype(int), n_classes=2, lows=np.zeros(1),
                    highs=np.ones(1), epsilon=1.0, n_estimators=1, max_depth=2, seed=1)


def test_a_fit_over_its_timeout_stops_the_worker(side_only):
    python = require_side_env("diffprivlib")
    X, y = _separable(3000)
    args = {"n_classes": 2, "lows": np.zeros(1), "highs": np.ones(1), "epsilon": 1.0,
            "n_estimators": 50, "max_depth": 10, "seed": 1}
    with pytest.raises(DpexpError, match="took over"):
        fit_in_side_env(python, X, (y == "yes").astype(int), timeout=1e-4, **args)
    forest, _ = fit_in_side_env(python, X, (y == "yes").astype(int), **args)  # a fresh worker
    assert forest.n_trees == 50


# ----------------------------------------------------------------------- everywhere


def test_an_interpreter_without_diffprivlib_is_a_clear_error(side_only, monkeypatch):
    # dpexp's own interpreter: diffprivlib 0.6 does not import next to scikit-learn >= 1.6
    if registry.import_failure("diffprivlib") is None:
        pytest.skip("diffprivlib imports in this interpreter")
    monkeypatch.setenv("DPEXP_DIFFPRIVLIB_PYTHON", sys.executable)
    X, y = _separable(50)
    with pytest.raises(DpexpError, match=r"stopped \(exit 1\): .*Error"):
        _forest().fit(X, y)


def test_without_any_diffprivlib_the_error_says_how_to_get_it(side_only, monkeypatch, tmp_path):
    monkeypatch.delenv("DPEXP_DIFFPRIVLIB_PYTHON", raising=False)
    monkeypatch.setattr(side_envs, "peers_dir", lambda: tmp_path)
    X, y = _separable(50)
    with pytest.raises(DpexpError, match="dpexp peers setup diffprivlib"):
        _forest().fit(X, y)
    monkeypatch.setenv("DPEXP_DIFFPRIVLIB_PYTHON", str(tmp_path / "missing"))
    with pytest.raises(DpexpError, match="DPEXP_DIFFPRIVLIB_PYTHON=.* is not a file"):
        _forest().fit(X, y)


def test_availability_counts_the_side_env(monkeypatch, tmp_path):
    if registry.import_failure("diffprivlib") is None:
        pytest.skip("diffprivlib imports in this interpreter")
    monkeypatch.delenv("DPEXP_DIFFPRIVLIB_PYTHON", raising=False)
    monkeypatch.setattr(side_envs, "peers_dir", lambda: tmp_path)
    assert optional_unavailable(("diffprivlib",)).startswith("diffprivlib (")
    assert "dpexp peers setup diffprivlib" in registry.install_hint("diffprivlib")
    venv = tmp_path / side_envs.get_side_env("diffprivlib").folder_name
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    assert optional_unavailable(("diffprivlib",)) is not None  # unfinished: no marker
    (venv / side_envs.READY_MARKER).write_text("")
    assert optional_unavailable(("diffprivlib",)) is None
    assert optional_unavailable(("dpexp_no_such_package",)) is not None  # no side env for it


def test_setup_best_effort_prints_one_line_and_succeeds(monkeypatch, tmp_path):
    monkeypatch.delenv("DPEXP_DIFFPRIVLIB_PYTHON", raising=False)
    monkeypatch.setattr(side_envs, "peers_dir", lambda: tmp_path)
    runner = CliRunner()
    args = ["peers", "setup", "diffprivlib", "--python", str(tmp_path / "no-python")]
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "could not start" in res.output
    assert "Traceback" not in res.output
    res = runner.invoke(app, [*args, "--best-effort"])
    assert res.exit_code == 0 and "not made" in res.output
    res = runner.invoke(app, ["peers", "status"])
    assert res.exit_code == 0 and "missing (dpexp peers setup diffprivlib)" in res.output


def test_audit_without_it_says_not_audited_here_and_how(monkeypatch, tmp_path):
    if registry.import_failure("diffprivlib") is None:
        pytest.skip("diffprivlib imports in this interpreter")
    monkeypatch.delenv("DPEXP_DIFFPRIVLIB_PYTHON", raising=False)
    monkeypatch.setattr(side_envs, "peers_dir", lambda: tmp_path)
    res = CliRunner().invoke(app, ["audit", "diffprivlib_rf_end_to_end", "--quick"])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "not audited here" in res.output and "dpexp peers setup diffprivlib" in res.output
