"""Load and validate experiment specs (``experiments/*.yaml``; see docs/SPEC_FORMAT.md).

Validation errors are :class:`~dpexp.errors.SpecError` naming the file and the key.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dpexp.errors import SpecError, UnknownNameError

#: libyaml's safe loader where PyYAML was built with it (several times faster), else PyYAML's.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

SCALES = ("smoke", "paper")
_TOP_KEYS = {
    "id", "aliases", "paper", "artefact", "kind", "caption", "notes", "datasets",
    "algorithms", "epsilons", "cv", "metrics", "plot", "table", "scales", "paper_values",
    "claims", "privacy_caveats", "significance", "cells_from",
}
_ALGO_KEYS = {"name", "procedure", "label", "params", "grid"}
_DATASET_KEYS = {"name", "params", "label"}
_CV_KEYS = {"scheme", "folds", "repeats", "stratified", "test_size"}
_SCALE_KEYS = {"datasets", "max_rows", "epsilons", "cv", "params", "grid", "algorithms", "dataset_params"}
_PLOT_KEYS = {"x", "y", "panels", "logx", "logy", "steps", "ylabel", "xlabel", "style", "top"}
_TABLE_KEYS = {"rows", "columns", "metric", "format", "aggregate"}


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


@dataclass(frozen=True)
class AlgorithmRef:
    label: str
    name: str | None = None  # registered algorithm
    procedure: str | None = None  # or a registered procedure
    params: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list] = field(default_factory=dict)


@dataclass(frozen=True)
class CVScheme:
    scheme: str = "kfold"
    folds: int = 5
    repeats: int = 1
    stratified: bool = True
    test_size: float = 0.2


@dataclass
class ExperimentSpec:
    id: str
    path: Path
    paper: str
    artefact: str
    kind: str
    caption: str
    datasets: list[DatasetRef]
    algorithms: list[AlgorithmRef]
    epsilons: list[float]
    cv: CVScheme
    metrics: dict[str, list[str]]
    aliases: list[str] = field(default_factory=list)
    notes: str = ""
    plot: dict[str, Any] = field(default_factory=dict)
    table: dict[str, Any] = field(default_factory=dict)
    scales: dict[str, dict[str, Any]] = field(default_factory=dict)
    paper_values: dict[str, Any] = field(default_factory=dict)
    claims: list[str] = field(default_factory=list)
    privacy_caveats: list[str] = field(default_factory=list)
    significance: dict[str, Any] = field(default_factory=dict)
    #: Another spec whose cells this artefact shows (``cells_from``): a paper that prints
    #: several metrics of one run as several figures is one run here too; every cell of
    #: this grid is a cell of that spec, computed, cached and committed under its id.
    cells_from: str = ""
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def cells_id(self) -> str:
        """The experiment id the cells of this spec are computed and stored under."""
        return self.cells_from or self.id

    def at_scale(self, scale: str) -> ExperimentSpec:
        """The spec with the overrides of ``scale`` applied (smoke) or as is (paper)."""
        if scale not in SCALES:
            raise SpecError(f"Unknown scale {scale!r}; use one of {', '.join(SCALES)}.")
        over = self.scales.get(scale) or {}
        if not over:
            return self
        raw = dict(self.raw)
        if "datasets" in over:
            wanted = over["datasets"]
            by_key = {self._ds_key(d): d for d in raw["datasets"]}
            picked = []
            for w in wanted:
                k = self._ds_key(w)
                picked.append(by_key.get(k, w))
            raw["datasets"] = picked
        if "epsilons" in over:
            raw["epsilons"] = over["epsilons"]
        if "cv" in over:
            raw["cv"] = {**(raw.get("cv") or {}), **over["cv"]}
        if "algorithms" in over:
            keep = set(over["algorithms"])
            raw["algorithms"] = [
                a for a in raw["algorithms"] if (a.get("label") or a.get("name") or a.get("procedure")) in keep
            ]
        if "params" in over or "grid" in over or "dataset_params" in over:
            algos = []
            for a in raw["algorithms"]:
                a = dict(a)
                if "params" in over:
                    extra = dict(over["params"])
                    if a.get("name"):
                        # a scale's params apply to the algorithms that have them (e.g.
                        # trees_per_ensemble for DPBoost, not for the NP baseline)
                        from dpexp.registry import accepted_params

                        known = accepted_params(a["name"])
                        extra = {k: v for k, v in extra.items() if k in known}
                    a["params"] = {**(a.get("params") or {}), **extra}
                    a["grid"] = {k: v for k, v in (a.get("grid") or {}).items() if k not in extra}
                if "grid" in over:
                    # only grid keys the algorithm already varies are replaced
                    a["grid"] = {k: over["grid"].get(k, v) for k, v in (a.get("grid") or {}).items()}
                algos.append(a)
            raw["algorithms"] = algos
            if "dataset_params" in over:
                dss = []
                for d in raw["datasets"]:
                    d = {"name": d} if isinstance(d, str) else dict(d)
                    extra = over["dataset_params"].get(d["name"])
                    if extra:
                        d["params"] = {**(d.get("params") or {}), **extra}
                    dss.append(d)
                raw["datasets"] = dss
        raw["scales"] = {}
        spec = parse_spec(raw, self.path)
        spec.scales = self.scales
        return spec

    @staticmethod
    def _ds_key(d) -> str:
        if isinstance(d, str):
            return d
        return DatasetRef(d["name"], dict(d.get("params") or {})).key

    def max_rows(self, scale: str) -> int | None:
        return (self.scales.get(scale) or {}).get("max_rows") if scale == "smoke" else None

    def metrics_for(self, task: str) -> list[str]:
        return self.metrics.get(task, [])


def _err(path: Path, msg: str) -> SpecError:
    return SpecError(f"{path.name}: {msg}")


def _check_keys(path: Path, where: str, got: dict, allowed: set[str]) -> None:
    unknown = sorted(set(got) - allowed)
    if unknown:
        import difflib

        hints = []
        for u in unknown:
            close = difflib.get_close_matches(u, allowed, n=1)
            hints.append(f"{u!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise _err(path, f"unknown key(s) in {where}: {', '.join(hints)}.")


#: Keys of the ``paper_values`` mapping and of one of its ``values`` entries (besides
#: ``param:NAME``): selectors pick our row, the rest describe the paper's value and how it
#: is judged (docs/SPEC_FORMAT.md, "Verdicts on printed values").
_PAPER_VALUES_KEYS = {"source", "kind", "tolerance", "tolerance_reason", "values"}
_PAPER_ENTRY_KEYS = {"dataset", "algorithm", "epsilon", "metric", "step", "value", "std", "note",
                     "explained", "kind", "tolerance", "tolerance_reason", "calibration", "same_as",
                     "shown", "post_hoc", "not_judged", "refuted"}
#: Selectors of a paper value (besides ``param:NAME``), also those of ``same_as`` and of a
#: ``shown`` explanation's ``cells``.
_SELECTOR_KEYS = {"dataset", "algorithm", "epsilon", "metric", "step"}

#: What a printed value is, and so which rule judges it (dpexp.render.aggregate.judge_value):
#: facts about the data and deterministic computations are equal at the printed precision
#: or not; a stochastic outcome of a run (a model's performance, or a diagnostic such as a
#: filtered-row count) is judged by an equivalence test within a stated tolerance; a
#: timing is hardware-bound and shown, never judged.
VALUE_KINDS = ("descriptor", "formula", "diagnostic", "performance", "timing")
#: The kinds judged by the equivalence test (they need a tolerance with its reason).
EQUIVALENCE_KINDS = ("diagnostic", "performance")


def _number(path: Path, where: str, v: Any, *, minimum: float | None = None) -> None:
    """``v`` must be a finite number (>= ``minimum`` if given), else a SpecError naming ``where``."""
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    if not ok or (minimum is not None and v < minimum):
        bound = f" >= {minimum:g}" if minimum is not None else ""
        raise _err(path, f"key {where!r} must be a finite number{bound}, got {v!r}.")


def _explained_text(path: Path, where: str, v: Any) -> None:
    """``explained:`` is the evidence for a miss (name the ablation/experiment and its
    numbers): non-empty text, so a bare ``explained: true`` cannot excuse a miss."""
    if not isinstance(v, str) or not v.strip():
        raise _err(path, f"key {where!r} must be non-empty text naming the evidence (the "
                         f"ablation or experiment and its numbers), got {v!r}.")


def _text(path: Path, where: str, v: Any, what: str) -> None:
    """``v`` must be non-empty text (``what`` says what it should say)."""
    if not isinstance(v, str) or not v.strip():
        raise _err(path, f"key {where!r} must be non-empty text ({what}), got {v!r}.")


def _selector(path: Path, where: str, v: Any, extra: frozenset[str] = frozenset()) -> None:
    """A mapping of selectors (dataset, algorithm, epsilon, metric, step, param:NAME)."""
    if not isinstance(v, dict) or not v:
        raise _err(path, f"key {where!r} must be a mapping of selectors "
                         f"({', '.join(sorted(_SELECTOR_KEYS))}, param:NAME).")
    _check_keys(path, where, {k: x for k, x in v.items() if not str(k).startswith("param:")},
                _SELECTOR_KEYS | extra)


def _check_shown(path: Path, where: str, v: Any, *, cells: bool = True) -> None:
    """``shown:`` names the committed experiment (and, for a value, the cells) that land on
    the paper's value: ``{experiment: ID, cells: {selectors}}``."""
    keys = {"experiment", "cells"} if cells else {"experiment"}
    if not isinstance(v, dict):
        raise _err(path, f"key {where!r} must be a mapping with {', '.join(sorted(keys))}.")
    _check_keys(path, where, v, keys)
    for key in sorted(keys):
        if key not in v:
            raise _err(path, f"key {where!r} needs {key!r} (a shown explanation names the "
                             "committed experiment and the cells that land).")
    _text(path, f"{where}.experiment", v["experiment"], "an experiment id")
    if cells:
        _selector(path, f"{where}.cells", v["cells"])


