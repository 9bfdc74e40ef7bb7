"""``dpexp plan``: how many cells a run has, how many are done, what the done ones took, and
how long the rest takes.

Planning only reads: the results directory (cache and committed tables) and the data
directory. It never downloads, never writes, and never loads or generates more of a dataset
than a calibration sample.

A cell's measured time is its ``wall_seconds`` (the whole cell: loading, split, warm-up,
fit and evaluation; in the cache file and, since it was added to the results schema, on
every row of the committed table), else its ``fit_seconds`` (the fit only: an
underestimate; tables committed before ``wall_seconds`` existed have only that).
:class:`Measurements` reads every experiment's cache and committed table at most once per
process, keeping only each cell's key, what it ran and its time.

The wall-time estimate is per (dataset, algorithm label) group, by the first method that
applies, and says which one it used (``GroupPlan.method``, and its kind ``GroupPlan.kind``):

1. measured -- ``cached``: the median time of that group's cells in the cache (any seed
   or override at this scale); else ``committed``: the median time of the group's cells in
   the experiment's committed results table;
2. measured-other -- for a group with no cell of its own: the median time of the finished
   cells of any experiment at this scale with the same dataset, algorithm and parameters
   as each cell to compute (experiments share many such settings, e.g. Fletcher Figs. 12,
   13 and Fig. 11); else of those differing only in their tree counts, each scaled
   linearly to the cell's trees (DPBoost Figs. 5 and 6 grow 20 and 40 trees, Fig. 2 50);
   only when every cell to compute of the group has such a match;
3. extrapolated -- ``calibrated``: fits on ``CALIBRATION_ROWS`` and half as many rows of a
   calibration sample (at most ``CALIBRATION_ROWS`` rows loaded, synthetic data generated
   at that size) with at most ``CALIBRATION_TREES`` trees, extrapolated linearly in rows
   (fixed cost + slope from the two sizes) to the training-fold size the registry and the
   CV scheme give, and scaled by trees (the histogram growers are linear in rows per tree,
   and ensembles in trees). Only for datasets that are synthetic or already downloaded.
   A :class:`Calibrator` calibrates each (dataset, algorithm, private or not, depth) once
   per process, across experiments, and spends at most ``CALIBRATION_BUDGET_SECONDS``;
4. unknown -- procedures, datasets not downloaded, datasets without a registered row
   count, a failed calibration, groups left when the calibration budget is spent.

Each worker process fits every (algorithm, dataset) once, untimed, before its first timed
fit (the runner's warm-up on at most ``WARMUP_ROWS`` rows): the plan adds one such fit per
group and worker. The total is divided by the number of parallel jobs.

The done cells' measured times, summed and divided by the jobs, are what the campaign so
far took (``Plan.done_seconds``); with the estimate of the rest, what a whole run at this
scale takes (issue 19: ``make reproduce-all`` within 6 hours on 2 cores).
"""

from __future__ import annotations

import functools
import json
import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpexp.errors import DpexpError
from dpexp.experiments.cells import Cell, canonical_json, expand
from dpexp.experiments.committed import row_key, table_path
from dpexp.experiments.design import declared_training_rows, with_n_records
from dpexp.experiments.results import read_cells
from dpexp.experiments.schema import CELL_COLUMNS
from dpexp.experiments.spec import CVScheme, DatasetRef, ExperimentSpec
from dpexp.privacy.randomness import seeded_noise

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
KINDS = {"cached": "measured", "committed": "measured", "measured-other": "measured-other",
         "calibrated": "extrapolated", "unavailable": "unavailable"}
