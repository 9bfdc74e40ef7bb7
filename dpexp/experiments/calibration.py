"""The plan's third tier (:mod:`dpexp.experiments.plan`): time two small fits of a group's
algorithm on a calibration sample and extrapolate them to the cells' training-fold size.

A calibration is stored (:class:`CalibrationStore`, ``<data dir>/plan-calibrations/``,
one JSON file each) under the sha256 of everything that decides it: the algorithm, the
dataset (name, sample parameters, data version), private or not, the calibration's own
parameters (the cell's with fewer trees; epsilon apart, as within a process), its rows,
and the machine (host, architecture, CPU count, Python, the numerical packages' and the
algorithm's optional packages' versions, and the digest of dpexp's fitting code). A
second plan on the same machine and code fits nothing it fitted before (issue 43: Fletcher
Fig. 11's 14 diffprivlib calibrations in their side environment took 24 of ``dpexp plan
--all``'s 28 s); a changed machine, package or line of fitting code calibrates again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import platform
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from dpexp.datasets import load_dataset
from dpexp.datasets.registry import DatasetInfo, all_datasets, get_dataset_info
from dpexp.experiments.cache import atomic_write_text
from dpexp.experiments.cells import Cell, canonical_json
from dpexp.experiments.design import declared_training_rows, with_n_records
from dpexp.experiments.environment import downloaded
from dpexp.experiments.execute import WARMUP_ROWS
from dpexp.experiments.harness_params import estimator_params
from dpexp.experiments.spec import CVScheme, DatasetRef, ExperimentSpec
from dpexp.experiments.timings import tree_params
from dpexp.paths import data_dir, source_digest
from dpexp.privacy.randomness import seeded_noise
from dpexp.registry import (
    TreeParams,
    get_algorithm,
    import_failure,
    make_estimator,
    package_unavailable,
)
from dpexp.side_envs import SIDE_ENVS

#: Training rows of the larger calibration fit (the smaller one has half as many).
CALIBRATION_ROWS = 2000
#: Trees of a calibration fit, when the estimator has a tree-count parameter.
CALIBRATION_TREES = 3
#: A calibration fit slower than this is not repeated at half size: its time is taken as
#: proportional to the rows (no fixed cost), which caps a calibration at about two such fits.
SLOW_FIT_SECONDS = 1.0
#: Seconds of calibration (loading samples and fitting) per process; later groups are
#: unknown (and say so). Stored calibrations cost nothing, so each plan calibrates further
#: groups and keeps them.
CALIBRATION_BUDGET_SECONDS = 60.0
#: The budget of a plan of several experiments (``dpexp plan --all``: an overview that
#: answers within seconds, issue 43; each such plan stores a few more calibrations). An
#: overview calibrates only algorithms that fit in this process: a fit in a side
#: environment (diffprivlib's forest) takes seconds, and one started within the budget ran
#: on past it (fresh clone, 2 cores: 7.8, 11.4, 13.7 s for the first three overviews).
OVERVIEW_BUDGET_SECONDS = 3.0
#: The folder of stored calibrations, under the data directory.
STORE_FOLDER = "plan-calibrations"
#: The stored files' format (a change makes every stored calibration unknown).
STORE_FORMAT = 1
#: Packages whose versions decide fit times of every algorithm (beside its own ``requires``).
_TIMED_PACKAGES = ("numpy", "scipy", "scikit-learn", "numba")
#: dpexp's folders whose code no fit runs (a change there keeps stored calibrations).
_NOT_FITTING = ("render", "cli", "audit")


def training_rows(ref: DatasetRef, cv: CVScheme, max_rows: int | None,
                  info: DatasetInfo | None = None) -> int | None:
    """Training rows of one cell, from the registry's row count (or the synthetic
    ``n_samples``), the scale's ``max_rows`` and the CV scheme; None if not registered.
    Fold 0's (the largest test part, the fewest training rows): the runner's own
    arithmetic, :func:`dpexp.experiments.design.declared_training_rows`."""
    return declared_training_rows(ref, cv, max_rows, 0, info)


@dataclass(frozen=True)
class _FitModel:
    """Fit seconds at ``trees`` trees as ``fixed + per_row * rows``, and how it was found."""

    fixed: float
    per_row: float
    trees: int | None
    how: str

    def factor(self, trees: int | None) -> float:
        """Ensembles are linear in their trees: the cell's trees over the calibration's."""
        return trees / self.trees if trees and self.trees else 1.0

    def seconds(self, rows: int, trees: int | None) -> float:
        return (self.fixed + self.per_row * rows) * self.factor(trees)


def _version(package: str) -> str:
    """The installed version of ``package`` ("" when not installed here)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def _code_digest() -> str:
    """The sha256 of dpexp's fitting code: every module but those of :data:`_NOT_FITTING`."""
    return source_digest(Path(__file__).resolve().parents[1], _NOT_FITTING)


