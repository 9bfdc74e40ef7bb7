"""Grid expansion: a spec at a scale -> the list of result cells.

A cell is what determines its numbers (dataset and version, CV scheme, rows kept, fold,
repeat, algorithm and parameters, epsilon, run seed) and where it is shown (experiment,
scale, label): its seeds and cache identity derive from the first only (:class:`Cell`).
The run seed is part of what a cell is: ``--seed 1`` computes (and caches) cells of its
own instead of reading those of ``--seed 0``. Non-private algorithms (and procedures that
do not use epsilon) run once per fold with ``epsilon = inf`` instead of once per epsilon.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import json.encoder
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dpexp.datasets.registry import get_dataset_info, load_registry
from dpexp.errors import DpexpError
from dpexp.experiments.harness_params import DP_DOMAIN_SHARE, pays_on
from dpexp.experiments.procedures import get_procedure, procedure_flags
from dpexp.experiments.spec import (
    AlgorithmRef,
    CVScheme,
    DatasetRef,
    ExperimentSpec,
    registry_name,
)
from dpexp.registry import get_algorithm

INF = float("inf")


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces) used in keys and the params column."""
    return _CANONICAL.encode(obj)


def _default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


#: The encoder of :func:`canonical_json`, made once: ``json.dumps`` with these arguments
#: builds the same encoder on every call (the same text; a sixth of the time of the
#: 150,000 keys ``dpexp list`` makes).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=_default)


#: A string as :func:`canonical_json` writes it (quoted, escaped, ASCII only).
_json_string = json.encoder.encode_basestring_ascii


def view_key_parts(*, experiment: Any, scale: Any, dataset: Any, algorithm: Any, label: Any,
                   params_json: str, epsilon: Any, seed: Any, data: Any
                   ) -> tuple[str, str, str] | None:
    """``(head, middle, tail)`` of the row key of :func:`view_key_text` around its fold and
    repeat -- ``f"{head}{fold}{middle}{repeat}{tail}"`` for integer ``fold`` and ``repeat``
    -- when every other value is a plain string (``seed`` an integer); else None. The
    keys are in sorted order, as ``canonical_json``'s ``sort_keys`` writes them; a grid
    point's cells share all but their fold and repeat (:func:`expand` makes the parts once
    for them)."""
    if not (type(experiment) is str and type(scale) is str and type(dataset) is str
            and type(algorithm) is str and type(label) is str and type(epsilon) is str
            and type(seed) is int and type(data) is str):
        return None
    head = (f'{{"algorithm":{_json_string(algorithm)},'
            + (f'"data":{_json_string(data)},' if data else "")
            + f'"dataset":{_json_string(dataset)},"epsilon":{_json_string(epsilon)},'
            f'"experiment":{_json_string(experiment)},"fold":')
    middle = f',"label":{_json_string(label)},"params":{params_json},"repeat":'
    tail = f',"scale":{_json_string(scale)},"seed":{seed}}}'
    return head, middle, tail


def view_key_text(*, experiment: Any, scale: Any, dataset: Any, algorithm: Any, label: Any,
                  params: Any, params_json: str, epsilon: Any, fold: Any, repeat: Any,
                  seed: Any, data: Any) -> str:
    """``canonical_json`` of a row key (:attr:`Cell.view_key`; ``data`` left out when
    empty), written directly into its sorted-key template (:func:`view_key_parts`) when
    every value is a plain string or integer (``params_json``: ``canonical_json(params)``):
    the same text in a fifth of the time, for the 70,000 keys of ``dpexp list`` and the
    200,000 of a report. Any other value (a number read where a label was, a numpy
    integer) takes :func:`canonical_json` itself."""
    parts = (view_key_parts(experiment=experiment, scale=scale, dataset=dataset,
                            algorithm=algorithm, label=label, params_json=params_json,
                            epsilon=epsilon, seed=seed, data=data)
             if type(fold) is int and type(repeat) is int else None)
    if parts is not None:
        head, middle, tail = parts
        return f"{head}{fold}{middle}{repeat}{tail}"
    named = {"experiment": experiment, "scale": scale, "dataset": dataset, "algorithm": algorithm,
             "label": label, "params": params, "epsilon": epsilon, "fold": fold, "repeat": repeat,
             "seed": seed}
    if data:
        named["data"] = data
    return canonical_json(named)


