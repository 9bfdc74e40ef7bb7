"""Run the cells of an experiment in a joblib pool, caching each finished cell.

Each worker loads the dataset itself (from the local cache or mirror; nothing large is
shipped per task), fits, evaluates, checks the privacy spend against the promised
epsilon, and writes the cell's rows atomically before returning. Seeds come from
``seed_sequence(run_seed, cell.key)``, so results do not depend on ``--jobs``, on the
backend, or on which cells were already cached.
"""

from __future__ import annotations

import contextlib
import functools
import subprocess
import time
from collections.abc import Iterator
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
from dpexp.experiments.metrics import METRICS, Evaluation
from dpexp.experiments.spec import CVScheme, DatasetRef, ExperimentSpec
from dpexp.seeding import seed_int, seed_sequence

#: Columns of the tidy results table (one row per cell x metric x step); see README.md.
RESULT_COLUMNS = [
    "experiment", "scale", "dataset", "algorithm", "label", "params", "epsilon",
    "epsilon_spent", "delta_spent", "fold", "repeat", "seed", "metric", "step", "value",
    "fit_seconds", "n_train", "n_test", "dpexp_version", "git_revision", "timestamp",
]

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
    progress: bool = True
    mirror: str | None = None


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
        names = {a.name: a for a in spec.algorithms if a.name}
        picked_a = []
        for name in algorithms:
            if name in labels:
                picked_a.append(labels[name])
            elif name in names:
                picked_a.append(names[name])
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


def run_cell(cell: Cell, spec: ExperimentSpec, cfg: RunConfig, provenance: dict[str, str]) -> dict:
    """Compute one cell and write it to the cache. Returns the cached payload."""
    from dpexp.algorithms.registry import get_algorithm, make_estimator
    from dpexp.experiments.procedures import CellContext, get_procedure

    ss = seed_sequence(cfg.seed, cell.key)
    random_state = seed_int(ss)
    max_rows = spec.max_rows(cell.scale)
    ds = load_for_cell(cell.dataset, max_rows, cfg.seed, cfg.mirror)
    proc = get_procedure(cell.procedure) if cell.procedure else None
    needs_split = proc is None or getattr(proc, "needs_split", True)
    if not needs_split:
        X_tr = y_tr = X_te = y_te = None
    elif spec.cv.scheme == "given":
        if ds.X_test is None:
            raise SpecError(
                f"{spec.path.name}: cv.scheme 'given' needs a dataset with a fixed test split; "
                f"{ds.name!r} has none."
            )
        X_tr, y_tr, X_te, y_te = ds.X, ds.y, ds.X_test, ds.y_test
    else:
        tr, te = split_indices(ds, spec.cv, cell.fold, cell.repeat, cfg.seed)
        X_tr, y_tr, X_te, y_te = ds.X[tr], ds.y[tr], ds.X[te], ds.y[te]
    eps_spent = delta_spent = float("nan")
    ledger = None
    t0 = time.perf_counter()
    if proc is not None:
        ctx = CellContext(
            dataset=ds, params=dict(cell.params), epsilon=cell.epsilon,
            rng=np.random.default_rng(ss.spawn(1)[0]), random_state=random_state,
            X_train=X_tr, y_train=y_tr, X_test=X_te, y_test=y_te,
        )
        values = proc(ctx)
        fit_seconds = time.perf_counter() - t0
    else:
        info = get_algorithm(cell.algorithm)
        est = make_estimator(
            cell.algorithm, ds.task, dict(cell.params),
            epsilon=cell.epsilon if info.private else None, random_state=random_state,
            public=ds.public_metadata(),
        )
        est.fit(X_tr, y_tr)
        fit_seconds = time.perf_counter() - t0
        if info.private:
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
            if hasattr(acc, "ledger"):
                ledger = acc.ledger()
        else:
            eps_spent, delta_spent = float("inf"), float("inf")
        ev = Evaluation(est, X_te, y_te, y_tr)
        values = {m: METRICS[m](ev) for m in spec.metrics_for(ds.task)}
        diag = getattr(est, "diagnostics_", None) or {}
        for k, v in diag.items():
            values.setdefault(k, v)
    rows = []
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    for metric, step, value in _rows_from(values):
        rows.append(
            {
                "experiment": cell.experiment, "scale": cell.scale, "dataset": cell.dataset.key,
                "algorithm": cell.algorithm or f"procedure:{cell.procedure}",
                "label": cell.label, "params": canonical_json(cell.params),
                "epsilon": cell.epsilon, "epsilon_spent": eps_spent, "delta_spent": delta_spent,
                "fold": cell.fold, "repeat": cell.repeat, "seed": cfg.seed, "metric": metric,
                "step": step, "value": value, "fit_seconds": fit_seconds,
                "n_train": None if X_tr is None else int(X_tr.shape[0]),
                "n_test": None if X_te is None else int(X_te.shape[0]),
                **provenance, "timestamp": stamp,
            }
        )
    payload = {"cell": cell.to_dict(), "rows": rows, "ledger": ledger}
    cache.write_cell(cfg.results_dir, cell, payload)
    return payload


