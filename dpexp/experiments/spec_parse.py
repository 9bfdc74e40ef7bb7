"""Parse a spec file into an :class:`~dpexp.experiments.spec.ExperimentSpec`, once.

Validation errors are :class:`~dpexp.errors.SpecError` naming the file and the key
(docs/SPEC_FORMAT.md); every value is checked here and nowhere else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dpexp.errors import SpecError
from dpexp.experiments.harness_params import DP_DOMAIN_SHARE, check_share
from dpexp.experiments.metrics import METRICS
from dpexp.experiments.spec import (
    SCALES,
    AlgorithmRef,
    CVScheme,
    DatasetRef,
    ExperimentSpec,
    ScaleOverride,
)
from dpexp.experiments.spec_checks import (
    check_claims,
    check_keys,
    check_paper_values,
    epsilon_list,
    spec_error,
)
from dpexp.registry import all_algorithms


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's safe loader where PyYAML was built with it (several times faster), else
    PyYAML's; a key given twice in one mapping is an error (YAML would keep the last)."""


def _unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
            continue  # a merge (<<: *anchor) may be overridden by the mapping's own keys
        if key_node.value in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key_node.value!r} is given twice", key_node.start_mark)
        seen.add(key_node.value)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)

_TOP_KEYS = {
    "id", "aliases", "paper", "artefact", "kind", "caption", "notes", "datasets",
    "algorithms", "epsilons", "cv", "metrics", "plot", "table", "scales", "paper_values",
    "claims", "privacy_caveats", "significance", "cells_from", "dp_domains",
}
_ALGO_KEYS = {"name", "procedure", "label", "params", "grid"}
_DATASET_KEYS = {"name", "params", "label"}
_CV_KEYS = {"scheme", "folds", "repeats", "stratified", "test_size"}
_SCALE_KEYS = {"datasets", "max_rows", "epsilons", "cv", "params", "grid", "algorithms", "dataset_params"}
_PLOT_KEYS = {"x", "y", "panels", "logx", "logy", "steps", "ylabel", "xlabel", "style", "top"}
_TABLE_KEYS = {"rows", "columns", "metric", "format", "aggregate"}
_TASKS = ("classification", "regression")


def load_spec_file(path: Path) -> ExperimentSpec:
    try:
        raw = yaml.load(path.read_text(), Loader=_Loader)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path.name}: not valid YAML: {exc}") from None
    return parse_spec(raw, path)


def parse_spec(raw: Any, path: Path) -> ExperimentSpec:
    if not isinstance(raw, dict):
        raise spec_error(path, "expected a YAML mapping at the top level.")
    check_keys(path, "the spec", raw, _TOP_KEYS)
    for key in ("id", "paper", "artefact", "kind", "caption", "datasets", "algorithms"):
        if key not in raw:
            raise spec_error(path, f"missing required key {key!r}.")
    if raw["id"] != path.stem:
        raise spec_error(path, f"key 'id' is {raw['id']!r} but the file is named {path.stem!r}.")
    if raw["kind"] not in ("figure", "table"):
        raise spec_error(path, f"key 'kind' must be 'figure' or 'table', got {raw['kind']!r}.")
    if not isinstance(raw["datasets"], list) or not raw["datasets"]:
        raise spec_error(path, "key 'datasets' must be a non-empty list.")
    datasets = tuple(_dataset(path, f"datasets[{i}]", d) for i, d in enumerate(raw["datasets"]))
    cv = _cv(path, "cv", raw.get("cv") or {}, CVScheme())
    pv = raw.get("paper_values") or {}
    check_paper_values(path, pv)
    claims = raw.get("claims") or []
    check_claims(path, claims)
    return ExperimentSpec(
        id=raw["id"], path=path, paper=raw["paper"], artefact=str(raw["artefact"]),
        kind=raw["kind"], caption=str(raw["caption"]).strip(), datasets=datasets,
        algorithms=_algorithms(path, raw["algorithms"]),
        epsilons=epsilon_list(path, "epsilons", raw.get("epsilons", [1.0])), cv=cv,
        metrics=_metrics(path, raw.get("metrics")), aliases=_aliases(path, raw.get("aliases")),
        notes=str(raw.get("notes", "")).strip(),
        plot=_plot(path, raw.get("plot")),
        table=_mapping(path, "table", raw.get("table"), _TABLE_KEYS),
        scales=_scales(path, raw.get("scales"), cv), paper_values=pv, claims=tuple(claims),
        privacy_caveats=tuple(raw.get("privacy_caveats") or ()),
        significance=_significance(path, raw.get("significance")),
        cells_from=_cells_from(path, raw), written_datasets=datasets,
        dp_domains=(check_share(raw["dp_domains"], f"{path.name}: key 'dp_domains'")
                    if "dp_domains" in raw else None),
    )


def _dataset(path: Path, where: str, d: Any) -> DatasetRef:
    if isinstance(d, str):
        return DatasetRef(d)
    if isinstance(d, dict) and "name" in d:
        check_keys(path, where, d, _DATASET_KEYS)
        return DatasetRef(d["name"], dict(d.get("params") or {}), d.get("label", ""))
    raise spec_error(path, f"{where} must be a name or a mapping with 'name'.")


