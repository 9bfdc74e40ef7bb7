"""Everything cached for an experiment at a scale, whatever command computed it.

``dpexp run`` with overrides (``--dataset``, ``--epsilons``, ``--seed``, ...) caches cells
that are not in the spec's own grid. :func:`cached_results` reads *every* cell file of
``results/cache/EXP/SCALE/`` (all seeds, every override), so ``dpexp results``,
``render``, ``report`` and ``list`` agree on what exists, and narrows it with the same
filters as ``dpexp run``. ``missing`` lists the cells of the spec's own grid (restricted by
the filters) that are not cached, for every seed concerned.

The frame has the ``RESULT_COLUMNS`` and then one ``p_<name>`` column per algorithm
parameter occurring in its rows' ``params`` (:func:`with_param_columns`), derived here at
collection time, so cells cached before the columns existed get them too (cache files
are unchanged). Readers (``dpexp.render``) use those columns; ``params`` stays the cell's
exact identity (cell keys are re-created from it).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpexp.errors import CorruptCellWarning
from dpexp.experiments import cache
from dpexp.experiments.cells import (
    TASKS,
    Cell,
    canonical_json,
    dataset_task,
    expand,
    for_task,
    grid_points,
    is_per_task,
    other_data_version,
    pays_on_dataset,
    series_share,
)
from dpexp.experiments.committed import SharedReads, committed_payloads
from dpexp.experiments.environment import git_revision
from dpexp.experiments.harness_params import DP_DOMAIN_SHARE
from dpexp.experiments.noise import with_noise
from dpexp.experiments.reconcile import reconcile, warn_conflicts
from dpexp.experiments.schema import (
    CELL_COLUMNS,
    PARAM_PREFIX,
    RESULT_COLUMNS,
    param_column,
)
from dpexp.experiments.spec import ExperimentSpec, registry_name, select
from dpexp.experiments.table_rows import CellRows, rows_frame

__all__ = ["CELL_COLUMNS", "RESULT_COLUMNS", "CachedResults", "ResultFilter", "cached_results",
           "payload_rows", "read_cells", "with_param_columns"]


@dataclass(frozen=True)
class ResultFilter:
    """The selection options of ``dpexp run`` applied to cached results (None: all).

    Datasets match a dataset name or its key with parameters (``synthF[n_samples=3000]``);
    algorithms match a spec label or a registered name; epsilons keep the non-private
    cells (epsilon = inf) as ``dpexp run --epsilons`` does.
    """

    datasets: tuple[str, ...] | None = None
    algorithms: tuple[str, ...] | None = None
    epsilons: tuple[float, ...] | None = None
    seeds: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("datasets", "algorithms", "epsilons", "seeds"):
            value = getattr(self, name)
            if value is not None and len(value) == 0:
                raise ValueError(f"ResultFilter.{name} must be None or non-empty, got ().")
        for s in self.seeds or ():
            if int(s) < 0:
                raise ValueError(f"ResultFilter.seeds must be >= 0, got {s}.")

    @property
    def given(self) -> bool:
        """Whether any filter is set."""
        return any(v is not None for v in (self.datasets, self.algorithms, self.epsilons, self.seeds))

    def keeps(self, cell: dict[str, Any]) -> bool:
        """Whether a cached cell (its ``cell`` record) passes the filters."""
        if self.datasets is not None and not (
            {cell.get("dataset"), cell.get("dataset_name")} & set(self.datasets)
        ):
            return False
        if self.algorithms is not None:
            names = {cell.get("label"), cell.get("algorithm"), cell.get("procedure")}
            if not names & set(self.algorithms):
                return False
        if self.epsilons is not None:
            eps = float(cell.get("epsilon", "nan"))
            if not math.isinf(eps) and not any(math.isclose(eps, e, rel_tol=1e-9) for e in self.epsilons):
                return False
        return self.seeds is None or int(cell.get("seed", -1)) in self.seeds


@dataclass
class CachedResults:
    """Cached rows (``RESULT_COLUMNS`` then the sorted ``p_<name>`` parameter columns), how
    many cells they come from, what is missing."""

    frame: pd.DataFrame
    n_cells: int
    missing: list[Cell]
    seeds: tuple[int, ...] = ()
    cells: list[dict[str, Any]] = field(default_factory=list, repr=False)
    #: every cell of the (filtered) grid for ``seeds``, ``missing`` among them: a caller
    #: counting the grid reuses these cells (and their keys) instead of expanding it again
    grid: list[Cell] = field(default_factory=list, repr=False)

    @property
    def n_expected(self) -> int:
        """Cached cells plus the spec's grid cells still missing."""
        return self.n_cells + len(self.missing)