#: The estimate kinds, in the order of the tiers (module docstring); ``unavailable``: cells
#: of a dataset this machine cannot load (not downloaded, not in the data mirror, and the
#: mirror is a folder: no network) or of an algorithm whose optional package does not
#: import here (``dpexp run`` skips those), left out of every total and listed by name.
KIND_ORDER = ("measured", "measured-other", "extrapolated", "unknown", "unavailable")


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
    #: The optional package the group's algorithm needs and this machine lacks ("" if none).
    missing_package: str = ""

    @property
    def todo(self) -> int:
        return self.cells - self.cached

    @property
    def kind(self) -> str:
        """measured, measured-other, extrapolated or unknown (from the method; ``KIND_ORDER``)."""
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
    #: Measured seconds of the done cells (wall time, else fit time), summed over the cells.
    done_cell_seconds: float = 0.0
    #: Done cells with a measured time, and how many of them have only their fit time.
    done_timed: int = 0
    done_fit_only: int = 0
    #: The same cells at each group's median time (a suspended or loaded-machine cell
    #: counts at its group's typical time): what an undisturbed run would have taken.
    done_typical_cell_seconds: float = 0.0
    #: The experiment whose cells these are (the spec's ``cells_from``; "" for its own).
    cells_of: str = ""

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
    def done_seconds(self) -> float:
        """What the done cells took, divided by the jobs (the campaign so far)."""
        return self.done_cell_seconds / max(self.jobs, 1)

    @property
    def estimated_seconds(self) -> float:
        """Sum over the groups with an estimate (warm-ups included), divided by the jobs."""
        return sum(g.seconds_with(self.jobs) or 0.0 for g in self.groups) / max(self.jobs, 1)

    @property
    def unestimated_cells(self) -> int:
        """Cells to compute without an estimate (those of unavailable datasets excepted)."""
        return sum(g.todo for g in self.groups
                   if g.seconds_per_cell is None and g.kind != "unavailable")

    @property
    def unavailable_cells(self) -> int:
        """Cells to compute on datasets this machine cannot load (not in the totals)."""
        return sum(g.todo for g in self.groups if g.kind == "unavailable")

    def unavailable_datasets(self) -> list[str]:
        return sorted({g.dataset for g in self.groups
                       if g.todo and g.kind == "unavailable" and not g.missing_package})

    def unavailable_algorithms(self) -> list[str]:
        """``label (package)`` of the series left out for a missing optional package."""
        return sorted({f"{g.label} ({g.missing_package})" for g in self.groups
                       if g.todo and g.missing_package})

    def todo_by_kind(self) -> dict[str, int]:
        """Cells to compute per estimate kind (``KIND_ORDER``)."""
        counts = dict.fromkeys(KIND_ORDER, 0)
        for g in self.groups:
            counts[g.kind] += g.todo
        return counts

    def basis(self) -> str:
        """The estimate's basis in words, e.g. ``to compute: 20 measured, 4 extrapolated``."""
        return "to compute: " + kinds_text(self.todo_by_kind())

    def slowest(self, k: int = 3) -> list[GroupPlan]:
        timed = [g for g in self.groups if g.seconds]
        return sorted(timed, key=lambda g: -g.seconds)[:k]

    def unknown_groups(self) -> list[GroupPlan]:
        return [g for g in self.groups if g.todo and g.kind == "unknown"]

    def to_dict(self) -> dict:
        return {
            "experiment": self.experiment, "scale": self.scale, "seed": self.seed, "jobs": self.jobs,
            "cells_of": self.cells_of, "cells": self.cells, "cached": self.cached, "todo": self.todo,
            "done_cell_seconds": self.done_cell_seconds, "done_seconds": self.done_seconds,
            "done_typical_seconds": self.done_typical_cell_seconds / max(self.jobs, 1),
            "done_timed": self.done_timed, "done_fit_only": self.done_fit_only,
            "estimated_seconds": self.estimated_seconds, "unestimated_cells": self.unestimated_cells,
            "unavailable_cells": self.unavailable_cells,
            "unavailable_datasets": self.unavailable_datasets(),
            "unavailable_algorithms": self.unavailable_algorithms(),
            "todo_by_kind": self.todo_by_kind(),
            "groups": [{**asdict(g), "todo": g.todo, "seconds": g.seconds, "kind": g.kind}
                       for g in self.groups],
        }


