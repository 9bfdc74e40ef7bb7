"""The registry's loader: discovery of the paper packages, lazy imports, duplicates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.dummy import DummyClassifier

import dpexp
from dpexp import registry
from dpexp.registry import AlgorithmInfo, PaperManifest

PAPERS = {"baselines", "dpboost", "fletcher", "gaussian_bdt", "inprivate", "xgbdp"}


def test_every_paper_package_is_discovered():
    found = {m.rsplit(".", 1)[1] for m in registry.in_tree_paper_modules()}
    assert found >= PAPERS
    assert all(m.paper for m in registry.paper_manifests())


def test_listing_algorithms_imports_no_estimator_module():
    code = ("import sys; from dpexp.registry import all_algorithms, manifest_procedures; "
            "all_algorithms(); manifest_procedures(); "
            "bad = [m for m in sys.modules if m == 'numba' or m.endswith(('.estimators', '.forest'))]; "
            "print(bad); sys.exit(1 if bad else 0)")
    root = Path(dpexp.__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         env={"PYTHONPATH": str(root), "PATH": ""}, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def test_an_algorithm_registered_twice_is_an_error(monkeypatch):
    twin = registry.get_algorithm("dpboost")
    monkeypatch.setattr(registry, "EXTRA_PAPERS", [PaperManifest(paper="twin", algorithms=[twin])])
    with pytest.raises(RuntimeError, match="registered twice"):
        registry.all_algorithms()


def test_extra_papers_take_modules_strings_and_manifests(monkeypatch):
    info = AlgorithmInfo("zz_fake", {"classification": "sklearn.dummy:DummyClassifier"}, False,
                         "fake", "a fake")
    monkeypatch.setattr(registry, "EXTRA_PAPERS", [PaperManifest(paper="fake", algorithms=[info])])
    assert registry.get_algorithm("zz_fake") is info
    monkeypatch.setattr(registry, "EXTRA_PAPERS", ["overspending_algorithms"])
    assert registry.get_algorithm("spends_too_much").paper == "test"


def test_a_module_without_manifest_is_refused(monkeypatch):
    monkeypatch.setattr(registry, "EXTRA_PAPERS", ["dpexp.errors"])
    with pytest.raises(dpexp.errors.DpexpError, match="no MANIFEST"):
        registry.all_algorithms()


def test_import_failure_counts_a_broken_install_as_unavailable(tmp_path, monkeypatch):
    """An optional package that is installed but fails on import (diffprivlib 0.6 next to
    scikit-learn >= 1.6) is unavailable, as an absent one is."""
    from dpexp.registry import import_failure

    (tmp_path / "dpexp_broken_optional.py").write_text("raise ImportError('cannot import DOUBLE')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_failure("json") is None
    assert import_failure("dpexp_no_such_package").startswith("ModuleNotFoundError")
    assert import_failure("dpexp_broken_optional") == "ImportError: cannot import DOUBLE"


def test_declared_tree_parameters_are_parameters_of_the_estimator():
    """The plan and the warm-up read the manifest's tree parameters; a misspelt one would
    silently scale nothing."""
    from dpexp.registry import accepted_params, all_algorithms

    for name, info in all_algorithms().items():
        tp = info.tree_params
        declared = {p for p in (tp.trees, tp.per_ensemble, tp.depth) if p}
        assert declared <= accepted_params(name), (name, declared - accepted_params(name))
        assert tp.trees or not tp.per_ensemble, name  # ensembles of trees need a tree count


def test_every_in_tree_algorithm_declares_its_parameter_names():
    """Reading a spec's scales (``dpexp list``) takes the names from the manifest; an
    in-tree algorithm without them would import its estimators (scikit-learn, numba)."""
    in_tree = set(registry.in_tree_paper_modules())
    for manifest in registry.paper_manifests():
        if manifest.source not in in_tree:
            continue  # a plugin may leave them out (the fallback reads its classes)
        for info in manifest.algorithms:
            assert info.param_names, info.name
            assert len(set(info.param_names)) == len(info.param_names), (info.name, "a name twice")


def _estimators_params(info: AlgorithmInfo) -> set[str]:
    out: set[str] = set()
    for task in info.targets:
        out |= set(info.estimator_class(task)().get_params())
    return out


@pytest.mark.parametrize("name", sorted(n for n, i in registry.all_algorithms().items() if i.param_names))
def test_declared_parameter_names_are_the_estimators(name):
    """A declaration equals the union of ``get_params()`` of the algorithm's classes, so it
    cannot drift from them (a library's new parameter fails here, not silently)."""
    info = registry.get_algorithm(name)
    try:
        actual = _estimators_params(info)
    except ImportError:
        missing = [p for p in info.requires if registry.import_failure(p)]
        if not missing:
            raise
        pytest.skip(f"{name} needs {', '.join(missing)}")
    declared = set(info.param_names)
    assert declared == actual, {"undeclared": sorted(actual - declared),
                                "not accepted": sorted(declared - actual)}


def test_accepted_params_reads_a_declaration_and_falls_back_to_the_classes(monkeypatch):
    declared = AlgorithmInfo("zz_declared", {"classification": "dpexp_no_such_module:Estimator"},
                             False, "fake", "declares its names", param_names=("alpha", "beta"))
    undeclared = AlgorithmInfo("zz_undeclared", {"classification": "sklearn.dummy:DummyClassifier"},
                               False, "fake", "declares none")
    monkeypatch.setattr(registry, "EXTRA_PAPERS",
                        [PaperManifest(paper="fake", algorithms=[declared, undeclared])])
    # the declaration is read without importing the (here nonexistent) estimator module
    assert registry.accepted_params("zz_declared") == {"alpha", "beta"}
    assert registry.accepted_params("zz_undeclared") == set(DummyClassifier().get_params())


def test_parameter_names_as_one_string_are_refused():
    with pytest.raises(dpexp.errors.DpexpError, match="tuple of names"):
        AlgorithmInfo("zz_bad", {}, False, "fake", "a string of names", param_names="n_trees")


def test_install_hint_names_the_extra_whose_requirements_provide_the_package():
    from dpexp.registry import extra_providing, install_hint

    # from the installed metadata (pyproject.toml's optional dependencies), never a
    # development extra (test, bench) that happens to list the package too
    assert extra_providing("lightgbm") == ("leaderboard", "lightgbm")
    assert extra_providing("interpret") == ("leaderboard", "interpret-core")
    assert extra_providing("autorank")[0] == "leaderboard"
    assert extra_providing("xgboost")[0] == "peers"
    assert extra_providing("no_such_package") is None
    assert install_hint("lightgbm") == 'install it with pip install "dpexp[leaderboard]" (or pip install lightgbm)'
    assert install_hint("no_such_package") == "install it with pip install no_such_package"
