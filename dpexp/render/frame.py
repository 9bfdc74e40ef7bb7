"""What a results frame says about itself: order, tasks, domains, privacy, replicates.

Every figure, table and report section renders whatever subset of cells is cached, so
nothing here assumes the spec's own grid: datasets, epsilons or seeds outside it (from
``dpexp run --dataset/--epsilons/--seed``) are ordered after the spec's and named by
their key. The statements built here (domain source, not-DP rows, replicates) are put in
captions and headings because a reader must know them to interpret the numbers
(docs/PRIVACY.md: a release is DP only if everything that shapes it is public input or
paid for with budget).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpexp.datasets.registry import get_dataset_info
from dpexp.errors import DpexpError
from dpexp.experiments.schema import param_column
from dpexp.experiments.spec import ExperimentSpec
from dpexp.experiments.spec_parse import load_spec_file
from dpexp.render.markup import SMOKE_LABEL

#: Columns added by the results schema (README "Results schema"); rows cached before the
#: runner recorded them get these values, which claim nothing: privacy unknown, domain
#: source unrecorded, an ordinary metric.
EXTRA_COLUMNS: dict[str, object] = {
    "private": None, "not_dp_reason": "", "domain_source": "", "noise": "",
    "metric_kind": "metric", "data_version": "",
}


def normalise(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy with the schema's extra columns present and typed (see :data:`EXTRA_COLUMNS`)."""
    f = frame.copy()
    for col, default in EXTRA_COLUMNS.items():
        if col not in f:
            f[col] = default
    f["not_dp_reason"] = f["not_dp_reason"].fillna("").astype(str)
    f["domain_source"] = f["domain_source"].fillna("").astype(str)
    f["noise"] = f["noise"].fillna("").astype(str)
    f["data_version"] = f["data_version"].astype(object).fillna("").astype(str)
    f["metric_kind"] = f["metric_kind"].fillna("metric").astype(str)
    f["private"] = _private_column(f["private"])
    f["epsilon"] = f["epsilon"].astype(float)
    return f


def param_values(frame: pd.DataFrame, name: str) -> pd.Series:
    """Algorithm parameter ``name`` of every row: its ``p_<name>`` column (see
    :func:`dpexp.experiments.results.with_param_columns`), None where no row has it.

    The renderer reads parameters only from these columns, never from the ``params`` JSON.
    """
    col = param_column(name)
    if col in frame:
        return frame[col]
    return pd.Series([None] * len(frame), index=frame.index, dtype=object)


def row_param(row: pd.Series | Mapping[str, Any], name: str):
    """Algorithm parameter ``name`` of one row (None where absent), see :func:`param_values`."""
    return row.get(param_column(name))


def _as_bool(v) -> bool | None:
    """True/False from a bool, 0/1 or "true"/"false" (CSV/JSON round trips); else None."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, str):
        return {"true": True, "false": False}.get(v.strip().lower())
    return bool(v)


def _private_column(private: pd.Series) -> pd.Series:
    """:func:`_as_bool` of every value, computed once per distinct value (values pandas
    holds equal, ``True``/``1``/``1.0`` or the missing ones, have equal answers)."""
    codes, distinct = pd.factorize(private)
    answers = np.array([*(_as_bool(v) for v in distinct), None], dtype=object)
    return pd.Series(answers[codes], index=private.index, name=private.name, dtype=object)


def not_dp_mask(frame: pd.DataFrame) -> pd.Series:
    """Rows run with a finite epsilon whose release is nevertheless not DP (``private``
    False: a registered not-DP variant, or a fit that called ``Accountant.mark_not_dp``).

    Non-private baselines (epsilon = inf, reason "non-private algorithm") are excluded:
    they never claimed a guarantee and are already shown as "no noise"; so are procedure
    rows (formulas, timings: see :func:`procedure_notes`), which are not fits of a model.
    """
    explicit = pd.Series([v is False for v in frame["private"].tolist()], index=frame.index,
                         dtype=bool)
    return explicit & np.isfinite(frame["epsilon"].astype(float)) & ~procedure_mask(frame)


def procedure_mask(frame: pd.DataFrame) -> pd.Series:
    """Rows computed by a registered procedure instead of a fitted estimator.

    Judged once per distinct algorithm (a few a table) instead of once per row: the
    string method loops over the rows in Python (issue 43)."""
    algorithms = frame["algorithm"].astype(str)
    codes, names = pd.factorize(algorithms)  # a missing value (code -1) is not a procedure
    is_procedure = np.array([*(str(n).startswith("procedure:") for n in names), False], dtype=bool)
    return pd.Series(is_procedure[codes], index=frame.index, name=algorithms.name)


def procedure_notes(frame: pd.DataFrame) -> list[str]:
    """The reasons the runner gave for procedure rows (e.g. "computed, not a DP release")."""
    part = frame[procedure_mask(frame)]
    return sorted(set(part["not_dp_reason"]) - {""})


def with_not_dp_mark(name: str) -> str:
    """``name`` marked "(not DP)" unless it already says so."""
    return name if "not dp" in name.lower() else f"{name} (not DP)"


# --------------------------------------------------------------------------- datasets


def _base_name(key: str) -> str:
    return key.split("[", 1)[0]


def _paper_datasets(spec: ExperimentSpec) -> list:
    """The paper-scale dataset list (the scaled spec keeps only the smoke subset)."""
    try:
        return load_spec_file(spec.path).datasets
    except (OSError, DpexpError):
        return []


def dataset_order(spec: ExperimentSpec, keys, paper_datasets: list | None = None) -> list[str]:
    """``keys`` in the paper's order (spec dataset order), then extra datasets by name."""
    paper = [d.key for d in (_paper_datasets(spec) if paper_datasets is None else paper_datasets)]
    scaled = [d.key for d in spec.datasets]
    paper_names = [_base_name(k) for k in paper]

    def rank(key: str) -> tuple[float, str]:
        if key in scaled and key not in paper:  # a smoke variant, e.g. synthF[n_samples=..]
            base = _base_name(key)
            if base in paper_names:
                return (paper_names.index(base) + 0.5, key)
            return (len(paper) + scaled.index(key) / (len(scaled) + 1), key)
        if key in paper:
            return (float(paper.index(key)), key)
        if _base_name(key) in paper_names:
            return (paper_names.index(_base_name(key)) + 0.5, key)
        return (math.inf, key)

    return sorted(dict.fromkeys(keys), key=rank)