def _algorithms(path: Path, raw: Any) -> tuple[AlgorithmRef, ...]:
    if not isinstance(raw, list) or not raw:
        raise spec_error(path, "key 'algorithms' must be a non-empty list.")
    algos = tuple(_algorithm(path, f"algorithms[{i}]", a) for i, a in enumerate(raw))
    labels = [a.label for a in algos]
    if len(set(labels)) != len(labels) and not any(a.grid for a in algos):
        raise spec_error(path, f"algorithm labels must be unique, got {labels}.")
    return algos


def _algorithm(path: Path, where: str, a: Any) -> AlgorithmRef:
    if not isinstance(a, dict):
        raise spec_error(path, f"{where} must be a mapping with 'name' or 'procedure'.")
    check_keys(path, where, a, _ALGO_KEYS)
    if ("name" in a) == ("procedure" in a):
        raise spec_error(path, f"{where} needs exactly one of 'name' or 'procedure'.")
    params = a.get("params") or {}
    grid = a.get("grid") or {}
    if not isinstance(params, dict):
        raise spec_error(path, f"{where}.params must be a mapping.")
    for key, value in params.items():  # per task: {classification: a, regression: b}
        if isinstance(value, dict) and set(value) & set(_TASKS) and set(value) != set(_TASKS):
            raise spec_error(path, f"{where}.params.{key}: a per-task value needs both "
                             f"'classification' and 'regression', got {sorted(value)}.")
    if not isinstance(grid, dict) or any(not isinstance(v, list) or not v for v in grid.values()):
        raise spec_error(path, f"{where}.grid must map parameter names to non-empty lists.")
    _check_counts(path, where, a.get("name"), params, grid)
    _check_harness_params(path, where, a.get("name"), params, grid)
    label = a.get("label") or a.get("name") or a.get("procedure")
    return AlgorithmRef(label=str(label), name=a.get("name"), procedure=a.get("procedure"),
                        params=dict(params), grid=dict(grid))


def _check_counts(path: Path, where: str, name: str | None, params: dict, grid: dict) -> None:
    """The tree counts and depth an algorithm's manifest declares (:class:`TreeParams`) are
    positive integers, in its params and in every grid value ("ten" or -5 fails here, not
    at the first fit)."""
    info = all_algorithms().get(name) if name else None
    if info is None:
        return
    tp = info.tree_params
    for key in (k for k in (tp.trees, tp.per_ensemble, tp.depth) if k):
        # a depth may also be named by a formula of the paper (Fletcher's "half_m")
        ok = (lambda v: _positive_int(v) or isinstance(v, str)) if key == tp.depth else _positive_int
        values = ([params[key]] if key in params else []) + list(grid.get(key, []))
        for v in values:
            per_task = isinstance(v, dict) and set(v) == set(_TASKS)
            bad = [x for x in (v.values() if per_task else [v]) if not ok(x)]
            if bad:
                raise spec_error(path, f"{where}: {key} must be a positive integer, got {bad[0]!r}.")


def _check_harness_params(path: Path, where: str, name: str | None, params: dict, grid: dict) -> None:
    """``dp_domain_share`` (a harness parameter, :mod:`dpexp.experiments.harness_params`) in
    a series' params or grid: a share in (0, 1), for a registered private algorithm only."""
    values = ([params[DP_DOMAIN_SHARE]] if DP_DOMAIN_SHARE in params else []) + list(grid.get(DP_DOMAIN_SHARE, []))
    if not values:
        return
    info = all_algorithms().get(name) if name else None
    if info is None or not info.private:
        raise spec_error(path, f"{where}: {DP_DOMAIN_SHARE} is for registered private algorithms "
                         f"only (a non-private fit has no epsilon to share), not {name or 'a procedure'!r}.")
    for v in values:
        check_share(v, f"{path.name}: {where}: {DP_DOMAIN_SHARE}")


def _positive_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _cv(path: Path, where: str, raw: Any, base: CVScheme) -> CVScheme:
    """``base`` with the keys of ``raw`` (the spec's ``cv``, or a scale's merged into it)."""
    if not isinstance(raw, dict):
        raise spec_error(path, f"key {where!r} must be a mapping.")
    check_keys(path, where, raw, _CV_KEYS)
    cv = CVScheme(**{**base.__dict__, **raw})
    if cv.scheme not in ("kfold", "given", "holdout"):
        raise spec_error(path, f"key '{where}.scheme' must be kfold, given or holdout, got {cv.scheme!r}.")
    if cv.scheme == "kfold" and (not isinstance(cv.folds, int) or cv.folds < 2):
        raise spec_error(path, f"key '{where}.folds' must be an integer >= 2, got {cv.folds!r}.")
    if not isinstance(cv.repeats, int) or cv.repeats < 1:
        raise spec_error(path, f"key '{where}.repeats' must be an integer >= 1, got {cv.repeats!r}.")
    return cv