def entry_kind(pv: dict, entry: dict) -> str:
    """The kind of a paper value: its own ``kind``, else the ``paper_values`` default."""
    return str(entry.get("kind") or pv.get("kind") or "")


def _check_entry_rule(path: Path, where: str, pv: dict, v: dict) -> None:
    """The kind, the tolerance and its reason of one entry (docs/SPEC_FORMAT.md)."""
    kind = entry_kind(pv, v)
    if kind not in VALUE_KINDS:
        raise _err(path, f"key {where}.kind (or paper_values.kind) must be one of "
                         f"{', '.join(VALUE_KINDS)}, got {kind or None!r}.")
    if "tolerance" in v:
        _number(path, f"{where}.tolerance", v["tolerance"], minimum=0)
    if "tolerance_reason" in v:
        _text(path, f"{where}.tolerance_reason", v["tolerance_reason"], "why this tolerance")
    own = v.get("tolerance", pv.get("tolerance") if kind in EQUIVALENCE_KINDS else None)
    if kind not in EQUIVALENCE_KINDS and "tolerance" in v:
        # equality at the printed precision leaves nothing to widen
        raise _err(path, f"key {where}.tolerance: a {kind} value is judged equal at the printed "
                         "precision (or, a timing, never); tolerances are for "
                         f"{' and '.join(EQUIVALENCE_KINDS)} values.")
    if kind in EQUIVALENCE_KINDS and own is None and "not_judged" not in v:
        raise _err(path, f"key {where}.tolerance (or paper_values.tolerance) is required: a "
                         f"{kind} value is judged by an equivalence test within it.")
    if "tolerance" in v and not (v.get("tolerance_reason") or pv.get("tolerance_reason")):
        raise _err(path, f"key {where}.tolerance_reason is required with a tolerance.")


