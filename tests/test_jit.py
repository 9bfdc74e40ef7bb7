"""Compiled kernels are cached with a stamp of all kernel code (:mod:`dpexp.jit`): after a
change to a callee's file alone, the caller is compiled again instead of loading machine
code that inlined the old callee (numba's own cache, the control, loads the stale one)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import dpexp
from dpexp import jit
from dpexp.paths import source_digest

PACKAGE = Path(dpexp.__file__).resolve().parent

CALLEE = "from numba import njit\n\n\n@njit(cache=True)\ndef g():\n    return {value}\n"
CALLER = ("from numba import njit\n\nfrom kpkg.callee import g\n\n\n"
          "@njit(cache=True)\ndef f():\n    return g() + 0\n")
#: Run in a fresh interpreter: with dpexp's locators for kpkg (``root``) or numba's own.
SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    if sys.argv[1] == "dpexp":
        from numba.core import caching
        from dpexp import jit
        class Locator(jit._InTree):
            root = Path(sys.argv[2]).resolve()
        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
        impl._locator_classes.insert(0, Locator)
    from kpkg.caller import f
    print(f())
""")


def _package(tmp: Path) -> Path:
    pkg = tmp / "kpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "callee.py").write_text(CALLEE.format(value=1))
    (pkg / "caller.py").write_text(CALLER)
    return pkg


def _run(tmp: Path, pkg: Path, locators: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp), str(PACKAGE.parent), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", SCRIPT, locators, str(pkg)], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    return int(out.stdout.split()[-1])


def _edit_callee(pkg: Path) -> None:
    (pkg / "callee.py").write_text(CALLEE.format(value=20))  # another size: a new stamp


def test_a_changed_callee_file_recompiles_its_callers(tmp_path):
    pkg = _package(tmp_path)
    assert _run(tmp_path, pkg, "dpexp") == 1
    assert list((pkg / "__pycache__").glob("caller.f-*.nbi"))  # cached, to be reused
    _edit_callee(pkg)
    assert _run(tmp_path, pkg, "dpexp") == 20


def test_numbas_own_cache_loads_the_stale_caller(tmp_path):
    """The control: the scenario above with numba's locators runs the old callee (if a
    numba release fixes this, :mod:`dpexp.jit` may be retired)."""
    pkg = _package(tmp_path)
    assert _run(tmp_path, pkg, "numba") == 1
    _edit_callee(pkg)
    assert _run(tmp_path, pkg, "numba") == 1


def test_every_kernel_module_takes_njit_from_dpexp_jit():
    direct = re.compile(r"^\s*from numba import .*\b(njit|jit)\b|numba\.n?jit\b", re.M)
    offenders = [p.relative_to(PACKAGE).as_posix() for p in sorted(PACKAGE.rglob("*.py"))
                 if p.name != "jit.py" and direct.search(p.read_text())]
    assert offenders == []


def _digest(root):
    source_digest.cache_clear()  # the files below change between the calls
    return jit.kernel_code_digest(root)


def test_the_digest_covers_kernel_code_only(tmp_path):
    (tmp_path / "trees").mkdir()
    (tmp_path / "cli").mkdir()
    (tmp_path / "trees" / "k.py").write_text("A = 1\n")
    (tmp_path / "cli" / "c.py").write_text("B = 1\n")
    first = _digest(tmp_path)
    (tmp_path / "cli" / "c.py").write_text("B = 2\n")
    assert _digest(tmp_path) == first
    (tmp_path / "trees" / "k.py").write_text("A = 2\n")
    assert _digest(tmp_path) != first


def test_the_locators_come_first_and_once():
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    jit._register()
    assert tuple(impl._locator_classes[:3]) == jit.LOCATORS
    assert sum(c in jit.LOCATORS for c in impl._locator_classes) == 3