# --------------------------------------------------------------------------- driver


@contextlib.contextmanager
def _backend(cfg: RunConfig):
    import joblib

    if cfg.backend not in BACKENDS:
        raise DpexpError(f"Unknown backend {cfg.backend!r}; use one of {', '.join(BACKENDS)}.")
    if cfg.backend != "dask":
        with joblib.parallel_config(backend=cfg.backend, n_jobs=cfg.jobs):
            yield
        return
    with dask_client(cfg.scheduler, max(cfg.jobs, 1)), joblib.parallel_config(backend="dask", n_jobs=-1):
        yield


@contextlib.contextmanager
def dask_client(scheduler: str | None, n_workers: int):
    """A dask.distributed client: to ``scheduler`` if given, else to a new LocalCluster."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise DpexpError("The dask backend needs dask.distributed: pip install 'dpexp[dask]'.") from None
    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout="20s")
        else:
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None)
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
    """Cells done / total, elapsed time and ETA."""
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


def run_experiment(spec: ExperimentSpec, cfg: RunConfig) -> RunReport:
    """Run every missing cell of ``spec`` (already scaled/selected) and collect results."""
    import joblib

    t0 = time.perf_counter()
    cells = expand(spec, cfg.scale)
    todo = [c for c in cells if cfg.force or not cache.has_cell(cfg.results_dir, c)]
    provenance = {"dpexp_version": dpexp.__version__, "git_revision": git_revision()}
    # Validate names before starting workers, so typos fail fast and cleanly.
    from dpexp.algorithms.registry import get_algorithm
    from dpexp.datasets.registry import get_dataset_info
    from dpexp.experiments.procedures import get_procedure

    for ds in spec.datasets:
        get_dataset_info(ds.name)
    for a in spec.algorithms:
        get_algorithm(a.name) if a.name else get_procedure(a.procedure)
    # Download each dataset once in the main process (with a progress bar), not per worker.
    from dpexp.datasets import download

    for ds_name in sorted({c.dataset.name for c in todo}):
        info = get_dataset_info(ds_name)
        if info.parser != "synthetic":
            download.fetch_dataset(info, mirror=cfg.mirror, progress=cfg.progress)
    progress = _progress_bar(cfg.progress)
    with progress, _backend(cfg):
        task = progress.add_task(
            f"{spec.id} ({cfg.scale})", total=len(cells), completed=len(cells) - len(todo)
        )
        if todo:
            results = joblib.Parallel(return_as="generator_unordered")(
                joblib.delayed(run_cell)(c, spec, cfg, provenance) for c in todo
            )
            for _ in results:
                progress.advance(task)
    frame, missing = collect(spec, cfg.scale, cfg.results_dir, cells=cells)
    if missing:
        raise RuntimeError(f"{len(missing)} cells missing after the run")
    out = write_results_table(frame, cfg.results_dir, spec.id, cfg.scale)
    return RunReport(spec=spec, scale=cfg.scale, total=len(cells), cached=len(cells) - len(todo),
                     computed=len(todo), seconds=time.perf_counter() - t0, results=frame,
                     results_path=out)


def collect(
    spec: ExperimentSpec, scale: str, results_dir: Path, cells: list[Cell] | None = None
) -> tuple[pd.DataFrame, list[Cell]]:
    """All cached rows of the spec's cells at ``scale``, and the cells still missing."""
    cells = cells if cells is not None else expand(spec, scale)
    rows, missing = [], []
    for c in cells:
        data = cache.read_cell(results_dir, c)
        if data is None:
            missing.append(c)
        else:
            rows.extend(data["rows"])
    frame = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    return frame, missing


def write_results_table(frame: pd.DataFrame, results_dir: Path, experiment: str, scale: str) -> Path:
    out = Path(results_dir) / experiment / f"results-{scale}.csv"
    cache.atomic_write_text(out, frame.to_csv(index=False))
    return out


def ledger_entries(spec: ExperimentSpec, scale: str, results_dir: Path) -> list[dict]:
    out = []
    for c in expand(spec, scale):
        data = cache.read_cell(results_dir, c)
        if data and data.get("ledger"):
            out.append({"cell": data["cell"], "ledger": data["ledger"]})
    return out