def _check_entry_annotations(path: Path, where: str, v: dict) -> None:
    """``explained`` / ``shown`` / ``post_hoc``, ``calibration``, ``same_as``, ``not_judged``."""
    if "explained" in v:
        _explained_text(path, f"{where}.explained", v["explained"])
    for key in ("shown", "post_hoc"):
        if key in v and "explained" not in v:
            raise _err(path, f"key {where}.{key} qualifies an explanation: it needs 'explained'.")
    if "shown" in v:
        _check_shown(path, f"{where}.shown", v["shown"])
    texts = {"post_hoc": "the choice made after seeing the miss",
             "calibration": "what was chosen with this value",
             "not_judged": "why no verdict is possible",
             "refuted": "the arithmetic showing the paper's own numbers exclude this value"}
    for key, what in texts.items():
        if key in v:
            _text(path, f"{where}.{key}", v[key], what)
    if "same_as" in v:
        _selector(path, f"{where}.same_as", v["same_as"], frozenset({"experiment"}))


def _check_paper_values(path: Path, pv: Any) -> None:
    """The printed values: a mapping with ``values`` entries (docs/SPEC_FORMAT.md)."""
    if not isinstance(pv, dict):
        raise _err(path, "key 'paper_values' must be a mapping with 'values'.")
    _check_keys(path, "paper_values", pv, _PAPER_VALUES_KEYS)
    if pv.get("tolerance") is not None:
        _number(path, "paper_values.tolerance", pv["tolerance"], minimum=0)
        if not pv.get("tolerance_reason"):
            raise _err(path, "key 'paper_values.tolerance_reason' is required with a tolerance "
                             "(the printed precision plus the variation the paper reports).")
    if "tolerance_reason" in pv:
        _text(path, "paper_values.tolerance_reason", pv["tolerance_reason"], "why this tolerance")
    if "kind" in pv and pv["kind"] not in VALUE_KINDS:
        raise _err(path, f"key 'paper_values.kind' must be one of {', '.join(VALUE_KINDS)}, "
                         f"got {pv['kind']!r}.")
    values = pv.get("values") or []
    if not isinstance(values, list):
        raise _err(path, "key 'paper_values.values' must be a list of mappings.")
    for i, v in enumerate(values):
        where = f"paper_values.values[{i}]"
        if not isinstance(v, dict) or "value" not in v:
            raise _err(path, f"{where} must be a mapping with a 'value'.")
        _check_keys(path, where, {k: x for k, x in v.items() if not str(k).startswith("param:")},
                    _PAPER_ENTRY_KEYS)
        _number(path, f"{where}.value", v["value"])
        if "std" in v:
            _number(path, f"{where}.std", v["std"], minimum=0)
        _check_entry_rule(path, where, pv, v)
        _check_entry_annotations(path, where, v)
    _check_local_reprints(path, values)


