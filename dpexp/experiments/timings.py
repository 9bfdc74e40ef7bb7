"""What finished cells took: the measured seconds of every cached or committed cell, read
once per experiment, by the plan (estimates) and the schedule (longest first)."""

from __future__ import annotations

import functools
import json
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from dpexp.errors import DpexpError
from dpexp.experiments.cell_times import CellTime, cached_times, measured
from dpexp.experiments.cells import Cell, canonical_json
from dpexp.experiments.committed import row_key, table_path
from dpexp.experiments.environment import dataset_available
from dpexp.experiments.schema import CELL_COLUMNS
from dpexp.registry import TreeParams, all_algorithms

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
        seconds, is_wall = measured(rec.get("wall_seconds"), rec.get("fit_seconds"))
        setting = (str(rec["dataset"]), str(rec["algorithm"]), str(rec["params"]))
        out.append(CellTime(experiment, row_key(rec), str(rec["label"]), setting, seconds, is_wall,
                            "committed"))
    return out


def committed_group_seconds(results_dir: Path, experiment: str, scale: str) -> dict[tuple[str, str], float]:
    """(dataset key, label) -> the median measured seconds of the committed table's timed
    cells of that group: the plan's first tier read from the committed table only, the
    same on every machine with the same commit (``dpexp run --shard`` balances by it)."""
    by_group: dict[tuple[str, str], list[float]] = {}
    for t in _committed_times(results_dir, experiment, scale):
        if t.seconds is not None:
            by_group.setdefault(t.group, []).append(t.seconds)
    return {group: statistics.median(times) for group, times in by_group.items()}


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
            found.update({t.key: t for t in cached_times(self.results_dir, experiment, self.scale)})
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
                    shape, trees = setting_shape(t.setting)
                    if trees:
                        self._shapes.setdefault(shape, []).append((t, trees))
        return self._settings

    def same_setting(self, setting: tuple[str, str, str]) -> list[CellTime]:
        """The timed finished cells of any experiment with this (dataset, algorithm, params)."""
        return self._index().get(setting, [])

    def other_trees(self, setting: tuple[str, str, str]) -> list[tuple[CellTime, int]]:
        """The timed finished cells (with their tree counts) of any experiment whose setting
        differs from ``setting`` at most in its tree counts (:func:`tree_params`)."""
        self._index()
        return self._shapes.get(setting_shape(setting)[0], [])


@functools.lru_cache(maxsize=512)
def tree_params(algorithm: str) -> TreeParams:
    """The manifest's tree parameters of ``algorithm`` (none for a procedure or a peer)."""
    info = all_algorithms().get(algorithm)
    return info.tree_params if info is not None else TreeParams()


@functools.lru_cache(maxsize=4096)
def _params(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def setting_shape(setting: tuple[str, str, str]) -> tuple[tuple[str, str, str], int | None]:
    """A setting without its tree counts, and its tree count (None if it has none)."""
    trees = tree_params(setting[1])
    params = _params(setting[2])
    rest = canonical_json({k: v for k, v in params.items() if k not in trees.counts})
    return (setting[0], setting[1], rest), trees.tree_count(params)


def setting_of(cell: Cell) -> tuple[str, str, str]:
    """What a cell runs, as :attr:`CellTime.setting`."""
    return (cell.dataset.key, cell.algorithm or f"procedure:{cell.procedure}",
            canonical_json(cell.params))


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