@functools.lru_cache(maxsize=4096)
def canonical_params(text: str) -> tuple[Any, str]:
    """(the params, their canonical JSON) of a table's ``params`` text (few distinct texts a
    table: each parsed once)."""
    params = json.loads(text)
    return params, canonical_json(params)


def format_epsilon(eps: float) -> str:
    return "inf" if math.isinf(eps) else repr(float(eps))


def cv_identity(cv: CVScheme) -> dict[str, Any]:
    """The parts of a CV scheme that decide a fold's rows (not the number of repeats: a
    repeat's split depends on its index only)."""
    if cv.scheme == "kfold":
        return {"scheme": "kfold", "folds": cv.folds, "stratified": cv.stratified}
    if cv.scheme == "holdout":
        return {"scheme": "holdout", "test_size": cv.test_size, "stratified": cv.stratified}
    return {"scheme": cv.scheme}


def content_fields(*, dataset: str, max_rows: int | None, cv: CVScheme, fold: int, repeat: int,
                   algorithm: str, params: dict[str, Any], epsilon: float, seed: int) -> dict[str, Any]:
    """What determines a cell's numbers (its seed key, as canonical JSON)."""
    return {"dataset": dataset, "max_rows": max_rows, "cv": cv_identity(cv), "fold": int(fold),
            "repeat": int(repeat), "algorithm": algorithm, "params": params,
            "epsilon": format_epsilon(float(epsilon)), "seed": int(seed)}


def content_key(content: dict[str, Any], data_version: str) -> str:
    """A cell's identity: what determines its numbers and the data version (results
    computed on other data are never reused)."""
    named = dict(content)
    if data_version:
        named["data"] = data_version
    return canonical_json(named)


class _made_once:  # noqa: N801 - used as a decorator, like property
    """A property computed on first use and kept in the instance's ``__dict__``, which then
    shadows this descriptor (it defines no ``__set__``), so a frozen dataclass can hold it.
    ``functools.cached_property`` does the same behind a lock on Python 3.11: a fifth of
    ``dpexp list``."""

    def __init__(self, func: Callable[[Any], str]) -> None:
        self.func = func
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.func(obj)
        return value

    def give(self, obj: Any, value: str) -> None:
        """Set the value already known for ``obj`` (made once for many cells), as the
        first use would have made it."""
        obj.__dict__[self.name] = value