def _same_selector_value(a: Any, b: Any) -> bool:
    """Selector values as written in two specs: numbers by value (1 == 1.0), else text."""
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def selects(selector: dict, entry: dict) -> bool:
    """Whether a ``same_as`` selector names ``entry`` (every selector key equal)."""
    return all(k in entry and _same_selector_value(entry[k], x)
               for k, x in selector.items() if k != "experiment")


def reprint_target(path: Path, where: str, selector: dict, values: list[dict]) -> dict:
    """The one entry of ``values`` that ``selector`` names (an original, not a reprint)."""
    hits = [e for e in values if selects(selector, e)]
    if len(hits) != 1:
        raise _err(path, f"key {where}.same_as must name exactly one printed value, "
                         f"it names {len(hits)}.")
    if "same_as" in hits[0]:
        raise _err(path, f"key {where}.same_as must name the original, not another reprint.")
    return hits[0]


def _check_local_reprints(path: Path, values: list[dict]) -> None:
    """A ``same_as`` within the spec names one original with the same printed value (one
    naming another spec is checked when the catalog loads, :func:`_check_reprints`)."""
    for i, v in enumerate(values):
        link = v.get("same_as")
        if not link or link.get("experiment", path.stem) != path.stem:
            continue
        where = f"paper_values.values[{i}]"
        target = reprint_target(path, where, link, values)
        if target is v or float(target["value"]) != float(v["value"]):
            raise _err(path, f"key {where}.same_as names a value that is not the same number.")


