"""``dpexp run`` and ``dpexp plan``: compute an experiment's cells, or say what computing
them would take (plan only reads)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
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
    start_optional_probes,
)
from dpexp.errors import DpexpError, UnknownNameError


def _instant(value: str | None) -> datetime | None:
    """``--recompute-before``: an ISO 8601 date or time (UTC unless it names a zone)."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not an ISO 8601 date or time, e.g. 2026-11-27 or "
            f"2026-11-27T08:00:00Z.") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _check_instant(value: str | None) -> str | None:
    _instant(value)  # a bad value fails here, as typer's own checks do, before any work
    return value


def _check_shard(value: str | None) -> str | None:
    """``--shard K/N``: checked as typer checks its own options, before any work."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.config import parse_shard

    if value is not None:
        try:
            parse_shard(value)
        except DpexpError as exc:
            raise typer.BadParameter(str(exc)) from None
    return value


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
    recompute_before: Annotated[str | None, typer.Option("--recompute-before", metavar="TIME", callback=_check_instant, help="Recompute the cells (cached or committed) computed before TIME (ISO 8601, UTC unless a zone is given), keep those computed since: a --force that resumes, e.g. to time a campaign again with the current code.")] = None,
    no_render: Annotated[bool, typer.Option("--no-render", help="Do not render figures/tables.")] = False,
    ledger: Annotated[bool, typer.Option("--ledger", help="Cache the full privacy ledger of every computed cell (else one row per scope and mechanism) and write the run's ledgers to a JSON file.")] = False,
    require_optional: Annotated[bool, typer.Option("--require-optional", help="Fail instead of skipping an algorithm whose optional package is missing.")] = False,
    skip_unavailable: Annotated[bool, typer.Option("--skip-unavailable", help="Leave out, with a note, datasets this machine cannot get (no network or mirror serving them, user-supplied files not supplied) instead of failing; a corrupted download still fails.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress (a bar on a terminal, else a line every 30 s).")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Run a grid of more than 100,000 cells (refused without it).")] = False,
    shard: Annotated[str | None, typer.Option("--shard", metavar="K/N", callback=_check_shard, help="Compute only shard K of N (1-based, e.g. 2/4): the grid split alike on every machine, longest cells first by the committed tables' times; writes no table or figure. After the last shard, `dpexp run` on the union of the shards' caches writes them (README: paper scale on several machines).")] = None,
    dp_domains: Annotated[bool, typer.Option("--dp-domains", help="Add a twin of every private series, labelled '<label> (DP domains)', that pays a share of each cell's epsilon (--dp-domain-share, default 0.1) for a DP feature domain / label range on the datasets that declare none (skipped on the others); the paper-faithful series keep the observed domain.")] = False,
    dp_domain_share: Annotated[float | None, typer.Option("--dp-domain-share", metavar="SHARE", help="The share of each cell's epsilon the --dp-domains twins pay for their domains, in (0, 1); implies --dp-domains.")] = None,
):
    """Run one experiment: expand its grid into cells, run and cache them, then render."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments import runner as _runner
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.cells import check_grid_size, unsupported_notes
    from dpexp.experiments.config import parse_shard
    from dpexp.experiments.environment import check_writable
    from dpexp.experiments.harness_params import DEFAULT_SHARE
    from dpexp.experiments.spec import select

    if scheduler is not None and backend != "dask":
        raise DpexpError(f"--scheduler needs --backend dask (got --backend {backend}).")
    before = _instant(recompute_before)
    rdir, fdir = dirs(results_dir, figures_dir)
    full = resolve(experiment)
    share = dp_domain_share if dp_domain_share is not None else (DEFAULT_SHARE if dp_domains else None)
    spec = select(full.at_scale(scale), dataset or None, parse_list(algorithms, "--algorithms"),
                  parse_epsilons(epsilons), share)
    check_grid_size(spec, yes)
    skipped_tasks = unsupported_notes(spec)  # e.g. a classification-only method on regression data
    if skipped_tasks:  # one line per run, however many series or datasets
        err.print(f"note: {escape('; '.join(skipped_tasks))}", highlight=False)
    # Outputs must be writable before hours of computing, not after.
    check_writable(rdir, "results directory")
    if not no_render and shard is None:
        check_writable(fdir, "figures directory")
    cfg = _runner.RunConfig(results_dir=rdir, scale=scale, seed=seed, jobs=jobs, backend=backend,
                            scheduler=scheduler, force=force, recompute_before=before, progress=not quiet,
                            require_optional=require_optional, full_ledger=ledger,
                            shard=parse_shard(shard) if shard is not None else None)
    for note in _runner.drop_unavailable(spec, require_optional)[1]:  # checked before the run
        err.print(f"note: {escape(note)}", highlight=False)
    if skip_unavailable:
        spec, notes = _runner.drop_unreachable(spec, cfg)
        for note in notes:
            err.print(f"note: {escape(note)}", highlight=False)
        if spec is None:
            out.print(f"{full.id} ({scale}): nothing to run here, every dataset was skipped.",
                      highlight=False)
            return
    rep = _runner.run_experiment(spec, cfg)
    shared = (f" ({rep.shared} the same cell as another series or experiment: computed once)"
              if rep.shared else "")
    if cfg.shard is not None:
        out.print(
            f"{spec.id} ({scale}, seed {seed}, shard {cfg.shard}): {rep.total} of the grid's "
            f"{rep.grid_total} cells, {rep.computed} computed, {rep.cached} from cache{shared}, "
            f"{rep.seconds:.1f}s; cached in {rdir / 'cache'}. No table or figure from one shard: "
            f"after the last, `dpexp run {full.id} --scale {scale}` on the union of the shards' "
            "caches writes them.", highlight=False)
    else:
        out.print(
            f"{spec.id} ({scale}, seed {seed}): {rep.total} cells, {rep.computed} computed, "
            f"{rep.cached} from cache{shared}, "
            f"{rep.seconds:.1f}s; results (every cached cell): {rep.results_path}",
            highlight=False,
        )
    if rep.stale:
        err.print(f"note: {escape(rep.stale)}", highlight=False)
    if ledger:
        _write_ledgers(rep.spec, scale, rdir, seed)
    if not no_render and cfg.shard is None:
        # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
        from dpexp.render.render import render_experiment

        # render every cached cell of the experiment (not only this run's), so a run with
        # overrides adds to the figures and tables instead of replacing them; under the
        # run lock, so the figure written last is drawn from every finished run's cells
        with _runner.experiment_lock(rdir, spec.cells_id, scale, then="renders every cell"):
            r = render_experiment(full.at_scale(scale), scale, rdir, fdir)
        for f in r.files:
            out.print(f"  wrote {f}", highlight=False)