@functools.cache
def machine_fingerprint() -> str:
    """What else decides a fit's time: this machine, its Python and numerical packages, and
    dpexp's fitting code (canonical JSON)."""
    return canonical_json({
        "host": platform.node(), "arch": platform.machine(), "cpus": os.cpu_count(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": {p: _version(p) for p in _TIMED_PACKAGES}, "code": _code_digest()})


def _requires_versions(algorithm: str) -> dict[str, str]:
    """The algorithm's optional packages: the side environment's pinned version, else the
    version installed here."""
    return {p: (f"side environment {SIDE_ENVS[p].version}" if p in SIDE_ENVS else _version(p))
            for p in get_algorithm(algorithm).requires}


@dataclass(frozen=True)
class CalibrationStore:
    """Calibrations kept across processes in ``folder``: ``KEY.json`` per calibration, KEY
    the sha256 of the calibration's key (:meth:`key`; the module docstring), the file
    holding the key itself too (checked on load) and when it was measured."""

    folder: Path

    @classmethod
    def default(cls) -> CalibrationStore:
        return cls(data_dir() / STORE_FOLDER)

    @staticmethod
    def key(cell: Cell, params: dict) -> str:
        """Everything a calibration of ``cell``'s group with ``params`` depends on."""
        sample = {k: v for k, v in cell.dataset.params.items() if k != "n_samples"}
        return canonical_json({
            "format": STORE_FORMAT, "algorithm": cell.algorithm, "dataset": cell.dataset.name,
            "sample": sample, "data_version": cell.data_version or "",
            "private": math.isfinite(cell.epsilon), "params": params,
            "rows": CALIBRATION_ROWS, "requires": _requires_versions(cell.algorithm),
            "machine": machine_fingerprint()})

    def _path(self, key: str) -> Path:
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"

    def load(self, key: str) -> _FitModel | None:
        """The stored calibration of ``key`` (its method says when it was measured), or
        None (none stored, unreadable, or another key's)."""
        try:
            stored = json.loads(self._path(key).read_text())
            if stored.get("key") != key:
                return None
            model = _FitModel(float(stored["fixed"]), float(stored["per_row"]),
                              stored["trees"], str(stored["how"]))
            when = str(stored["measured"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return replace(model, how=f"{model.how} (measured {when}, stored)")

    def save(self, key: str, model: _FitModel) -> None:
        """Keep ``model`` for ``key``; a data directory that cannot be written only costs
        the next plan this calibration."""
        measured = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        with contextlib.suppress(OSError):
            atomic_write_text(self._path(key), json.dumps(
                {"key": key, **asdict(model), "measured": measured}, indent=1))


def _fewer_trees(trees: TreeParams, params: dict) -> dict:
    """``params`` with at most CALIBRATION_TREES trees (and trees per ensemble)."""
    params = dict(params)
    n_trees = trees.tree_count(params)
    if n_trees is not None and n_trees > CALIBRATION_TREES:
        params[trees.trees] = CALIBRATION_TREES
        per = params.get(trees.per_ensemble) if trees.per_ensemble else None
        if isinstance(per, int):  # ensembles of trees (DPBoost)
            params[trees.per_ensemble] = min(per, CALIBRATION_TREES)
    return params


class Calibrator:
    """Times small fits, once per (dataset, algorithm, private or not, depth) and process:
    ``dpexp plan --all`` shares one across experiments. Other parameters are the first
    calibrated cell's; rows and trees are scaled per cell.

    Availability of each dataset (a checksum of its files) and one calibration sample of
    at most ``CALIBRATION_ROWS`` rows per dataset are kept for the process too. Once
    ``budget_seconds`` have gone into calibrating, further groups stay unknown (and say so).
    ``store``: calibrations kept across processes (:class:`CalibrationStore`; None: the
    data directory's, False: none): a stored one is used, a new one stored.
    """

    def __init__(self, budget_seconds: float | None = None,
                 store: CalibrationStore | Literal[False] | None = None,
                 in_process_only: bool = False) -> None:
        self.budget_seconds = CALIBRATION_BUDGET_SECONDS if budget_seconds is None else budget_seconds
        self.in_process_only = in_process_only
        self.store = CalibrationStore.default() if store is None else (store or None)
        self.spent_seconds = 0.0
        self._available: dict[str, bool] = {}
        self._samples: dict[str, Any] = {}
        self._models: dict[str, _FitModel | str] = {}
        self._warmed: set[tuple[str, str]] = set()
        self._registry: dict[str, DatasetInfo] | None = None

    def info(self, name: str) -> DatasetInfo:
        """The registry entry of ``name`` (the registry is parsed once per calibrator: a
        parse of datasets.yaml per group made planning every experiment take minutes)."""

        if self._registry is None:
            self._registry = all_datasets()
        return self._registry.get(name) or get_dataset_info(name)  # unknown: its error

    def available(self, name: str) -> bool:
        if name not in self._available:
            self._available[name] = downloaded(name, self.info(name))
        return self._available[name]

    def sample(self, ref: DatasetRef):
        """The calibration sample of ``ref``'s dataset: at most CALIBRATION_ROWS rows (a
        synthetic dataset is generated at that size; a file is parsed once and subsampled).
        ``n_samples`` only sizes a synthetic dataset, so it does not make another sample."""

        params = {k: v for k, v in ref.params.items() if k != "n_samples"}
        key = canonical_json({"name": ref.name, "params": params})
        if key not in self._samples:
            self._samples[key] = load_dataset(ref.name, params, max_rows=CALIBRATION_ROWS,
                                              subsample_seed=0, progress=False)
        return self._samples[key]

    def estimate(self, cell: Cell, spec: ExperimentSpec) -> tuple[float | None, float, str]:
        """(seconds of one cell of ``cell``'s group, seconds of one warm-up fit, method)."""
        info = self.info(cell.dataset.name)
        rows = training_rows(cell.dataset, spec.cv, spec.max_rows(cell.scale), info)
        if rows is None:
            return None, 0.0, "unknown: the registry has no row count for this dataset"
        params = {**_defaults(cell, info.task), **cell.params}
        model = self._model(cell, params, spec.id)
        if isinstance(model, str):
            return None, 0.0, model
        trees = tree_params(cell.algorithm).tree_count(params)
        scaled = f" and {trees} trees" if model.factor(trees) != 1.0 else ""
        return (model.seconds(rows, trees), model.seconds(min(rows, WARMUP_ROWS), trees),
                f"{model.how} to {rows:,} rows{scaled}")

    def _model(self, cell: Cell, params: dict, experiment: str) -> _FitModel | str:
        """The group's calibration: this process's, else the store's, else a new one while
        the time budget lasts (then stored; not in a side environment when
        ``in_process_only``)."""
        # a calibration is shared only between cells of the same depth
        depth = tree_params(cell.algorithm).depth
        key = canonical_json({"dataset": cell.dataset.name, "algorithm": cell.algorithm,
                              "private": math.isfinite(cell.epsilon),
                              "depth": params.get(depth) if depth else None})
        if key in self._models:
            return self._models[key]
        fewer = _fewer_trees(tree_params(cell.algorithm), params)
        stored_key = CalibrationStore.key(cell, fewer) if self.store is not None else ""
        stored = self.store.load(stored_key) if self.store is not None else None
        if stored is not None:
            self._models[key] = stored
            return stored
        if self.in_process_only and fits_out_of_process(cell.algorithm):
            return (f"unknown: its fits run in a side environment, which an overview does "
                    f"not calibrate (`dpexp plan {experiment}` does, and stores it)")
        if self.spent_seconds >= self.budget_seconds:
            return (f"unknown: calibration time budget ({self.budget_seconds:.0f} s) spent "
                    "(calibrations are stored: the next plan calibrates further groups)")
        t0 = time.perf_counter()
        try:
            self._models[key] = self._calibrate(cell, fewer)
        except Exception as exc:  # the run reports it with its context; the plan goes on
            self._models[key] = f"unknown: calibration failed ({type(exc).__name__}: {exc})"
        self.spent_seconds += time.perf_counter() - t0
        model = self._models[key]
        if self.store is not None and isinstance(model, _FitModel):
            self.store.save(stored_key, model)
        return model

    def _calibrate(self, cell: Cell, params: dict) -> _FitModel | str:
        """Time fits of ``cell``'s algorithm with ``params`` on the calibration sample."""
        ds = self.sample(cell.dataset)
        X, y = ds.X, ds.y
        m = X.shape[0]
        if m < 4:
            return "unknown: too few rows to calibrate"
        info = get_algorithm(cell.algorithm)
        out_of_process = fits_out_of_process(cell.algorithm)

        def fit(n: int) -> float:
            # the runner declares the training-fold size as n_records (with_n_records); the
            # calibration declares the rows it fits, n, which it chose; seeded noise, as a run
            est = make_estimator(cell.algorithm, ds.task, with_n_records(cell.algorithm, estimator_params(params), n),
                                 epsilon=cell.epsilon if info.private else None, random_state=0,
                                 public=ds.public_metadata(), noise_rng=seeded_noise(0))
            # CPU time of this process: other processes on a shared machine do not inflate
            # it (the small fits run the kernels' serial paths, so CPU time is fit time);
            # a fit in a side environment's process is timed by the clock instead
            t0, c0 = time.perf_counter(), time.process_time()
            est.fit(X[:n], y[:n])
            cpu = time.process_time() - c0
            return max(cpu, time.perf_counter() - t0) if out_of_process else cpu

        trees = tree_params(cell.algorithm).tree_count(params)
        half = m // 2
        warm = (cell.algorithm, ds.task)
        if warm not in self._warmed:  # numba compiles once per process: not a cell's cost
            self._warmed.add(warm)
            fit(half)
        t_full = fit(m)
        if t_full > SLOW_FIT_SECONDS:
            return _FitModel(0.0, t_full / m, trees, f"calibrated: 1 fit on {m:,} rows, scaled")
        slope = max(t_full - fit(half), 0.0) / (m - half)
        return _FitModel(max(t_full - slope * m, 0.0), slope, trees,
                         f"calibrated: fits on {half:,} and {m:,} rows, extrapolated linearly")


def fits_out_of_process(algorithm: str) -> bool:
    """Whether ``algorithm`` fits in a side environment's process: an optional package it
    requires is installed there but does not import here (diffprivlib beside scikit-learn
    >= 1.6, :mod:`dpexp.side_envs`)."""
    return any(package_unavailable(p) is None and import_failure(p) is not None
               for p in get_algorithm(algorithm).requires)


def _defaults(cell: Cell, task: str) -> dict:
    """The tree counts of the cell's estimator class at their defaults, then the registry's
    defaults (so a tree count left at the class default is seen and scaled too)."""

    info = get_algorithm(cell.algorithm)
    explicit = {k: v for k, v in info.estimator_class(task)().get_params().items()
                if k in info.tree_params.counts}
    return {**explicit, **info.default_params}