@dataclass(frozen=True)
class Cell:
    """One fit (or procedure run) of a grid: what determines its numbers, and where it is
    shown (``experiment``, ``scale``, ``label``: the view).

    Content-addressed: its seeds and its identity derive from what determines its numbers
    (dataset and version, CV scheme, rows kept, fold, repeat, algorithm, parameters,
    epsilon, run seed), never from the experiment or label that asked, so two experiments
    asking for one cell share it (one computed with fewer metrics than asked is not
    shared: :func:`dpexp.experiments.cache.adopt_shared`)."""

    experiment: str
    scale: str
    dataset: DatasetRef
    label: str
    algorithm: str | None
    procedure: str | None
    params: dict[str, Any] = field(hash=False)
    epsilon: float
    fold: int
    repeat: int
    n_folds: int
    seed: int = 0
    #: Fingerprint of the dataset's registry entry (:attr:`DatasetInfo.data_version`).
    data_version: str = ""
    #: The CV scheme that splits the dataset into this cell's fold.
    cv: CVScheme = field(kw_only=True)
    #: The rows a smoke run subsamples the dataset to (None: every row).
    max_rows: int | None = field(kw_only=True)
    #: The metrics the spec asks (for the dataset's task), sorted: not part of the key.
    metrics: tuple[str, ...] = field(kw_only=True)

    # The keys below are made once a cell (:class:`_made_once`; no field changes after a
    # cell is made, its params dict included): counting and reporting a campaign asks each
    # of 60,000 cells for its key several times.

    def _content(self) -> dict[str, Any]:
        return content_fields(
            dataset=self.dataset.key, max_rows=self.max_rows, cv=self.cv, fold=self.fold,
            repeat=self.repeat, algorithm=self.algorithm or f"procedure:{self.procedure}",
            params=self.params, epsilon=self.epsilon, seed=self.seed)

    @_made_once
    def seed_key(self) -> str:
        """What the cell's random streams derive from: what determines its numbers, but the
        data version (a cache entry of unchanged data keeps its numbers when a fingerprint
        is added or recomputed)."""
        return canonical_json(self._content())

    @_made_once
    def key(self) -> str:
        """The cell's identity in the cache (:func:`content_key`)."""
        return content_key(self._content(), self.data_version)

    @_made_once
    def digest(self) -> str:
        return hashlib.sha256(self.key.encode()).hexdigest()[:24]

    @_made_once
    def view_key(self) -> str:
        """Where the cell's rows appear (a results table's row key,
        :func:`dpexp.experiments.committed.row_key`): experiment, scale, label and the cell
        columns of the results schema, plus the data version."""
        return view_key_text(
            experiment=self.experiment, scale=self.scale, dataset=self.dataset.key,
            algorithm=self.algorithm or f"procedure:{self.procedure}", label=self.label,
            params=self.params, params_json=self.params_json,
            epsilon=format_epsilon(self.epsilon), fold=self.fold, repeat=self.repeat,
            seed=self.seed, data=self.data_version)

    @_made_once
    def params_json(self) -> str:
        """``canonical_json(self.params)`` (:func:`expand` gives the one text of a grid
        point to each of its cells)."""
        return canonical_json(self.params)

    @_made_once
    def view_digest(self) -> str:
        return hashlib.sha256(self.view_key.encode()).hexdigest()[:24]

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment, "scale": self.scale, "dataset": self.dataset.key,
            "dataset_name": self.dataset.name, "dataset_params": self.dataset.params,
            "dataset_label": self.dataset.display, "label": self.label,
            "algorithm": self.algorithm, "procedure": self.procedure, "params": self.params,
            "epsilon": format_epsilon(self.epsilon), "fold": self.fold, "repeat": self.repeat,
            "n_folds": self.n_folds, "seed": self.seed, "data_version": self.data_version,
        }


def grid_points(algo: AlgorithmRef) -> list[dict[str, Any]]:
    """Every params dict of an algorithm entry: its params times the cartesian grid."""
    if not algo.grid:
        return [dict(algo.params)]
    names = sorted(algo.grid)
    return [
        {**algo.params, **dict(zip(names, combo, strict=True))}
        for combo in itertools.product(*(algo.grid[n] for n in names))
    ]


#: A parameter value given per task: ``{classification: 10, regression: 50}``.
TASKS = ("classification", "regression")