def _check_claims(path: Path, claims: Any) -> None:
    """Claims: text, or mappings checked by dpexp.render.claims (docs/SPEC_FORMAT.md)."""
    from dpexp.render.claims import CLAIM_KEYS

    if not isinstance(claims, list):
        raise _err(path, "key 'claims' must be a list of texts or mappings.")
    for i, c in enumerate(claims):
        if isinstance(c, str):
            continue
        if not isinstance(c, dict):
            raise _err(path, f"claims[{i}] must be text or a mapping.")
        _check_keys(path, f"claims[{i}]", c, CLAIM_KEYS)
        needed = (("series", "metric", "trend", "over") if "trend" in c else
                  ("close", "to", "metric", "within") if "close" in c else
                  ("spread", "metric", "max_std") if "spread" in c else ("better", "than", "metric"))
        for key in needed:
            if key not in c:
                raise _err(path, f"claims[{i}] needs key {key!r}.")
        if c.get("direction", "lower") not in ("lower", "higher"):
            raise _err(path, f"claims[{i}].direction must be 'lower' or 'higher'.")
        for key in ("explained", "note"):
            if key in c:
                _explained_text(path, f"claims[{i}].{key}", c[key])
        for key in ("shown", "post_hoc"):
            if key in c and "explained" not in c:
                raise _err(path, f"key claims[{i}].{key} qualifies an explanation: it needs 'explained'.")
        if "shown" in c:
            _check_shown(path, f"claims[{i}].shown", c["shown"], cells=False)
        if "post_hoc" in c:
            _text(path, f"claims[{i}].post_hoc", c["post_hoc"], "the choice made after seeing the miss")
        for key in ("margin", "within"):
            if key in c:
                _number(path, f"claims[{i}].{key}", c[key], minimum=0)
        for key in ("by", "over"):
            axis = c.get(key, "epsilon")
            if not (axis in ("epsilon", "step") or (isinstance(axis, str) and axis.startswith("param:"))):
                raise _err(path, f"claims[{i}].{key} must be epsilon, step or param:NAME, got {axis!r}.")
        if c.get("at_step", "last") != "last":
            raise _err(path, f"claims[{i}].at_step must be 'last'.")
        if "share" in c:
            _number(path, f"claims[{i}].share", c["share"], minimum=0)
            if float(c["share"]) > 1:
                raise _err(path, f"claims[{i}].share must be at most 1.")


def _epsilon_list(path: Path, where: str, values) -> list[float]:
    if not isinstance(values, list) or not values:
        raise _err(path, f"key {where!r} must be a non-empty list of numbers > 0.")
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise _err(path, f"key {where!r}: {v!r} is not a number.") from None
        if math.isnan(f) or f <= 0:
            raise _err(path, f"key {where!r}: epsilon must be > 0, got {v!r}.")
        out.append(f)
    return out