def kinds_text(counts: dict[str, int]) -> str:
    """``20 measured, 4 extrapolated`` (kinds with cells only), or ``nothing``."""
    parts = [f"{n} {k}" for k, n in counts.items() if n]
    return ", ".join(parts) if parts else "nothing"


def kinds_total(plans: list[Plan]) -> dict[str, int]:
    """Cells to compute per estimate kind, summed over plans."""
    total = dict.fromkeys(KIND_ORDER, 0)
    for p in plans:
        for k, n in p.todo_by_kind().items():
            total[k] += n
    return total


def counted(plans: list[Plan]) -> list[Plan]:
    """``plans`` without those of specs showing another's cells (``cells_from``) when that
    experiment is planned too: its plan holds the same cells, which run once."""
    names = {p.experiment for p in plans}
    return [p for p in plans if p.cells_of not in names]


def totals(plans: list[Plan]) -> dict[str, Any]:
    """The sums over ``plans`` (one run's jobs): cells, done, to do, what the done cells
    took (per cell summed, and divided by the jobs) and the estimate of the rest. Each cell
    counts once: see :func:`counted`."""
    shared = len(plans) - len(counted(plans))
    plans = counted(plans)
    done_cell_seconds = sum(p.done_cell_seconds for p in plans)
    jobs = max(plans[0].jobs, 1) if plans else 1
    estimated = sum(p.estimated_seconds for p in plans)
    return {
        "experiments": len(plans) + shared, "views": shared, "jobs": jobs,
        "cells": sum(p.cells for p in plans), "cached": sum(p.cached for p in plans),
        "todo": sum(p.todo for p in plans),
        "done_cell_seconds": done_cell_seconds, "done_seconds": done_cell_seconds / jobs,
        "done_typical_seconds": sum(p.done_typical_cell_seconds for p in plans) / jobs,
        "done_timed": sum(p.done_timed for p in plans),
        "done_fit_only": sum(p.done_fit_only for p in plans),
        "estimated_seconds": estimated, "unestimated_cells": sum(p.unestimated_cells for p in plans),
        "unavailable_cells": sum(p.unavailable_cells for p in plans),
        "unavailable_datasets": sorted({d for p in plans for d in p.unavailable_datasets()}),
        "unavailable_algorithms": sorted({a for p in plans for a in p.unavailable_algorithms()}),
        "total_seconds": done_cell_seconds / jobs + estimated,
        "todo_by_kind": kinds_total(plans),
    }


# --------------------------------------------------------------------------- what is done


@dataclass(frozen=True)
class CellTime:
    """One finished cell: its key, what it ran (``setting``: dataset key, algorithm,
    canonical params JSON) and its measured seconds (``wall``: the cell's wall time; else
    its fit time; None when it has neither)."""

    experiment: str
    key: str
    label: str
    setting: tuple[str, str, str]
    seconds: float | None
    wall: bool
    #: ``cached`` (a cell file) or ``committed`` (a row of the committed table)
    source: str

    @property
    def group(self) -> tuple[str, str]:
        """The plan's group: (dataset key, label)."""
        return self.setting[0], self.label


