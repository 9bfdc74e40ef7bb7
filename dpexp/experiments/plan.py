"""``dpexp plan``: how many cells a run has, how many are done, and how long the rest takes.

Planning only reads: the results directory (cache and committed tables) and the data
directory. It never downloads, never writes, and never loads or generates more of a dataset
than a calibration sample.

The wall-time estimate is per (dataset, algorithm label) group, by the first method that
applies, and says which one it used (``GroupPlan.kind``):

1. measured -- ``cached``: the median wall time of that group's cells in the cache (any seed
   or override at this scale; ``wall_seconds`` of the cell file: loading, fit and
   evaluation; ``fit_seconds`` for cells cached before it was recorded); else
   ``committed``: the median ``fit_seconds`` of the group's cells in the committed results
   table (the fit only: a slight underestimate);
2. extrapolated -- ``calibrated``: fits on ``CALIBRATION_ROWS`` and half as many rows of a
   calibration sample (at most ``CALIBRATION_ROWS`` rows loaded, synthetic data generated
   at that size) with at most ``CALIBRATION_TREES`` trees, extrapolated linearly in rows
   (fixed cost + slope from the two sizes) to the training-fold size the registry and the
   CV scheme give, and scaled by trees (the histogram growers are linear in rows per tree,
   and ensembles in trees). Only for datasets that are synthetic or already downloaded.
   A :class:`Calibrator` calibrates each (dataset, algorithm, private or not, depth) once
   per process, across experiments, and spends at most ``CALIBRATION_BUDGET_SECONDS``;
3. unknown -- procedures, datasets not downloaded, datasets without a registered row
   count, a failed calibration, groups left when the calibration budget is spent.

Each worker process fits every (algorithm, dataset) once, untimed, before its first timed
fit (the runner's warm-up on at most ``WARMUP_ROWS`` rows): the plan adds one such fit per
group and worker. The total is divided by the number of parallel jobs.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpexp.experiments.cells import Cell, canonical_json, expand
from dpexp.experiments.results import read_cells
from dpexp.experiments.spec import CVScheme, DatasetRef, ExperimentSpec

if TYPE_CHECKING:
    from dpexp.datasets.registry import DatasetInfo

#: Training rows of the larger calibration fit (the smaller one has half as many).
CALIBRATION_ROWS = 2000
#: Trees of a calibration fit, when the estimator has a tree-count parameter.
CALIBRATION_TREES = 3
#: A calibration fit slower than this is not repeated at half size: its time is taken as
#: proportional to the rows (no fixed cost), which caps a calibration at about two such fits.
SLOW_FIT_SECONDS = 1.0
#: Rows of the runner's untimed warm-up fit (dpexp.experiments.runner.WARMUP_ROWS).
WARMUP_ROWS = 1 << 17
#: Seconds of calibration (loading samples and fitting) per process; later groups are unknown.
CALIBRATION_BUDGET_SECONDS = 60.0
_TREE_COUNTS = ("n_trees", "n_estimators")
#: Depth parameters: a calibration is shared only between cells of the same depth.
_DEPTHS = ("max_depth", "depth")
#: How a group's estimate was obtained, by the prefix of its method.
KINDS = {"cached": "measured", "committed": "measured", "calibrated": "extrapolated"}


@dataclass
class GroupPlan:
    """One (dataset, algorithm label) group of cells."""

    dataset: str
    label: str
    cells: int
    cached: int
    seconds_per_cell: float | None = None
    method: str = "unknown"
    #: Seconds of one untimed warm-up fit (done once per worker that runs the group).
    warmup_seconds: float = 0.0

    @property
    def todo(self) -> int:
        return self.cells - self.cached

    @property
    def kind(self) -> str:
        """measured, extrapolated or unknown (from the method)."""
        return KINDS.get(self.method.split(":")[0], "unknown")

    def seconds_with(self, jobs: int) -> float | None:
        """Work of the group's missing cells plus its warm-ups on up to ``jobs`` workers."""
        if self.seconds_per_cell is None:
            return None
        workers = min(max(jobs, 1), self.todo)
        return self.todo * self.seconds_per_cell + workers * self.warmup_seconds

    @property
    def seconds(self) -> float | None:
        return self.seconds_with(1)


