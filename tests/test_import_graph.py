"""The import graph of dpexp, drawn from the source (not by importing): no cycle, no upward
import between layers, no paper importing another, no file over 600 lines, and an import
inside a function only with a stated reason (a ``# lazy: why`` line right above it).

A second test imports every module first, on its own, in a fresh ``dpexp`` namespace (all
``dpexp.*`` entries dropped from ``sys.modules`` before each), in a random order: what the
graph says, Python confirms.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import dpexp

PACKAGE = Path(dpexp.__file__).resolve().parent

#: Layers, lowest first: a module imports only from its own layer or below (docs/ARCHITECTURE.md).
LAYERS = (
    ("dpexp", "dpexp.errors", "dpexp.seeding", "dpexp.paths", "dpexp.lazy_exports",
     "dpexp.side_envs", "dpexp.jit"),
    ("dpexp.registry", "dpexp.datasets"),
    ("dpexp.privacy",),
    ("dpexp.trees", "dpexp.preprocessing"),
    ("dpexp.boosting",),
    ("dpexp.experiments",),
    ("dpexp.audit",),
    ("dpexp.papers",),
    ("dpexp.render",),
    ("dpexp.cli",),
)
MAX_LINES = 600


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    in_function: bool
    reason: str  # the ``# lazy:`` comment above an import inside a function ("" if none)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _targets(node: ast.AST, name: str, is_package: bool, known: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "dpexp"]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        mod = ".".join([*base, *([node.module] if node.module else [])])
    else:
        mod = node.module or ""
    if mod.split(".")[0] != "dpexp":
        return []
    return [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]


def _with_parents(target: str) -> list[str]:
    """Importing ``a.b.c`` runs ``a/__init__``, ``a/b/__init__`` and then ``a.b.c``."""
    parts = target.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _reasons(tree: ast.Module, lines: list[str]) -> dict[int, str]:
    """id(import node) -> its ``# lazy:`` reason: the comment right above it, or above the
    first import of a run of consecutive imports it belongs to."""
    out: dict[int, str] = {}
    for parent in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            reason = ""
            previous_import = False
            stmts = getattr(parent, field, None)
            for stmt in stmts if isinstance(stmts, list) else []:
                if not isinstance(stmt, ast.Import | ast.ImportFrom):
                    previous_import = False
                    continue
                above = lines[stmt.lineno - 2].strip() if stmt.lineno > 1 else ""
                if above.startswith("# lazy:"):
                    reason = above.removeprefix("# lazy:").strip()
                elif not previous_import:
                    reason = ""
                out[id(stmt)] = reason
                previous_import = True
    return out


def edges() -> list[Edge]:
    mods = modules()
    known = set(mods)
    out = []
    for name, path in mods.items():
        source = path.read_text()
        tree = ast.parse(source)
        reasons = _reasons(tree, source.splitlines())
        top = {id(n) for stmt in tree.body for n in ast.walk(stmt)
               if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _targets(node, name, path.name == "__init__.py", known):
                for t in _with_parents(target):
                    if t in known and t != name and not name.startswith(t + "."):
                        out.append(Edge(name, t, node.lineno, id(node) not in top,
                                        reasons.get(id(node), "")))
    return out


def layer(name: str) -> int:
    best = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if name == p or name.startswith(p + "."):
                best = max(best, (len(p), i))
    assert best[1] >= 0, f"{name} is in no layer of LAYERS"
    return best[1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read_from_the_source():
    # a few edges every version of dpexp has: the reader must find them
    found = {(e.source, e.target) for e in edges()}
    assert ("dpexp.experiments.runner", "dpexp.experiments.execute") in found
    assert len(modules()) > 100 and len(found) > 300


def test_no_import_cycle():
    graph: dict[str, set[str]] = {}
    for e in edges():
        graph.setdefault(e.source, set()).add(e.target)
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_go_down_the_layers():
    upward = [f"{e.source}:{e.line} imports {e.target}" for e in edges()
              if layer(e.target) > layer(e.source)]
    assert upward == []


def test_no_paper_imports_another():
    def paper(name: str) -> str:
        parts = name.split(".")
        return parts[2] if len(parts) > 2 and parts[1] == "papers" else ""

    crossing = [f"{e.source}:{e.line} imports {e.target}" for e in edges()
                if paper(e.source) and paper(e.target) and paper(e.source) != paper(e.target)]
    assert crossing == []


def test_imports_inside_functions_say_why():
    unexplained = [f"{e.source}:{e.line} imports {e.target}" for e in edges()
                   if e.in_function and not e.reason]
    assert unexplained == []


def test_no_file_over_600_lines():
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


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


@pytest.mark.parametrize("order", [20261123])
def test_every_module_imports_first_in_a_fresh_namespace(order):
    root = PACKAGE.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(order)], capture_output=True, text=True,
                         env=env, cwd=root, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert int(res.stdout.split()[0]) == len(modules()) - 1  # all but the root package