def parse_spec(raw: Any, path: Path) -> ExperimentSpec:
    if not isinstance(raw, dict):
        raise _err(path, "expected a YAML mapping at the top level.")
    _check_keys(path, "the spec", raw, _TOP_KEYS)
    for key in ("id", "paper", "artefact", "kind", "caption", "datasets", "algorithms"):
        if key not in raw:
            raise _err(path, f"missing required key {key!r}.")
    if raw["id"] != path.stem:
        raise _err(path, f"key 'id' is {raw['id']!r} but the file is named {path.stem!r}.")
    if raw["kind"] not in ("figure", "table"):
        raise _err(path, f"key 'kind' must be 'figure' or 'table', got {raw['kind']!r}.")
    if not isinstance(raw["datasets"], list) or not raw["datasets"]:
        raise _err(path, "key 'datasets' must be a non-empty list.")
    datasets = []
    for i, d in enumerate(raw["datasets"]):
        if isinstance(d, str):
            datasets.append(DatasetRef(d))
        elif isinstance(d, dict) and "name" in d:
            _check_keys(path, f"datasets[{i}]", d, _DATASET_KEYS)
            datasets.append(DatasetRef(d["name"], dict(d.get("params") or {}), d.get("label", "")))
        else:
            raise _err(path, f"datasets[{i}] must be a name or a mapping with 'name'.")
    if not isinstance(raw["algorithms"], list) or not raw["algorithms"]:
        raise _err(path, "key 'algorithms' must be a non-empty list.")
    algos = []
    for i, a in enumerate(raw["algorithms"]):
        if not isinstance(a, dict):
            raise _err(path, f"algorithms[{i}] must be a mapping with 'name' or 'procedure'.")
        _check_keys(path, f"algorithms[{i}]", a, _ALGO_KEYS)
        if ("name" in a) == ("procedure" in a):
            raise _err(path, f"algorithms[{i}] needs exactly one of 'name' or 'procedure'.")
        params = a.get("params") or {}
        grid = a.get("grid") or {}
        if not isinstance(params, dict):
            raise _err(path, f"algorithms[{i}].params must be a mapping.")
        for key, value in params.items():  # per task: {classification: a, regression: b}
            if (isinstance(value, dict) and set(value) & {"classification", "regression"}
                    and set(value) != {"classification", "regression"}):
                raise _err(path, f"algorithms[{i}].params.{key}: a per-task value needs both "
                                 f"'classification' and 'regression', got {sorted(value)}.")
        if not isinstance(grid, dict) or any(not isinstance(v, list) or not v for v in grid.values()):
            raise _err(path, f"algorithms[{i}].grid must map parameter names to non-empty lists.")
        label = a.get("label") or a.get("name") or a.get("procedure")
        algos.append(AlgorithmRef(label=str(label), name=a.get("name"), procedure=a.get("procedure"),
                                  params=dict(params), grid=dict(grid)))
    labels = [a.label for a in algos]
    if len(set(labels)) != len(labels) and not any(a.grid for a in algos):
        raise _err(path, f"algorithm labels must be unique, got {labels}.")
    epsilons = _epsilon_list(path, "epsilons", raw.get("epsilons", [1.0]))
    cv_raw = raw.get("cv") or {}
    if not isinstance(cv_raw, dict):
        raise _err(path, "key 'cv' must be a mapping.")
    _check_keys(path, "cv", cv_raw, _CV_KEYS)
    cv = CVScheme(**{k: cv_raw[k] for k in cv_raw})
    if cv.scheme not in ("kfold", "given", "holdout"):
        raise _err(path, f"key 'cv.scheme' must be kfold, given or holdout, got {cv.scheme!r}.")
    if cv.scheme == "kfold" and (not isinstance(cv.folds, int) or cv.folds < 2):
        raise _err(path, f"key 'cv.folds' must be an integer >= 2, got {cv.folds!r}.")
    if not isinstance(cv.repeats, int) or cv.repeats < 1:
        raise _err(path, f"key 'cv.repeats' must be an integer >= 1, got {cv.repeats!r}.")
    metrics_raw = raw.get("metrics") or {"classification": ["error"], "regression": ["rmse"]}
    if isinstance(metrics_raw, list):
        metrics_raw = {"classification": metrics_raw, "regression": metrics_raw}
    if not isinstance(metrics_raw, dict):
        raise _err(path, "key 'metrics' must be a list or a mapping task -> list.")
    from dpexp.experiments.metrics import METRICS

    metrics: dict[str, list[str]] = {}
    for task, names in metrics_raw.items():
        if task not in ("classification", "regression"):
            raise _err(path, f"key 'metrics': unknown task {task!r}.")
        names = [names] if isinstance(names, str) else list(names)
        for m in names:
            if m not in METRICS:
                raise _err(path, f"key 'metrics.{task}': unknown metric {m!r} (known: {', '.join(sorted(METRICS))}).")
        metrics[task] = names
    plot = raw.get("plot") or {}
    table = raw.get("table") or {}
    if not isinstance(plot, dict):
        raise _err(path, "key 'plot' must be a mapping.")
    if not isinstance(table, dict):
        raise _err(path, "key 'table' must be a mapping.")
    _check_keys(path, "plot", plot, _PLOT_KEYS)
    _check_keys(path, "table", table, _TABLE_KEYS)
    scales = raw.get("scales") or {}
    if not isinstance(scales, dict):
        raise _err(path, "key 'scales' must be a mapping.")
    for s, over in scales.items():
        if s not in SCALES:
            raise _err(path, f"key 'scales': unknown scale {s!r} (use {', '.join(SCALES)}).")
        over = over or {}
        if not isinstance(over, dict):
            raise _err(path, f"key 'scales.{s}' must be a mapping.")
        _check_keys(path, f"scales.{s}", over, _SCALE_KEYS)
        if s == "paper" and "max_rows" in over:
            raise _err(path, "key 'scales.paper.max_rows': paper scale never subsamples rows.")
        if "epsilons" in over:
            _epsilon_list(path, f"scales.{s}.epsilons", over["epsilons"])
        if "max_rows" in over and (not isinstance(over["max_rows"], int) or over["max_rows"] < 10):
            raise _err(path, f"key 'scales.{s}.max_rows' must be an integer >= 10.")
    pv = raw.get("paper_values") or {}
    _check_paper_values(path, pv)
    _check_claims(path, raw.get("claims") or [])
    sig = raw.get("significance") or {}
    if not isinstance(sig, dict) or (sig and "reference" not in sig):
        raise _err(path, "key 'significance' must be a mapping with 'reference' (and optional 'metric').")
    _check_keys(path, "significance", sig, {"reference", "metric"})
    aliases = raw.get("aliases") or []
    if not isinstance(aliases, list):
        raise _err(path, "key 'aliases' must be a list.")
    cells_from = raw.get("cells_from") or ""
    if not isinstance(cells_from, str) or cells_from == raw["id"]:
        raise _err(path, "key 'cells_from' must name another experiment (its id).")
    return ExperimentSpec(
        id=raw["id"], path=path, paper=raw["paper"], artefact=str(raw["artefact"]),
        kind=raw["kind"], caption=str(raw["caption"]).strip(), datasets=datasets,
        algorithms=algos, epsilons=epsilons, cv=cv, metrics=metrics,
        aliases=[str(a) for a in aliases], notes=str(raw.get("notes", "")).strip(), plot=plot,
        table=table, scales={k: (v or {}) for k, v in scales.items()}, paper_values=pv,
        claims=list(raw.get("claims") or []), privacy_caveats=list(raw.get("privacy_caveats") or []),
        significance=dict(sig), cells_from=cells_from, raw=raw,
    )


