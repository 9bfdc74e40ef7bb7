"""A researcher's own DP tree method, discovered without editing any list in dpexp.

The README's worked example (``docs/examples/dp_stump_paper``): a toy paper package
installed as its own distribution (an entry point of the group ``dpexp.papers`` in a
``.dist-info`` on ``sys.path``, as ``pip install`` would leave it) is listed by
``dpexp algorithms`` and runs in a spec through the CLI; the same package dropped into
the ``dpexp.papers`` namespace is discovered by pkgutil.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import install_example_plugin

import dpexp
import dpexp.papers
from dpexp import registry
from dpexp.errors import BudgetExceededError
from dpexp.privacy import BudgetAccountant, seeded_noise

ROOT = Path(dpexp.__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "dp_stump_paper"
PACKAGE = EXAMPLE / "src" / "dp_stump_paper"

TINY_SPEC = {
    "id": "stump-quick", "paper": "dp-stump-example", "artefact": "toy", "kind": "table",
    "caption": "the toy DP stump next to Breiman's forest",
    "datasets": ["synthA"],
    "algorithms": [{"name": "breiman_rf", "params": {"n_estimators": 5}}, {"name": "dp_stump"}],
    "epsilons": [1.0], "cv": {"folds": 2}, "metrics": ["accuracy"],
    "scales": {"smoke": {"max_rows": 300}},
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A site directory holding the example package and its dist-info (an installed copy)."""
    return install_example_plugin(tmp_path_factory.mktemp("site"), PACKAGE)


def _cli(site: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
           "DPEXP_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run([sys.executable, "-m", "dpexp.cli", *args], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=600)


def test_an_installed_paper_is_listed_by_dpexp_algorithms(site, tmp_path):
    res = _cli(site, tmp_path, "algorithms", "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    rows = {r["name"]: r for r in json.loads(res.stdout)}
    assert rows["dp_stump"]["paper"] == "dp-stump-example" and rows["dp_stump"]["private"]
    assert {"dpboost", "fletcher_forest", "inprivate"} <= set(rows)  # in-tree papers too


def test_an_installed_paper_runs_in_a_spec_through_the_cli(site, tmp_path):
    spec = tmp_path / "stump-quick.yaml"
    spec.write_text(yaml.safe_dump(TINY_SPEC))
    res = _cli(site, tmp_path, "run", str(spec), "--results-dir", str(tmp_path / "results"),
               "--no-render")
    assert res.returncode == 0, res.stdout + res.stderr
    cells = [json.loads(p.read_text()) for p in (tmp_path / "results" / "cache").rglob("seed-*/*.json")]
    algos = {c["cell"]["algorithm"] for c in cells}
    assert algos == {"breiman_rf", "dp_stump"}
    rows = pd.read_csv(tmp_path / "results" / "stump-quick" / "results-smoke.csv")
    stump = rows[rows.algorithm == "dp_stump"]
    assert len(stump) and (stump.epsilon_spent <= 1.0).all()
    # the stump's own accounting is DP; synthA's observed domain is the only reason (issue #38)
    assert (stump.not_dp_reason == "domain observed (not DP: domain from data: all 5 features)").all()


def test_an_entry_point_may_name_the_manifest_object(site, monkeypatch):
    monkeypatch.syspath_prepend(str(site))
    ep = importlib.metadata.EntryPoint(name="dp_stump", value="dp_stump_paper:MANIFEST",
                                       group=registry.ENTRY_POINT_GROUP)
    installed = importlib.metadata.EntryPoints([ep])
    # numba asks for every group (group=None) on its first compile in the process
    monkeypatch.setattr(registry.importlib.metadata, "entry_points",
                        lambda group=None: installed if group is None
                        else installed.select(group=group))
    registry.refresh()
    try:
        info = registry.get_algorithm("dp_stump")
        assert registry.common_test_params("dp_stump") == {"epsilon": 10.0}
        X = np.random.default_rng(0).random((50, 2))
        y = (X[:, 0] > 0.5).astype(int)
        est = registry.make_estimator(info.name, "classification", {}, epsilon=1.0, random_state=0,
                                      public={"feature_domain": np.tile([0.0, 1.0], (2, 1)),
                                              "classes": np.array([0, 1])}).fit(X, y)
        assert est.accountant_.epsilon_spent == pytest.approx(1.0)
    finally:
        monkeypatch.undo()
        registry.refresh()


def test_a_paper_package_inside_dpexp_papers_is_discovered(tmp_path, monkeypatch):
    extra = tmp_path / "papers"
    shutil.copytree(PACKAGE, extra / "dp_stump_intree")
    init = extra / "dp_stump_intree" / "__init__.py"
    init.write_text(init.read_text().replace("dp_stump_paper.estimators",
                                             "dpexp.papers.dp_stump_intree.estimators"))
    monkeypatch.setattr(dpexp.papers, "__path__", [*dpexp.papers.__path__, str(extra)])
    registry.refresh()
    try:
        assert "dpexp.papers.dp_stump_intree" in registry.in_tree_paper_modules()
        cls = registry.get_algorithm("dp_stump").estimator_class("classification")
        assert cls.__module__ == "dpexp.papers.dp_stump_intree.estimators"
    finally:
        monkeypatch.undo()
        for name in [m for m in sys.modules if m.startswith("dpexp.papers.dp_stump_intree")]:
            del sys.modules[name]
        registry.refresh()


def test_the_example_estimator_meets_the_common_contract(monkeypatch):
    """The README's example takes a BudgetAccountant across fits and has predict_proba, as
    the common estimator test asks of every registered estimator (issue 44)."""
    monkeypatch.syspath_prepend(str(PACKAGE.parent))
    try:
        from dp_stump_paper.estimators import DPStumpClassifier  # on the path from here on

        rng = np.random.default_rng(0)
        X = rng.random((400, 3))
        y = (X[:, 0] > 0.5).astype(int)
        budget = BudgetAccountant(epsilon=3.0)
        est = DPStumpClassifier(epsilon=1.0, feature_domain=[[0.0, 1.0]] * 3, classes=[0, 1],
                                random_state=0, noise_rng=seeded_noise(0), accountant=budget)
        proba = est.fit(X, y).predict_proba(X)
        assert proba.shape == (400, 2)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        np.testing.assert_array_equal(est.predict(X), est.classes_[proba.argmax(axis=1)])
        assert budget.total_spent[0] == pytest.approx(est.accountant_.epsilon_spent) == 1.0
        est.fit(X, y).fit(X, y)  # 3 of 3 spent
        with pytest.raises(BudgetExceededError):
            est.fit(X, y)
    finally:
        for name in [m for m in sys.modules if m.startswith("dp_stump_paper")]:
            del sys.modules[name]
