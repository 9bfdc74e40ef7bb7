"""``dpexp algorithms``: the registered algorithms and their estimator classes."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from dpexp.cli._common import guarded, out


def _usage(target: str, params: dict) -> dict:
    """How to build the estimator by hand: class, module, and a call with its defaults."""
    module, _, cls = target.partition(":")
    args = ", ".join(f"{k}={json.dumps(v) if isinstance(v, str) else repr(v)}" for k, v in params.items())
    return {"class": cls, "module": module, "import_path": target, "params": dict(params),
            "usage": f"{target}({args})"}


@guarded
def list_algorithms(as_json: Annotated[bool, typer.Option("--json")] = False):
    """Every registered algorithm."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.registry import all_algorithms

    rows = [{"name": a.name, "private": a.private, "tasks": list(a.targets), "paper": a.paper,
             "description": a.description,
             "estimators": {task: _usage(target, a.default_params) for task, target in a.targets.items()}}
            for a in all_algorithms().values()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    t = Table("algorithm", "private", "tasks", "paper", "description")
    for r in rows:
        t.add_row(r["name"], "yes" if r["private"] else "no", ", ".join(r["tasks"]), r["paper"], r["description"])
    out.print(t)
    # plain lines (never wrapped): the class and import path per task, with its defaults
    typer.echo("\nEstimator classes (import path, registered defaults):")
    for r in rows:
        for task, est in r["estimators"].items():
            typer.echo(f"{r['name']}: {task} {est['usage']}")