def _write_ledgers(spec, scale: str, rdir, seed: int) -> None:
    """``--ledger``: the privacy ledgers of the run's cells as one JSON file."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
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
    yes: Annotated[bool, typer.Option("--yes", help="Plan a grid of more than 100,000 cells (refused without it).")] = False,
    results_dir: ResultsDir = None,
):
    """Cells in the grid, done and to compute, what the done ones took, and an estimate of
    the wall time of the rest.

    Reads only (the results directory and the downloaded data). A cell's measured time is
    its wall time (else, in tables committed before it was recorded, its fit time). The
    estimate per (dataset, algorithm) group is measured (the median time of its cached or
    committed cells), else measured-other (the median of any experiment's finished cells
    with the same dataset, algorithm and parameters), else extrapolated (fits on at most
    2,000 rows and 3 trees, largest groups first, scaled by rows and trees; downloaded or
    synthetic datasets only; at most 60 s of calibration, 3 s with --all; each calibration
    is stored in the data directory and reused by later plans), else unknown; divided by
    --jobs. With --all, one line per experiment and the totals; --algorithms then plans
    the experiments that have one of them.
    """
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.cells import check_grid_size, unsupported_notes
    from dpexp.experiments.plan import make_plans
    from dpexp.experiments.worker_memory import worker_advice

    if all_ == (experiment is not None):
        raise DpexpError("give either an EXPERIMENT or --all.")
    rdir, _ = dirs(results_dir, None)
    algos, eps = parse_list(algorithms, "--algorithms"), parse_epsilons(epsilons)
    selected, skipped = _plan_specs(experiment, scale, dataset or None, algos, eps)
    start_optional_probes(selected)
    for spec in selected:
        check_grid_size(spec, yes)
        skipped_tasks = unsupported_notes(spec)
        if skipped_tasks and not as_json:
            err.print(f"note: {spec.id}: {escape('; '.join(skipped_tasks))}", highlight=False)
    plans = make_plans(selected, scale, rdir, seed=seed, jobs=jobs, calibrate_fits=calibrate)
    advice = worker_advice(selected, scale)
    if as_json:
        doc = _plan_json(plans, skipped) if all_ else plans[0].to_dict()
        typer.echo(json.dumps({**doc, "worker_advice": advice.to_dict()}, indent=2))
        return
    if not all_:
        _print_plan(plans[0])
        _print_advice(advice, jobs)
        return
    _print_all(plans)
    _print_advice(advice, jobs)
    if skipped:
        names = ", ".join(skipped[:5]) + (", ..." if len(skipped) > 5 else "")
        out.print(f"skipped {len(skipped)} experiment(s) without algorithm(s) {', '.join(algos)}: "
                  f"{escape(names)}", highlight=False)


def _print_advice(advice, jobs: int) -> None:
    """The workers this machine's cores and memory allow (:mod:`dpexp.experiments.worker_memory`)."""
    why = "workers may run out of memory" if advice.peak else "workers share the cores"
    over = f"; --jobs {jobs} is more than that: {why}" if jobs > advice.workers else ""
    out.print(escape(advice.text() + over), highlight=False)


