"""``dpexp leaderboard``: plan, run (one part per task, through the normal runner: cells
cached and content-addressed) and rank every entry of the leaderboard experiment."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from dpexp.cli._common import (
    EpsilonsOpt,
    FiguresDir,
    ResultsDir,
    RunSeed,
    Scale,
    dirs,
    err,
    guarded,
    out,
    parse_epsilons,
)
from dpexp.errors import DpexpError

#: The extra that installs the leaderboard's optional packages.
EXTRA = "leaderboard"


@guarded
def leaderboard(
    scale: Scale = "smoke",
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Parallel workers.")] = 1,
    epsilons: EpsilonsOpt = None,
    spec_name: Annotated[str, typer.Option("--spec", help="The leaderboard spec: an id, alias or spec file.")] = "leaderboard",
    seed: RunSeed = 0,
    results_dir: ResultsDir = None,
    figures_dir: FiguresDir = None,
    no_render: Annotated[bool, typer.Option("--no-render", help="Do not draw the ε-utility curves.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress.")] = False,
    add: Annotated[list[str] | None, typer.Option("--add", metavar="NAME", help="Add a registered algorithm (repeatable) as an entry at its defaults and compute only its cells; every other entry's cells come from the cache as they are.")] = None,
):
    """Plan and run the leaderboard, then print its ranks per task and ε (mean rank over
    datasets, Friedman and Nemenyi, critical-difference diagrams)."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments import runner as _runner
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.cells import unsupported_notes
    from dpexp.experiments.environment import check_writable
    from dpexp.experiments.plan import format_seconds, make_plans
    from dpexp.experiments.spec import select, with_algorithms
    from dpexp.render.leaderboard_files import write_leaderboard

    rdir, fdir = dirs(results_dir, figures_dir)
    eps = parse_epsilons(epsilons)
    spec = select(with_algorithms(resolve(spec_name), add or []).at_scale(scale), None, None, eps)
    _check_optional(spec)
    # --add computes only the added entries' cells: the others are the cache's, untouched
    computed = select(spec, None, add, None) if add else spec
    check_writable(rdir, "results directory")
    check_writable(fdir, "figures directory")
    plan = make_plans([computed], scale, rdir, seed=seed, jobs=jobs, calibrate_fits=False)[0]
    unknown = f" (+ {plan.unestimated_cells} cells not estimated)" if plan.unestimated_cells else ""
    out.print(f"plan: {spec.id} ({scale}, seed {seed}): {plan.cells} cells, {plan.cached} cached, "
              f"{plan.todo} to compute; estimate {format_seconds(plan.estimated_seconds)} with "
              f"{jobs} job(s){unknown}", highlight=False)
    for note in unsupported_notes(computed):  # the grid skips the tasks a series lacks
        out.print(f"  {escape(note)}", highlight=False)
    cfg = _runner.RunConfig(results_dir=rdir, scale=scale, seed=seed, jobs=jobs,
                            progress=not quiet, require_optional=True)
    rep = _runner.run_experiment(computed, cfg)
    out.print(f"{spec.id}: {rep.total} cells, {rep.computed} computed, {rep.cached} from cache, "
              f"{rep.seconds:.1f}s", highlight=False)
    if not no_render:
        # lazy: the experiment's figure (ε-utility curves per dataset) draws with matplotlib
        from dpexp.render.render import render_experiment

        for f in render_experiment(spec, scale, rdir, fdir).files:
            out.print(f"  wrote {f}", highlight=False)
    lb = write_leaderboard(spec, scale, rdir, fdir, eps)
    for board, table in zip(lb.boards, lb.tables, strict=True):
        _print_board(board, table)
    for f in lb.files:
        out.print(f"  wrote {f}", highlight=False)


def _check_optional(spec) -> None:
    """Every optional package the leaderboard needs imports, else one line naming the extra."""
    # lazy: as above, the machinery loads when the command runs
    from dpexp.experiments.environment import optional_unavailable
    from dpexp.registry import get_algorithm
    from dpexp.side_envs import SIDE_ENVS, how_to_get

    for a in spec.algorithms:
        why = optional_unavailable(get_algorithm(a.name).requires) if a.name else None
        if why:
            package = why.split(" ")[0]
            hint = (how_to_get(package) if package in SIDE_ENVS else
                    f"install the leaderboard's with pip install \"dpexp[{EXTRA}]\"")
            raise DpexpError(f"{spec.id}: {a.label} ({a.name}) needs the optional package {why}; "
                             f"{hint}.")
    why = optional_unavailable(("autorank",))
    if why:
        raise DpexpError(f"{spec.id}: the ranks need the optional package {why}; install the "
                         f"leaderboard's with pip install \"dpexp[{EXTRA}]\".")


def _print_board(board, table) -> None:
    # lazy: as above
    from dpexp.render.leaderboard_files import board_header

    out.print(f"\n{board_header(board)}", highlight=False)
    out.print(f"  {'mean rank':>9}  {'mean ' + board.metric:>11}  entry / privacy", highlight=False)
    for row in table.itertuples(index=False):
        out.print(f"  {row.mean_rank:>9.2f}  {row[4]:>11.4g}  {escape(str(row.entry))} "
                  f"({escape(row.status)})", highlight=False)
    for note in board.left_out:
        err.print(f"  left out (incomplete): {escape(note)}", highlight=False)