def is_per_task(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= set(TASKS)


def for_task(params: dict[str, Any], task: str) -> dict[str, Any]:
    """``params`` with every per-task value resolved for ``task`` (the cell's params, so
    its key names the value it ran with)."""
    return {k: v[task] if is_per_task(v) else v for k, v in params.items()}


def dataset_task(dataset: Any) -> str | None:
    """The task of a dataset: a name, a key (``name[params]``) or a cell's dataset record
    (``{"name": ...}``); None if the registry does not know it."""
    try:
        return get_dataset_info(registry_name(dataset)).task
    except Exception:  # noqa: BLE001 - an unknown dataset has no task to resolve against
        return None


def supports(algo: AlgorithmRef, task: str | None) -> bool:
    """Whether a series runs on a dataset of ``task``: a registered algorithm supports the
    tasks its manifest maps to an estimator class (``AlgorithmInfo.targets``); a procedure,
    or a dataset of unknown task, is not filtered here."""
    return algo.name is None or task is None or task in get_algorithm(algo.name).targets


def _registry_entry(name: str):
    return load_registry().get(name)


def is_twin_skipped(algo: AlgorithmRef, dataset: str) -> bool:
    """Whether ``algo`` is a ``--dp-domains`` twin (:attr:`AlgorithmRef.dp_domain_share`)
    and ``dataset`` declares every domain: there the twin would be the original series."""
    return twin_skipped(algo, pays_on(_registry_entry(dataset)))


def twin_skipped(algo: AlgorithmRef, pays: bool) -> bool:
    """:func:`is_twin_skipped` on a dataset that ``pays`` (:func:`pays_on_dataset`) or not."""
    return algo.dp_domain_share is not None and not pays


def runs_on(algo: AlgorithmRef, task: str | None, pays: bool) -> bool:
    """Whether the grid has cells of series ``algo`` on a dataset of ``task`` that
    ``pays`` for a domain or not (:func:`pays_on_dataset`): not for a classification-only
    method on regression data, nor for a ``--dp-domains`` twin where nothing is paid."""
    return supports(algo, task) and not twin_skipped(algo, pays)


def series_share(spec: ExperimentSpec, algo: AlgorithmRef) -> float | None:
    """The ``dp_domain_share`` series ``algo`` asks for: the twin's share or the spec's
    ``dp_domains``, for a registered private algorithm only; else None."""
    share = algo.dp_domain_share if algo.dp_domain_share is not None else spec.dp_domains
    if share is None or algo.name is None or not get_algorithm(algo.name).private:
        return None
    return share


def pays_on_dataset(dataset: str) -> bool:
    """Whether the registry entry of ``dataset`` (a name or a key ``name[params]``) leaves
    a domain its task needs undeclared (a cell with a share pays for it there)."""
    return pays_on(_registry_entry(registry_name(dataset)))


def unsupported_notes(spec: ExperimentSpec) -> list[str]:
    """One line per series of ``spec`` that the grid skips on some datasets because its
    algorithm does not support their task, e.g. ``dp_stump: skipped 4 regression datasets
    (abalone, ...): it supports classification only``, or because it is a ``--dp-domains``
    twin and the datasets declare every domain."""
    tasks = {d.key: dataset_task(d.name) for d in spec.datasets}
    notes = []
    for algo in spec.algorithms:
        declared = [d.key for d in spec.datasets
                    if supports(algo, tasks[d.key]) and is_twin_skipped(algo, d.name)]
        if declared:
            names = ", ".join(declared[:3]) + (", ..." if len(declared) > 3 else "")
            noun = "dataset" if len(declared) == 1 else "datasets"
            they = "it declares" if len(declared) == 1 else "they declare"
            notes.append(f"{algo.label}: skipped {len(declared)} {noun} ({names}): {they} "
                         "every domain, so this twin would be the original series")
        skipped = [d.key for d in spec.datasets if not supports(algo, tasks[d.key])]
        if not skipped:
            continue
        kinds = sorted({str(tasks[k]) for k in skipped})
        names = ", ".join(skipped[:3]) + (", ..." if len(skipped) > 3 else "")
        noun = "dataset" if len(skipped) == 1 else "datasets"
        handles = " and ".join(get_algorithm(str(algo.name)).targets) or "no task"
        who = algo.label if algo.label == algo.name else f"{algo.label} ({algo.name})"
        notes.append(f"{who}: skipped {len(skipped)} {'/'.join(kinds)} {noun} ({names}): "
                     f"it supports {handles} only")
    return notes


def uses_epsilon(algo: AlgorithmRef) -> bool:
    if algo.name is not None:

        return get_algorithm(algo.name).private

    return procedure_flags(get_procedure(algo.procedure)).uses_epsilon


def dataset_version(name: str) -> str:
    """The registry fingerprint of dataset ``name`` ("" for a name the registry lacks:
    such a spec fails validation before any cell runs)."""

    info = load_registry().get(name)
    return info.data_version if info is not None else ""


def other_data_version(dataset: Any, data_version: Any) -> bool:
    """Whether a result of ``dataset`` (a name, key or cell record) computed on
    ``data_version`` is of another version of the data than the registry's today: such a
    cell is not one of the current grid (its key differs), so it must neither be averaged
    with the current cells of the same setting nor kept in a rewritten table. A dataset the
    registry does not know has no current version to compare against (never "other")."""
    current = dataset_version(registry_name(dataset))
    return bool(current) and str(data_version or "") != current


def n_folds_of(spec: ExperimentSpec) -> int:
    """Folds a repeat of ``spec``'s CV scheme has (1 for a holdout)."""
    return spec.cv.folds if spec.cv.scheme == "kfold" else 1


#: A grid larger than this asks for ``--yes`` before anything is expanded or run.
LARGE_GRID = 100_000


def count_cells(spec: ExperimentSpec) -> int:
    """The number of cells :func:`expand` gives for ``spec`` (at its scale), counted from
    the spec without making them (a 10^7-cell grid is refused before it fills memory)."""
    n_folds = n_folds_of(spec)
    per_series = {}  # cells per (fold, repeat) of each series on a dataset it runs on
    for i, algo in enumerate(spec.algorithms):
        points = math.prod(len(values) for values in algo.grid.values()) if algo.grid else 1
        per_series[i] = points * (len(spec.epsilons) if uses_epsilon(algo) else 1)
    tasks = {d.name: dataset_task(d.name) for d in spec.datasets}
    pays = {d.name: pays_on_dataset(d.name) for d in spec.datasets}
    per_dataset = sum(per_series[i] for d in spec.datasets for i, algo in enumerate(spec.algorithms)
                      if runs_on(algo, tasks[d.name], pays[d.name]))
    return per_dataset * spec.cv.repeats * n_folds


def check_grid_size(spec: ExperimentSpec, yes: bool) -> int:
    """The grid's cell count; a grid above :data:`LARGE_GRID` is an error unless ``yes``, and
    so is a grid left empty because no series supports the datasets' tasks."""
    n = count_cells(spec)
    notes = unsupported_notes(spec)
    if n == 0 and notes:
        raise DpexpError(f"{spec.id}: no cell left to compute: {'; '.join(notes)}.")
    if n > LARGE_GRID and not yes:
        raise DpexpError(
            f"{spec.id} has {n:,} cells at this scale ({len(spec.datasets)} dataset(s) x "
            f"{len(spec.algorithms)} series x their parameter grids and epsilons x "
            f"{spec.cv.repeats} repeat(s) x folds), more than {LARGE_GRID:,}: check the spec "
            "(`dpexp plan` says how long it takes) and pass --yes to go ahead.")
    return n


@dataclass(frozen=True)
class GridPoint:
    """One setting of a grid: a series' parameters at one epsilon on one dataset. Its cells
    are the folds x repeats of the spec's CV scheme (:func:`expand`); counting a grid
    (``dpexp list``) needs only their row-key digests (:meth:`view_digests`), not the
    cells."""

    experiment: str
    scale: str
    dataset: DatasetRef
    algo: AlgorithmRef
    params: dict[str, Any] = field(hash=False)
    #: ``canonical_json(params)``: the one text of the point's cells
    params_json: str
    epsilon: float
    seed: int
    data_version: str
    #: the metrics the spec asks for the dataset's task, sorted
    metrics: tuple[str, ...]
    #: the row key around fold and repeat (:func:`view_key_parts`; None: no template)
    view_parts: tuple[str, str, str] | None

    def view_key(self, fold: int, repeat: int) -> str:
        """:attr:`Cell.view_key` of the point's cell at ``fold`` and ``repeat``."""
        if self.view_parts is not None:
            head, middle, tail = self.view_parts
            return f"{head}{fold}{middle}{repeat}{tail}"
        return view_key_text(
            experiment=self.experiment, scale=self.scale, dataset=self.dataset.key,
            algorithm=self.algo.name or f"procedure:{self.algo.procedure}",
            label=self.algo.label, params=self.params, params_json=self.params_json,
            epsilon=format_epsilon(self.epsilon), fold=fold, repeat=repeat, seed=self.seed,
            data=self.data_version)

    def view_digests(self, repeats: int, n_folds: int) -> list[str]:
        """:attr:`Cell.view_digest` of the point's cells, in :func:`expand`'s order."""
        sha = hashlib.sha256
        return [sha(self.view_key(fold, rep).encode()).hexdigest()[:24]
                for rep in range(repeats) for fold in range(n_folds)]


def expand_points(spec: ExperimentSpec, scale: str, seed: int = 0) -> list[GridPoint]:
    """The grid points of ``spec`` (resolved at ``scale``) under the run seed ``seed``, in
    :func:`expand`'s order; a series is left out on the datasets whose task its algorithm
    does not support (:func:`unsupported_notes` says which)."""
    points = []
    registry = load_registry()  # each dataset's entry read once
    shares = [series_share(spec, algo) for algo in spec.algorithms]
    for ds in spec.datasets:
        entry = registry.get(ds.name)
        version = entry.data_version if entry is not None else ""
        task = entry.task if entry is not None else None
        pays = pays_on(entry)
        metrics = tuple(sorted(spec.metrics_for(task))) if task else ()
        for algo, series in zip(spec.algorithms, shares, strict=True):
            if not runs_on(algo, task, pays):
                continue
            eps_list = spec.epsilons if uses_epsilon(algo) else [INF]
            share = series if pays else None  # a share is paid where a domain is undeclared
            for params in grid_points(algo):
                if any(is_per_task(v) for v in params.values()):
                    params = for_task(params, task)
                if share is not None:  # a harness parameter: in the key, not the estimator's
                    params = {**params, DP_DOMAIN_SHARE: share}
                params_json = canonical_json(params)
                for eps in eps_list:
                    parts = view_key_parts(
                        experiment=spec.cells_id, scale=scale, dataset=ds.key,
                        algorithm=algo.name or f"procedure:{algo.procedure}", label=algo.label,
                        params_json=params_json, epsilon=format_epsilon(eps), seed=seed,
                        data=version)
                    points.append(GridPoint(
                        experiment=spec.cells_id, scale=scale, dataset=ds, algo=algo,
                        params=params, params_json=params_json, epsilon=eps, seed=seed,
                        data_version=version, metrics=metrics, view_parts=parts))
    return points


def expand(spec: ExperimentSpec, scale: str, seed: int = 0) -> list[Cell]:
    """All cells of ``spec`` (already resolved at ``scale``) under the run seed ``seed``:
    each grid point's (:func:`expand_points`) folds within repeats.

    A spec with ``cells_from`` gets the cells of the spec it names (their experiment id, so
    their keys and numbers), restricted to its own grid."""
    n_folds = n_folds_of(spec)
    max_rows = spec.max_rows(scale)
    cells = []
    for point in expand_points(spec, scale, seed):
        algo = point.algo
        for rep in range(spec.cv.repeats):
            for fold in range(n_folds):
                cell = Cell(
                    experiment=point.experiment, scale=scale, dataset=point.dataset,
                    label=algo.label, algorithm=algo.name, procedure=algo.procedure,
                    params=point.params, epsilon=point.epsilon, fold=fold, repeat=rep,
                    n_folds=n_folds, seed=seed, data_version=point.data_version, cv=spec.cv,
                    max_rows=max_rows, metrics=point.metrics,
                )
                # the texts made once for the point's cells
                Cell.params_json.give(cell, point.params_json)
                if point.view_parts is not None:
                    Cell.view_key.give(cell, point.view_key(fold, rep))
                cells.append(cell)
    return cells
