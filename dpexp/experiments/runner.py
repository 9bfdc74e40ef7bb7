"""Run the cells of an experiment in a joblib pool, caching each finished cell.

Each worker loads the dataset itself (from the local cache or mirror; nothing large is
shipped per task), fits, evaluates, checks the privacy spend against the promised
epsilon, and writes the cell's rows atomically before returning. Seeds come from
``seed_sequence(cell.seed, cell.seed_key)`` (the run seed is part of the cell and its key), so
results do not depend on ``--jobs``, on the backend, or on which cells were already cached.
Every estimator gets ``noise_rng=seeded_noise(random_state)``: reproducible noise is the
runner's explicit choice (the estimators' default is fresh entropy), and every row says
so in its ``noise`` column (a research result, not a release). ``n_records`` is the
declared training size (:mod:`dpexp.experiments.design`), never ``len(X)``, and ``private``
also honours the harness's public input (:mod:`dpexp.experiments.flags`).
Before timing, each worker fits every (algorithm, dataset) once untimed (``_warm_up``), so
``fit_seconds`` excludes numba's compilation.
"""

from __future__ import annotations

import contextlib
import functools
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpexp
from dpexp.errors import BudgetExceededError, DpexpError, SpecError, UnknownNameError, check_epsilon
from dpexp.experiments import cache
from dpexp.experiments.cells import Cell, canonical_json, expand
from dpexp.experiments.committed import adopt_committed, keep_committed_rows, write_table
from dpexp.experiments.design import TrainingSize, declares_size, training_size, with_n_records
from dpexp.experiments.flags import join_reasons, public_input_reasons
from dpexp.experiments.metrics import METRICS, Evaluation
from dpexp.experiments.noise import noise_source
from dpexp.experiments.schedule import longest_first
from dpexp.experiments.schema import DIAGNOSTIC, METRIC, RESULT_COLUMNS
from dpexp.experiments.spec import CVScheme, DatasetRef, ExperimentSpec, cells_source
from dpexp.experiments.stale import stale_summary
from dpexp.privacy.accountant import compact_ledger
from dpexp.privacy.randomness import seeded_noise
from dpexp.seeding import seed_int, seed_sequence

__all__ = ["RESULT_COLUMNS", "RunConfig", "RunReport", "run_experiment", "run_cell", "select"]

BACKENDS = ("loky", "threading", "dask")


@dataclass
class RunConfig:
    results_dir: Path
    scale: str = "smoke"
    seed: int = 0
    jobs: int = 1
    backend: str = "loky"
    scheduler: str | None = None
    force: bool = False
    #: Recompute the cells computed before this time (aware datetime), keep the later ones:
    #: a resumable --force, e.g. to time a whole campaign again with the current code.
    recompute_before: datetime | None = None
    progress: bool = True
    mirror: str | None = None
    #: Fail (instead of skipping with a note) when an algorithm's optional package is missing.
    require_optional: bool = False
    #: Cache each cell's full privacy ledger (one row per release) instead of the compact
    #: one (per scope and mechanism, :func:`dpexp.privacy.accountant.compact_ledger`).
    full_ledger: bool = False


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
    #: One-line notes on algorithms skipped because an optional package is missing.
    skipped: list[str] = field(default_factory=list)
    #: The one line saying how many of the results' rows are stale ("" when none).
    stale: str = ""


def git_revision() -> str:
    from dpexp.paths import project_root

    try:
        root = project_root()
        rev = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True,
            timeout=10,
        )
        if rev.returncode != 0:
            return "unknown"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
            capture_output=True, text=True, timeout=10,
        )
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError, DpexpError):
        return "unknown"


# --------------------------------------------------------------------------- selection


