"""Run the cells of an experiment: check up front (names, optional packages, datasets,
writable folders), leave out what is cached or committed, run the rest longest first on a
backend (:mod:`dpexp.experiments.backends`; each cell's steps in
:mod:`dpexp.experiments.execute`), cache each finished cell atomically, and write the
union results table.
"""

from __future__ import annotations

import contextlib
import fcntl
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

import dpexp
from dpexp.datasets import download
from dpexp.datasets.registry import get_dataset_info
from dpexp.errors import DatasetUnavailableError, DpexpError, RunWaitsWarning, WorkerDiedWarning
from dpexp.experiments import cache
from dpexp.experiments.backends import CellPool, backend, progress_bar
from dpexp.experiments.catalog import cells_source
from dpexp.experiments.cells import (
    Cell,
    dataset_task,
    expand,
    other_data_version,
    unsupported_notes,
)
from dpexp.experiments.committed import adopt_committed, keep_committed_rows, write_table
from dpexp.experiments.config import RunConfig
from dpexp.experiments.environment import check_writable, git_revision, optional_unavailable
from dpexp.experiments.execute import run_cell
from dpexp.experiments.procedures import get_procedure
from dpexp.experiments.results import (
    cached_results,
    current_params,
    is_stale,
    payload_rows,
    with_param_columns,
)
from dpexp.experiments.schedule import longest_first
from dpexp.experiments.schema import RESULT_COLUMNS
from dpexp.experiments.shard import shard_digests
from dpexp.experiments.spec import ExperimentSpec
from dpexp.experiments.stale import stale_summary
from dpexp.registry import get_algorithm, install_hint

__all__ = ["RESULT_COLUMNS", "RunConfig", "RunReport", "experiment_lock", "run_cell",
           "run_experiment"]


@dataclass
class RunReport:
    spec: ExperimentSpec
    scale: str
    total: int
    cached: int
    computed: int
    seconds: float
    results: pd.DataFrame = field(repr=False)
    results_path: Path | None = None
    #: Cells taken from the committed results table (counted in ``cached``).
    adopted: int = 0
    #: Cells copied from another experiment's cache: the same cell (same key, same numbers)
    #: computed once (counted in ``cached``).
    shared: int = 0
    #: One-line notes on algorithms skipped because an optional package is missing, or on
    #: the datasets of a task they do not support.
    skipped: list[str] = field(default_factory=list)
    #: The one line saying how many of the results' rows are stale ("" when none).
    stale: str = ""
    #: Cells of the experiment's grid in all shards (``total`` is this shard's), or None
    #: when the run was not sharded.
    grid_total: int | None = None


def drop_unavailable(spec: ExperimentSpec, require_optional: bool) -> tuple[ExperimentSpec, list[str]]:
    """Remove algorithms whose optional packages do not import, before computing anything.

    Returns the spec and one note per skipped algorithm; with ``require_optional`` a
    missing package is an error instead.
    """

    keep, notes = [], []
    for a in spec.algorithms:
        info = get_algorithm(a.name) if a.name else None
        why = optional_unavailable(info.requires) if info and info.requires else None
        if why is None:
            keep.append(a)
            continue
        msg = (f"{a.label} ({a.name}) needs the optional package {why}; "
               f"{install_hint(why.split(' ')[0])}")
        if require_optional:
            raise DpexpError(f"{spec.id}: {msg}.")
        notes.append(f"skipped {msg}.")
    if not keep:
        raise DpexpError(f"{spec.id}: no algorithm left to run; " + " ".join(notes))
    return replace(spec, algorithms=keep), notes


def drop_unreachable(spec: ExperimentSpec, cfg: RunConfig) -> tuple[ExperimentSpec | None, list[str]]:
    """Fetch each dataset of ``spec`` now and leave out those this machine cannot get (no
    network or mirror serving it, a user-supplied file not supplied), one note each; None
    when no dataset is left. A corrupted download is still an error.

    For ``dpexp run --skip-unavailable`` (``make reproduce-all`` on an offline machine):
    the cells of a left-out dataset are neither run nor counted, as in the plan and report.
    """

    unreachable: dict[str, str] = {}
    for name in dict.fromkeys(d.name for d in spec.datasets):
        info = get_dataset_info(name)
        if info.parser == "synthetic":
            continue
        try:
            download.fetch_dataset(info, mirror=cfg.mirror, progress=cfg.progress and sys.stderr.isatty())
        except DatasetUnavailableError as exc:
            unreachable[name] = str(exc)
    notes = [f"skipped dataset {name}: {why}" for name, why in unreachable.items()]
    keep = [d for d in spec.datasets if d.name not in unreachable]
    return (replace(spec, datasets=keep) if keep else None), notes


def validate_names(spec: ExperimentSpec) -> None:
    """Unknown datasets, algorithms or procedures fail before any worker starts."""

    for ds in spec.datasets:
        get_dataset_info(ds.name)
    for a in spec.algorithms:
        get_algorithm(a.name) if a.name else get_procedure(a.procedure)