def _finite(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _measured(wall: Any, fit: Any) -> tuple[float | None, bool]:
    """(seconds, whether they are the wall time): the wall time, else the fit time."""
    seconds = _finite(wall)
    return (seconds, True) if seconds is not None else (_finite(fit), False)


def _cached_times(results_dir: Path, experiment: str, scale: str) -> list[CellTime]:
    """The cell files of ``experiment`` at ``scale`` (every seed and override)."""
    out = []
    for p in read_cells(results_dir, experiment, scale):
        if "key" not in p:  # not a runner's cell file: the runner recomputes it
            continue
        c, first = p["cell"], (p["rows"][0] if p["rows"] else {})
        wall = p.get("wall_seconds")
        seconds, is_wall = _measured(first.get("wall_seconds") if wall is None else wall,
                                     first.get("fit_seconds"))
        algorithm = c.get("algorithm") or f"procedure:{c.get('procedure')}"
        setting = (str(c.get("dataset")), algorithm, canonical_json(c.get("params") or {}))
        out.append(CellTime(experiment, p["key"], str(c.get("label")), setting, seconds, is_wall,
                            "cached"))
    return out


#: Columns of a committed table the plan reads (the rest is left unparsed).
_TIMING_COLUMNS = frozenset((*CELL_COLUMNS, "data_version", "fit_seconds", "wall_seconds"))


def _committed_times(results_dir: Path, experiment: str, scale: str) -> list[CellTime]:
    """The cells of ``experiment``'s committed table at ``scale``: one row per cell of only
    the key and timing columns (parsing every row and column of the large tables made
    planning every experiment take minutes). Keys are the committed layer's
    (:func:`dpexp.experiments.committed.row_key`)."""
    path = table_path(results_dir, experiment, scale)
    if not path.exists():
        return []
    try:
        # dtype: a fingerprint of hex digits only ("123e4567...") must not be read as a number
        frame = pd.read_csv(path, usecols=lambda c: c in _TIMING_COLUMNS, low_memory=False,
                            dtype={"data_version": object, "params": object, "label": object})
    except (OSError, EOFError, ValueError) as exc:
        raise DpexpError(f"{path}: cannot read the committed results table ({exc}).") from None
    missing = [c for c in CELL_COLUMNS if c not in frame.columns]
    if missing:
        raise DpexpError(f"{path}: not a dpexp results table (no column(s) {missing}).")
    for col in ("label", "data_version"):  # CSV writes "" as an empty field, read back as NaN
        if col in frame.columns:
            frame[col] = frame[col].astype(object).fillna("")
    frame = frame.drop_duplicates([c for c in (*CELL_COLUMNS, "data_version") if c in frame.columns])
    out = []
    for rec in frame.to_dict("records"):
        seconds, is_wall = _measured(rec.get("wall_seconds"), rec.get("fit_seconds"))
        setting = (str(rec["dataset"]), str(rec["algorithm"]), str(rec["params"]))
        out.append(CellTime(experiment, row_key(rec), str(rec["label"]), setting, seconds, is_wall,
                            "committed"))
    return out


class Measurements:
    """The finished cells of every experiment at one ``scale`` of one results directory,
    each experiment read at most once: its cell files, then the committed table's cells the
    cache lacks (a cell file wins over the table, as in
    :func:`dpexp.experiments.results.cached_results`)."""

    def __init__(self, results_dir: Path, scale: str) -> None:
        self.results_dir = Path(results_dir)
        self.scale = scale
        self._cells: dict[str, dict[str, CellTime]] = {}
        self._settings: dict[tuple[str, str, str], list[CellTime]] | None = None
        self._shapes: dict[tuple[str, str, str], list[tuple[CellTime, int]]] = {}
        self._available: dict[str, bool] = {}

    def available(self, dataset: str) -> bool:
        """:func:`dataset_available`, once per dataset name."""
        if dataset not in self._available:
            self._available[dataset] = dataset_available(dataset)
        return self._available[dataset]

    def cells(self, experiment: str) -> dict[str, CellTime]:
        """Key -> finished cell of ``experiment`` (grid cells or not: overrides, stale)."""
        if experiment not in self._cells:
            found = {t.key: t for t in _committed_times(self.results_dir, experiment, self.scale)}
            found.update({t.key: t for t in _cached_times(self.results_dir, experiment, self.scale)})
            self._cells[experiment] = found
        return self._cells[experiment]

    def experiments(self) -> list[str]:
        """Every experiment with cell files or a committed table at this scale (specs or not)."""
        names = set()
        cache_root = self.results_dir / "cache"
        if cache_root.is_dir():
            names |= {d.name for d in cache_root.iterdir() if (d / self.scale).is_dir()}
        if self.results_dir.is_dir():
            names |= {d.name for d in self.results_dir.iterdir()
                      if d.is_dir() and table_path(self.results_dir, d.name, self.scale).is_file()}
        return sorted(names)

    def _index(self) -> dict[tuple[str, str, str], list[CellTime]]:
        """Timed finished cells of every experiment by setting, and by setting but the tree
        count (read on first use: a plan whose groups all have cells of their own reads
        no other experiment)."""
        if self._settings is None:
            self._settings = {}
            for experiment in self.experiments():
                for t in self.cells(experiment).values():
                    if t.seconds is None:
                        continue
                    self._settings.setdefault(t.setting, []).append(t)
                    shape, trees = _shape(t.setting)
                    if trees:
                        self._shapes.setdefault(shape, []).append((t, trees))
        return self._settings

    def same_setting(self, setting: tuple[str, str, str]) -> list[CellTime]:
        """The timed finished cells of any experiment with this (dataset, algorithm, params)."""
        return self._index().get(setting, [])

    def other_trees(self, setting: tuple[str, str, str]) -> list[tuple[CellTime, int]]:
        """The timed finished cells (with their tree counts) of any experiment whose setting
        differs from ``setting`` at most in its tree counts (``_TREE_KEYS``)."""
        self._index()
        return self._shapes.get(_shape(setting)[0], [])


#: Parameters that count trees (DPBoost: also the trees per ensemble).
_TREE_KEYS = (*_TREE_COUNTS, "trees_per_ensemble")


@functools.lru_cache(maxsize=4096)
def _params(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _shape(setting: tuple[str, str, str]) -> tuple[tuple[str, str, str], int | None]:
    """A setting without its tree counts, and its tree count (None if it has none)."""
    params = _params(setting[2])
    rest = canonical_json({k: v for k, v in params.items() if k not in _TREE_KEYS})
    return (setting[0], setting[1], rest), _tree_count(params)


def _setting(cell: Cell) -> tuple[str, str, str]:
    """What a cell runs, as :attr:`CellTime.setting`."""
    return (cell.dataset.key, cell.algorithm or f"procedure:{cell.procedure}",
            canonical_json(cell.params))


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
    ``n_samples``), the scale's ``max_rows`` and the CV scheme; None if not registered.
    Fold 0's (the largest test part, the fewest training rows): the runner's own
    arithmetic, :func:`dpexp.experiments.design.declared_training_rows`."""
    return declared_training_rows(ref, cv, max_rows, 0, info)


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
        from dpexp.registry import get_algorithm, make_estimator

        ds = self.sample(cell.dataset)
        X, y = ds.X, ds.y
        m = X.shape[0]
        if m < 4:
            return "unknown: too few rows to calibrate"
        info = get_algorithm(cell.algorithm)

        def fit(n: int) -> float:
            # the runner declares the training-fold size as n_records (with_n_records); the
            # calibration declares the rows it fits, n, which it chose; seeded noise, as a run
            est = make_estimator(cell.algorithm, ds.task, with_n_records(cell.algorithm, params, n),
                                 epsilon=cell.epsilon if info.private else None, random_state=0,
                                 public=ds.public_metadata(), noise_rng=seeded_noise(0))
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


def _fit_only_note(times: list[CellTime]) -> str:
    fit_only = sum(not t.wall for t in times)
    if not fit_only:
        return ""
    return " (fit only)" if fit_only == len(times) else f" ({fit_only} of them fit only)"


def own_cells(measurements: Measurements, experiment: str) -> dict[tuple[str, str], dict[str, list[CellTime]]]:
    """The finished cells of ``experiment`` by group, then by source (cached, committed)."""
    own: dict[tuple[str, str], dict[str, list[CellTime]]] = {}
    for t in measurements.cells(experiment).values():
        own.setdefault(t.group, {}).setdefault(t.source, []).append(t)
    return own


def own_median(own: dict[str, list[CellTime]]) -> tuple[float, str, list[CellTime]] | None:
    """Tier 1: the median time of a group's own timed cells, cached first (the newer),
    then committed, with the source and the cells used; None when it has none."""
    for source in ("cached", "committed"):
        times = [t for t in own.get(source, ()) if t.seconds is not None]
        if times:
            return statistics.median(t.seconds for t in times), source, times
    return None


def _own_estimate(g: GroupPlan, own: dict[str, list[CellTime]]) -> bool:
    """Tier 1 (module docstring, :func:`own_median`) into ``g``."""
    found = own_median(own)
    if found is None:
        return False
    g.seconds_per_cell, source, times = found
    g.warmup_seconds = g.seconds_per_cell  # a warm-up is about one fit
    g.method = f"{source}: median of {len(times)} cells{_fit_only_note(times)}"
    return True


def _setting_seconds(setting: tuple[str, str, str], measurements: Measurements
                     ) -> tuple[float, list[CellTime], bool] | None:
    """(seconds of one cell of ``setting``, the cells measured, whether scaled by trees):
    the median of the cells with the same setting; else of those differing only in their
    tree counts, each scaled linearly to this setting's trees (as the calibration scales:
    ensembles are linear in their trees); else None."""
    same = measurements.same_setting(setting)
    if same:
        return statistics.median(t.seconds for t in same), same, False
    trees = _shape(setting)[1]
    others = measurements.other_trees(setting) if trees else []
    if not others:
        return None
    return (statistics.median(t.seconds * trees / n for t, n in others),
            [t for t, _ in others], True)


def _other_estimate(g: GroupPlan, todo: list[Cell], measurements: Measurements) -> bool:
    """Tier 2: cells of any experiment with the setting of each cell to compute; only when
    every such setting has finished cells (mixing measured and guessed cells would hide
    which is which)."""
    found: dict[tuple[str, str, str], tuple[float, list[CellTime], bool]] = {}
    for c in todo:
        setting = _setting(c)
        if setting not in found:
            match = _setting_seconds(setting, measurements)
            if match is None:
                return False
            found[setting] = match
    g.seconds_per_cell = sum(found[_setting(c)][0] for c in todo) / len(todo)
    g.warmup_seconds = g.seconds_per_cell
    used = list({t.key: t for _, times, _ in found.values() for t in times}.values())
    experiments = sorted({t.experiment for t in used})
    names = ", ".join(experiments[:2]) + (f" and {len(experiments) - 2} more" if len(experiments) > 2 else "")
    scaled = sum(by_trees for _, _, by_trees in found.values())
    how = (" but other tree counts, scaled linearly in trees" if scaled == len(found) else
           f" (for {scaled} of {len(found)} parameter settings: other tree counts, scaled "
           f"linearly in trees)" if scaled else "")
    g.method = (f"measured-other: median of {len(used)} cells of {names} with the same dataset, "
                f"algorithm and parameters{how}{_fit_only_note(used)}")
    return True


def _missing_package(cell: Cell) -> str:
    """The optional package ``cell``'s algorithm needs that does not import here, or ""."""
    if not cell.algorithm:
        return ""
    from dpexp.registry import get_algorithm

    requires = get_algorithm(cell.algorithm).requires
    if not requires:
        return ""
    from dpexp.experiments.runner import optional_unavailable

    why = optional_unavailable(requires)
    return why.split(" ")[0] if why else ""