def read_cells(results_dir: Path, experiment: str, scale: str) -> list[dict[str, Any]]:
    """Every finished cached payload (``key``, ``cell``, ``rows``) of an experiment and scale.

    A file that is not a finished cell (unreadable, edited, rows missing:
    :func:`dpexp.experiments.cache.cell_problem`) is skipped with a
    :class:`~dpexp.errors.CorruptCellWarning` naming it; ``dpexp run`` moves it aside and
    recomputes it.
    """
    out, bad = [], []
    for path in cache.cell_files(results_dir, experiment, scale):
        data, why = cache.load_cell_file(path)
        if data is not None:
            out.append(data)
        elif why:
            bad.append((path, why))
    if bad:  # one line, however many (a cache written by an older dpexp has no checksums)
        path, why = bad[0]
        more = f" (and {len(bad) - 1} more of {experiment}, {scale})" if len(bad) > 1 else ""
        warnings.warn(CorruptCellWarning(f"cached cell {path}: {why}{more}; skipped "
                                         "(`dpexp run` recomputes it)"), stacklevel=2)
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def payload_rows(payload: dict[str, Any]) -> Sequence[dict[str, Any]]:
    """The rows of a cached payload, each with the cell's ``wall_seconds`` and ``noise``.

    Cells cached before the column existed have the wall time only at the payload's top
    level; it is copied onto their rows here (the cache file is unchanged). Rows without
    either (committed tables written before the column, peers' cells) keep none: NaN. A
    committed cell's rows are returned as they are (:class:`CellRows`: its noise is filled
    when its table is read, and its wall time is on its rows or nowhere).
    """
    if isinstance(payload["rows"], CellRows) and _missing(payload.get("wall_seconds")):
        return payload["rows"]
    rows = with_noise(payload["rows"])  # cells cached before the noise column: derived
    wall = payload.get("wall_seconds")
    if _missing(wall) or not any(_missing(r.get("wall_seconds")) for r in rows):
        return rows
    return [{**r, "wall_seconds": wall} if _missing(r.get("wall_seconds")) else r for r in rows]


def _parsed_params(text: Any) -> dict[str, Any]:
    """A row's ``params`` (canonical JSON of a mapping) as a dict; {} if it is not one."""
    if not isinstance(text, str):
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def with_param_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with one ``p_<name>`` column per parameter name occurring in its ``params``
    column, after the other columns and sorted by name (any ``p_`` columns it had are
    derived again).

    Values are the JSON's, as Python objects (an int stays an int: ``3``, not ``3.0``), in
    object columns; a row whose params lack the name has None. Each distinct ``params``
    string is parsed once.
    """
    base = frame.drop(columns=[c for c in frame.columns if str(c).startswith(PARAM_PREFIX)])
    if "params" not in base or base.empty:
        return base
    parsed = {text: _parsed_params(text) for text in base["params"].unique()}
    names = sorted({name for params in parsed.values() for name in params})
    if not names:
        return base
    # each distinct text's values taken to its rows by code (a Python loop over the
    # distinct texts, not over the rows); a missing text (code -1) takes the last slot
    codes, texts = pd.factorize(base["params"], use_na_sentinel=True)
    cols = {}
    for n in names:
        values = np.empty(len(texts) + 1, dtype=object)  # filled one by one: a list stays one value
        for i, text in enumerate(texts):
            values[i] = parsed.get(text, {}).get(n)
        values[-1] = None
        cols[param_column(n)] = pd.Series(values[codes], index=base.index, dtype=object)
    return pd.concat([base, pd.DataFrame(cols, index=base.index)], axis=1)


def cached_keys(spec: ExperimentSpec, scale: str, results_dir: Path) -> set[str]:
    """Keys of every finished cell of ``spec.id`` at ``scale``: the cache's and the
    committed table's (what :func:`cached_results` reads)."""
    spec = spec.at_scale(scale)
    keys = {p["key"] for p in _own_cells(spec, scale, results_dir) if "key" in p}
    return keys | {p["key"] for p in committed_payloads(spec, scale, results_dir)}