@dataclass
class Plan:
    experiment: str
    scale: str
    seed: int
    jobs: int
    groups: list[GroupPlan] = field(default_factory=list)

    @property
    def cells(self) -> int:
        return sum(g.cells for g in self.groups)

    @property
    def cached(self) -> int:
        return sum(g.cached for g in self.groups)

    @property
    def todo(self) -> int:
        return self.cells - self.cached

    @property
    def estimated_seconds(self) -> float:
        """Sum over the groups with an estimate (warm-ups included), divided by the jobs."""
        return sum(g.seconds_with(self.jobs) or 0.0 for g in self.groups) / max(self.jobs, 1)

    @property
    def unestimated_cells(self) -> int:
        return sum(g.todo for g in self.groups if g.seconds_per_cell is None)

    def todo_by_kind(self) -> dict[str, int]:
        """Cells to compute per estimate kind (measured, extrapolated, unknown)."""
        counts = dict.fromkeys(("measured", "extrapolated", "unknown"), 0)
        for g in self.groups:
            counts[g.kind] += g.todo
        return counts

    def basis(self) -> str:
        """The estimate's basis in words, e.g. ``to compute: 20 measured, 4 extrapolated``."""
        counts = self.todo_by_kind()
        parts = [f"{n} {k}" for k, n in counts.items() if n]
        return "to compute: " + (", ".join(parts) if parts else "nothing")

    def slowest(self, k: int = 3) -> list[GroupPlan]:
        timed = [g for g in self.groups if g.seconds]
        return sorted(timed, key=lambda g: -g.seconds)[:k]

    def unknown_groups(self) -> list[GroupPlan]:
        return [g for g in self.groups if g.todo and g.seconds_per_cell is None]

    def to_dict(self) -> dict:
        return {
            "experiment": self.experiment, "scale": self.scale, "seed": self.seed, "jobs": self.jobs,
            "cells": self.cells, "cached": self.cached, "todo": self.todo,
            "estimated_seconds": self.estimated_seconds, "unestimated_cells": self.unestimated_cells,
            "todo_by_kind": self.todo_by_kind(),
            "groups": [{**asdict(g), "todo": g.todo, "seconds": g.seconds, "kind": g.kind}
                       for g in self.groups],
        }


def kinds_total(plans: list[Plan]) -> dict[str, int]:
    """Cells to compute per estimate kind, summed over plans."""
    total = dict.fromkeys(("measured", "extrapolated", "unknown"), 0)
    for p in plans:
        for k, n in p.todo_by_kind().items():
            total[k] += n
    return total


# --------------------------------------------------------------------------- what is done


@dataclass
class _Done:
    """Keys of the finished cells of an experiment at a scale, and the measured seconds of
    each (dataset key, label) group, cache first."""

    keys: set[str] = field(default_factory=set)
    cached: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    committed: dict[tuple[str, str], list[float]] = field(default_factory=dict)


def _done_cells(spec: ExperimentSpec, scale: str, results_dir: Path) -> _Done:
    """What the cache and the committed table hold for ``spec`` at ``scale`` (read once)."""
    from dpexp.experiments.committed import committed_payloads

    done = _Done()
    for p in read_cells(results_dir, spec.id, scale):
        if "key" in p:
            done.keys.add(p["key"])
        seconds = p.get("wall_seconds")
        rows = p["rows"]
        if seconds is None and rows and rows[0].get("fit_seconds") is not None:
            seconds = rows[0]["fit_seconds"]
        if seconds is not None:
            c = p["cell"]
            done.cached.setdefault((c["dataset"], c["label"]), []).append(float(seconds))
    for p in committed_payloads(spec, scale, results_dir):
        done.keys.add(p["key"])
        fit = p["rows"][0].get("fit_seconds") if p["rows"] else None
        if fit is not None and math.isfinite(float(fit)):
            c = p["cell"]
            done.committed.setdefault((c["dataset"], c["label"]), []).append(float(fit))
    return done


# --------------------------------------------------------------------------- datasets


def dataset_available(name: str) -> bool:
    """Whether ``name`` can be loaded here without the network: synthetic, in the local data
    cache, or in a folder mirror (``DPEXP_DATA_MIRROR``) that holds its files."""
    from dpexp.datasets import download
    from dpexp.datasets.registry import get_dataset_info

    if _downloaded(name):
        return True
    mirror = download.mirror_setting(None)
    if not mirror or "://" in str(mirror):
        return False
    info = get_dataset_info(name)
    return all((Path(mirror) / f.mirror_path).exists() for f in info.files if f.mirror_path)


def _downloaded(name: str, info: DatasetInfo | None = None) -> bool:
    """Synthetic, or every file in the data directory with a verifying checksum."""
    from dpexp.datasets import download
    from dpexp.datasets.registry import get_dataset_info

    info = info or get_dataset_info(name)
    if info.parser == "synthetic":
        return True
    return all(f["status"] in ("ok", "unverified") for f in download.checksum_status(info))