def dataset_display(spec: ExperimentSpec, keys, paper_datasets: list | None = None) -> dict[str, str]:
    """Display name of each dataset key: the spec's label, else the key itself."""
    paper = _paper_datasets(spec) if paper_datasets is None else paper_datasets
    names = {d.key: d.display for d in paper} | {d.key: d.display for d in spec.datasets}
    return {k: names.get(k, k) for k in keys}


def dataset_tasks(keys, frame: pd.DataFrame | None = None) -> dict[str, str]:
    """classification/regression of each key (registry; else guessed from its metrics)."""
    out = {}
    for k in keys:
        try:
            out[k] = get_dataset_info(_base_name(k)).task
        except DpexpError:
            metrics = set(frame.loc[frame["dataset"] == k, "metric"]) if frame is not None else set()
            out[k] = "regression" if metrics & {"rmse", "mae", "mse", "r2"} else "classification"
    return out


@dataclass(frozen=True)
class RenderContext:
    """What a figure or table needs besides the numbers: order, names, scale, caption line."""

    order: list[str]  # dataset keys in the paper's order, extras last
    display: dict[str, str]  # dataset key -> display name
    tasks: dict[str, str]  # dataset key -> classification | regression
    scale: str
    note: str = ""  # the figure's caption (feature-domain source), never its title
    #: series label -> the registry name of its algorithm (``procedure:...`` for a
    #: procedure): figures colour a series by it (dpexp.render.style)
    algorithms: dict[str, str] = field(default_factory=dict)

    def title(self, spec: ExperimentSpec, width: int = 110) -> str:
        head = f"{spec.artefact} — {spec.paper}"
        if self.scale == "smoke":
            head += f" [{SMOKE_LABEL}]"
        return "\n".join([head, *textwrap.wrap(self.note, width)])


# --------------------------------------------------------------------------- statements


def domain_phrase(source: str) -> str:
    """How a caption states one dataset's feature domain (issue 16, item 5)."""
    if not source:
        return "domain source not recorded"
    if source.startswith("declared"):
        return "public feature domain"
    if "not dp" in source.lower():  # the dataset layer already words it so
        return source
    return f"not DP: domain from data ({source})"


def domain_statement(frame: pd.DataFrame, order: list[str], display: dict[str, str]) -> str:
    """One sentence: the feature-domain source of every dataset shown."""
    by_phrase: dict[str, list[str]] = {}
    # A formula procedure loads no data, so records no domain: nothing to state for it.
    fitted = frame[~(procedure_mask(frame) & (frame["domain_source"] == ""))]
    for key in order:
        rows = fitted["dataset"] == key
        if not rows.any():
            continue
        sources = sorted(set(pd.unique(fitted.loc[rows, "domain_source"])))
        for src in sources or [""]:
            by_phrase.setdefault(domain_phrase(src), []).append(display.get(key, key))
    if not by_phrase:
        return ""
    if len(by_phrase) == 1:
        return f"Feature domain: {next(iter(by_phrase))}."
    parts = [f"{phrase} for {', '.join(names)}" for phrase, names in by_phrase.items()]
    return "Feature domain: " + "; ".join(parts) + "."