def _own_cells(spec: ExperimentSpec, scale: str, results_dir: Path) -> list[dict]:
    """The cache's cell payloads of ``spec`` (at ``scale``): every cell file of its
    experiment, or, for a spec showing another's cells (``cells_from``), the files of
    that experiment that belong to this spec's grid (any seed)."""
    payloads = read_cells(results_dir, spec.cells_id, scale)
    if not spec.cells_from:
        return payloads
    seeds = sorted({int(p["cell"].get("seed", 0)) for p in payloads if "cell" in p})
    grid = {c.key for seed in seeds for c in expand(spec, scale, seed)}
    return [p for p in payloads if p.get("key") in grid]


def _grid(spec: ExperimentSpec, scale: str, filters: ResultFilter, seeds: tuple[int, ...],
          grids: dict[int, list[Cell]]) -> list[Cell]:
    """The cells of ``spec``'s grid (restricted by ``filters``) for ``seeds``; ``grids``
    (seed -> the unrestricted grid, :func:`committed_payloads`) are used when nothing
    restricts it."""
    picked = select(
        spec,
        list(filters.datasets) if filters.datasets else None,
        list(filters.algorithms) if filters.algorithms else None,
        list(filters.epsilons) if filters.epsilons else None,
    )
    if picked is spec:  # no restriction: the grids expanded already serve
        return [c for seed in seeds
                for c in (grids[seed] if seed in grids else expand(spec, scale, seed))]
    return [c for seed in seeds for c in expand(picked, scale, seed)]


#: Prefix of a current point whose cells pay for their domains (``dp_domain_share``).
_PAID_POINT = "paid|"


def current_params(spec: ExperimentSpec) -> dict[str, set[str]]:
    """Label of each series of ``spec`` (already at its scale) -> the canonical JSON of
    every params point of its current grid (``paid|`` + the point with its
    ``dp_domain_share`` for a series that pays for undeclared domains,
    :func:`dpexp.experiments.cells.series_share`)."""
    out: dict[str, set[str]] = {}
    for algo in spec.algorithms:
        share = series_share(spec, algo)
        points = out.setdefault(algo.label, set())
        for p in grid_points(algo):  # a per-task value: "task:params" for each resolution
            per_task = any(is_per_task(v) for v in p.values())
            for prefix, q in ([(f"{t}:", for_task(p, t)) for t in TASKS] if per_task else [("", p)]):
                points.add(prefix + canonical_json(q))
                if share is not None:
                    points.add(_PAID_POINT + prefix + canonical_json({**q, DP_DOMAIN_SHARE: share}))
    return out


def is_stale(label: Any, params_json: Any, current: dict[str, set[str]],
             task: str | None = None, dataset: str | None = None,
             pays: Callable[[str], bool] = pays_on_dataset) -> bool:
    """Whether a cached cell belongs to an earlier version of one of the spec's series: the
    label of a current series with parameters its grid no longer has (the spec's params or
    grid changed since). Other epsilons, datasets or seeds (override runs) are not stale,
    nor are cells under other labels (a peer's column written by ``bench/peers``). Given
    the cell's ``dataset``, a series that pays for undeclared domains keeps only its paid
    cells there (a cell computed on the observed domain before ``dp_domains`` is stale).
    ``pays``: :func:`pays_on_dataset`, or a caller's memo of it (it reads the registry)."""
    if label not in current:
        return False
    points = current[label]
    tasks = (task,) if task else TASKS  # a per-task series: the resolution for this task
    forms = [str(params_json), *(f"{t}:{params_json}" for t in tasks)]
    paid_series = any(p.startswith(_PAID_POINT) for p in points)
    if dataset is None:
        forms += [_PAID_POINT + f for f in forms]
    elif paid_series and pays(str(dataset)):
        forms = [_PAID_POINT + f for f in forms]
    return not any(f in points for f in forms)


def _in_key_order(payloads: list[dict]) -> list[dict]:
    """``payloads`` sorted by key, then by their cell record's canonical JSON; that JSON is
    made only when two payloads share a key (a cell with no key twice): the order is the
    same, without 60,000 JSON texts (issue 43)."""
    keys = [p.get("key", "") for p in payloads]
    if len(set(keys)) == len(keys):
        return [p for _, p in sorted(zip(keys, payloads, strict=True), key=lambda kp: kp[0])]
    return sorted(payloads, key=lambda p: (p.get("key", ""), canonical_json(p["cell"])))


