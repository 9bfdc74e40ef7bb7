"""``dpexp list`` answers at once (issue 43): what it needs to count cells -- the CLI app,
the catalogue, every spec at both scales (whose overrides read the algorithms' declared
parameter names, not their estimators), grid expansion, the procedures' flags, the cache
and the committed index -- loads neither scikit-learn nor numba nor scipy (about 1.5 s of
a 2.5 s ``list`` before the privacy and datasets packages exported lazily); nor does the
command itself, run as ``python -m dpexp.cli list --json``. A deterministic stand-in for a
timing: each test runs in a fresh interpreter and reads ``sys.modules``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dpexp.paths import project_root

#: Packages `dpexp list` must not load: each costs 0.2-1 s to import.
HEAVY = ("sklearn", "numba", "scipy")
#: ... nor pandas (~0.3 s): the committed tables' indexes are JSON, and which datasets are
#: here is a look at the data and mirror folders (no parser).
HEAVY_FOR_LIST = (*HEAVY, "pandas")

COUNT_CELLS = r"""
import json, sys
from dpexp.cli import app  # every command module, as `dpexp list` loads them
from dpexp.experiments.catalog import load_catalog
from dpexp.experiments.cells import Cell, uses_epsilon
from dpexp.experiments.committed import cached_view_prefixes, committed_digests
import dpexp.datasets.registry, dpexp.privacy

catalog = load_catalog()
for spec in catalog.specs.values():
    for scale in ("smoke", "paper"):
        spec.at_scale(scale)  # a scale's params go to the algorithms that accept them
    for algo in spec.algorithms:
        if algo.procedure:
            uses_epsilon(algo)  # imports the procedure's module to read its flags
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1:]))
print(json.dumps({"specs": len(catalog.specs), "heavy": heavy}))
"""

#: ``python -m dpexp.cli list --json`` in this interpreter (its output captured), then the
#: heavy packages it loaded.
LIST_COMMAND = r"""
import contextlib, io, json, runpy, sys
heavy_names = set(sys.argv[1:])
sys.argv = ["dpexp", "list", "--json"]
listed = io.StringIO()
with contextlib.redirect_stdout(listed):
    try:
        runpy.run_module("dpexp.cli", run_name="__main__", alter_sys=True)
    except SystemExit as exc:  # click ends a command with sys.exit(0)
        if exc.code:
            raise
rows = json.loads(listed.getvalue())
heavy = sorted({m.split(".")[0] for m in sys.modules} & heavy_names)
print(json.dumps({"heavy": heavy, "rows": rows}))
"""


def _run(code: str, *args: str) -> dict:
    root = project_root()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, cwd=root, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_counting_cells_loads_no_heavy_package():
    found = _run(COUNT_CELLS, *HEAVY)
    assert found["specs"] > 10  # the catalogue was read, its procedures' flags too
    assert found["heavy"] == []


@pytest.fixture(scope="module")
def listed() -> dict:
    return _run(LIST_COMMAND, *HEAVY_FOR_LIST)


def test_the_list_command_counts_every_spec_without_numba(listed):
    counted = [r for r in listed["rows"] if "cells" in r]
    assert len(counted) > 10  # every spec, counted at both scales
    assert all(set(r["cells"]) == {"smoke", "paper"} for r in counted)
    assert "numba" not in listed["heavy"]


def test_the_list_command_loads_no_heavy_package(listed):
    # the optional packages' availability (lightgbm and interpret load scikit-learn and
    # scipy) is probed in a child interpreter and cached (dpexp.optional_packages)
    assert listed["heavy"] == []


def test_the_check_sees_a_heavy_import():
    # the same reading of sys.modules catches a module that does load one
    found = _run("import sys, json, dpexp.privacy.mechanisms\n"
                 "print(json.dumps({'heavy': sorted({m.split('.')[0] for m in sys.modules} & set(sys.argv[1:]))}))",
                 *HEAVY)
    assert "numba" in found["heavy"]


@pytest.mark.parametrize("package, name", [("dpexp.privacy", "Accountant"),
                                           ("dpexp.privacy", "seeded_noise"),
                                           ("dpexp.datasets", "load_dataset")])
def test_lazy_exports_resolve(package, name):
    # the packages export their names on first use (PEP 562): every name of __all__ is there
    module = __import__(package, fromlist=["__all__"])
    assert set(module.__all__) == set(module._HOMES)
    assert set(module.__all__) <= set(dir(module))
    assert getattr(module, name) is getattr(__import__(module._HOMES[name], fromlist=[name]), name)
    with pytest.raises(AttributeError, match="no attribute"):
        _ = module.not_a_name