def load_spec_file(path: Path) -> ExperimentSpec:
    try:
        raw = yaml.load(path.read_text(), Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path.name}: not valid YAML: {exc}") from None
    return parse_spec(raw, path)


@dataclass
class SpecCatalog:
    """The loadable specs, and the files that failed to load (stem -> error).

    A broken file breaks only itself: ``dpexp list`` and every other spec still work, and
    using it (``dpexp run NAME``) reports its error, naming the file.
    """

    specs: dict[str, ExperimentSpec]
    errors: dict[str, SpecError]


def builtin_experiments_dir() -> Path:
    """The shipped specs: ``experiments/`` of the project."""
    from dpexp.paths import project_root

    return project_root() / "experiments"


def user_experiments_dir() -> Path | None:
    """``$DPEXP_EXPERIMENTS_DIR``: specs of your own, added to the built-in ones."""
    env = os.environ.get("DPEXP_EXPERIMENTS_DIR")
    return Path(env).expanduser() if env else None


def _add_spec(catalog: SpecCatalog, spec: ExperimentSpec, taken: dict[str, str]) -> None:
    """Add ``spec`` unless its id or an alias is already used (then record the error)."""
    clash = [n for n in (spec.id, *spec.aliases) if n in taken]
    if clash:
        catalog.errors[spec.path.stem] = SpecError(
            f"{spec.path}: {clash[0]!r} is already used by {taken[clash[0]]}; rename it."
        )
        return
    catalog.specs[spec.id] = spec
    for n in (spec.id, *spec.aliases):
        taken[n] = str(spec.path)


