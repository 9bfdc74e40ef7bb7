"""The ``dpexp`` command line: parses arguments and delegates to the library."""

from __future__ import annotations

import functools
import json
import math
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dpexp.errors import DpexpError

app = typer.Typer(
    help="Reproduce the experiments of the papers on differentially private tree ensembles.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
datasets_app = typer.Typer(help="List, download and inspect the registered datasets.", no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")
cluster_app = typer.Typer(help="Inspect the dask.distributed cluster used by --backend dask.", no_args_is_help=True)
app.add_typer(cluster_app, name="cluster")

DEFAULT_EXPERIMENT = "quickstart"
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def guarded(fn):
    """Report user errors as one paragraph (no traceback) and exit non-zero."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DpexpError as exc:
            # escape: messages hold literal brackets (pip install 'dpexp[peers]') that rich
            # would otherwise read as markup and drop
            err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            again = "the same command without --force" if kwargs.get("force") else "the same command"
            err.print(f"interrupted: every finished cell is cached; run {again} to resume.")
            raise typer.Exit(130) from None

    return wrapper


def _parse_list(value: str | None, option: str = "the list") -> list[str] | None:
    """Comma-separated items; an empty item (``1,,2``, a trailing comma) is an error."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",")]
    if not any(items):
        raise DpexpError(f"{option}: expected a comma-separated list, got an empty value.")
    if not all(items):
        raise DpexpError(f"{option}: empty item in {value!r} (a stray comma?).")
    return items


def _parse_epsilons(value: str | None) -> list[float] | None:
    items = _parse_list(value, "--epsilons")
    if items is None:
        return None
    eps = []
    for v in items:
        try:
            f = float(v)
        except ValueError:
            raise DpexpError(f"--epsilons: {v!r} is not a number.") from None
        if math.isnan(f) or f <= 0 or math.isinf(f):
            raise DpexpError(f"--epsilons: epsilon must be a finite number > 0, got {v!r}.")
        eps.append(f)
    return eps


def _dirs(results_dir: Path | None, figures_dir: Path | None) -> tuple[Path, Path]:
    from dpexp.paths import default_figures_dir, default_results_dir

    return (results_dir or default_results_dir(), figures_dir or default_figures_dir())


# Help texts avoid [square brackets]: rich reads them as markup and prints " ." instead.
ResultsDir = Annotated[Path | None, typer.Option("--results-dir", help="Results and cache directory (default: results/).")]
FiguresDir = Annotated[Path | None, typer.Option("--figures-dir", help="Figures directory (default: figures/).")]
Scale = Annotated[str, typer.Option("--scale", help="smoke (seconds, subsampled) or paper (full).")]
DatasetOpt = Annotated[list[str] | None, typer.Option("--dataset", "-d", help="Dataset(s) (repeatable).")]
AlgorithmsOpt = Annotated[str | None, typer.Option("--algorithms", help="Comma-separated labels or names.")]
EpsilonsOpt = Annotated[str | None, typer.Option("--epsilons", help="Comma-separated epsilons > 0.")]
SeedFilter = Annotated[list[int] | None, typer.Option("--seed", help="Only these run seeds (repeatable; default: all).")]


def _version(value: bool) -> None:
    if value:
        import dpexp

        typer.echo(f"dpexp {dpexp.__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Reproduce the experiments of the papers on differentially private tree ensembles."""


def _filters(dataset: list[str] | None, algorithms: str | None, epsilons: str | None,
             seeds: list[int] | None):
    """The run-style selection options as a ResultFilter (None where not given)."""
    from dpexp.experiments.results import ResultFilter

    for s in seeds or ():
        if s < 0:
            raise DpexpError(f"--seed must be >= 0, got {s}.")
    algos = _parse_list(algorithms, "--algorithms")
    eps = _parse_epsilons(epsilons)
    return ResultFilter(
        datasets=tuple(dataset) if dataset else None, algorithms=tuple(algos) if algos else None,
        epsilons=tuple(eps) if eps else None, seeds=tuple(seeds) if seeds else None,
    )


def _check_scale(scale: str) -> None:
    if scale not in ("smoke", "paper"):
        raise DpexpError(f"Unknown scale {scale!r}; use one of smoke, paper.")


# ----------------------------------------------------------------------------- experiments


def _cell_counts(spec, rdir: Path) -> dict[str, dict[str, int]]:
    """Per scale: cells of the spec's grid (seed 0), how many of them are done, and every
    done cell (all seeds and overrides), from the cache and the committed results alike
    (the same source as ``results``/``render``/``report``)."""
    from dpexp.experiments.cells import expand
    from dpexp.experiments.results import cached_keys

    out = {}
    for sc in ("smoke", "paper"):
        grid = {c.key for c in expand(spec.at_scale(sc), sc)}
        done = cached_keys(spec, sc, rdir)
        out[sc] = {"grid": len(grid), "grid_cached": len(grid & done), "cached": len(done)}
    return out


def _done(c: dict[str, int]) -> str:
    """``grid cells done/grid``, and ``+N`` cells outside the grid (other seeds, overrides)."""
    extra = c["cached"] - c["grid_cached"]
    return f"{c['grid_cached']}/{c['grid']}" + (f" +{extra}" if extra else "")


@app.command("list")
@guarded
def list_experiments(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    results_dir: ResultsDir = None,
):
    """Every experiment with its paper, artefact, size and cached cells."""
    from dpexp.experiments.spec import load_catalog

    rdir, _ = _dirs(results_dir, None)
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
        typer.echo(json.dumps(rows if not broken else rows + [{"id": k, "error": v} for k, v in broken.items()], indent=2))
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


@app.command()
@guarded
def show(experiment: Annotated[str, typer.Argument(help="Experiment id or alias.")]):
    """Show a spec (and which spec an alias resolves to)."""
    from dpexp.experiments.spec import resolve

    spec = resolve(experiment)
    if experiment != spec.id:
        out.print(f"[bold]{experiment}[/] is an alias of [bold]{spec.id}[/]")
    out.print(f"[bold]{spec.id}[/] — {spec.artefact} of {spec.paper} ({spec.path})")
    typer.echo(spec.path.read_text())


@app.command()
@guarded
def validate():
    """Validate every experiment spec and the dataset registry."""
    from dpexp.datasets.registry import all_datasets
    from dpexp.experiments.procedures import get_procedure
    from dpexp.experiments.spec import alias_map, load_catalog
    from dpexp.registry import get_algorithm

    reg = all_datasets()
    catalog = load_catalog()
    if catalog.errors:  # list and run skip broken files; validate reports them
        raise next(iter(catalog.errors.values()))
    specs = catalog.specs
    alias_map(specs)
    from dpexp.errors import SpecError, UnknownNameError

    for s in specs.values():
        for d in s.datasets:
            if d.name not in reg:
                raise SpecError(f"{s.path.name}: datasets: {UnknownNameError('dataset', d.name, reg)}")
        for a in s.algorithms:
            get_algorithm(a.name) if a.name else get_procedure(a.procedure)
        for sc in s.scales:
            s.at_scale(sc)
    out.print(f"ok: {len(specs)} experiment specs, {len(reg)} datasets")


@app.command()
@guarded
def run(
    experiment: Annotated[str, typer.Argument(help="Experiment id, alias (e.g. fig2) or spec file.")] = DEFAULT_EXPERIMENT,
    dataset: DatasetOpt = None,
    algorithms: AlgorithmsOpt = None,
    epsilons: EpsilonsOpt = None,
    scale: Scale = "smoke",
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Parallel workers (-1 = all cores).")] = 1,
    backend: Annotated[str, typer.Option("--backend", help="loky, threading or dask.")] = "loky",
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="dask scheduler address (needs --backend dask).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Run seed; part of every cell (cached per seed).")] = 0,
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

    if jobs == 0 or jobs < -1:
        raise DpexpError(f"--jobs must be >= 1 or -1, got {jobs}.")
    if seed < 0:
        raise DpexpError(f"--seed must be >= 0, got {seed}.")
    if scheduler is not None and backend != "dask":
        raise DpexpError(f"--scheduler needs --backend dask (got --backend {backend}).")
    rdir, fdir = _dirs(results_dir, figures_dir)
    full = resolve(experiment)
    spec = _runner.select(full.at_scale(scale), dataset or None, _parse_list(algorithms, "--algorithms"),
                  _parse_epsilons(epsilons))
    # Outputs must be writable before hours of computing, not after.
    _runner.check_writable(rdir, "results directory")
    if not no_render:
        _runner.check_writable(fdir, "figures directory")
    cfg = _runner.RunConfig(results_dir=rdir, scale=scale, seed=seed, jobs=jobs, backend=backend,
                    scheduler=scheduler, force=force, progress=not quiet and sys.stderr.isatty(),
                    require_optional=require_optional, full_ledger=ledger)
    for note in _skipped_notes(spec, require_optional):
        err.print(f"note: {escape(note)}", highlight=False)
    rep = _runner.run_experiment(spec, cfg)
    out.print(
        f"{spec.id} ({scale}, seed {seed}): {rep.total} cells, {rep.computed} computed, "
        f"{rep.cached} from cache, {rep.seconds:.1f}s; results (every cached cell): {rep.results_path}",
        highlight=False,
    )
    if ledger:
        path = rdir / spec.id / f"ledger-{scale}-seed{seed}.json"
        from dpexp.experiments.cache import atomic_write_text

        atomic_write_text(path, json.dumps(_runner.ledger_entries(rep.spec, scale, rdir, seed), indent=1, default=str))
        out.print(f"privacy ledgers: {path}", highlight=False)
    if not no_render:
        from dpexp.render.render import render_experiment

        # render every cached cell of the experiment (not only this run's), so a run with
        # overrides adds to the figures and tables instead of replacing them
        r = render_experiment(full.at_scale(scale), scale, rdir, fdir)
        for f in r.files:
            out.print(f"  wrote {f}", highlight=False)


def _skipped_notes(spec, require_optional: bool) -> list[str]:
    """Notes on algorithms skipped for a missing optional package (checked before the run)."""
    from dpexp.experiments.runner import drop_unavailable

    return drop_unavailable(spec, require_optional)[1]


@app.command()
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

    _check_scale(scale)
    filters = _filters(dataset, algorithms, epsilons, seed)
    rdir, fdir = _dirs(results_dir, figures_dir)
    spec = resolve(experiment).at_scale(scale)
    r = render_experiment(spec, scale, rdir, fdir, **({"filters": filters} if filters.given else {}))
    if r.missing_cells:
        err.print(f"{r.missing_cells} cells of the grid are not cached yet; rendered what exists.")
    for f in r.files:
        out.print(f"wrote {f}", highlight=False)


@app.command()
@guarded
def results(
    experiment: Annotated[str, typer.Argument(help="Experiment id, alias or spec file.")],
    fmt: Annotated[str, typer.Option("--format", help="csv or json.")] = "csv",
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

    if fmt not in ("csv", "json"):
        raise DpexpError(f"--format must be csv or json, got {fmt!r}.")
    _check_scale(scale)
    filters = _filters(dataset, algorithms, epsilons, seed)
    rdir, _ = _dirs(results_dir, None)
    spec = resolve(experiment).at_scale(scale)
    res = cached_results(spec, scale, rdir, filters)
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


@app.command()
@guarded
def plan(
    experiment: Annotated[str | None, typer.Argument(help="Experiment id, alias or spec file.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Plan every experiment.")] = False,
    scale: Scale = "smoke",
    dataset: DatasetOpt = None,
    algorithms: AlgorithmsOpt = None,
    epsilons: EpsilonsOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Run seed of the planned run.")] = 0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Parallel workers the run will use.")] = 1,
    calibrate: Annotated[bool, typer.Option("--calibrate/--no-calibrate", help="Time a small fit per group without cached timings.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    results_dir: ResultsDir = None,
):
    """Cells in the grid, cached and to compute, and an estimate of the wall time.

    The estimate per (dataset, algorithm) group is the median fit time of its cached
    cells, else one fit on at most 2,000 training rows scaled linearly by rows (datasets
    already downloaded only), else unknown; divided by --jobs. A lower bound: loading and
    evaluation are not counted.
    """
    from dpexp.experiments.plan import format_seconds, make_plan
    from dpexp.experiments.runner import select
    from dpexp.experiments.spec import all_specs, resolve

    _check_scale(scale)
    if all_ == (experiment is not None):
        raise DpexpError("give either an EXPERIMENT or --all.")
    if seed < 0:
        raise DpexpError(f"--seed must be >= 0, got {seed}.")
    if jobs < 1:
        raise DpexpError(f"--jobs must be >= 1, got {jobs}.")
    rdir, _ = _dirs(results_dir, None)
    specs = list(all_specs().values()) if all_ else [resolve(experiment)]
    plans = []
    for full in specs:
        spec = select(full.at_scale(scale), dataset or None, _parse_list(algorithms, "--algorithms"),
                      _parse_epsilons(epsilons))
        plans.append(make_plan(spec, scale, rdir, seed=seed, jobs=jobs, calibrate_fits=calibrate))
    if as_json:
        payload = [p.to_dict() for p in plans]
        typer.echo(json.dumps(payload if all_ else payload[0], indent=2))
        return
    for p in plans:
        unknown = f" (+ {p.unestimated_cells} cells not estimated)" if p.unestimated_cells else ""
        out.print(f"{p.experiment} ({p.scale}, seed {p.seed}): {p.cells} cells, {p.cached} cached, "
                  f"{p.todo} to compute; estimate {format_seconds(p.estimated_seconds)} "
                  f"with {p.jobs} job(s){unknown}", highlight=False)
        for g in p.slowest():
            out.print(f"  slowest: {escape(g.dataset)} / {escape(g.label)}: {g.todo} cells x "
                      f"{g.seconds_per_cell:.3g} s ({escape(g.method)})", highlight=False)
    if all_:
        total = sum(p.estimated_seconds for p in plans)
        out.print(f"all: {sum(p.cells for p in plans)} cells, {sum(p.todo for p in plans)} to compute; "
                  f"estimate {format_seconds(total)}", highlight=False)


@app.command()
@guarded
def report(
    scale: Annotated[str | None, typer.Option("--scale", help="Report this scale only [default: paper where cached, else smoke].")] = None,
    results_dir: ResultsDir = None,
    figures_dir: FiguresDir = None,
):
    """Write results/REPORT.md and results/report.html (REPORT-smoke.md / report-smoke.html
    with --scale smoke) from the cache and the committed results (no recomputation)."""
    from dpexp.render.report import write_report

    if scale not in (None, "smoke", "paper"):
        raise DpexpError(f"--scale must be smoke or paper, got {scale!r}.")
    rdir, fdir = _dirs(results_dir, figures_dir)
    md, html_path = write_report(rdir, fdir, scale)
    out.print(f"wrote {md}\nwrote {html_path}")


@app.command("algorithms")
@guarded
def list_algorithms(as_json: Annotated[bool, typer.Option("--json")] = False):
    """Every registered algorithm."""
    from dpexp.registry import all_algorithms

    def _usage(target: str, params: dict) -> dict:
        module, _, cls = target.partition(":")
        args = ", ".join(f"{k}={json.dumps(v) if isinstance(v, str) else repr(v)}"
                         for k, v in params.items())
        return {"class": cls, "module": module, "import_path": target, "params": dict(params),
                "usage": f"{target}({args})"}

    algos = all_algorithms()
    rows = [{"name": a.name, "private": a.private, "tasks": list(a.targets), "paper": a.paper,
             "description": a.description,
             "estimators": {task: _usage(target, a.default_params)
                            for task, target in a.targets.items()}}
            for a in algos.values()]
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


@app.command()
@guarded
def audit(
    name: Annotated[str | None, typer.Argument(help="Audit target (a registered estimator end to end, a mechanism, a demo or ledger entries).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Audit every registered target.")] = False,
    broken: Annotated[bool, typer.Option("--broken", help="Use the deliberately broken fixtures.")] = False,
    epsilon: Annotated[float | None, typer.Option("--epsilon", help="Claimed epsilon to test.")] = None,
    samples: Annotated[int | None, typer.Option("--samples", help="Draws per dataset and stage.")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    quick: Annotated[bool, typer.Option("--quick", help="Each target's CI size (fewer draws); the default is the full size.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """Empirically lower-bound the epsilon of a release (mechanisms and real estimators).

    With NAME: exits 1 when the lower bound exceeds the claimed epsilon (the release is
    not as private as claimed), even for targets known to be unprivate. With --all: exits
    1 only on unexpected outcomes (a correct target flagged, or a known-unprivate one
    not flagged). --json lists kind, algorithm, claim, lower bound and outcome.
    Implemented by dpexp.privacy.audit.cli_audit.
    """
    from dpexp.privacy.audit import cli_audit

    code = cli_audit(name, all_targets=all_, broken=broken, epsilon=epsilon, samples=samples,
                     seed=seed, quick=quick, as_json=as_json, echo=typer.echo)
    raise typer.Exit(code)


# ----------------------------------------------------------------------------- datasets


@datasets_app.command("list")
@guarded
def datasets_list(as_json: Annotated[bool, typer.Option("--json")] = False):
    """Every registered dataset."""
    from dpexp.datasets.registry import all_datasets

    rows = [
        {"name": i.name, "task": i.task, "rows": i.rows, "features": i.features,
         "papers": i.papers, "source": "synthetic" if i.parser == "synthetic"
         else ("user-supplied" if i.local_only else "download"), "description": i.description,
         "public_domain": i.domain_declaration()}
        for i in all_datasets().values()
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    t = Table("dataset", "task", "rows", "features", "source", "domain", "papers")
    for r in rows:
        # "declared" only when nothing public is read from the data (issue 16 item 5)
        declared = not any("observed" in v for v in r["public_domain"].values())
        t.add_row(r["name"], r["task"], f"{r['rows']:,}" if r["rows"] else "?", str(r["features"]),
                  r["source"], "declared" if declared else "observed (not DP)",
                  ", ".join(f"{k}: {v}" for k, v in r["papers"].items()))
    out.print(t)


@datasets_app.command("download")
@guarded
def datasets_download(
    name: Annotated[str | None, typer.Argument(help="Dataset name.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every downloadable dataset.")] = False,
    mirror: Annotated[str | None, typer.Option("--mirror", help="Folder or http(s) URL laid out like shared/datasets [env: DPEXP_DATA_MIRROR].")] = None,
):
    """Download (and verify) dataset files into the data cache."""
    from dpexp.datasets import download
    from dpexp.datasets.registry import all_datasets, get_dataset_info

    if not name and not all_:
        raise DpexpError("name a dataset or pass --all.")
    infos = [i for i in all_datasets().values() if i.downloadable] if all_ else [get_dataset_info(name)]
    failures = []
    for info in infos:
        if info.parser == "synthetic":
            out.print(f"{info.name}: synthetic, generated on use (nothing to download)")
            continue
        try:
            for p in download.fetch_dataset(info, mirror=mirror):
                out.print(f"{info.name}: {p} (sha256 ok)")
        except DpexpError as exc:
            if not all_:
                raise
            failures.append(f"{info.name}: {exc}")
    if failures:
        for f in failures:
            err.print(f"[red]failed[/] {f}", highlight=False)
        raise typer.Exit(2)


@datasets_app.command("info")
@guarded
def datasets_info(
    name: Annotated[str, typer.Argument(help="Dataset name.")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
    load: Annotated[bool, typer.Option("--load/--no-load", help="Also load it (downloading or copying it into the data directory if needed) to report rows, class balance and the domain found.")] = False,
):
    """Registry entry, public domain, local state (cached? verified?) and where to get it.

    Reads only the registry and the data directory unless --load is given.
    """
    from dpexp.datasets import download, load_dataset
    from dpexp.datasets.registry import get_dataset_info
    from dpexp.paths import data_dir

    info = get_dataset_info(name)
    loaded = load_dataset(name, progress=False).summary() if load else None  # before the file states
    data = {"name": info.name, "description": info.description, "task": info.task,
            "papers": info.papers, "registry_rows": info.rows, "registry_features": info.features,
            "paper_rows": info.paper_rows, "test_rows": info.test_rows,
            "source": "synthetic" if info.parser == "synthetic" else ("user-supplied" if info.local_only else "download"),
            "public_domain": info.domain_declaration(),
            "classes": None if info.classes is None else list(info.classes),
            "data_dir": str(data_dir()), "mirror": download.mirror_setting(),
            "files": download.checksum_status(info)}
    if info.local_only:
        data["user_supplied"] = download.local_only_state(info)
    if info.local_instructions:
        data["instructions"] = info.local_instructions.strip()
    if loaded is not None:
        data["loaded"] = loaded
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=str))
        return
    _print_dataset_info(info, data)


def _print_dataset_info(info, data: dict) -> None:
    """Human-readable `datasets info` (the same facts as --json)."""
    say = functools.partial(out.print, highlight=False)
    say(f"[bold]{info.name}[/] ({info.task}) — {info.description}")
    say("papers: " + "; ".join(f"{k} ({v})" for k, v in info.papers.items()))
    paper = f" (paper: {info.paper_rows:,})" if info.paper_rows else ""
    test = f", fixed test part {info.test_rows:,} rows" if info.test_rows else ""
    say(f"registry shape: {info.rows or '?'} rows{paper} x {info.features or '?'} features{test}; "
        f"source: {data['source']}")
    for key, text in data["public_domain"].items():
        say(f"public {key}: {text}")
    for f in data["files"]:
        where = f["url"] or (f"{f['page']} (login needed)" if f["page"] else "no public URL")
        say(f"file {f['file']}: {f['status']} — {f['detail']}; local path {f['path']}")
        say(f"  get it from {where}, or a mirror at <mirror>/{f['mirror_path']}"
            f" (mirror now: {data['mirror'] or 'none; set DPEXP_DATA_MIRROR'})")
    if data.get("user_supplied"):
        u = data["user_supplied"]
        say(f"user-supplied file {u['file']}: {u['status']} at {u['path']}")
        say(f"  {u['instructions']}")
    if data.get("instructions"):
        say(f"instructions: {data['instructions']}")
    if "loaded" not in data:
        if info.parser == "synthetic":
            say("synthetic: generated on use; `--load` generates it and reports the domain found")
        elif info.local_only:
            say("not loaded; once the file is in place, `--load` reports rows, class balance and the domain found")
        else:
            say(f"not loaded (nothing was downloaded or copied); `dpexp datasets download {info.name}` "
                f"fetches it, `--load` also reports rows, class balance and the domain found")
        return
    loaded = data["loaded"]
    balance = loaded.get("class_balance")
    extra = (", class balance " + ", ".join(f"{k}: {v:.1%}" for k, v in balance.items())) if balance \
        else f", label range {loaded.get('label_range')}"
    test = f", fixed test split {loaded['test_rows']} rows" if loaded.get("test_rows") else ""
    say(f"loaded: {loaded['rows']} rows x {loaded['features']} features "
        f"({loaded['categorical_features']} categorical, sparse={loaded['sparse']}, "
        f"domain {loaded['domain_source']}){test}{extra}")


@cluster_app.command("info")
@guarded
def cluster_info(
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="tcp://HOST:PORT of a running scheduler; default: start a LocalCluster.")] = None,
    workers: Annotated[int, typer.Option("--workers", help="Workers of the LocalCluster (without --scheduler).")] = 2,
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """Workers, threads and memory of a dask cluster (the one `--backend dask` would use)."""
    from dpexp.experiments.runner import dask_client

    with dask_client(scheduler, workers) as client:
        info = client.scheduler_info()
        rows = [{"worker": addr, "name": str(w.get("name")), "threads": w.get("nthreads"),
                 "memory_gib": round(w.get("memory_limit", 0) / 2**30, 2)}
                for addr, w in sorted(info.get("workers", {}).items())]
        summary = {"scheduler": info.get("address"), "workers": len(rows),
                   "threads": sum(r["threads"] or 0 for r in rows), "detail": rows}
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    out.print(f"scheduler {summary['scheduler']}: {summary['workers']} workers, {summary['threads']} threads")
    for r in rows:
        out.print(f"  {r['worker']}  name={r['name']}  threads={r['threads']}  memory={r['memory_gib']} GiB")


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
