"""No import cycle bites: every module of dpexp imports first, on its own, in a fresh
``dpexp`` namespace (all ``dpexp.*`` entries dropped from ``sys.modules`` before each),
in a random order. Runs in a subprocess so the test process keeps its modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dpexp

SCRIPT = r"""
import importlib, pkgutil, random, sys, traceback
import dpexp
names = sorted(m.name for m in pkgutil.walk_packages(dpexp.__path__, "dpexp."))
random.Random(int(sys.argv[1])).shuffle(names)
failed = []
for name in names:
    for loaded in [m for m in sys.modules if m == "dpexp" or m.startswith("dpexp.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print(len(names), "modules")
print("\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_first_in_a_fresh_namespace():
    root = Path(dpexp.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-c", SCRIPT, "20261123"], capture_output=True, text=True,
                         env=env, cwd=root, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert int(res.stdout.split()[0]) > 50
