"""``dpexp plan``: how many cells a run has, how many are cached, and how long the rest takes.

The wall-time estimate is per (dataset, algorithm label) group, by the first method that
applies, and says which one it used:

1. ``cached``: the median wall time of that group's cells already in the cache (any
   seed or override at this scale; ``wall_seconds`` of the cell file: loading, fit and
   evaluation; ``fit_seconds`` for cells cached before it was recorded) -- a measurement
   on this machine;
2. ``calibrated``: the group's first cell, timed end to end at its real size (fit and
   evaluation, after an untimed warm-up, as the runner does) when a proxy says it takes at
   most ``FULL_CELL_MAX_SECONDS``; otherwise the proxy: one fit on at most
   ``CALIBRATION_ROWS`` (and half as many) training rows of fold 0 and at most
   ``CALIBRATION_TREES`` trees, extrapolated linearly in rows (fixed cost + slope from the
   two sizes) and scaled by trees (the histogram growers are linear in rows per tree, and
   ensembles in trees). Only for datasets that are synthetic or already downloaded:
   planning never downloads;
3. ``unknown``: procedures, or datasets not downloaded yet.

Each worker process also fits every (algorithm, dataset) once, untimed, before its first
timed fit (the runner's warm-up): the plan adds one fit per group and worker. The total is
divided by the number of parallel jobs.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dpexp.experiments import cache
from dpexp.experiments.cells import Cell, expand
from dpexp.experiments.results import read_cells
from dpexp.experiments.spec import ExperimentSpec

#: A calibration times the group's first cell end to end when the proxy predicts at most
#: this many seconds (cheap enough to measure instead of extrapolate).
FULL_CELL_MAX_SECONDS = 30.0
#: Training rows of a calibration fit (the rest is extrapolated linearly).
CALIBRATION_ROWS = 2000
#: Trees of a calibration fit, when the estimator has a tree-count parameter.
CALIBRATION_TREES = 20
_TREE_COUNTS = ("n_trees", "n_estimators")


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

    def slowest(self, k: int = 3) -> list[GroupPlan]:
        timed = [g for g in self.groups if g.seconds]
        return sorted(timed, key=lambda g: -g.seconds)[:k]

    def to_dict(self) -> dict:
        return {
            "experiment": self.experiment, "scale": self.scale, "seed": self.seed, "jobs": self.jobs,
            "cells": self.cells, "cached": self.cached, "todo": self.todo,
            "estimated_seconds": self.estimated_seconds, "unestimated_cells": self.unestimated_cells,
            "groups": [{**asdict(g), "todo": g.todo, "seconds": g.seconds} for g in self.groups],
        }


def _cached_fit_seconds(spec: ExperimentSpec, scale: str, results_dir: Path) -> dict[tuple[str, str], list[float]]:
    """(dataset key, label) -> fit_seconds of every cached cell of the experiment at scale."""
    out: dict[tuple[str, str], list[float]] = {}
    for p in read_cells(results_dir, spec.id, scale):
        rows = p["rows"]
        seconds = p.get("wall_seconds")
        if seconds is None and rows and rows[0].get("fit_seconds") is not None:
            seconds = rows[0]["fit_seconds"]
        if seconds is not None:
            c = p["cell"]
            out.setdefault((c["dataset"], c["label"]), []).append(float(seconds))
    return out


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


def _downloaded(name: str) -> bool:
    from dpexp.datasets import download
    from dpexp.datasets.registry import get_dataset_info

    info = get_dataset_info(name)
    if info.parser == "synthetic":
        return True
    return all(f["status"] in ("ok", "unverified") for f in download.checksum_status(info))


def calibrate(cell: Cell, spec: ExperimentSpec, mirror: str | None = None) -> tuple[float, float, str]:
    """(seconds of one cell, seconds of one warm-up fit, how) for ``cell``'s group."""
    fit_seconds, how = proxy_fit_seconds(cell, spec, mirror)
    if fit_seconds > FULL_CELL_MAX_SECONDS:
        return fit_seconds, fit_seconds, how
    cell_seconds, fit_seconds = time_full_cell(cell, spec, mirror)
    return cell_seconds, fit_seconds, "calibrated: one cell timed end to end at its real size"


def time_full_cell(cell: Cell, spec: ExperimentSpec, mirror: str | None) -> tuple[float, float]:
    """(wall seconds, fit seconds) of ``cell`` as the runner computes it (nothing written)."""
    from dpexp.experiments.runner import RunConfig, _fit_estimator, _load_split, _warm_up

    data = _load_split(cell, spec, RunConfig(results_dir=Path("."), scale=cell.scale,
                                             mirror=mirror), None)
    _warm_up(cell, data, 0)  # compilation happens once per worker, not per cell
    t0 = time.perf_counter()
    out = _fit_estimator(cell, spec, data, 0)
    return time.perf_counter() - t0, out.fit_seconds