def run_experiment(spec: ExperimentSpec, cfg: RunConfig) -> RunReport:
    """Run every missing cell of ``spec`` (already scaled/selected) and collect results.

    Afterwards ``results/EXP/results-SCALE.csv`` holds the union of every cached cell of
    the experiment at that scale (all seeds and overrides), not only this run's. With
    ``cfg.shard`` only that shard's cells are computed and no table is written
    (:mod:`dpexp.experiments.shard`).
    """
    t0 = time.perf_counter()
    check_writable(cfg.results_dir, "results directory")
    validate_names(spec)
    # the grid every shard splits alike: before a series is dropped on this machine alone
    grid = expand(spec, cfg.scale, cfg.seed) if cfg.shard is not None else None
    spec, skipped = drop_unavailable(spec, cfg.require_optional)
    skipped += unsupported_notes(spec)  # the grid leaves out tasks a series does not support
    cells = expand(spec, cfg.scale, cfg.seed)
    if cfg.shard is not None and grid is not None:
        mine = shard_digests(grid, cfg.shard, cfg.results_dir, cfg.scale)
        cells = [c for c in cells if c.digest in mine]
    # A spec showing another's cells computes them as that spec does (all of its metrics),
    # so the other experiment's results never lack a value for a cell computed here.
    computing = cells_source(spec).at_scale(cfg.scale) if spec.cells_from else spec
    # Rows of the committed results table are finished cells (a campaign resumed on a
    # fresh clone recomputes nothing it already has); --force recomputes them.
    with experiment_lock(cfg.results_dir, spec.cells_id, cfg.scale):
        report = _run_locked(spec, cfg, cells, computing, skipped, t0)
    return replace(report, grid_total=len(grid)) if grid is not None else report


@contextlib.contextmanager
def experiment_lock(results_dir: Path, experiment: str, scale: str,
                    then: str = "computes only the cells it left") -> Iterator[None]:
    """One run at a time computes an experiment at a scale in a results directory: a second
    waits (saying so), then finds the first one's cells cached and computes only the rest,
    and rebuilds the union table from every cell after it. ``dpexp run`` renders under the
    same lock, so a figure is never drawn from the cells of a run still computing and
    written after the figure of the run that finished last."""
    path = cache.cache_dir(results_dir, experiment, scale) / ".run.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            warnings.warn(RunWaitsWarning(
                f"another run is computing {experiment} ({scale}) in {results_dir}; waiting "
                f"for it, then this one {then}"), stacklevel=3)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_locked(spec: ExperimentSpec, cfg: RunConfig, cells: list[Cell],
                computing: ExperimentSpec, skipped: list[str], t0: float) -> RunReport:
    adopted = 0 if cfg.force else adopt_committed(spec, cfg.scale, cfg.results_dir, cells)
    todo = [c for c in cells if _needs_run(c, cfg)]
    shared = 0 if cfg.force or not todo else _adopt_shared(todo, cfg)
    todo = todo if not shared else [c for c in todo if _needs_run(c, cfg)]
    # one cell asked by two series (equal parameters at this scale) is computed once
    first: dict[str, Cell] = {}
    twins: list[tuple[Cell, Cell]] = []
    for c in todo:
        if c.digest in first:
            twins.append((c, first[c.digest]))
        else:
            first[c.digest] = c
    todo = list(first.values())
    if cfg.jobs != 1 and len(todo) > 1:  # the slowest cells first: a shorter idle tail
        todo = longest_first(todo, cfg.results_dir, cfg.scale)
    provenance = {"dpexp_version": dpexp.__version__, "git_revision": git_revision()}
    _download(todo, cfg)
    progress = progress_bar(cfg.progress)
    with progress, backend(cfg) as pool:
        task = progress.add_task(
            f"{spec.id} ({cfg.scale})", total=len(cells),
            completed=len(cells) - len(todo) - len(twins),
        )
        if todo:
            _compute(pool, todo, computing, cfg, provenance, lambda: progress.advance(task))
        for twin, source in twins:
            cache.adopt_shared(cfg.results_dir, twin, cache.cell_path(cfg.results_dir, source))
            progress.advance(task)
    shared += len(twins)
    frame, missing = collect(spec, cfg.scale, cfg.results_dir, cells=cells)
    if missing:
        raise RuntimeError(f"{len(missing)} cells missing after the run")
    # a shard leaves the table as it was: the other shards balance by its times
    out = None if cfg.shard else write_union_table(spec, cfg.scale, cfg.results_dir)
    return RunReport(spec=spec, scale=cfg.scale, total=len(cells), cached=len(cells) - len(todo),
                     computed=len(todo), seconds=time.perf_counter() - t0, results=frame,
                     results_path=out, skipped=skipped, adopted=adopted, shared=shared,
                     stale=stale_summary(frame))


#: How many times a run starts again the cells of a worker process that died (killed, out
#: of memory) before it stops with the resume command.
WORKER_RETRIES = 2


