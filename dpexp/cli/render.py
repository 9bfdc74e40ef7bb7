"""``dpexp render``, ``results`` and ``report``: outputs drawn from the cached and committed
cells, never recomputed."""

from __future__ import annotations

import time
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
    start_optional_probes,
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
    # lazy: dpexp.experiments and dpexp.render import pandas, scipy, matplotlib: `dpexp --help` stays fast
    from dpexp.experiments.catalog import resolve
    from dpexp.render.render import render_experiment

    chosen = filters(dataset, algorithms, epsilons, seed)
    rdir, fdir = dirs(results_dir, figures_dir)
    spec = resolve(experiment).at_scale(scale)
    err.print(f"rendering {spec.id} at {scale} scale from the cached and committed cells…", highlight=False)
    r = render_experiment(spec, scale, rdir, fdir, **({"filters": chosen} if chosen.given else {}))
    if r.missing_cells:
        err.print(f"{r.missing_cells} cells of the grid are not cached yet; rendered what exists.")
    for f in r.files:
        out.print(f"wrote {shown(f)}", highlight=False)


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
    # lazy: dpexp.experiments and dpexp.render import pandas, scipy, matplotlib: `dpexp --help` stays fast
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.environment import check_writable
    from dpexp.experiments.results import cached_results

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
    # lazy: dpexp.experiments and dpexp.render import pandas, scipy, matplotlib: `dpexp --help` stays fast
    from dpexp.render.report import report_workers, write_report

    rdir, fdir = dirs(results_dir, figures_dir)
    start_optional_probes()
    started = time.monotonic()

    def step(i: int, n: int, exp: str) -> None:
        err.print(f"[{i + 1}/{n}] {exp} ({time.monotonic() - started:.0f} s)", highlight=False)

    md, html_path = write_report(rdir, fdir, scale, progress=step, workers=report_workers())
    summary = md.with_name(md.name.replace("REPORT", "summary")).with_suffix(".json")
    figures = sorted(p for p in Path(fdir).glob("*/*.png") if p.stat().st_mtime >= _wall_start(started))
    for f in (md, html_path, summary):
        out.print(f"wrote {shown(f)}", highlight=False)
    out.print(f"re-rendered {len(figures)} figure{'' if len(figures) == 1 else 's'} under "
              f"{shown(fdir)} and the tables under "
              f"{shown(rdir)} (in {time.monotonic() - started:.0f} s)", highlight=False)


def _wall_start(monotonic_start: float) -> float:
    """The wall-clock time of a ``time.monotonic()`` instant (file times are wall-clock)."""
    return time.time() - (time.monotonic() - monotonic_start) - 1.0


def shown(path: Path) -> str:
    """A path as the user typed it: relative to the working directory when under it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