def _estimate_group(g: GroupPlan, todo: list[Cell], own: dict[str, list[CellTime]],
                    measurements: Measurements, calibrator: Calibrator | None) -> bool:
    """Fill ``g``'s estimate from measurements, or say why it stays unknown; True when it
    is left for the calibrator (the tiers of the module docstring)."""
    first = todo[0]
    package = _missing_package(first)
    if package:
        g.missing_package = package
        g.method = (f"unavailable: needs the optional package {package}, which does not "
                    f"import here (dpexp run skips the series)")
        return False
    if not measurements.available(first.dataset.name):
        g.method = ("unavailable: dataset neither downloaded nor in a data-mirror folder "
                    "(dpexp datasets download it where there is network)")
        return False
    if _own_estimate(g, own) or _other_estimate(g, todo, measurements):
        return False
    if first.procedure:
        g.method = "unknown: procedure"
    elif calibrator is None:
        g.method = "unknown: not calibrated (--no-calibrate)"
    else:
        g.method = "unknown: not calibrated yet"
        return True
    return False


def _measured_plan(spec: ExperimentSpec, scale: str, seed: int, jobs: int, measurements: Measurements,
                   calibrator: Calibrator | None) -> tuple[Plan, list[tuple[GroupPlan, Cell]]]:
    """The plan with every estimate but the calibrated ones, and the groups left to
    calibrate (each with its first cell to compute)."""
    plan = Plan(spec.id, scale, seed, jobs, cells_of=spec.cells_from)
    done = measurements.cells(spec.cells_id)
    own = own_cells(measurements, spec.cells_id)
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in expand(spec, scale, seed):
        groups.setdefault((c.dataset.key, c.label), []).append(c)
    pending = []
    for key, cells in groups.items():
        finished = [done[c.key] for c in cells if c.key in done]
        g = GroupPlan(key[0], key[1], len(cells), len(finished))
        plan.groups.append(g)
        timed = [t for t in finished if t.seconds is not None]
        plan.done_cell_seconds += sum(t.seconds for t in timed)
        if timed:
            plan.done_typical_cell_seconds += len(timed) * statistics.median(t.seconds for t in timed)
        plan.done_timed += len(timed)
        plan.done_fit_only += sum(not t.wall for t in timed)
        todo = [c for c in cells if c.key not in done]
        if todo and _estimate_group(g, todo, own.get(key, {}), measurements, calibrator):
            pending.append((g, todo[0]))
    return plan, pending