def load_catalog(directory: Path | None = None) -> SpecCatalog:
    """Specs of ``directory``, or the built-in ones plus ``$DPEXP_EXPERIMENTS_DIR``'s."""
    dirs = [directory] if directory else [builtin_experiments_dir(), user_experiments_dir()]
    catalog = SpecCatalog({}, {})
    taken: dict[str, str] = {}
    for d in dirs:
        if d is None:
            continue
        if not d.is_dir():
            catalog.errors[str(d)] = SpecError(f"DPEXP_EXPERIMENTS_DIR={d} is not a directory.")
            continue
        for p in sorted(d.glob("*.yaml")):
            try:
                spec = load_spec_file(p)
            except SpecError as exc:
                catalog.errors[p.stem] = SpecError(f"{p}: {str(exc).removeprefix(p.name + ': ')}")
                continue
            _add_spec(catalog, spec, taken)
    _check_cells_from(catalog)
    _check_reprints(catalog)
    return catalog


def _check_reprints(catalog: SpecCatalog) -> None:
    """Move every spec whose ``same_as`` names another spec's value wrongly (no such spec,
    not exactly one original, another number) to the catalog's errors."""
    for spec in list(catalog.specs.values()):
        for i, v in enumerate(spec.paper_values.get("values") or []):
            link = v.get("same_as")
            if not link or link.get("experiment", spec.id) == spec.id:
                continue
            other = catalog.specs.get(link["experiment"])
            try:
                if other is None:
                    raise _err(spec.path, f"key paper_values.values[{i}].same_as names "
                                          f"experiment {link['experiment']!r}, which does not load.")
                target = reprint_target(spec.path, f"paper_values.values[{i}]", link,
                                        other.paper_values.get("values") or [])
                if float(target["value"]) != float(v["value"]):
                    raise _err(spec.path, f"key paper_values.values[{i}].same_as names a value "
                                          "that is not the same number.")
            except SpecError as exc:
                del catalog.specs[spec.id]
                catalog.errors[spec.path.stem] = SpecError(f"{spec.path}: {str(exc).removeprefix(spec.path.name + ': ')}")
                break


def _check_cells_from(catalog: SpecCatalog) -> None:
    """Move every spec whose ``cells_from`` is not a superset grid to the catalog's errors."""
    from dpexp.experiments.shared_cells import cells_from_problem

    for spec in [s for s in catalog.specs.values() if s.cells_from]:
        problem = cells_from_problem(spec, catalog.specs.get(spec.cells_from))
        if problem:
            del catalog.specs[spec.id]
            catalog.errors[spec.path.stem] = SpecError(f"{spec.path}: key 'cells_from': {problem}")


def cells_source(spec: ExperimentSpec) -> ExperimentSpec:
    """The spec that holds ``spec``'s cells: the one ``cells_from`` names, else ``spec``."""
    if not spec.cells_from:
        return spec
    try:
        return resolve(spec.cells_from)
    except SpecError:  # a spec loaded from a folder of its own: look beside it
        return resolve(spec.cells_from, spec.path.parent)


def all_specs(directory: Path | None = None) -> dict[str, ExperimentSpec]:
    """Every loadable spec by id (see :func:`load_catalog`; broken files are left out)."""
    return load_catalog(directory).specs


def alias_map(specs: dict[str, ExperimentSpec]) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in specs.values():
        for a in s.aliases:
            if a in out or a in specs:
                raise SpecError(f"{s.path.name}: alias {a!r} is already used by {out.get(a, a)!r}.")
            out[a] = s.id
    return out


def _looks_like_path(name: str) -> bool:
    return name.endswith((".yaml", ".yml")) or "/" in name or os.sep in name


def resolve(name: str, directory: Path | None = None) -> ExperimentSpec:
    """The spec named ``name``: an id, an alias, or a path to a spec file.

    Suggests close names if unknown; a broken spec file named ``name`` reports its error.
    """
    if _looks_like_path(name):
        path = Path(name).expanduser()
        if not path.is_file():
            raise SpecError(f"spec file {path} does not exist.")
        return load_spec_file(path)
    catalog = load_catalog(directory)
    specs = catalog.specs
    if name in specs:
        return specs[name]
    aliases = alias_map(specs)
    if name in aliases:
        return specs[aliases[name]]
    if name in catalog.errors:
        raise catalog.errors[name]
    raise UnknownNameError("experiment", name, [*specs, *aliases])