def training_rows(ref: DatasetRef, cv: CVScheme, max_rows: int | None,
                  info: DatasetInfo | None = None) -> int | None:
    """Training rows of one cell, from the registry's row count (or the synthetic
    ``n_samples``), the scale's ``max_rows`` and the CV scheme; None if not registered."""
    from dpexp.datasets.registry import get_dataset_info

    info = info or get_dataset_info(ref.name)
    n = int(ref.params.get("n_samples", info.rows or 0)) or None
    if n is None:
        return None
    if max_rows is not None:
        n = min(n, int(max_rows))
    if cv.scheme == "given":
        return n  # the registered rows are the training part (the test part is separate)
    if cv.scheme == "kfold":
        return n - math.ceil(n / cv.folds)
    test = cv.test_size if cv.test_size >= 1 else math.ceil(n * cv.test_size)
    return max(n - int(test), 1)


# --------------------------------------------------------------------------- calibration


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


def _fewer_trees(params: dict) -> dict:
    """``params`` with at most CALIBRATION_TREES trees (and trees per DPBoost ensemble)."""
    params = dict(params)
    for key in _TREE_COUNTS:
        n_trees = params.get(key)
        if isinstance(n_trees, int) and n_trees > CALIBRATION_TREES:
            params[key] = CALIBRATION_TREES
            if isinstance(params.get("trees_per_ensemble"), int):  # DPBoost: ensembles of trees
                params["trees_per_ensemble"] = min(params["trees_per_ensemble"], CALIBRATION_TREES)
    return params


def _tree_count(params: dict) -> int | None:
    return next((params[k] for k in _TREE_COUNTS if isinstance(params.get(k), int) and params[k] > 0), None)


class Calibrator:
    """Times small fits, once per (dataset, algorithm, private or not, depth) and process:
    ``dpexp plan --all`` shares one across experiments. Other parameters are the first
    calibrated cell's; rows and trees are scaled per cell.

    Availability of each dataset (a checksum of its files) and one calibration sample of
    at most ``CALIBRATION_ROWS`` rows per dataset are kept for the process too. Once
    ``budget_seconds`` have gone into calibrating, further groups stay unknown (and say so).
    """

    def __init__(self, budget_seconds: float | None = None) -> None:
        self.budget_seconds = CALIBRATION_BUDGET_SECONDS if budget_seconds is None else budget_seconds
        self.spent_seconds = 0.0
        self._available: dict[str, bool] = {}
        self._samples: dict[str, Any] = {}
        self._models: dict[str, _FitModel | str] = {}
        self._warmed: set[tuple[str, str]] = set()
        self._registry: dict[str, DatasetInfo] | None = None

    def info(self, name: str) -> DatasetInfo:
        """The registry entry of ``name`` (the registry is parsed once per calibrator: a
        parse of datasets.yaml per group made planning every experiment take minutes)."""
        from dpexp.datasets.registry import all_datasets, get_dataset_info

        if self._registry is None:
            self._registry = all_datasets()
        return self._registry.get(name) or get_dataset_info(name)  # unknown: its error

    def available(self, name: str) -> bool:
        if name not in self._available:
            self._available[name] = _downloaded(name, self.info(name))
        return self._available[name]

    def sample(self, ref: DatasetRef):
        """The calibration sample of ``ref``'s dataset: at most CALIBRATION_ROWS rows (a
        synthetic dataset is generated at that size; a file is parsed once and subsampled).
        ``n_samples`` only sizes a synthetic dataset, so it does not make another sample."""
        from dpexp.datasets import load_dataset

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
        model = self._model(cell, params)
        if isinstance(model, str):
            return None, 0.0, model
        trees = _tree_count(params)
        scaled = f" and {trees} trees" if model.factor(trees) != 1.0 else ""
        return (model.seconds(rows, trees), model.seconds(min(rows, WARMUP_ROWS), trees),
                f"{model.how} to {rows:,} rows{scaled}")

    def _model(self, cell: Cell, params: dict) -> _FitModel | str:
        key = canonical_json({"dataset": cell.dataset.name, "algorithm": cell.algorithm,
                              "private": math.isfinite(cell.epsilon),
                              "depth": [params.get(k) for k in _DEPTHS]})
        if key in self._models:
            return self._models[key]
        if self.spent_seconds >= self.budget_seconds:
            return f"unknown: calibration time budget ({self.budget_seconds:.0f} s) spent"
        t0 = time.perf_counter()
        try:
            self._models[key] = self._calibrate(cell, _fewer_trees(params))
        except Exception as exc:  # the run reports it with its context; the plan goes on
            self._models[key] = f"unknown: calibration failed ({type(exc).__name__}: {exc})"
        self.spent_seconds += time.perf_counter() - t0
        return self._models[key]

    def _calibrate(self, cell: Cell, params: dict) -> _FitModel | str:
        from dpexp.registry import accepted_params, get_algorithm, make_estimator

        ds = self.sample(cell.dataset)
        X, y = ds.X, ds.y
        m = X.shape[0]
        if m < 4:
            return "unknown: too few rows to calibrate"
        info = get_algorithm(cell.algorithm)
        declares_size = "n_records" in accepted_params(cell.algorithm) and params.get("n_records") is None

        def fit(n: int) -> float:
            # the runner declares the training-fold size as n_records; so does the calibration
            est = make_estimator(cell.algorithm, ds.task, {**params, "n_records": n} if declares_size else params,
                                 epsilon=cell.epsilon if info.private else None, random_state=0,
                                 public=ds.public_metadata())
            # CPU time of this process: other processes on a shared machine do not inflate
            # it (the small fits run the kernels' serial paths, so CPU time is fit time)
            t0 = time.process_time()
            est.fit(X[:n], y[:n])
            return time.process_time() - t0

        trees = _tree_count(params)
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


