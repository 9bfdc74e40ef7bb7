"""``dpexp list``, ``show`` and ``validate``: the experiment catalogue (reads only)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from dpexp.cli._common import ResultsDir, dirs, err, guarded, out, start_optional_probes
from dpexp.errors import SpecError, UnknownNameError


def _cell_counts(spec, rdir: Path, available) -> dict[str, dict]:
    """Per scale, the grid's cells done / here / grid (:mod:`dpexp.experiments.completion`,
    the definition ``plan`` and ``report`` use) and the finished cells outside the grid,
    from the cache and the committed results alike, as cell digests (a committed table's
    from its index when it matches the table: no table is read to count). Counted by grid
    point: a point's cells share their dataset and series, so no cell is made."""
    # lazy: committed imports pandas (~0.25 s), which the other commands of this module skip
    from dpexp.experiments.cells import expand_points, n_folds_of
    from dpexp.experiments.committed import VIEW_PREFIX, cached_view_prefixes, committed_digests
    from dpexp.experiments.completion import Tally, missing_packages, tally_completion

    counts = {}
    for sc in ("smoke", "paper"):
        scaled = spec.at_scale(sc)
        points = expand_points(scaled, sc)
        # by the cache files' view-digest prefixes (their names) and the committed indexes;
        # a cell's digest (a sha256 of its row key) is most of `list`
        repeats, n_folds = scaled.cv.repeats, n_folds_of(scaled)
        digests = [p.view_digests(repeats, n_folds) for p in points]
        prefixes = [[d[:VIEW_PREFIX] for d in ds] for ds in digests]
        grid = {d for ds in prefixes for d in ds}
        committed = committed_digests(scaled, sc, rdir, {0: {d for ds in digests for d in ds}})
        done = cached_view_prefixes(scaled, sc, rdir) | {d[:VIEW_PREFIX] for d in committed}
        tallies = (Tally(p.dataset.name, p.algo.label, len(ds), sum(d in done for d in ds))
                   for p, ds in zip(points, prefixes, strict=True))
        c = tally_completion(tallies, available, missing_packages(scaled),
                             outside=len(done - grid))
        counts[sc] = {"done": c.done, "here": c.here, "grid": c.grid, "outside": c.outside,
                      "datasets_missing": list(c.datasets_missing),
                      "packages_missing": list(c.packages_missing), "text": c.text()}
    return counts


@guarded
def list_experiments(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    results_dir: ResultsDir = None,
):
    """Every experiment with its paper, artefact, size and cached cells."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.catalog import load_catalog
    from dpexp.experiments.completion import COMPLETION_HEADER, Availability

    rdir, _ = dirs(results_dir, None)
    start_optional_probes()
    catalog = load_catalog()
    available = Availability()
    rows = []
    for s in catalog.specs.values():
        counts = _cell_counts(s, rdir, available)
        rows.append({
            "id": s.id, "aliases": s.aliases, "paper": s.paper, "artefact": s.artefact,
            "caption": s.caption, "datasets": [d.key for d in s.datasets],
            "algorithms": [a.label for a in s.algorithms],
            "cached_scales": [sc for sc, c in counts.items() if c["done"] or c["outside"]],
            "cells": counts,
        })
    broken = {stem: str(exc) for stem, exc in catalog.errors.items()}
    if as_json:
        typer.echo(json.dumps(rows + [{"id": k, "error": v} for k, v in broken.items()], indent=2))
        return
    # Narrow columns (counts, not lists) so the table reads at 80 columns; `dpexp show
    # EXP` has the datasets and algorithms.
    t = Table("experiment", "artefact", "data x algos", f"smoke: {COMPLETION_HEADER}",
              f"paper: {COMPLETION_HEADER}", box=None, pad_edge=False)
    for r in rows:
        name = r["id"] + (f" ({', '.join(r['aliases'])})" if r["aliases"] else "")
        c = r["cells"]
        t.add_row(escape(name), escape(r["artefact"]), f"{len(r['datasets'])} x {len(r['algorithms'])}",
                  c["smoke"]["text"], c["paper"]["text"])
    out.print(t)
    missing = sorted({d for r in rows for c in r["cells"].values() for d in c["datasets_missing"]})
    legend = (f"cells: {COMPLETION_HEADER} = finished / this machine can have / in the paper's "
              "grid; +N finished outside the grid (other seeds, overrides, peers' columns)"
              + (f". Datasets not here: {', '.join(missing)}." if missing else ""))
    out.print(escape(textwrap.fill(legend, width=min(out.width, 100))), highlight=False)
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