def make_plans(
    specs: list[ExperimentSpec], scale: str, results_dir: Path, *, seed: int = 0, jobs: int = 1,
    calibrator: Calibrator | None = None, calibrate_fits: bool = True,
    measurements: Measurements | None = None,
) -> list[Plan]:
    """The plans of ``specs`` (each already at ``scale`` and selected) under run seed ``seed``.

    Groups are calibrated after every measurement is read, largest first (most cells to
    compute) across all the specs, so a calibration budget goes where it matters most.
    ``calibrator``: shared across calls to calibrate each fit once (a new one otherwise);
    ``calibrate_fits=False`` times no fit (groups without measured cells stay unknown).
    ``measurements``: shared across calls to read each experiment's results once (a new
    one for ``results_dir`` and ``scale`` otherwise).
    """
    if not calibrate_fits:
        calibrator = None
    elif calibrator is None:
        calibrator = Calibrator()
    if measurements is None:
        measurements = Measurements(results_dir, scale)
    plans, pending = [], []
    for spec in specs:
        plan, left = _measured_plan(spec, scale, seed, jobs, measurements, calibrator)
        plans.append(plan)
        pending += [(g, first, spec) for g, first in left]
    for g, first, spec in sorted(pending, key=lambda item: -item[0].todo):
        g.seconds_per_cell, g.warmup_seconds, g.method = calibrator.estimate(first, spec)
    return plans


def make_plan(
    spec: ExperimentSpec, scale: str, results_dir: Path, *, seed: int = 0, jobs: int = 1,
    calibrator: Calibrator | None = None, calibrate_fits: bool = True,
    measurements: Measurements | None = None,
) -> Plan:
    """The plan of one ``spec`` (see :func:`make_plans`)."""
    return make_plans([spec], scale, results_dir, seed=seed, jobs=jobs, calibrator=calibrator,
                      calibrate_fits=calibrate_fits, measurements=measurements)[0]


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
