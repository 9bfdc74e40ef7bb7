"""``dpexp list``, ``show`` and ``validate``: the experiment catalogue (reads only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from dpexp.cli._common import ResultsDir, dirs, err, guarded, out
from dpexp.errors import SpecError, UnknownNameError


def _cell_counts(spec, rdir: Path) -> dict[str, dict[str, int]]:
    """Per scale: cells of the spec's grid (seed 0), how many of them are done, and every
    done cell (all seeds and overrides), from the cache and the committed results alike
    (the same cells as ``results``/``render``/``report``: ``results.cached_keys``), as
    cell digests; a committed table's come from its index when it matches the table."""
    # lazy: committed imports pandas (~0.25 s), which the other commands of this module skip
    from dpexp.experiments.cells import expand
    from dpexp.experiments.committed import cached_digests, committed_digests

    counts = {}
    for sc in ("smoke", "paper"):
        scaled = spec.at_scale(sc)
        grid = {c.view_digest for c in expand(scaled, sc)}
        done = cached_digests(scaled, sc, rdir) | committed_digests(scaled, sc, rdir)
        counts[sc] = {"grid": len(grid), "grid_cached": len(grid & done), "cached": len(done)}
    return counts


def _done(c: dict[str, int]) -> str:
    """``grid cells done/grid``, and ``+N`` cells outside the grid (other seeds, overrides)."""
    extra = c["cached"] - c["grid_cached"]
    return f"{c['grid_cached']}/{c['grid']}" + (f" +{extra}" if extra else "")


@guarded
def list_experiments(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    results_dir: ResultsDir = None,
):
    """Every experiment with its paper, artefact, size and cached cells."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.catalog import load_catalog

    rdir, _ = dirs(results_dir, None)
    catalog = load_catalog()
    rows = []
    for s in catalog.specs.values():
        counts = _cell_counts(s, rdir)
        rows.append({
            "id": s.id, "aliases": s.aliases, "paper": s.paper, "artefact": s.artefact,
            "caption": s.caption, "datasets": [d.key for d in s.datasets],
            "algorithms": [a.label for a in s.algorithms],
            "cached_scales": [sc for sc, c in counts.items() if c["cached"]], "cells": counts,
        })
    broken = {stem: str(exc) for stem, exc in catalog.errors.items()}
    if as_json:
        typer.echo(json.dumps(rows + [{"id": k, "error": v} for k, v in broken.items()], indent=2))
        return
    # Narrow columns (counts, not lists) so the table reads at 80 columns; `dpexp show
    # EXP` has the datasets and algorithms.
    t = Table("experiment", "artefact", "data x algos", "done smoke / paper", box=None, pad_edge=False)
    for r in rows:
        name = r["id"] + (f" ({', '.join(r['aliases'])})" if r["aliases"] else "")
        c = r["cells"]
        t.add_row(escape(name), escape(r["artefact"]), f"{len(r['datasets'])} x {len(r['algorithms'])}",
                  f"{_done(c['smoke'])} / {_done(c['paper'])}")
    out.print(t)
    for stem, msg in broken.items():
        err.print(f"[yellow]broken spec[/] {escape(stem)}: {escape(msg)}", highlight=False)


@guarded
def show(experiment: Annotated[str, typer.Argument(help="Experiment id or alias.")]):
    """Show a spec (and which spec an alias resolves to)."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.catalog import resolve

    spec = resolve(experiment)
    if experiment != spec.id:
        out.print(f"[bold]{experiment}[/] is an alias of [bold]{spec.id}[/]")
    out.print(f"[bold]{spec.id}[/] — {spec.artefact} of {spec.paper} ({spec.path}; long lines "
              "wrapped for reading)")
    width = max(60, min(out.width or 100, 100))
    typer.echo("\n".join(wrap_yaml_line(line, width) for line in spec.path.read_text().splitlines()))


#: Columns a line may run past the width before it is folded (no one-word orphan lines).
SLACK = 20


def wrap_yaml_line(line: str, width: int) -> str:
    """One line of a spec folded at ``width`` for reading: continuation lines are indented
    under the value (past ``key: `` and ``- ``), where YAML still reads a plain or quoted
    scalar, and a line of a block scalar keeps its indentation."""
    import textwrap

    if len(line) <= width + SLACK:  # the specs' own folding (~105 columns) is left alone
        return line
    indent = len(line) - len(line.lstrip(" "))
    body = line[indent:]
    lead = 2 if body.startswith("- ") else 0
    key, sep, _ = body[lead:].partition(": ")
    hang = indent + lead + (2 if sep and " " not in key else 0)
    return "\n".join(textwrap.wrap(line, width, subsequent_indent=" " * hang,
                                    break_long_words=False, break_on_hyphens=False)) or line


@guarded
def validate():
    """Validate every experiment spec and the dataset registry."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.datasets.registry import all_datasets
    from dpexp.experiments.catalog import alias_map, load_catalog
    from dpexp.experiments.procedures import get_procedure
    from dpexp.registry import get_algorithm

    reg = all_datasets()
    catalog = load_catalog()
    if catalog.errors:  # list and run skip broken files; validate reports them
        raise next(iter(catalog.errors.values()))
    specs = catalog.specs
    alias_map(specs)
    for s in specs.values():
        for d in s.datasets:
            if d.name not in reg:
                raise SpecError(f"{s.path.name}: datasets: {UnknownNameError('dataset', d.name, reg)}")
        for a in s.algorithms:
            get_algorithm(a.name) if a.name else get_procedure(a.procedure)
        for sc in s.scales:
            s.at_scale(sc)
    out.print(f"ok: {len(specs)} experiment specs, {len(reg)} datasets")