def _span(values: pd.Series) -> str:
    # distinct values first (a few seeds, folds, repeats among thousands of rows)
    vals = sorted({int(v) for v in pd.unique(values) if not pd.isna(v)})
    if not vals:
        return "—"
    if len(vals) > 2 and vals == list(range(vals[0], vals[-1] + 1)):
        return f"{vals[0]}–{vals[-1]}"
    return ", ".join(map(str, vals))


def replicate_statement(frame: pd.DataFrame, counts: pd.Series | None = None) -> str:
    """Which seeds, folds and repeats each mean pools (rows of different seeds are
    independent replicates: each seed re-draws the data split and every random choice)."""
    text = (f"mean ± std over independent replicates: seeds {_span(frame['seed'])} × "
            f"folds {_span(frame['fold'])} × repeats {_span(frame['repeat'])}")
    if counts is not None and len(counts):
        lo, hi = int(counts.min()), int(counts.max())
        text += f" (n = {lo} per entry)" if lo == hi else f" (n = {lo}–{hi} per entry)"
    return text


def data_domain_lines(frame: pd.DataFrame, order: list[str], display: dict[str, str]) -> list[str]:
    """Caveat lines for private rows whose feature domain was not declared public.

    Split candidates drawn from a data-derived domain depend on the private data (e.g. on
    an extreme record), so such a release is not DP whatever the accountant spent.
    """
    runs = frame[np.isfinite(frame["epsilon"].astype(float)) & ~not_dp_mask(frame)
                 & (frame["domain_source"] != "")]
    out = []
    for key in order:
        sources = set(pd.unique(runs.loc[runs["dataset"] == key, "domain_source"]))
        out += [f"every budgeted row on {display.get(key, key)}: {domain_phrase(src)}"
                for src in sorted(sources) if not src.startswith("declared")]
    return out


@dataclass(frozen=True)
class NotDpEntry:
    series: str
    dataset: str
    epsilons: str
    reason: str


def not_dp_entries(frame: pd.DataFrame) -> list[NotDpEntry]:
    """One entry per (label, params, dataset) whose rows are not DP, with the reason."""
    bad = frame[not_dp_mask(frame)]
    out = []
    for (label, ds), part in bad.groupby(["label", "dataset"], sort=False):
        eps = sorted(set(pd.unique(part["epsilon"].astype(float))))
        # A reason may repeat (the registry's and the accountant's say the same thing); the
        # distinct texts in order of first appearance give the reasons in the same order.
        reasons = list(dict.fromkeys(r for text in pd.unique(part["not_dp_reason"])
                                     for r in text.split("; ") if r))
        reasons = reasons or ["marked not DP by the run"]
        out.append(NotDpEntry(str(label), str(ds), ", ".join(f"{e:g}" for e in eps),
                              "; ".join(reasons)))
    return out


def _algorithm_of_label(frame: pd.DataFrame) -> dict[str, str]:
    """Label -> algorithm, labels in the order they first appear, each with the algorithm
    of its last row (what a dict built row by row gives), from the distinct pairs only."""
    pairs = frame[["label", "algorithm"]].astype(str)
    if pairs.isna().any().any():  # a missing label or algorithm: row by row, as ever
        return dict(zip(pairs["label"], pairs["algorithm"], strict=True))
    last = pairs.drop_duplicates("label", keep="last")
    of_label = dict(zip(last["label"], last["algorithm"], strict=True))
    return {label: of_label[label] for label in pd.unique(pairs["label"])}


def render_context(spec: ExperimentSpec, frame: pd.DataFrame, scale: str) -> RenderContext:
    """The context of a (normalised) frame: its datasets in paper order, names, domain."""
    paper = _paper_datasets(spec)  # one spec-file read for both
    order = dataset_order(spec, frame["dataset"].unique(), paper)
    display = dataset_display(spec, order, paper)
    algorithms = _algorithm_of_label(frame) if {"label", "algorithm"} <= set(frame.columns) else {}
    return RenderContext(order=order, display=display, tasks=dataset_tasks(order, frame),
                         scale=scale, note=domain_statement(frame, order, display),
                         algorithms=algorithms)


#: Title of the caveat box listing :func:`not_dp_caveats`.
NOT_DP_TITLE = "Not DP — run with a budget, but these rows give no differential-privacy guarantee:"


def not_dp_caveats(frame: pd.DataFrame, ctx: RenderContext) -> list[str]:
    """Plain-text lines of the not-DP caveat box: rows marked not DP (with the run's
    reason), then budgeted rows whose feature domain came from the data."""
    lines = [f"{e.series} on {ctx.display.get(e.dataset, e.dataset)} (ε = {e.epsilons}): {e.reason}"
             for e in not_dp_entries(frame)]
    return lines + data_domain_lines(frame, ctx.order, ctx.display)
