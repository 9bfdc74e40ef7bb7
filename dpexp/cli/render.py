"""``dpexp render``, ``results`` and ``report``: outputs drawn from the cached and committed
cells, never recomputed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpexp.cli._common import (
    SCALES,
    AlgorithmsOpt,
    DatasetOpt,
    EpsilonsOpt,
    FiguresDir,
    ResultsDir,
    Scale,
    SeedFilter,
    choice,
    dirs,
    err,
    filters,
    guarded,
    out,
)


@guarded
def render(
    experiment: Annotated[str, typer.Argument(help="Experiment id, alias or spec file.")],
    scale: Scale = "smoke",
    dataset: DatasetOpt = None,
    algorithms: AlgorithmsOpt = None,
    epsilons: EpsilonsOpt = None,
    seed: SeedFilter = None,
    results_dir: ResultsDir = None,
    figures_dir: FiguresDir = None,
):
    """Draw figures and tables from every cached cell (no recomputation)."""
    from dpexp.experiments.spec import resolve
    from dpexp.render.render import render_experiment

    chosen = filters(dataset, algorithms, epsilons, seed)
    rdir, fdir = dirs(results_dir, figures_dir)
    spec = resolve(experiment).at_scale(scale)
    r = render_experiment(spec, scale, rdir, fdir, **({"filters": chosen} if chosen.given else {}))
    if r.missing_cells:
        err.print(f"{r.missing_cells} cells of the grid are not cached yet; rendered what exists.")
    for f in r.files:
        out.print(f"wrote {f}", highlight=False)


@guarded
def results(
    experiment: Annotated[str, typer.Argument(help="Experiment id, alias or spec file.")],
    fmt: Annotated[str, typer.Option("--format", callback=choice("format", ("csv", "json")), help="csv or json.")] = "csv",
    scale: Scale = "smoke",
    dataset: DatasetOpt = None,
    algorithms: AlgorithmsOpt = None,
    epsilons: EpsilonsOpt = None,
    seed: SeedFilter = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    results_dir: ResultsDir = None,
):
    """Export the tidy results table (one row per cell x metric) of every cached cell."""
    from dpexp.experiments.results import cached_results
    from dpexp.experiments.runner import check_writable
    from dpexp.experiments.spec import resolve

    chosen = filters(dataset, algorithms, epsilons, seed)
    rdir, _ = dirs(results_dir, None)
    spec = resolve(experiment).at_scale(scale)
    res = cached_results(spec, scale, rdir, chosen)
    frame = res.frame
    text = frame.to_csv(index=False) if fmt == "csv" else frame.to_json(orient="records", indent=1)
    if output:
        check_writable(output.parent if str(output.parent) else Path("."), "output directory")
        output.write_text(text)
    else:
        typer.echo(text)
    seeds = ", ".join(str(s) for s in res.seeds)
    err.print(f"{res.n_cells} cached cells ({len(frame)} rows); {len(res.missing)} cells of the "
              f"{spec.id} grid at {scale} scale (seed {seeds}) not cached yet.", highlight=False)


@guarded
def report(
    scale: Annotated[str | None, typer.Option("--scale", callback=choice("scale", SCALES), help="Report this scale only [default: paper where cached, else smoke].")] = None,
    results_dir: ResultsDir = None,
    figures_dir: FiguresDir = None,
):
    """Write results/REPORT.md and results/report.html (REPORT-smoke.md / report-smoke.html
    with --scale smoke) from the cache and the committed results (no recomputation)."""
    from dpexp.render.report import write_report

    rdir, fdir = dirs(results_dir, figures_dir)
    md, html_path = write_report(rdir, fdir, scale)
    out.print(f"wrote {md}\nwrote {html_path}")