def select(
    spec: ExperimentSpec,
    datasets: list[str] | None = None,
    algorithms: list[str] | None = None,
    epsilons: list[float] | None = None,
) -> ExperimentSpec:
    """Restrict a (scaled) spec to the requested datasets, algorithms and epsilons."""
    from dpexp.datasets.registry import all_datasets

    spec = replace(spec)
    if datasets:
        known = all_datasets()
        by_key = {d.key: d for d in spec.datasets} | {d.name: d for d in spec.datasets}
        full = {d.key: d for d in _paper_datasets(spec)} | {d.name: d for d in _paper_datasets(spec)}
        picked = []
        for name in datasets:
            if name in by_key:
                picked.append(by_key[name])
            elif name in full:
                picked.append(full[name])
            elif name in known:
                picked.append(DatasetRef(name))
            else:
                raise UnknownNameError("dataset", name, known)
        spec.datasets = picked
    if algorithms:
        labels = {a.label: a for a in spec.algorithms}
        names: dict[str, list[Any]] = {}  # a registered name selects every entry running it
        for a in spec.algorithms:
            if a.name:
                names.setdefault(a.name, []).append(a)
        picked_a = []
        for name in algorithms:
            if name in labels:
                picked_a.append(labels[name])
            elif name in names:
                picked_a.extend(names[name])
            else:
                raise UnknownNameError("algorithm", name, [*labels, *names], where=f" in {spec.id}")
        spec.algorithms = list({id(a): a for a in picked_a}.values())
    if epsilons:
        spec.epsilons = [check_epsilon(e) for e in epsilons]
    return spec


def _paper_datasets(spec: ExperimentSpec) -> list[DatasetRef]:
    from dpexp.experiments.spec import parse_spec

    return parse_spec({**spec.raw, "scales": {}}, spec.path).datasets


# --------------------------------------------------------------------------- workers


@functools.lru_cache(maxsize=4)
def _load(name: str, params_json: str, max_rows: int | None, subsample_seed: int, mirror: str | None):
    import json

    from dpexp.datasets import load_dataset

    return load_dataset(
        name, json.loads(params_json), max_rows=max_rows, subsample_seed=subsample_seed,
        mirror=mirror, progress=False,
    )


def load_for_cell(ref: DatasetRef, max_rows: int | None, seed: int, mirror: str | None):
    sub_seed = seed_int(seed_sequence(seed, f"subsample|{ref.key}"))
    return _load(ref.name, canonical_json(ref.params), max_rows, sub_seed, mirror)


