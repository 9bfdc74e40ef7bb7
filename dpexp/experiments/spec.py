"""The experiment spec as typed, frozen data (``experiments/*.yaml``; docs/SPEC_FORMAT.md).

A spec is parsed and validated once (:mod:`dpexp.experiments.spec_parse`); a scale's
overrides and a run's selection make new specs with :func:`dataclasses.replace`, never by
editing or re-parsing the YAML.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dpexp.datasets.registry import all_datasets
from dpexp.errors import SpecError, UnknownNameError, check_epsilon
from dpexp.experiments.harness_params import check_share
from dpexp.registry import accepted_params, all_algorithms

SCALES = ("smoke", "paper")


@dataclass(frozen=True)
class DatasetRef:
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    @property
    def key(self) -> str:
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={self.params[k]}" for k in sorted(self.params))
        return f"{self.name}[{inner}]"

    @property
    def display(self) -> str:
        return self.label or self.key


def registry_name(dataset: Any) -> str:
    """The registry name of a dataset: a name, a key ``name[params]`` (the inverse of
    :attr:`DatasetRef.key`'s suffix) or a cell's dataset record ``{"name": ...}``."""
    name = dataset.get("name") if isinstance(dataset, dict) else dataset
    return str(name).split("[")[0]


@dataclass(frozen=True)
class AlgorithmRef:
    label: str
    name: str | None = None  # registered algorithm
    procedure: str | None = None  # or a registered procedure
    params: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list] = field(default_factory=dict)
    #: A twin series of ``dpexp run --dp-domains``: this share of each cell's epsilon pays
    #: for the dataset's undeclared domains, and the series runs only on such datasets.
    dp_domain_share: float | None = None


@dataclass(frozen=True)
class CVScheme:
    scheme: str = "kfold"
    folds: int = 5
    repeats: int = 1
    stratified: bool = True
    test_size: float = 0.2


@dataclass(frozen=True)
class ScaleOverride:
    """What a scale (``scales.smoke``) changes; None leaves the spec's value."""

    #: The datasets at this scale (a written dataset of the same key keeps its label).
    datasets: tuple[DatasetRef, ...] | None = None
    #: Subsample each dataset to at most this many rows (smoke only).
    max_rows: int | None = None
    epsilons: tuple[float, ...] | None = None
    #: The spec's CV scheme with this scale's keys merged in.
    cv: CVScheme | None = None
    #: Parameters set on every series whose estimator accepts them (dropped from its grid).
    params: dict[str, Any] | None = None
    #: Replacement values of grid keys a series already varies.
    grid: dict[str, list] | None = None
    #: The labels of the series kept at this scale.
    algorithms: tuple[str, ...] | None = None
    #: Dataset name -> parameters merged into that dataset's.
    dataset_params: dict[str, dict[str, Any]] | None = None


@dataclass(frozen=True)
class ExperimentSpec:
    id: str
    path: Path
    paper: str
    artefact: str
    kind: str
    caption: str
    datasets: tuple[DatasetRef, ...]
    algorithms: tuple[AlgorithmRef, ...]
    epsilons: tuple[float, ...]
    cv: CVScheme
    metrics: dict[str, list[str]]
    aliases: tuple[str, ...] = ()
    notes: str = ""
    plot: dict[str, Any] = field(default_factory=dict)
    table: dict[str, Any] = field(default_factory=dict)
    scales: dict[str, ScaleOverride] = field(default_factory=dict)
    paper_values: dict[str, Any] = field(default_factory=dict)
    claims: tuple[Any, ...] = ()
    privacy_caveats: tuple[str, ...] = ()
    significance: dict[str, Any] = field(default_factory=dict)
    #: Another spec whose cells this artefact shows (``cells_from``): a paper that prints
    #: several metrics of one run as several figures is one run here too; every cell of
    #: this grid is a cell of that spec, computed, cached and committed under its id.
    cells_from: str = ""
    #: The datasets as written (before a scale picked some): ``--dataset`` may name any.
    written_datasets: tuple[DatasetRef, ...] = ()
    #: The scale this spec is resolved at ("" as written).
    scale: str = ""
    #: ``dp_domains``: the share of each private cell's epsilon that pays for the domains
    #: its dataset does not declare (:mod:`dpexp.experiments.paid_domains`); None: observed.
    dp_domains: float | None = None

    @property
    def cells_id(self) -> str:
        """The experiment id the cells of this spec are computed and stored under."""
        return self.cells_from or self.id

    def at_scale(self, scale: str) -> ExperimentSpec:
        """The spec with the overrides of ``scale`` applied; itself when already at ``scale``."""
        if scale not in SCALES:
            raise SpecError(f"Unknown scale {scale!r}; use one of {', '.join(SCALES)}.")
        if self.scale:
            if self.scale != scale:
                raise SpecError(f"{self.id} is resolved at scale {self.scale!r}, not {scale!r}.")
            return self
        over = self.scales.get(scale) or ScaleOverride()
        return replace(
            self, scale=scale, datasets=_scaled_datasets(self, over),
            algorithms=tuple(_scaled_algorithm(a, over) for a in self.algorithms
                             if over.algorithms is None or a.label in over.algorithms),
            epsilons=over.epsilons if over.epsilons is not None else self.epsilons,
            cv=over.cv or self.cv,
        )

    def max_rows(self, scale: str) -> int | None:
        over = self.scales.get(scale)
        return over.max_rows if over is not None and scale == "smoke" else None

    def metrics_for(self, task: str) -> list[str]:
        return self.metrics.get(task, [])


def _scaled_datasets(spec: ExperimentSpec, over: ScaleOverride) -> tuple[DatasetRef, ...]:
    written = {d.key: d for d in spec.datasets}
    picked = [written.get(d.key, d) for d in over.datasets] if over.datasets is not None else spec.datasets
    extra = over.dataset_params or {}
    return tuple(replace(d, params={**d.params, **extra[d.name]}) if extra.get(d.name) else d
                 for d in picked)


def _scaled_algorithm(algo: AlgorithmRef, over: ScaleOverride) -> AlgorithmRef:
    params, grid = algo.params, algo.grid
    if over.params is not None:
        # a scale's params apply to the algorithms that have them (e.g.
        # trees_per_ensemble for DPBoost, not for the NP baseline)
        extra = dict(over.params)
        if algo.name:
            known = accepted_params(algo.name)
            extra = {k: v for k, v in extra.items() if k in known}
        params = {**params, **extra}
        grid = {k: v for k, v in grid.items() if k not in extra}
    if over.grid is not None:
        # only grid keys the algorithm already varies are replaced
        grid = {k: over.grid.get(k, v) for k, v in grid.items()}
    return replace(algo, params=params, grid=grid)


def select(
    spec: ExperimentSpec,
    datasets: Sequence[str] | None = None,
    algorithms: Sequence[str] | None = None,
    epsilons: Sequence[float] | None = None,
    dp_domains: float | None = None,
) -> ExperimentSpec:
    """Restrict a (scaled) spec to the requested datasets, algorithms and epsilons; an
    unknown name fails with the closest known ones.

    An algorithm is a series label or a registered name of the spec's; a registered
    algorithm the spec does not have (built in or a plugin's) joins the experiment as a
    series of its own (:func:`joined_series`). ``dp_domains`` (``dpexp run --dp-domains``)
    joins a twin of every private series that pays that share of its epsilon for the
    domains a dataset does not declare (:func:`domain_twin`)."""
    if datasets:
        spec = replace(spec, datasets=tuple(_pick_dataset(spec, name) for name in datasets))
    if algorithms:
        spec = replace(spec, algorithms=_pick_algorithms(spec, algorithms))
    if epsilons:
        spec = replace(spec, epsilons=tuple(check_epsilon(e) for e in epsilons))
    if dp_domains is not None:
        dp_domains = check_share(dp_domains, "--dp-domain-share")
        registered = all_algorithms()
        twins = [domain_twin(a, dp_domains) for a in spec.algorithms
                 if a.name and a.dp_domain_share is None and registered[a.name].private]
        have = {a.label for a in spec.algorithms}
        spec = replace(spec, algorithms=(*spec.algorithms, *(t for t in twins if t.label not in have)))
    return spec


#: The label of a series' ``--dp-domains`` twin.
DP_DOMAINS_LABEL = "{label} (DP domains)"


def domain_twin(algo: AlgorithmRef, share: float) -> AlgorithmRef:
    """The twin of a private series that pays ``share`` of each cell's epsilon for the
    domains its dataset does not declare (``dpexp run --dp-domains``): the same algorithm
    and parameters, labelled ``<label> (DP domains)``. It runs only on datasets that leave
    a domain undeclared (elsewhere it would be the series itself:
    :func:`dpexp.experiments.cells.unsupported_notes` says which it skips); its cells are
    content-addressed like every other, so the original series keep their keys."""
    return replace(algo, label=DP_DOMAINS_LABEL.format(label=algo.label), dp_domain_share=share)


def _pick_dataset(spec: ExperimentSpec, name: str) -> DatasetRef:
    for pool in (spec.datasets, spec.written_datasets):
        found = {d.key: d for d in pool} | {d.name: d for d in pool}
        if name in found:
            return found[name]
    known = all_datasets()
    if name in known:
        return DatasetRef(name)
    raise UnknownNameError("dataset", name, known)


def _pick_algorithms(spec: ExperimentSpec, wanted: Sequence[str]) -> tuple[AlgorithmRef, ...]:
    labels = {a.label: a for a in spec.algorithms}
    names: dict[str, list[AlgorithmRef]] = {}  # a registered name selects every entry running it
    for a in spec.algorithms:
        if a.name:
            names.setdefault(a.name, []).append(a)
    picked: list[AlgorithmRef] = []
    registered: set[str] | None = None  # the registry, read when a name is not the spec's
    for name in wanted:
        if name in labels:
            picked.append(labels[name])
        elif name in names:
            picked.extend(names[name])
        else:
            registered = set(all_algorithms()) if registered is None else registered
            if name not in registered:
                raise UnknownNameError("algorithm", name, {*labels, *names, *registered},
                                       where=f" in {spec.id} or the registry")
            picked.append(joined_series(name))
    return tuple({id(a): a for a in picked}.values())


def joined_series(name: str) -> AlgorithmRef:
    """The series a registered algorithm adds to an experiment that does not list it
    (``dpexp run EXP --algorithms NAME``): labelled by its name, with its manifest's
    default parameters (the runner fills the dataset's public metadata). Its cells are
    content-addressed like every other, so the experiment's own series keep their keys
    and numbers, and another experiment asking for the same cell shares it."""
    return AlgorithmRef(label=name, name=name)


def with_algorithms(spec: ExperimentSpec, names: Sequence[str]) -> ExperimentSpec:
    """``spec`` with a :func:`joined_series` for each registered algorithm of ``names`` it
    does not run yet (by name or label); an unknown name fails with the closest known ones
    (``dpexp leaderboard --add NAME``)."""
    registered = all_algorithms()
    have = {a.name for a in spec.algorithms} | {a.label for a in spec.algorithms}
    added = []
    for name in dict.fromkeys(names):
        if name in have:
            continue
        if name not in registered:
            raise UnknownNameError("algorithm", name, set(registered), where=" in the registry")
        added.append(joined_series(name))
    return replace(spec, algorithms=(*spec.algorithms, *added)) if added else spec