def cached_results(
    spec: ExperimentSpec, scale: str, results_dir: Path, filters: ResultFilter | None = None,
    *, current_only: bool = False, shared: SharedReads | None = None,
) -> CachedResults:
    """All cached rows of ``spec.id`` at ``scale`` that pass ``filters``.

    ``spec`` may be the spec as loaded or already at ``scale`` (``spec.at_scale(scale)``).
    ``missing`` is computed for the seeds of the filter, else for every seed with cached
    cells, else for seed 0 (what ``dpexp run`` uses by default). ``current_only`` leaves out
    cells of an earlier version of a series (:func:`is_stale`): what render, report and the
    committed table use, so a changed spec never mixes old and new numbers under one label.
    ``shared`` reads a committed table that several specs of the caller read once
    (:class:`~dpexp.experiments.committed.SharedReads`).
    """
    spec = spec.at_scale(scale)
    filters = filters or ResultFilter()
    # The committed table's cells count as cached (a fresh clone renders and reports from
    # it alone); a cached cell replaces a committed one only when this code computed it.
    own = _own_cells(spec, scale, results_dir)
    grids: dict[int, list[Cell]] = {}
    merged = reconcile([p for p in own if "key" in p],
                       committed_payloads(spec, scale, results_dir, shared=shared, grids=grids),
                       git_revision)
    warn_conflicts(merged.conflicts, spec.id, scale)
    payloads = merged.payloads + [p for p in own if "key" not in p]
    have = {p["key"] for p in payloads if "key" in p}
    if current_only:
        current = current_params(spec)
        tasks: dict[str, str | None] = {}  # one registry look-up per dataset, not per cell

        def task_of(dataset: Any) -> str | None:
            name = registry_name(dataset)
            if name not in tasks:
                tasks[name] = dataset_task(dataset)
            return tasks[name]

        texts: dict[int, tuple[Any, str]] = {}  # the grid's cells share their params dicts

        def params_json(params: Any) -> str:
            # keyed by the dict's id, the dict kept alive beside its text (no id reused)
            if id(params) not in texts:
                texts[id(params)] = (params, canonical_json(params))
            return texts[id(params)][1]

        versions: dict[tuple[str, str], bool] = {}  # (dataset, version) -> another version?
        paying: dict[str, bool] = {}  # a registry read per dataset, not per cell (issue 43)

        def pays(dataset: str) -> bool:
            if dataset not in paying:
                paying[dataset] = pays_on_dataset(dataset)
            return paying[dataset]


        def other_version(cell: dict) -> bool:
            at = (str(cell.get("dataset")), str(cell.get("data_version") or ""))
            if at not in versions:
                versions[at] = other_data_version(*at)
            return versions[at]

        kept: dict[tuple[Any, ...], bool] = {}  # a verdict per series setting, not per cell

        def current_cell(cell: dict) -> bool:
            text = params_json(cell.get("params") or {})
            at = (cell.get("label"), text, cell.get("dataset"), cell.get("data_version"))
            if at not in kept:
                kept[at] = not is_stale(
                    at[0], text, current, task_of(at[2]), registry_name(at[2]), pays,
                ) and not other_version(cell)
            return kept[at]

        payloads = [p for p in payloads if current_cell(p["cell"])]
    # In key order, whatever the source (cell files, committed table): aggregates and the
    # rendered lists come out the same, to the last bit, from a cache or a fresh clone.
    kept = _in_key_order([p for p in payloads if filters.keeps(p["cell"])])
    # another experiment's cells (cells_from): the metrics this artefact shows
    shown = {m for names in spec.metrics.values() for m in names} if spec.cells_from else None
    frame = with_param_columns(rows_frame([payload_rows(p) for p in kept], RESULT_COLUMNS, shown))
    cached_seeds = sorted({int(p["cell"].get("seed", 0)) for p in payloads})
    seeds = tuple(filters.seeds) if filters.seeds else (tuple(cached_seeds) or (0,))
    grid = _grid(spec, scale, filters, seeds, grids)
    missing = [c for c in grid if c.key not in have]
    return CachedResults(frame=frame, n_cells=len(kept), missing=missing, seeds=seeds, grid=grid,
                         cells=[p["cell"] for p in kept])