def _metrics(path: Path, raw: Any) -> dict[str, list[str]]:
    raw = raw or {"classification": ["error"], "regression": ["rmse"]}
    if isinstance(raw, list):
        raw = {"classification": raw, "regression": raw}
    if not isinstance(raw, dict):
        raise spec_error(path, "key 'metrics' must be a list or a mapping task -> list.")
    metrics: dict[str, list[str]] = {}
    for task, names in raw.items():
        if task not in _TASKS:
            raise spec_error(path, f"key 'metrics': unknown task {task!r}.")
        names = [names] if isinstance(names, str) else list(names)
        for m in names:
            if m not in METRICS:
                raise spec_error(path, f"key 'metrics.{task}': unknown metric {m!r} (known: {', '.join(sorted(METRICS))}).")
        metrics[task] = names
    return metrics


def _mapping(path: Path, key: str, raw: Any, allowed: set[str]) -> dict[str, Any]:
    raw = raw or {}
    if not isinstance(raw, dict):
        raise spec_error(path, f"key {key!r} must be a mapping.")
    check_keys(path, key, raw, allowed)
    return raw


#: ``plot.panels``: one panel per dataset, or one panel for all (an x across datasets,
#: ``dataset_param:NAME``).
PANELS = ("dataset", "none")


def _plot(path: Path, raw: Any) -> dict[str, Any]:
    plot = _mapping(path, "plot", raw, _PLOT_KEYS)
    if plot.get("panels", "dataset") not in PANELS:
        raise spec_error(path, f"key 'plot.panels' must be one of {', '.join(PANELS)}, "
                               f"got {plot['panels']!r}.")
    if str(plot.get("x", "")).startswith("dataset_param:") and plot.get("panels", "dataset") == "dataset":
        # an x that is a dataset's parameter takes one value per dataset: a panel each would
        # hold a single point
        raise spec_error(path, f"key 'plot.x' is {plot['x']!r} (one value per dataset): "
                               "set 'plot.panels: none' to draw it across the datasets.")
    return plot


def _scales(path: Path, raw: Any, cv: CVScheme) -> dict[str, ScaleOverride]:
    raw = raw or {}
    if not isinstance(raw, dict):
        raise spec_error(path, "key 'scales' must be a mapping.")
    out = {}
    for s, over in raw.items():
        if s not in SCALES:
            raise spec_error(path, f"key 'scales': unknown scale {s!r} (use {', '.join(SCALES)}).")
        out[s] = _scale(path, s, over or {}, cv)
    return out


def _scale(path: Path, s: str, over: Any, cv: CVScheme) -> ScaleOverride:
    where = f"scales.{s}"
    if not isinstance(over, dict):
        raise spec_error(path, f"key {where!r} must be a mapping.")
    check_keys(path, where, over, _SCALE_KEYS)
    if s == "paper" and "max_rows" in over:
        raise spec_error(path, "key 'scales.paper.max_rows': paper scale never subsamples rows.")
    if "max_rows" in over and (not isinstance(over["max_rows"], int) or over["max_rows"] < 10):
        raise spec_error(path, f"key '{where}.max_rows' must be an integer >= 10.")
    datasets = over.get("datasets")
    if datasets is not None and not isinstance(datasets, list):
        raise spec_error(path, f"key '{where}.datasets' must be a list.")
    return ScaleOverride(
        datasets=(tuple(_dataset(path, f"{where}.datasets[{i}]", d) for i, d in enumerate(datasets))
                  if datasets is not None else None),
        max_rows=over.get("max_rows"),
        epsilons=epsilon_list(path, f"{where}.epsilons", over["epsilons"]) if "epsilons" in over else None,
        cv=_cv(path, f"{where}.cv", over["cv"], cv) if "cv" in over else None,
        params=dict(over["params"]) if "params" in over else None,
        grid=dict(over["grid"]) if "grid" in over else None,
        algorithms=tuple(over["algorithms"]) if "algorithms" in over else None,
        dataset_params=dict(over["dataset_params"]) if "dataset_params" in over else None,
    )


def _significance(path: Path, raw: Any) -> dict[str, Any]:
    sig = raw or {}
    if not isinstance(sig, dict) or (sig and "reference" not in sig):
        raise spec_error(path, "key 'significance' must be a mapping with 'reference' (and optional 'metric').")
    check_keys(path, "significance", sig, {"reference", "metric"})
    return dict(sig)


def _aliases(path: Path, raw: Any) -> tuple[str, ...]:
    aliases = raw or []
    if not isinstance(aliases, list):
        raise spec_error(path, "key 'aliases' must be a list.")
    return tuple(str(a) for a in aliases)


def _cells_from(path: Path, raw: dict[str, Any]) -> str:
    cells_from = raw.get("cells_from") or ""
    if not isinstance(cells_from, str) or cells_from == raw["id"]:
        raise spec_error(path, "key 'cells_from' must name another experiment (its id).")
    return cells_from