def _defaults(cell: Cell, task: str) -> dict:
    """The tree counts of the cell's estimator class at their defaults, then the registry's
    defaults (so a tree count left at the class default is seen and scaled too)."""
    from dpexp.registry import get_algorithm

    info = get_algorithm(cell.algorithm)
    explicit = {k: v for k, v in info.estimator_class(task)().get_params().items()
                if k in (*_TREE_COUNTS, "trees_per_ensemble")}
    return {**explicit, **info.default_params}


# --------------------------------------------------------------------------- the plan


def _estimate_group(g: GroupPlan, first: Cell, done: _Done, calibrator: Calibrator | None) -> bool:
    """Fill ``g``'s estimate from measurements, or say why it stays unknown; True when it
    is left for the calibrator (module docstring)."""
    key = (g.dataset, g.label)
    for source, times in (("cached", done.cached.get(key)), ("committed", done.committed.get(key))):
        if times:
            g.seconds_per_cell = statistics.median(times)
            g.warmup_seconds = g.seconds_per_cell  # a warm-up is about one fit
            g.method = f"{source}: median of {len(times)} cells" + (" (fit only)" if source == "committed" else "")
            return False
    if first.procedure:
        g.method = "unknown: procedure"
    elif calibrator is None:
        g.method = "unknown: not calibrated (--no-calibrate)"
    elif not calibrator.available(first.dataset.name):
        g.method = "unknown: dataset not downloaded yet"
    else:
        g.method = "unknown: not calibrated yet"
        return True
    return False


def _measured_plan(spec: ExperimentSpec, scale: str, results_dir: Path, seed: int, jobs: int,
                   calibrator: Calibrator | None) -> tuple[Plan, list[tuple[GroupPlan, Cell]]]:
    """The plan with every estimate but the calibrated ones, and the groups left to
    calibrate (each with its first cell to compute)."""
    plan = Plan(spec.id, scale, seed, jobs)
    done = _done_cells(spec, scale, results_dir)
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in expand(spec, scale, seed):
        groups.setdefault((c.dataset.key, c.label), []).append(c)
    pending = []
    for (ds_key, label), cells in groups.items():
        g = GroupPlan(ds_key, label, len(cells), sum(c.key in done.keys for c in cells))
        plan.groups.append(g)
        if g.todo:
            first = next(c for c in cells if c.key not in done.keys)
            if _estimate_group(g, first, done, calibrator):
                pending.append((g, first))
    return plan, pending


def make_plans(
    specs: list[ExperimentSpec], scale: str, results_dir: Path, *, seed: int = 0, jobs: int = 1,
    calibrator: Calibrator | None = None, calibrate_fits: bool = True,
) -> list[Plan]:
    """The plans of ``specs`` (each already at ``scale`` and selected) under run seed ``seed``.

    Groups are calibrated after every measurement is read, largest first (most cells to
    compute) across all the specs, so a calibration budget goes where it matters most.
    ``calibrator``: shared across calls to calibrate each fit once (a new one otherwise);
    ``calibrate_fits=False`` times no fit (groups without measured cells stay unknown).
    """
    if not calibrate_fits:
        calibrator = None
    elif calibrator is None:
        calibrator = Calibrator()
    plans, pending = [], []
    for spec in specs:
        plan, left = _measured_plan(spec, scale, results_dir, seed, jobs, calibrator)
        plans.append(plan)
        pending += [(g, first, spec) for g, first in left]
    for g, first, spec in sorted(pending, key=lambda item: -item[0].todo):
        g.seconds_per_cell, g.warmup_seconds, g.method = calibrator.estimate(first, spec)
    return plans


def make_plan(
    spec: ExperimentSpec, scale: str, results_dir: Path, *, seed: int = 0, jobs: int = 1,
    calibrator: Calibrator | None = None, calibrate_fits: bool = True,
) -> Plan:
    """The plan of one ``spec`` (see :func:`make_plans`)."""
    return make_plans([spec], scale, results_dir, seed=seed, jobs=jobs, calibrator=calibrator,
                      calibrate_fits=calibrate_fits)[0]


def format_seconds(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