def _compute(pool: CellPool, todo: list[Cell], spec: ExperimentSpec, cfg: RunConfig,
             provenance: dict[str, str], advance: Callable[[], None]) -> None:
    """Run ``todo`` on the run's workers (``pool``); a cell whose worker died runs again on a
    new worker (at most :data:`WORKER_RETRIES` times), then the run stops with one line."""
    for attempt in range(WORKER_RETRIES + 1):
        try:
            for _ in pool.map_unordered(run_cell, todo, spec, cfg, provenance):
                advance()
            return
        except pool.worker_died as exc:
            todo = [c for c in todo if not cache.has_cell(cfg.results_dir, c)]
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if attempt == WORKER_RETRIES:
                raise DpexpError(
                    f"a worker process died {attempt + 1} times ({why}); every finished cell "
                    f"is cached ({len(todo)} left): run the same command to resume.") from None
            warnings.warn(WorkerDiedWarning(
                f"a worker process died ({why}); starting its {len(todo)} unfinished cells "
                "again on new workers"), stacklevel=2)


def _needs_run(cell: Cell, cfg: RunConfig) -> bool:
    """Whether a run computes ``cell``: not cached, ``--force``, or cached from before
    ``cfg.recompute_before`` (a cell computed at or after that time is kept, so a stopped
    re-run resumes where it was)."""
    if cfg.force:
        return True
    data = cache.read_cell(cfg.results_dir, cell, move_aside=True)
    if data is None:
        return True
    return cfg.recompute_before is not None and cache.computed_before(data, cfg.recompute_before)


def _adopt_shared(todo: list[Cell], cfg: RunConfig) -> int:
    """Copy the cells of ``todo`` another experiment already computed; how many."""
    found = cache.shared_cells(cfg.results_dir)
    return sum(cache.adopt_shared(cfg.results_dir, c, found[c.digest], cfg.recompute_before)
               for c in todo if c.digest in found)


def _download(todo: list[Cell], cfg: RunConfig) -> None:
    """Download each dataset once in the main process (with a progress bar), not per worker."""

    for ds_name in sorted({c.dataset.name for c in todo}):
        info = get_dataset_info(ds_name)
        if info.parser != "synthetic":
            download.fetch_dataset(info, mirror=cfg.mirror, progress=cfg.progress and sys.stderr.isatty())


def collect(
    spec: ExperimentSpec, scale: str, results_dir: Path, cells: list[Cell] | None = None,
    seed: int = 0,
) -> tuple[pd.DataFrame, list[Cell]]:
    """Cached rows of exactly ``cells`` (default: the spec's grid under ``seed``), and the
    cells still missing. To read everything cached, use
    :func:`dpexp.experiments.results.cached_results`."""

    cells = cells if cells is not None else expand(spec, scale, seed)
    rows, missing = [], []
    for c in cells:
        data = cache.read_cell(results_dir, c)
        if data is None:
            missing.append(c)
        else:
            rows.extend(payload_rows(data))
    frame = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    return frame, missing


def write_union_table(spec: ExperimentSpec, scale: str, results_dir: Path) -> Path:
    """``results/EXP/results-SCALE.csv``: every cached row of the experiment at ``scale``
    (cache and committed table), without the cells of an earlier version of one of its
    series (same label, no longer in the spec's grid) or of another version of a dataset
    (:func:`~dpexp.experiments.cells.other_data_version`). For a spec showing another's cells
    (``cells_from``) that is the other experiment's table: the cells are its."""

    spec = cells_source(spec)
    frame = cached_results(spec, scale, results_dir, current_only=True).frame
    frame = keep_committed_rows(frame, results_dir, spec.id, scale)
    if len(frame):
        at = spec.at_scale(scale)
        current = current_params(at)
        tasks = {d: dataset_task(d) for d in frame["dataset"].unique()}
        # rows of another version of the data (the committed rows keep_committed_rows adds
        # back) are not this grid's cells either
        versions = {(d, v): other_data_version(d, v) for d, v in
                    frame[["dataset", "data_version"]].fillna("").astype(str)
                    .drop_duplicates().itertuples(index=False)}
        stale = [is_stale(label, params, current, tasks[ds], ds)
                 or versions[(str(ds), "" if pd.isna(v) else str(v))]
                 for label, params, ds, v in zip(frame["label"], frame["params"],
                                                 frame["dataset"], frame["data_version"],
                                                 strict=True)]
        frame = frame[~pd.Series(stale, index=frame.index)]
    return write_results_table(with_param_columns(frame), results_dir, spec.id, scale)


def write_results_table(frame: pd.DataFrame, results_dir: Path, experiment: str, scale: str) -> Path:
    """``results/EXP/results-SCALE.csv`` (``.csv.gz`` at paper scale, the committed table)."""
    return write_table(frame, results_dir, experiment, scale)


def ledger_entries(spec: ExperimentSpec, scale: str, results_dir: Path, seed: int = 0) -> list[dict]:
    """The privacy ledgers of the spec's cells under ``seed`` (cells without one are left out)."""
    out = []
    for c in expand(spec, scale, seed):
        ledger = cache.read_ledger(results_dir, c)
        if ledger:
            out.append({"cell": c.to_dict(), "ledger": ledger})
    return out