def proxy_fit_seconds(cell: Cell, spec: ExperimentSpec, mirror: str | None = None) -> tuple[float, str]:
    """Seconds one fit of ``cell`` takes, from a fit on at most CALIBRATION_ROWS rows."""
    from dpexp.experiments.runner import load_for_cell, split_indices
    from dpexp.registry import accepted_params, get_algorithm, make_estimator

    ds = load_for_cell(cell.dataset, spec.max_rows(cell.scale), cell.seed, mirror)
    if spec.cv.scheme == "given" and ds.X_test is not None:
        X, y = ds.X, ds.y
    else:
        tr, _ = split_indices(ds, spec.cv, 0, 0, cell.seed)
        X, y = ds.X[tr], ds.y[tr]
    n = X.shape[0]
    m = min(n, CALIBRATION_ROWS)
    info = get_algorithm(cell.algorithm)
    params, tree_factor = _fewer_trees({**info.default_params, **cell.params})

    declares_size = "n_records" in accepted_params(cell.algorithm) and params.get("n_records") is None

    def fit(rows: int) -> float:
        # the runner declares the training-fold size as n_records; so does the calibration
        est = make_estimator(cell.algorithm, ds.task, {**params, "n_records": rows} if declares_size else params,
                             epsilon=cell.epsilon if info.private else None, random_state=0,
                             public=ds.public_metadata())
        t0 = time.perf_counter()
        est.fit(X[:rows], y[:rows])
        return time.perf_counter() - t0

    fit(m)  # untimed warm-up: numba compilation is not part of a cell's cost
    t_full = fit(m)
    if m == n:
        seconds = t_full
    else:
        # two sizes give a per-row slope and the fixed cost (binning, per-node work over
        # the features) that a plain ratio would multiply too
        half = m // 2
        slope = max(t_full - fit(half), 0.0) / (m - half)
        seconds = t_full + slope * (n - m)
    seconds *= tree_factor
    how = f"calibrated: fits on {m // 2:,} and {m:,} of {n:,} rows" if m < n else "calibrated: 1 fit at full size"
    if tree_factor > 1:
        how += f" with 1/{tree_factor:.0f} of the trees"
    return seconds, how + ", extrapolated linearly"


def _fewer_trees(params: dict) -> tuple[dict, float]:
    """``params`` with at most CALIBRATION_TREES trees, and the factor to scale time by."""
    params = dict(params)
    for key in _TREE_COUNTS:
        n_trees = params.get(key)
        if isinstance(n_trees, int) and n_trees > CALIBRATION_TREES:
            params[key] = CALIBRATION_TREES
            if isinstance(params.get("trees_per_ensemble"), int):  # DPBoost: ensembles of trees
                params["trees_per_ensemble"] = min(params["trees_per_ensemble"], CALIBRATION_TREES)
            return params, n_trees / CALIBRATION_TREES
    return params, 1.0


def make_plan(
    spec: ExperimentSpec, scale: str, results_dir: Path, *, seed: int = 0, jobs: int = 1,
    calibrate_fits: bool = True, mirror: str | None = None,
) -> Plan:
    """The plan of ``spec`` (already at ``scale`` and selected) under run seed ``seed``."""
    plan = Plan(spec.id, scale, seed, jobs)
    measured = _cached_fit_seconds(spec, scale, results_dir)
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in expand(spec, scale, seed):
        groups.setdefault((c.dataset.key, c.label), []).append(c)
    for (ds_key, label), cells in groups.items():
        g = GroupPlan(ds_key, label, len(cells), sum(cache.has_cell(results_dir, c) for c in cells))
        plan.groups.append(g)
        if g.todo == 0:
            continue
        if (ds_key, label) in measured:
            times = measured[(ds_key, label)]
            g.seconds_per_cell = statistics.median(times)
            g.warmup_seconds = g.seconds_per_cell  # a warm-up is about one fit
            g.method = f"cached: median of {len(times)} cells"
        elif cells[0].procedure:
            g.method = "unknown: procedure"
        elif not calibrate_fits:
            g.method = "unknown: not calibrated (--no-calibrate)"
        elif not _downloaded(cells[0].dataset.name):
            g.method = "unknown: dataset not downloaded yet"
        else:
            g.seconds_per_cell, g.warmup_seconds, g.method = calibrate(cells[0], spec, mirror)
    return plan


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