def _plan_specs(experiment: str | None, scale: str, datasets: list[str] | None,
                algos: list[str] | None, eps: list[float] | None) -> tuple[list, list[str]]:
    """The specs to plan, at ``scale`` and selected like ``dpexp run``; with ``--all`` (no
    EXPERIMENT) and ``--algorithms``, each experiment keeps the requested algorithms it has
    and one with none of them is skipped (returned by id). A name no experiment has is an
    error, as is a selection that leaves nothing."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.catalog import all_specs, resolve
    from dpexp.experiments.spec import select

    if experiment is not None:
        full = resolve(experiment)
        return [select(full.at_scale(scale), datasets, algos, eps)], []
    specs = [full.at_scale(scale) for full in all_specs().values()]
    if not specs:
        raise DpexpError("no experiment to plan: no spec loads (see dpexp list).")
    if not algos:
        return [select(spec, datasets, None, eps) for spec in specs], []
    names = {spec.id: {a.label for a in spec.algorithms} | {a.name for a in spec.algorithms if a.name}
             for spec in specs}
    known = set().union(*names.values())
    for name in algos:
        if name not in known:
            raise UnknownNameError("algorithm", name, known, where=" in any experiment")
    selected, skipped = [], []
    for spec in specs:
        have = [a for a in algos if a in names[spec.id]]
        if have:
            selected.append(select(spec, datasets, have, eps))
        else:
            skipped.append(spec.id)
    return selected, skipped


def _plan_json(plans, skipped: list[str]) -> dict:
    """``plan --all --json``: every experiment's plan, the totals and the skipped ids."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.plan import totals

    p0 = plans[0]
    return {"scale": p0.scale, "seed": p0.seed, "jobs": p0.jobs,
            "experiments": [p.to_dict() for p in plans], "total": totals(plans), "skipped": skipped}


def _print_plan(p) -> None:
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.completion import COMPLETION_HEADER
    from dpexp.experiments.plan import format_seconds

    unknown = f" (+ {p.unestimated_cells} cells not estimated)" if p.unestimated_cells else ""
    out.print(f"{p.experiment} ({p.scale}, seed {p.seed}): {p.cells} cells, {p.cached} cached, "
              f"{p.todo} to compute; estimate {format_seconds(p.estimated_seconds)} "
              f"with {p.jobs} job(s){unknown}; {p.basis()}", highlight=False)
    c = p.completion
    why = f"; {c.why_not_here()}" if c.why_not_here() else ""
    out.print(f"  cells ({COMPLETION_HEADER}): {c.text()}{escape(why)}", highlight=False)
    if p.cached:
        out.print(f"  done: {p.cached} cells took {format_seconds(p.done_seconds)} with {p.jobs} "
                  f"job(s) ({_timing_basis(p.done_timed, p.done_fit_only, p.cached)}); typical "
                  f"{format_seconds(p.done_typical_cell_seconds / max(p.jobs, 1))} at each group's "
                  "median cell time", highlight=False)
    for g in p.slowest():
        out.print(f"  slowest: {escape(g.dataset)} / {escape(g.label)}: {g.todo} cells x "
                  f"{g.seconds_per_cell:.3g} s ({escape(g.method)})", highlight=False)
    if p.unavailable_cells:
        out.print(f"  left out: {p.unavailable_cells} cells of "
                  f"{_unavailable_text(p.unavailable_datasets(), p.unavailable_algorithms())}",
                  highlight=False)
    by_reason: dict[str, list] = {}
    for g in p.unknown_groups():
        by_reason.setdefault(g.method, []).append(g)
    for reason, groups in by_reason.items():  # a few names per reason: the output stays short
        names = ", ".join(f"{g.dataset} / {g.label}" for g in groups[:2]) + (", ..." if len(groups) > 2 else "")
        out.print(f"  not estimated ({escape(reason)}): {sum(g.todo for g in groups)} cells in "
                  f"{len(groups)} group(s): {escape(names)}", highlight=False)


