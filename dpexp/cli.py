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
            err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err.print("interrupted: every finished cell is cached; run the same command to resume.")
            raise typer.Exit(130) from None

    return wrapper


def _parse_list(value: str | None) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise DpexpError("expected a comma-separated list, got an empty value.")
    return items


def _parse_epsilons(value: str | None) -> list[float] | None:
    items = _parse_list(value)
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


ResultsDir = Annotated[Path | None, typer.Option("--results-dir", help="Results and cache directory [default: results/].")]
FiguresDir = Annotated[Path | None, typer.Option("--figures-dir", help="Figures directory [default: figures/].")]
Scale = Annotated[str, typer.Option("--scale", help="smoke (seconds, subsampled) or paper (full).")]


# ----------------------------------------------------------------------------- experiments


@app.command("list")
@guarded
def list_experiments(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    results_dir: ResultsDir = None,
):
    """Every experiment with its paper, caption, datasets, algorithms and cached results."""
    from dpexp.experiments.cache import cached_experiments
    from dpexp.experiments.spec import all_specs

    rdir, _ = _dirs(results_dir, None)
    cached = cached_experiments(rdir)
    specs = all_specs()
    rows = [
        {
            "id": s.id, "aliases": s.aliases, "paper": s.paper, "artefact": s.artefact,
            "caption": s.caption, "datasets": [d.key for d in s.datasets],
            "algorithms": [a.label for a in s.algorithms], "cached_scales": cached.get(s.id, []),
        }
        for s in specs.values()
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    t = Table("experiment", "paper / artefact", "datasets", "algorithms", "cached", show_lines=False)
    for r in rows:
        name = r["id"] + (f" ({', '.join(r['aliases'])})" if r["aliases"] else "")
        t.add_row(name, f"{r['paper']}\n{r['artefact']}", ", ".join(r["datasets"]),
                  ", ".join(r["algorithms"]), ", ".join(r["cached_scales"]) or "-")
    out.print(t)


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
    from dpexp.algorithms.registry import get_algorithm
    from dpexp.datasets.registry import all_datasets
    from dpexp.experiments.procedures import get_procedure
    from dpexp.experiments.spec import alias_map, all_specs

    reg = all_datasets()
    specs = all_specs()
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
    experiment: Annotated[str, typer.Argument(help="Experiment id or alias (e.g. fig2).")] = DEFAULT_EXPERIMENT,
    dataset: Annotated[list[str] | None, typer.Option("--dataset", "-d", help="Dataset(s) to run (repeatable).")] = None,
    algorithms: Annotated[str | None, typer.Option("--algorithms", help="Comma-separated labels or names.")] = None,
    epsilons: Annotated[str | None, typer.Option("--epsilons", help="Comma-separated epsilons > 0.")] = None,
    scale: Scale = "smoke",
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Parallel workers (-1 = all cores).")] = 1,
    backend: Annotated[str, typer.Option("--backend", help="loky, threading or dask.")] = "loky",
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="dask scheduler address (with --backend dask).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Run seed; every cell's seed derives from it.")] = 0,
    results_dir: ResultsDir = None,
    figures_dir: FiguresDir = None,
    force: Annotated[bool, typer.Option("--force", help="Recompute cached cells.")] = False,
    no_render: Annotated[bool, typer.Option("--no-render", help="Do not render figures/tables.")] = False,
    ledger: Annotated[bool, typer.Option("--ledger", help="Write the privacy ledgers of the run to a JSON file.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
):
    """Run one experiment: expand its grid into cells, run and cache them, then render."""
    from dpexp.experiments.runner import RunConfig, ledger_entries, run_experiment, select
    from dpexp.experiments.spec import resolve
    from dpexp.render.render import render_experiment

    if jobs == 0 or jobs < -1:
        raise DpexpError(f"--jobs must be >= 1 or -1, got {jobs}.")
    if seed < 0:
        raise DpexpError(f"--seed must be >= 0, got {seed}.")
    rdir, fdir = _dirs(results_dir, figures_dir)
    spec = resolve(experiment)
    spec = select(spec.at_scale(scale), dataset or None, _parse_list(algorithms), _parse_epsilons(epsilons))
    cfg = RunConfig(results_dir=rdir, scale=scale, seed=seed, jobs=jobs, backend=backend,
                    scheduler=scheduler, force=force, progress=not quiet and sys.stderr.isatty())
    rep = run_experiment(spec, cfg)
    out.print(
        f"{spec.id} ({scale}): {rep.total} cells, {rep.computed} computed, {rep.cached} from cache, "
        f"{rep.seconds:.1f}s; results: {rep.results_path}"
    )
    if ledger:
        path = rdir / spec.id / f"ledger-{scale}.json"
        from dpexp.experiments.cache import atomic_write_text

        atomic_write_text(path, json.dumps(ledger_entries(spec, scale, rdir), indent=1, default=str))
        out.print(f"privacy ledgers: {path}")
    if not no_render:
        r = render_experiment(spec, scale, rdir, fdir)
        for f in r.files:
            out.print(f"  wrote {f}")


@app.command()
@guarded
def render(
    experiment: Annotated[str, typer.Argument(help="Experiment id or alias.")],
    scale: Scale = "smoke",
    results_dir: ResultsDir = None,
    figures_dir: FiguresDir = None,
):
    """Draw figures and tables from the cache alone (no recomputation)."""
    from dpexp.experiments.spec import resolve
    from dpexp.render.render import render_experiment

    rdir, fdir = _dirs(results_dir, figures_dir)
    spec = resolve(experiment).at_scale(scale)
    r = render_experiment(spec, scale, rdir, fdir)
    if r.missing_cells:
        err.print(f"{r.missing_cells} cells are not cached yet; rendered what exists.")
    for f in r.files:
        out.print(f"wrote {f}")


@app.command()
@guarded
def results(
    experiment: Annotated[str, typer.Argument(help="Experiment id or alias.")],
    fmt: Annotated[str, typer.Option("--format", help="csv or json.")] = "csv",
    scale: Scale = "smoke",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write [default: stdout].")] = None,
    results_dir: ResultsDir = None,
):
    """Export the tidy results table (one row per cell x metric) from the cache."""
    from dpexp.experiments.runner import collect
    from dpexp.experiments.spec import resolve

    if fmt not in ("csv", "json"):
        raise DpexpError(f"--format must be csv or json, got {fmt!r}.")
    rdir, _ = _dirs(results_dir, None)
    spec = resolve(experiment).at_scale(scale)
    frame, missing = collect(spec, scale, rdir)
    text = frame.to_csv(index=False) if fmt == "csv" else frame.to_json(orient="records", indent=1)
    if output:
        output.write_text(text)
    else:
        typer.echo(text)
    if missing:
        err.print(f"{len(missing)} of {len(missing) + frame.groupby(['dataset','label','params','epsilon','fold','repeat']).ngroups} cells are not cached yet.")


@app.command()
@guarded
def report(
    scale: Annotated[str | None, typer.Option("--scale", help="Report this scale only [default: paper where cached, else smoke].")] = None,
    results_dir: ResultsDir = None,
    figures_dir: FiguresDir = None,
):
    """Write results/REPORT.md and results/report.html from the cache (no recomputation)."""
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
    from dpexp.algorithms.registry import all_algorithms

    algos = all_algorithms()
    rows = [{"name": a.name, "private": a.private, "tasks": list(a.targets), "paper": a.paper,
             "description": a.description} for a in algos.values()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    t = Table("algorithm", "private", "tasks", "paper", "description")
    for r in rows:
        t.add_row(r["name"], "yes" if r["private"] else "no", ", ".join(r["tasks"]), r["paper"], r["description"])
    out.print(t)


@app.command()
@guarded
def audit(
    name: Annotated[str | None, typer.Argument(help="Audit target (mechanism, ledger entry or tiny model).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Audit every registered target.")] = False,
    broken: Annotated[bool, typer.Option("--broken", help="Use the deliberately broken fixtures.")] = False,
    epsilon: Annotated[float | None, typer.Option("--epsilon", help="Claimed epsilon to test.")] = None,
    samples: Annotated[int | None, typer.Option("--samples", help="Draws per dataset and stage.")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    quick: Annotated[bool, typer.Option("--quick", help="Fewer draws (the test-suite sizes).")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """Empirically lower-bound the epsilon of a release.

    With NAME: exits 1 when the lower bound exceeds the claimed epsilon (the release is
    not as private as claimed), even for targets known to be unprivate. With --all: exits
    1 only on unexpected outcomes (a correct mechanism flagged, or a known-unprivate one
    not flagged).
    """
    from dpexp.privacy.audit import audit_targets, get_audit_target, run_target

    if epsilon is not None:
        from dpexp.errors import check_epsilon

        try:
            check_epsilon(epsilon)
        except ValueError as exc:
            raise DpexpError(f"--epsilon: {exc}") from None
    if samples is not None and samples < 100:
        raise DpexpError(f"--samples must be at least 100, got {samples}.")
    if all_ == (name is not None):
        raise DpexpError("give either a target NAME or --all.")
    targets = (list(audit_targets(broken=broken).values()) if all_
               else [get_audit_target(name, broken=True if broken else None)])
    results_ = []
    for t in targets:
        try:
            r = run_target(t, epsilon=epsilon, samples=samples, seed=seed, quick=quick)
        except ValueError as exc:
            raise DpexpError(f"audit {t.name}: {exc}") from None
        results_.append(r)
        if not as_json:
            typer.echo(r.summary_line())
    if as_json:
        payload = [r.to_dict() for r in results_]
        typer.echo(json.dumps(payload if all_ else payload[0], indent=2, default=str))
    failed = any(not r.as_expected for r in results_) if all_ else not results_[0].passed
    raise typer.Exit(1 if failed else 0)


# ----------------------------------------------------------------------------- datasets


@datasets_app.command("list")
@guarded
def datasets_list(as_json: Annotated[bool, typer.Option("--json")] = False):
    """Every registered dataset."""
    from dpexp.datasets.registry import all_datasets

    rows = [
        {"name": i.name, "task": i.task, "rows": i.rows, "features": i.features,
         "papers": i.papers, "source": "synthetic" if i.parser == "synthetic"
         else ("user-supplied" if i.local_only else "download"), "description": i.description}
        for i in all_datasets().values()
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    t = Table("dataset", "task", "rows", "features", "source", "papers")
    for r in rows:
        t.add_row(r["name"], r["task"], f"{r['rows']:,}" if r["rows"] else "?", str(r["features"]),
                  r["source"], ", ".join(f"{k}: {v}" for k, v in r["papers"].items()))
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
    load: Annotated[bool, typer.Option("--load/--no-load", help="Load it to report class balance.")] = True,
):
    """Rows, features, task, class balance, cache path and checksum status."""
    from dpexp.datasets import download, load_dataset
    from dpexp.datasets.registry import get_dataset_info

    info = get_dataset_info(name)
    loaded = load_dataset(name, progress=False).summary() if load else None
    data = {"name": info.name, "description": info.description, "task": info.task,
            "papers": info.papers, "registry_rows": info.rows, "registry_features": info.features,
            "files": download.checksum_status(info)}
    if info.local_only:
        data["user_supplied"] = info.local_only
    if loaded is not None:
        data["loaded"] = loaded
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=str))
        return
    out.print(f"[bold]{info.name}[/] ({info.task}) — {info.description}", highlight=False)
    out.print("papers: " + "; ".join(f"{k} ({v})" for k, v in info.papers.items()), highlight=False)
    out.print(f"registry shape: {info.rows or '?'} rows x {info.features or '?'} features", highlight=False)
    for f in data["files"]:
        out.print(f"file {f['file']}: {f['status']} — {f['path']}", highlight=False)
    if info.local_only:
        out.print(f"user-supplied: {info.local_only.get('instructions', '').strip()}", highlight=False)
    if loaded is not None:
        balance = loaded.get("class_balance")
        extra = (", class balance " + ", ".join(f"{k}: {v:.1%}" for k, v in balance.items())) if balance \
            else f", label range {loaded.get('label_range')}"
        test = f", fixed test split {loaded['test_rows']} rows" if loaded.get("test_rows") else ""
        out.print(f"loaded: {loaded['rows']} rows x {loaded['features']} features "
                  f"({loaded['categorical_features']} categorical, sparse={loaded['sparse']}, "
                  f"domain {loaded['domain_source']}){test}{extra}", highlight=False)


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