def split_indices(ds, cv: CVScheme, fold: int, repeat: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train/test row indices of (fold, repeat); identical for every algorithm and epsilon."""
    from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

    n = ds.n_rows
    rs = seed_int(seed_sequence(seed, f"folds|{ds.name}|{canonical_json(ds.params)}|{repeat}"))
    if cv.scheme == "kfold":
        strat = cv.stratified and ds.task == "classification"
        if strat and np.min(np.unique(ds.y, return_counts=True)[1]) < cv.folds:
            strat = False  # a class rarer than the folds (e.g. nursery 'recommend')
        splitter = (StratifiedKFold if strat else KFold)(n_splits=cv.folds, shuffle=True, random_state=rs)
        for i, (tr, te) in enumerate(splitter.split(np.zeros(n), ds.y if strat else None)):
            if i == fold:
                return tr, te
        raise AssertionError("fold out of range")
    if cv.scheme == "holdout":
        strat = ds.y if ds.task == "classification" and cv.stratified else None
        tr, te = train_test_split(np.arange(n), test_size=cv.test_size, random_state=rs, stratify=strat)
        return np.sort(tr), np.sort(te)
    raise AssertionError(cv.scheme)


def _rows_from(values: dict[str, Any]) -> Iterator[tuple[str, int | None, float]]:
    for metric, v in values.items():
        if isinstance(v, dict):
            for step, x in v.items():
                yield metric, int(step), float(x)
        else:
            yield metric, None, float(v)


@dataclass
class _Split:
    """The data a cell fits and evaluates on (all None for procedures without data)."""

    dataset: Any = None
    X_train: Any = None
    y_train: Any = None
    X_test: Any = None
    y_test: Any = None

    @property
    def n_train(self) -> int | None:
        return None if self.X_train is None else int(self.X_train.shape[0])

    @property
    def n_test(self) -> int | None:
        return None if self.X_test is None else int(self.X_test.shape[0])


@dataclass
class _Outcome:
    """What a fit or procedure produced, before it becomes result rows."""

    values: dict[str, Any]
    fit_seconds: float
    epsilon_spent: float = float("nan")
    delta_spent: float = float("nan")
    private: bool = False
    not_dp_reason: str = ""
    diagnostics: frozenset[str] = frozenset()
    ledger: list[dict] | None = None
    #: How the noise was drawn (the ``noise`` column, :mod:`dpexp.experiments.noise`).
    noise: str = ""


def _load_split(cell: Cell, spec: ExperimentSpec, cfg: RunConfig, proc) -> _Split:
    """Step 1: load the cell's dataset (unless a procedure needs none) and split it."""
    from dpexp.experiments.procedures import ProcedureFlags, procedure_flags

    flags = procedure_flags(proc) if proc is not None else ProcedureFlags()
    needs_data, needs_split = flags.needs_data, flags.needs_split
    if not needs_data:
        return _Split()
    ds = load_for_cell(cell.dataset, spec.max_rows(cell.scale), cell.seed, cfg.mirror)
    if not needs_split:
        return _Split(dataset=ds)
    if spec.cv.scheme == "given":
        if ds.X_test is None:
            raise SpecError(
                f"{spec.path.name}: cv.scheme 'given' needs a dataset with a fixed test split; "
                f"{ds.name!r} has none."
            )
        return _Split(ds, ds.X, ds.y, ds.X_test, ds.y_test)
    tr, te = split_indices(ds, spec.cv, cell.fold, cell.repeat, cell.seed)
    return _Split(ds, ds.X[tr], ds.y[tr], ds.X[te], ds.y[te])


def _run_procedure(cell: Cell, proc, data: _Split, ss: np.random.SeedSequence) -> _Outcome:
    from dpexp.experiments.procedures import CellContext

    ctx = CellContext(
        dataset=data.dataset, params=dict(cell.params), epsilon=cell.epsilon,
        rng=np.random.default_rng(ss.spawn(1)[0]), random_state=seed_int(ss),
        X_train=data.X_train, y_train=data.y_train, X_test=data.X_test, y_test=data.y_test,
    )
    t0 = time.perf_counter()
    values = proc(ctx)
    # A procedure releases no fitted model through an accountant: not a DP release.
    return _Outcome(values=values, fit_seconds=time.perf_counter() - t0,
                    not_dp_reason=f"procedure {cell.procedure}: computed, not a DP release",
                    noise=noise_source(f"procedure:{cell.procedure}", bool(np.isfinite(cell.epsilon))))


#: (algorithm, task, dataset key) already fitted once in this worker process.
_WARMED: set[tuple[str, str, str]] = set()
#: Rows of the untimed warm-up fit (enough for every row-count-dependent code path of the
#: histogram kernels to be compiled: the largest parallel threshold is 2**17 rows).
WARMUP_ROWS = 1 << 17
#: Trees of the warm-up fit, at most (two whole ensembles when the cell has ensembles):
#: every kernel is compiled by then, and a 5,000-tree warm-up took as long as the cell.
WARMUP_MAX_TREES = 100


def _warm_up(cell: Cell, data: _Split, random_state: int, n_train: int) -> None:
    """Fit the cell's estimator once, untimed, so fit_seconds excludes numba compilation.

    Once per worker process and (algorithm, task, dataset): numba compiles (or loads from
    its disk cache) each kernel specialisation on first call, which made the first fold of
    a timing table (DPBoost Table 2) up to 1000x slower than the others. The warm-up fit
    uses the first ``WARMUP_ROWS`` training rows and the cell's own parameters, with at
    most :func:`warm_up_trees` trees; its model is discarded (nothing of it is released or
    recorded). ``n_train`` is the cell's declared training size (:func:`_training_size`).
    """
    from dpexp.registry import get_algorithm, make_estimator

    ds = data.dataset
    key = (cell.algorithm, ds.task, cell.dataset.key)
    if key in _WARMED:
        return
    _WARMED.add(key)
    m = min(n_train, WARMUP_ROWS)
    info = get_algorithm(cell.algorithm)
    params = _cell_params(cell, m)
    if "n_trees" in params:
        params["n_trees"] = warm_up_trees(params["n_trees"], params.get("trees_per_ensemble"))
    est = make_estimator(cell.algorithm, ds.task, params,
                         epsilon=cell.epsilon if info.private else None,
                         random_state=random_state, public=ds.public_metadata(),
                         noise_rng=seeded_noise(random_state))
    with contextlib.suppress(Exception):  # the timed fit raises any real error itself
        est.fit(data.X_train[:m], data.y_train[:m])


def warm_up_trees(n_trees: Any, trees_per_ensemble: Any = None) -> Any:
    """Trees of the warm-up fit: ``n_trees`` up to :data:`WARMUP_MAX_TREES`, and above it
    ``WARMUP_MAX_TREES`` rounded up to whole ensembles, at least two of them (so the code
    of a later ensemble is compiled too); values that are not integers pass unchanged."""
    if not isinstance(n_trees, int | np.integer) or n_trees <= WARMUP_MAX_TREES:
        return n_trees
    per = trees_per_ensemble
    if not isinstance(per, int | np.integer) or per < 1:
        return WARMUP_MAX_TREES
    return int(min(n_trees, per * max(2, -(-WARMUP_MAX_TREES // per))))


def _cell_params(cell: Cell, n_train: int) -> dict[str, Any]:
    """The cell's parameters, plus ``n_records`` = the training-fold size where accepted.

    ``n_train`` is fixed by the experiment's design: the registry's declared row count and
    the CV arithmetic (:func:`_training_size`, never ``len(X)``), so the runner declares it
    as public input, e.g. for InPrivate's participant shares (records_per_participant /
    n_records), instead of letting the estimator read the private number of training records.
    """
    return with_n_records(cell.algorithm, dict(cell.params), n_train)


def _training_size(cell: Cell, spec: ExperimentSpec, data: _Split) -> TrainingSize:
    """The cell's declared training size (:func:`dpexp.experiments.design.training_size`),
    checked against the loaded split; not public only where the registry declares no count."""
    return training_size(cell.dataset, spec.cv, spec.max_rows(cell.scale), cell.fold,
                         data.n_train or 0)


def _privacy_of(cell: Cell, info, est,
                inputs: Sequence[str] = ()) -> tuple[float, float, bool, str, list[dict] | None]:
    """(epsilon_spent, delta_spent, private, not_dp_reason, ledger) of a fitted estimator.

    The budget check runs on every private fit, DP or not; a fit whose mechanisms are not
    DP (the registry's or the accountant's reasons) then reports no epsilon_spent (NaN):
    what it spent is no privacy guarantee. ``inputs`` are the reasons the harness's public
    input was not public (:func:`dpexp.experiments.flags.public_input_reasons`): they make
    the row not DP too, after the model's reasons, while epsilon_spent stays what the
    mechanisms charged.
    """
    if not info.private:
        return float("inf"), float("inf"), False, "non-private algorithm", None
    acc = getattr(est, "accountant_", None)
    if acc is None:
        raise RuntimeError(f"private algorithm {cell.algorithm!r} exposes no accountant_ after fit")
    eps_spent = float(acc.epsilon_spent)
    delta_spent = float(getattr(acc, "delta_spent", 0.0))
    if eps_spent > cell.epsilon * (1 + 1e-9):
        raise BudgetExceededError(
            f"{cell.algorithm} on {cell.dataset.key} spent epsilon {eps_spent} but was "
            f"given {cell.epsilon}: refusing to record this result."
        )
    ledger = acc.ledger() if hasattr(acc, "ledger") else None
    reasons = [info.not_dp] if info.not_dp else []
    reasons += list(getattr(acc, "not_dp_reasons", []) or [])
    if reasons:  # the registry and the fit may give the same text: join_reasons dedupes
        return float("nan"), float("nan"), False, join_reasons([*reasons, *inputs]), ledger
    if inputs:
        return eps_spent, delta_spent, False, join_reasons(inputs), ledger
    return eps_spent, delta_spent, True, "", ledger


def _fit_estimator(cell: Cell, spec: ExperimentSpec, data: _Split, random_state: int) -> _Outcome:
    """Step 2 (estimators): warm up, fit (timed), check the spend, evaluate."""
    from dpexp.registry import get_algorithm, make_estimator

    ds = data.dataset
    info = get_algorithm(cell.algorithm)
    size = _training_size(cell, spec, data)
    _warm_up(cell, data, random_state, size.n)
    # Reproducible noise is the runner's explicit choice (every row says so, ``noise``).
    est = make_estimator(
        cell.algorithm, ds.task, _cell_params(cell, size.n),
        epsilon=cell.epsilon if info.private else None, random_state=random_state,
        public=ds.public_metadata(), noise_rng=seeded_noise(random_state),
    )
    t0 = time.perf_counter()
    est.fit(data.X_train, data.y_train)
    fit_seconds = time.perf_counter() - t0
    inputs = public_input_reasons(str(ds.domain_source or ""),
                                  size.not_public if declares_size(cell.algorithm, cell.params) else "")
    eps_spent, delta_spent, private, reason, ledger = _privacy_of(cell, info, est, inputs)
    classes = ds.public_metadata().get("classes") if ds.task == "classification" else None
    ev = Evaluation(est, data.X_test, data.y_test, data.y_train, classes=classes)
    values: dict[str, Any] = {m: METRICS[m](ev) for m in spec.metrics_for(ds.task)}
    diag = getattr(est, "diagnostics_", None) or {}
    diagnostics = frozenset(k for k in diag if k not in values)
    for k in diag:  # the estimator's order: a set's would vary with each process's hash seed
        if k in diagnostics:
            values[k] = diag[k]
    return _Outcome(values, fit_seconds, eps_spent, delta_spent, private, reason, diagnostics, ledger,
                    noise=noise_source(cell.algorithm, bool(np.isfinite(cell.epsilon))))


def _result_rows(cell: Cell, data: _Split, out: _Outcome, provenance: dict[str, str],
                 wall_seconds: float) -> list[dict]:
    """Step 3: one row per (metric, step), in the results schema (RESULT_COLUMNS)."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    domain_source = str(getattr(data.dataset, "domain_source", "") or "")
    return [
        {
            "experiment": cell.experiment, "scale": cell.scale, "dataset": cell.dataset.key,
            "algorithm": cell.algorithm or f"procedure:{cell.procedure}",
            "label": cell.label, "params": canonical_json(cell.params),
            "epsilon": cell.epsilon, "epsilon_spent": out.epsilon_spent,
            "delta_spent": out.delta_spent, "private": out.private,
            "not_dp_reason": out.not_dp_reason, "domain_source": domain_source, "noise": out.noise,
            "data_version": cell.data_version, "fold": cell.fold, "repeat": cell.repeat, "seed": cell.seed, "metric": metric,
            "metric_kind": DIAGNOSTIC if metric in out.diagnostics else METRIC,
            "step": step, "value": value, "fit_seconds": out.fit_seconds,
            "wall_seconds": wall_seconds, "n_train": data.n_train, "n_test": data.n_test, **provenance, "timestamp": stamp,
        }
        for metric, step, value in _rows_from(out.values)
    ]


def run_cell(cell: Cell, spec: ExperimentSpec, cfg: RunConfig, provenance: dict[str, str]) -> dict:
    """Compute one cell and write it to the cache. Returns the cached payload.

    Steps: load and split the data, fit (or run the procedure) and evaluate, turn the
    outcome into result rows, write them atomically. Randomness derives from
    ``seed_sequence(cell.seed, cell.seed_key)`` only.
    """
    from dpexp.experiments.procedures import get_procedure

    started = time.perf_counter()
    ss = seed_sequence(cell.seed, cell.seed_key)
    proc = get_procedure(cell.procedure) if cell.procedure else None
    data = _load_split(cell, spec, cfg, proc)
    out = (_run_procedure(cell, proc, data, ss) if proc is not None
           else _fit_estimator(cell, spec, data, seed_int(ss)))
    ledger = out.ledger
    if ledger is not None and not cfg.full_ledger:
        ledger = compact_ledger(ledger)  # a paper-scale campaign's cache stays small
    # wall_seconds: the whole cell (loading, warm-up, fit, evaluation): on every row, so the
    # committed table keeps it for `dpexp plan` on a fresh clone; at the top level as before
    wall_seconds = time.perf_counter() - started
    payload = {"cell": cell.to_dict(), "rows": _result_rows(cell, data, out, provenance, wall_seconds),
               "ledger": ledger, "wall_seconds": wall_seconds}
    cache.write_cell(cfg.results_dir, cell, payload)
    return payload


# --------------------------------------------------------------------------- driver


#: Environment variables sizing the thread pools of numba, OpenMP, the BLAS libraries and
#: numexpr; read once, when a process imports the library (joblib's list for loky workers).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS",
                    "NUMEXPR_NUM_THREADS")


def single_threaded_env() -> dict[str, str]:
    """The environment of a worker process that shares the cores with other workers: one
    thread per library, so two workers on two cores do not oversubscribe them. The tree
    kernels sum in an order their data fixes, never by the thread count
    (:mod:`dpexp.trees.parallel`), so this changes no result, only the time."""
    return dict.fromkeys(THREAD_VARIABLES, "1")


@contextlib.contextmanager
def _backend(cfg: RunConfig):
    """The joblib backend of a run. With several worker processes (loky, a local dask
    cluster) each worker runs single-threaded (:func:`single_threaded_env`, set before it
    imports numba); in-process threads and a remote dask cluster keep their settings."""
    import joblib

    if cfg.backend not in BACKENDS:
        raise DpexpError(f"Unknown backend {cfg.backend!r}; use one of {', '.join(BACKENDS)}.")
    if cfg.backend == "loky":
        # jobs -1 (every core) or more than one: several workers
        threads = {"inner_max_num_threads": 1} if cfg.jobs != 1 else {}
        with joblib.parallel_config(backend="loky", n_jobs=cfg.jobs, **threads):
            yield
        return
    if cfg.backend == "threading":
        with joblib.parallel_config(backend="threading", n_jobs=cfg.jobs):
            yield
        return
    workers = max(cfg.jobs, 1)
    with (dask_client(cfg.scheduler, workers, single_threaded=workers > 1),
          joblib.parallel_config(backend="dask", n_jobs=-1)):
        yield


@contextlib.contextmanager
def dask_client(scheduler: str | None, n_workers: int, *, single_threaded: bool = False):
    """A dask.distributed client: to ``scheduler`` if given, else to a new LocalCluster
    (of ``n_workers`` processes of one task each; ``single_threaded``: each with
    :func:`single_threaded_env`)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise DpexpError("The dask backend needs dask.distributed: pip install 'dpexp[dask]'.") from None
    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout="20s")
        else:
            env = single_threaded_env() if single_threaded else {}
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None, env=env)
            client = Client(cluster)
    except OSError as exc:
        if cluster is not None:
            cluster.close()
        raise DpexpError(f"Cannot reach the dask scheduler {scheduler!r}: {exc}") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _progress_bar(enabled: bool):
    """Cells done / total, elapsed time and ETA: a bar on a terminal, else a line every
    30 s (dpexp.experiments.progress), so a run in a pipe or under nohup is not silent."""
    if enabled and not sys.stderr.isatty():
        from dpexp.experiments.progress import LineProgress

        return LineProgress()
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("cells"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        disable=not enabled,
    )


def check_writable(directory: Path, what: str) -> None:
    """Fail before any computation when ``directory`` cannot hold outputs (one-line error)."""
    import os
    import tempfile

    directory = Path(directory)
    for p in (directory, *directory.parents):
        if p.exists():
            if not p.is_dir():
                raise DpexpError(f"{what} {directory} is not usable: {p} is a file, not a directory.")
            break
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".dpexp-write-check.", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise DpexpError(f"{what} {directory} is not writable ({exc.strerror or exc}).") from None


def optional_unavailable(requires: tuple[str, ...]) -> str | None:
    """The first optional package of ``requires`` that does not import, with why; or None."""
    from dpexp.registry import import_failure

    for package in requires:
        why = import_failure(package)
        if why is not None:
            return f"{package} ({why})"
    return None


def drop_unavailable(spec: ExperimentSpec, require_optional: bool) -> tuple[ExperimentSpec, list[str]]:
    """Remove algorithms whose optional packages do not import, before computing anything.

    Returns the spec and one note per skipped algorithm; with ``require_optional`` a
    missing package is an error instead.
    """
    from dpexp.registry import get_algorithm

    keep, notes = [], []
    for a in spec.algorithms:
        info = get_algorithm(a.name) if a.name else None
        why = optional_unavailable(info.requires) if info and info.requires else None
        if why is None:
            keep.append(a)
            continue
        msg = (f"{a.label} ({a.name}) needs the optional package {why}; "
               f"install it with pip install \"dpexp[peers]\" (or pip install {info.requires[0]})")
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
    from dpexp.datasets import download
    from dpexp.datasets.registry import get_dataset_info
    from dpexp.errors import DatasetUnavailableError

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
    from dpexp.datasets.registry import get_dataset_info
    from dpexp.experiments.procedures import get_procedure
    from dpexp.registry import get_algorithm

    for ds in spec.datasets:
        get_dataset_info(ds.name)
    for a in spec.algorithms:
        get_algorithm(a.name) if a.name else get_procedure(a.procedure)


def run_experiment(spec: ExperimentSpec, cfg: RunConfig) -> RunReport:
    """Run every missing cell of ``spec`` (already scaled/selected) and collect results.

    Afterwards ``results/EXP/results-SCALE.csv`` holds the union of every cached cell of
    the experiment at that scale (all seeds and overrides), not only this run's.
    """
    import joblib

    t0 = time.perf_counter()
    check_writable(cfg.results_dir, "results directory")
    validate_names(spec)
    spec, skipped = drop_unavailable(spec, cfg.require_optional)
    cells = expand(spec, cfg.scale, cfg.seed)
    # A spec showing another's cells computes them as that spec does (all of its metrics),
    # so the other experiment's results never lack a value for a cell computed here.
    computing = cells_source(spec).at_scale(cfg.scale) if spec.cells_from else spec
    # Rows of the committed results table are finished cells (a campaign resumed on a
    # fresh clone recomputes nothing it already has); --force recomputes them.
    adopted = 0 if cfg.force else adopt_committed(spec, cfg.scale, cfg.results_dir, cells)
    todo = [c for c in cells if _needs_run(c, cfg)]
    if cfg.jobs != 1 and len(todo) > 1:  # the slowest cells first: a shorter idle tail
        todo = longest_first(todo, cfg.results_dir, cfg.scale)
    provenance = {"dpexp_version": dpexp.__version__, "git_revision": git_revision()}
    _download(todo, cfg)
    progress = _progress_bar(cfg.progress)
    with progress, _backend(cfg):
        task = progress.add_task(
            f"{spec.id} ({cfg.scale})", total=len(cells), completed=len(cells) - len(todo)
        )
        if todo:
            results = joblib.Parallel(return_as="generator_unordered")(
                joblib.delayed(run_cell)(c, computing, cfg, provenance) for c in todo
            )
            for _ in results:
                progress.advance(task)
    frame, missing = collect(spec, cfg.scale, cfg.results_dir, cells=cells)
    if missing:
        raise RuntimeError(f"{len(missing)} cells missing after the run")
    out = write_union_table(spec, cfg.scale, cfg.results_dir)
    return RunReport(spec=spec, scale=cfg.scale, total=len(cells), cached=len(cells) - len(todo),
                     computed=len(todo), seconds=time.perf_counter() - t0, results=frame,
                     results_path=out, skipped=skipped, adopted=adopted,
                     stale=stale_summary(frame))


def _needs_run(cell: Cell, cfg: RunConfig) -> bool:
    """Whether a run computes ``cell``: not cached, ``--force``, or cached from before
    ``cfg.recompute_before`` (a cell computed at or after that time is kept, so a stopped
    re-run resumes where it was)."""
    if cfg.force:
        return True
    data = cache.read_cell(cfg.results_dir, cell)
    if data is None:
        return True
    return cfg.recompute_before is not None and cache.computed_before(data, cfg.recompute_before)


def _download(todo: list[Cell], cfg: RunConfig) -> None:
    """Download each dataset once in the main process (with a progress bar), not per worker."""
    from dpexp.datasets import download
    from dpexp.datasets.registry import get_dataset_info

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
    from dpexp.experiments.results import payload_rows

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
    series (same label, no longer in the spec's grid). For a spec showing another's cells
    (``cells_from``) that is the other experiment's table: the cells are its."""
    from dpexp.experiments.cells import dataset_task
    from dpexp.experiments.results import (
        cached_results,
        current_params,
        is_stale,
        with_param_columns,
    )

    spec = cells_source(spec)
    frame = cached_results(spec, scale, results_dir, current_only=True).frame
    frame = keep_committed_rows(frame, results_dir, spec.id, scale)
    if len(frame):
        at = spec.at_scale(scale) if (spec.raw.get("scales") or {}).get(scale) else spec
        current = current_params(at)
        tasks = {d: dataset_task(d) for d in frame["dataset"].unique()}
        stale = [is_stale(label, params, current, tasks[ds])
                 for label, params, ds in zip(frame["label"], frame["params"], frame["dataset"],
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