def _unavailable_text(datasets: list[str], algorithms: list[str]) -> str:
    """What the left-out cells are: datasets not available here, series whose optional
    package does not import."""
    parts = [f"datasets not available here ({', '.join(datasets)}: neither downloaded nor in "
             f"a data-mirror folder)"] if datasets else []
    parts += [f"series whose optional package does not import here ({', '.join(algorithms)})"
              ] if algorithms else []
    return "; ".join(parts)


def _timing_basis(timed: int, fit_only: int, done: int) -> str:
    """Which times the done cells' sum rests on, e.g. ``wall time of 90, fit time only of 10``."""
    parts = [f"wall time of {timed - fit_only}"] if timed > fit_only else []
    parts += [f"fit time only of {fit_only}: an underestimate"] if fit_only else []
    parts += [f"no time for {done - timed}"] if done > timed else []
    return ", ".join(parts) or "no times"


def _at_least(seconds: float, unknown_cells: int) -> str:
    """An estimate, with ``+`` when cells without an estimate come on top."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.plan import format_seconds

    return format_seconds(seconds) + ("+" if unknown_cells else "")


def _print_all(plans) -> None:
    """One line per experiment (cells, done, to do, what the done cells took, the estimate
    of the rest, its basis), the totals, and why cells are not estimated."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.plan import counted, format_seconds, kinds_text, totals

    t = totals(plans)
    width = max(len("experiment"), *(len(p.experiment) for p in plans))
    out.print(f"plan at {plans[0].scale} scale, seed {plans[0].seed}, {t['jobs']} job(s): times are "
              f"the cells' measured or estimated times, summed and divided by the jobs; "
              f"'+': and cells not estimated", highlight=False)
    header = (f"{'experiment':<{width}}  {'cells':>7}  {'done':>7}  {'to do':>7}  {'took':>9}  "
              f"{'estimate':>9}  basis of the estimate (cells to compute)")
    out.print(header, highlight=False)
    names = {p.experiment for p in plans}
    for p in plans:
        basis = kinds_text(p.todo_by_kind())
        if p.cells_of in names:
            basis = f"cells of {p.cells_of}, counted there ({basis})"
        out.print(f"{p.experiment:<{width}}  {p.cells:>7}  {p.cached:>7}  {p.todo:>7}  "
                  f"{format_seconds(p.done_seconds):>9}  {_at_least(p.estimated_seconds, p.unestimated_cells):>9}  "
                  f"{basis}", highlight=False)
    kinds = t["todo_by_kind"]
    out.print(f"{'all':<{width}}  {t['cells']:>7}  {t['cached']:>7}  {t['todo']:>7}  "
              f"{format_seconds(t['done_seconds']):>9}  {_at_least(t['estimated_seconds'], kinds['unknown']):>9}  "
              f"{kinds_text(kinds)}{' (unknown: not counted)' if kinds['unknown'] else ''}", highlight=False)
    out.print(f"measured: the {t['cached']} done cells took {format_seconds(t['done_cell_seconds'])} of "
              f"cell time, {format_seconds(t['done_seconds'])} with {t['jobs']} job(s) "
              f"({_timing_basis(t['done_timed'], t['done_fit_only'], t['cached'])}); with the estimate "
              f"of the rest: {format_seconds(t['total_seconds'])}"
              + (f" + {kinds['unknown']} cells not estimated" if kinds["unknown"] else ""), highlight=False)
    out.print(f"typical: {format_seconds(t['done_typical_seconds'])} with {t['jobs']} job(s) for the done "
              "cells at each group's median cell time (a cell suspended or slowed by load counts "
              "as typical)", highlight=False)
    if t["unavailable_cells"]:
        out.print(f"left out: {t['unavailable_cells']} cells of "
                  f"{_unavailable_text(t['unavailable_datasets'], t['unavailable_algorithms'])}",
                  highlight=False)
    reasons: dict[str, int] = {}
    for p in counted(plans):
        for g in p.unknown_groups():
            reason = g.method.removeprefix("unknown: ")
            reasons[reason] = reasons.get(reason, 0) + g.todo
    if reasons:
        out.print("not estimated: " + "; ".join(f"{n} cells ({escape(r)})" for r, n in
                                                sorted(reasons.items(), key=lambda kv: -kv[1])),
                  highlight=False)
