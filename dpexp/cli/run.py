"""``dpexp run`` and ``dpexp plan``: compute an experiment's cells, or say what computing
them would take (plan only reads)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.markup import escape

from dpexp.cli._common import (
    BACKENDS,
    DEFAULT_EXPERIMENT,
    AlgorithmsOpt,
    DatasetOpt,
    EpsilonsOpt,
    FiguresDir,
    ResultsDir,
    RunSeed,
    Scale,
    choice,
    dirs,
    err,
    guarded,
    out,
    parse_epsilons,
    parse_list,
)
from dpexp.errors import DpexpError


def _run_jobs(value: int) -> int:
    """``--jobs`` of run: a worker count, or -1 for every core (joblib's convention)."""
    if value == 0 or value < -1:
        raise typer.BadParameter(f"must be >= 1 or -1, got {value}.")
    return value


@guarded
def run(
    experiment: Annotated[str, typer.Argument(help="Experiment id, alias (e.g. fig2) or spec file.")] = DEFAULT_EXPERIMENT,
    dataset: DatasetOpt = None,
    algorithms: AlgorithmsOpt = None,
    epsilons: EpsilonsOpt = None,
    scale: Scale = "smoke",
    jobs: Annotated[int, typer.Option("--jobs", "-j", callback=_run_jobs, help="Parallel workers (-1 = all cores).")] = 1,
    backend: Annotated[str, typer.Option("--backend", callback=choice("backend", BACKENDS), help="loky, threading or dask.")] = "loky",
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="dask scheduler address (needs --backend dask).")] = None,
    seed: RunSeed = 0,
    results_dir: ResultsDir = None,
    figures_dir: FiguresDir = None,
    force: Annotated[bool, typer.Option("--force", help="Recompute cached cells.")] = False,
    no_render: Annotated[bool, typer.Option("--no-render", help="Do not render figures/tables.")] = False,
    ledger: Annotated[bool, typer.Option("--ledger", help="Cache the full privacy ledger of every computed cell (else one row per scope and mechanism) and write the run's ledgers to a JSON file.")] = False,
    require_optional: Annotated[bool, typer.Option("--require-optional", help="Fail instead of skipping an algorithm whose optional package is missing.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
):
    """Run one experiment: expand its grid into cells, run and cache them, then render."""
    from dpexp.experiments import runner as _runner
    from dpexp.experiments.spec import resolve

    if scheduler is not None and backend != "dask":
        raise DpexpError(f"--scheduler needs --backend dask (got --backend {backend}).")
    rdir, fdir = dirs(results_dir, figures_dir)
    full = resolve(experiment)
    spec = _runner.select(full.at_scale(scale), dataset or None, parse_list(algorithms, "--algorithms"),
                          parse_epsilons(epsilons))
    # Outputs must be writable before hours of computing, not after.
    _runner.check_writable(rdir, "results directory")
    if not no_render:
        _runner.check_writable(fdir, "figures directory")
    cfg = _runner.RunConfig(results_dir=rdir, scale=scale, seed=seed, jobs=jobs, backend=backend,
                            scheduler=scheduler, force=force, progress=not quiet and sys.stderr.isatty(),
                            require_optional=require_optional, full_ledger=ledger)
    for note in _runner.drop_unavailable(spec, require_optional)[1]:  # checked before the run
        err.print(f"note: {escape(note)}", highlight=False)
    rep = _runner.run_experiment(spec, cfg)
    out.print(
        f"{spec.id} ({scale}, seed {seed}): {rep.total} cells, {rep.computed} computed, "
        f"{rep.cached} from cache, {rep.seconds:.1f}s; results (every cached cell): {rep.results_path}",
        highlight=False,
    )
    if ledger:
        _write_ledgers(rep.spec, scale, rdir, seed)
    if not no_render:
        from dpexp.render.render import render_experiment

        # render every cached cell of the experiment (not only this run's), so a run with
        # overrides adds to the figures and tables instead of replacing them
        r = render_experiment(full.at_scale(scale), scale, rdir, fdir)
        for f in r.files:
            out.print(f"  wrote {f}", highlight=False)


def _write_ledgers(spec, scale: str, rdir, seed: int) -> None:
    """``--ledger``: the privacy ledgers of the run's cells as one JSON file."""
    from dpexp.experiments.cache import atomic_write_text
    from dpexp.experiments.runner import ledger_entries

    path = rdir / spec.id / f"ledger-{scale}-seed{seed}.json"
    atomic_write_text(path, json.dumps(ledger_entries(spec, scale, rdir, seed), indent=1, default=str))
    out.print(f"privacy ledgers: {path}", highlight=False)


@guarded
def plan(
    experiment: Annotated[str | None, typer.Argument(help="Experiment id, alias or spec file.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Plan every experiment.")] = False,
    scale: Scale = "smoke",
    dataset: DatasetOpt = None,
    algorithms: AlgorithmsOpt = None,
    epsilons: EpsilonsOpt = None,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Run seed of the planned run.")] = 0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Parallel workers the run will use.")] = 1,
    calibrate: Annotated[bool, typer.Option("--calibrate/--no-calibrate", help="Time small fits per group without measured timings.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    results_dir: ResultsDir = None,
):
    """Cells in the grid, cached and to compute, and an estimate of the wall time.

    Reads only (the results directory and the downloaded data). The estimate per
    (dataset, algorithm) group is measured (the median time of its cached or committed
    cells), else extrapolated (fits on at most 2,000 rows and 3 trees, largest groups first, scaled by rows
    and trees; downloaded or synthetic datasets only; at most 60 s of calibration),
    else unknown; divided by --jobs. The output counts the cells of each kind.
    """
    from dpexp.experiments.plan import make_plans
    from dpexp.experiments.runner import select
    from dpexp.experiments.spec import all_specs, resolve

    if all_ == (experiment is not None):
        raise DpexpError("give either an EXPERIMENT or --all.")
    rdir, _ = dirs(results_dir, None)
    specs = list(all_specs().values()) if all_ else [resolve(experiment)]
    algos, eps = parse_list(algorithms, "--algorithms"), parse_epsilons(epsilons)
    selected = [select(full.at_scale(scale), dataset or None, algos, eps) for full in specs]
    plans = make_plans(selected, scale, rdir, seed=seed, jobs=jobs, calibrate_fits=calibrate)
    if as_json:
        payload = [p.to_dict() for p in plans]
        typer.echo(json.dumps(payload if all_ else payload[0], indent=2))
        return
    for p in plans:
        _print_plan(p)
    if all_:
        _print_total(plans)


def _print_plan(p) -> None:
    from dpexp.experiments.plan import format_seconds

    unknown = f" (+ {p.unestimated_cells} cells not estimated)" if p.unestimated_cells else ""
    out.print(f"{p.experiment} ({p.scale}, seed {p.seed}): {p.cells} cells, {p.cached} cached, "
              f"{p.todo} to compute; estimate {format_seconds(p.estimated_seconds)} "
              f"with {p.jobs} job(s){unknown}; {p.basis()}", highlight=False)
    for g in p.slowest():
        out.print(f"  slowest: {escape(g.dataset)} / {escape(g.label)}: {g.todo} cells x "
                  f"{g.seconds_per_cell:.3g} s ({escape(g.method)})", highlight=False)
    by_reason: dict[str, list] = {}
    for g in p.unknown_groups():
        by_reason.setdefault(g.method, []).append(g)
    for reason, groups in by_reason.items():  # a few names per reason: the output stays short
        names = ", ".join(f"{g.dataset} / {g.label}" for g in groups[:2]) + (", ..." if len(groups) > 2 else "")
        out.print(f"  not estimated ({escape(reason)}): {sum(g.todo for g in groups)} cells in "
                  f"{len(groups)} group(s): {escape(names)}", highlight=False)


def _print_total(plans) -> None:
    from dpexp.experiments.plan import format_seconds, kinds_total

    total = sum(p.estimated_seconds for p in plans)
    kinds = kinds_total(plans)
    out.print(f"all: {sum(p.cells for p in plans)} cells, {sum(p.todo for p in plans)} to compute; "
              f"estimate {format_seconds(total)} (cells to compute: {kinds['measured']} measured, "
              f"{kinds['extrapolated']} extrapolated, {kinds['unknown']} unknown and not counted)",
              highlight=False)

