"""Attach the paper's printed values to our aggregated rows and judge each by its kind."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpexp.experiments.spec import ExperimentSpec, registry_name
from dpexp.experiments.spec_checks import EQUIVALENCE_KINDS, entry_kind
from dpexp.render.equivalence import (
    difference_interval,
    equal_at_precision,
    equivalent,
    mean_interval,
    paper_runs,
)
from dpexp.render.frame import row_param

#: Keys of a paper_values entry that describe the value rather than select our row.
_VALUE_KEYS = ("value", "std", "note", "explained", "kind", "tolerance", "tolerance_reason",
               "calibration", "same_as", "shown", "post_hoc", "not_judged", "experiment")


def _dataset_matches(want: Any, row: Mapping[str, Any], ds_display: dict[str, str], by_name: bool) -> bool:
    """A dataset selector: the row's key or display name (or, ``by_name``, the dataset's
    name, so ``synthD_sep1`` selects every draw ``synthD_sep1[seed=K]``)."""
    if want in (row["dataset"], ds_display.get(row["dataset"])):
        return True
    return by_name and registry_name(row["dataset"]) == want


def matches_entry(entry: dict, row: Mapping[str, Any], ds_display: dict[str, str], by_name: bool = False) -> bool:
    for key, want in entry.items():
        if key in _VALUE_KEYS:
            continue
        if key == "dataset":
            if not _dataset_matches(want, row, ds_display, by_name):
                return False
        elif key == "algorithm":
            if want not in (row["label"], row["series"]):
                return False
        elif key == "epsilon":
            w = float("inf") if str(want) in ("inf", "no_noise") else float(want)
            e = float(row["epsilon"])
            if not (w == e or (math.isinf(w) and math.isinf(e)) or abs(w - e) < 1e-12):
                return False
        elif key == "metric":
            if want != row["metric"]:
                return False
        elif key == "step":
            if pd.isna(row["step"]) or int(want) != int(row["step"]):
                return False
        elif key.startswith("param:") and row_param(row, key[6:]) != want:
            return False
    return True


#: The verdict column's values besides the markers (never a pass at smoke scale, issue 17
#: item 4).
SMOKE_VERDICT = "not compared (smoke)"
TIMING_VERDICT = "timing: shown, never judged (hardware-bound)"
NO_TOLERANCE_VERDICT = "no tolerance stated"
NO_MEAN_VERDICT = "no value of ours (undefined mean)"
ONE_RUN_VERDICT = "not judged (one run of ours: no interval)"
NOT_JUDGED_PREFIX = "not judged: "

#: ``value_verdict`` of a printed value (issues 19, 21, 41); see :func:`judge_value`.
REPRODUCED, EXPLAINED, UNEXPLAINED = "reproduced", "explained", "unexplained"
#: How a miss is explained (issue 41): ``shown`` names a committed experiment whose cells
#: land on the paper's value under the same rule as a reproduction; ``plausible`` argues a
#: cause with numbers that do not land. Only ``shown`` counts as an explanation in the
#: headline; ``plausible`` counts with the unexplained as not reproduced.
SHOWN, PLAUSIBLE = "shown", "plausible"
#: A miss the paper's own printed numbers exclude, proved arithmetically in the entry's
#: ``refuted:`` (e.g. an F1 no prediction set with the accuracy the paper prints for the
#: same forests can have): not reproducible by any run, counted apart from the plausible.
REFUTED = "refuted"
#: An entry's status in the counts: one of these or NOT_JUDGED.
NOT_JUDGED = "not judged"
STATUSES = (REPRODUCED, SHOWN, REFUTED, PLAUSIBLE, UNEXPLAINED, NOT_JUDGED)
#: The marker shown beside the paper's value in tables and in the ``verdict`` column.
VERDICT_MARK = {REPRODUCED: "✓", EXPLAINED: "✗ (explained)", UNEXPLAINED: "✗"}


def verdict_mark(value_verdict: str | None, status: str = "", post_hoc: bool = False) -> str:
    """The marker of a judged value ("" if none): ✓, ✗, or "✗ (explained: shown|plausible
    [, post hoc])" for a miss with an explanation of that status."""
    if not isinstance(value_verdict, str):
        return ""
    if value_verdict == EXPLAINED and status:
        return f"✗ (explained: {status}{', post hoc' if post_hoc else ''})"
    return VERDICT_MARK.get(value_verdict, "")


def judge_value(equivalent_: bool | None, explanation: str) -> str | None:
    """``reproduced`` if the value's rule holds (:func:`dpexp.render.equivalence.equal_at_precision` for descriptors
    and formulas, :func:`dpexp.render.equivalence.equivalent` for performance and diagnostics); else ``explained``
    if the spec's entry carries ``explained:`` evidence, else ``unexplained``. None when
    the value is not judged (a timing, not_judged, one run, smoke scale)."""
    if equivalent_ is None:
        return None
    if equivalent_:
        return REPRODUCED
    return EXPLAINED if explanation else UNEXPLAINED


def entry_tolerance(spec: ExperimentSpec, entry: dict) -> float | None:
    """The tolerance of an equivalence-judged entry: its own, else the spec's."""
    tol = entry.get("tolerance", spec.paper_values.get("tolerance"))
    return None if tol is None else float(tol)


def value_kind(spec: ExperimentSpec, entry: dict | None) -> str:
    """The entry's kind (see dpexp.experiments.spec.VALUE_KINDS), "" for no entry."""
    return "" if entry is None else entry_kind(spec.paper_values, entry)


def explanation_status(entry: dict | None) -> str:
    """``shown`` when the entry's explanation names a committed experiment and cells that
    land (declared; the report checks it) without a choice made after seeing the miss,
    ``plausible`` for any other explanation (a post-hoc one included)."""
    if not entry or not entry.get("explained"):
        return ""
    return SHOWN if entry.get("shown") and not entry.get("post_hoc") else PLAUSIBLE


def _match_entries(agg: pd.DataFrame, spec: ExperimentSpec) -> list[int]:
    """Index of the first paper_values entry matching each row (-1: none)."""
    entries = spec.paper_values.get("values") or []
    if not entries:  # nothing to match: no row made into a dict (issue 43)
        return [-1] * len(agg)
    ds_display = {d.key: d.display for d in spec.datasets}
    return [next((k for k, e in enumerate(entries) if matches_entry(e, row, ds_display)), -1)
            for row in _rows(agg)]


def _rows(agg: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``agg`` as dicts of Python values (``iterrows`` builds a Series a row:
    most of the report's time with 30,000 rows, issue 43)."""
    return agg.to_dict("records")


@dataclass(frozen=True)
class RowJudgement:
    """The verdict columns of one row with a paper value (see attach_paper_values)."""

    eq_low: float = math.nan
    eq_high: float = math.nan
    equivalent: bool | None = None
    value_verdict: str | None = None
    verdict: str = ""


def _marker(verdict: str | None, entry: dict) -> str:
    """The marker of a judged row: a miss the paper's own numbers exclude says so."""
    if verdict in (EXPLAINED, UNEXPLAINED) and entry.get("refuted"):
        return "✗ (refuted by the paper's own numbers)"
    return verdict_mark(verdict, explanation_status(entry), bool(entry.get("post_hoc")))


def _judge_row(row: Mapping[str, Any], entry: dict, spec: ExperimentSpec, scale: str) -> RowJudgement:
    """Judge one row against its entry by the entry's kind (issue 41)."""
    kind = value_kind(spec, entry)
    mean = float(row["mean"])
    if scale == "smoke":
        return RowJudgement(verdict=SMOKE_VERDICT)
    if kind == "timing":
        return RowJudgement(verdict=TIMING_VERDICT)
    if entry.get("not_judged"):
        return RowJudgement(verdict=NOT_JUDGED_PREFIX + str(entry["not_judged"]))
    if not math.isfinite(mean):
        return RowJudgement(verdict=NO_MEAN_VERDICT)
    explanation = str(entry.get("explained") or "")
    if kind in ("descriptor", "formula"):
        ok = equal_at_precision(mean, float(row["paper_value"]))
        verdict = judge_value(ok, explanation)
        return RowJudgement(equivalent=ok, value_verdict=verdict, verdict=_marker(verdict, entry))
    tol = entry_tolerance(spec, entry)
    if tol is None:
        return RowJudgement(verdict=NO_TOLERANCE_VERDICT)
    low, high = difference_interval(float(row["diff"]), float(row["std"]), int(row["n"]),
                                    float(row["paper_std"]), paper_runs(spec))
    if not math.isfinite(low):
        return RowJudgement(verdict=ONE_RUN_VERDICT)
    ok = equivalent(low, high, tol)
    verdict = judge_value(ok, explanation)
    return RowJudgement(low, high, ok, verdict, _marker(verdict, entry))



def _entry_column(hit: list[dict | None], index: pd.Index, get, dtype=object) -> pd.Series:
    return pd.Series([get(e) for e in hit], index=index, dtype=dtype)


def attach_paper_values(agg: pd.DataFrame, spec: ExperimentSpec, scale: str = "paper") -> pd.DataFrame:
    """Add the paper's value beside ours and, per printed value, a verdict by its kind.

    Columns: ``paper_value``, ``paper_std``, ``paper_entry`` (index in the spec, -1: none),
    ``paper_kind`` (descriptor | formula | diagnostic | performance | timing),
    ``tolerance`` (of an equivalence-judged value), ``diff`` (ours - paper),
    ``ci_low``/``ci_high`` (our 95% interval of the mean, shown, not used to judge),
    ``eq_low``/``eq_high`` (the 90% interval of ours - paper, :func:`dpexp.render.equivalence.difference_interval`),
    ``equivalent`` (the kind's rule holds), ``value_verdict`` (:func:`judge_value`),
    ``explanation`` (the entry's ``explained:`` text), ``explanation_status`` (shown |
    plausible | ""), ``post_hoc``, ``calibration`` and ``reprint_of`` (the entry's texts,
    "" if none) and ``verdict`` (the marker or why there is none).

    Descriptors and formulas are equal at the printed precision or not; performance
    values and diagnostics are judged by TOST at 5% within the entry's tolerance; timings
    are shown, never judged; nothing is judged at smoke scale.
    """
    agg = agg.copy()
    entries = spec.paper_values.get("values") or []
    idx = _match_entries(agg, spec)
    hit = [entries[i] if i >= 0 else None for i in idx]
    ix = agg.index
    agg["paper_value"] = _entry_column(hit, ix, lambda e: np.nan if e is None else float(e["value"]), float)
    agg["paper_std"] = _entry_column(hit, ix, lambda e: np.nan if e is None or "std" not in e else float(e["std"]), float)
    agg["paper_entry"] = pd.Series(idx, index=ix, dtype=int)
    agg["paper_kind"] = _entry_column(hit, ix, lambda e: value_kind(spec, e))
    agg["tolerance"] = _entry_column(hit, ix, lambda e: np.nan if e is None or value_kind(spec, e) not in EQUIVALENCE_KINDS
                                     else (entry_tolerance(spec, e) if entry_tolerance(spec, e) is not None else np.nan), float)
    agg["explanation"] = _entry_column(hit, ix, lambda e: str((e or {}).get("explained") or ""))
    agg["explanation_status"] = _entry_column(hit, ix, explanation_status)
    for col in ("post_hoc", "calibration"):
        agg[col] = _entry_column(hit, ix, lambda e, c=col: str((e or {}).get(c) or ""))
    agg["reprint_of"] = _entry_column(hit, ix, lambda e: reprint_text(spec, e))
    agg["diff"] = agg["mean"] - agg["paper_value"]
    ci = [mean_interval(float(m), float(s), int(k)) for m, s, k in zip(agg["mean"], agg["std"], agg["n"], strict=True)]
    agg["ci_low"] = pd.Series([c[0] for c in ci], index=ix, dtype=float)
    agg["ci_high"] = pd.Series([c[1] for c in ci], index=ix, dtype=float)
    # only the rows with a paper value are made into dicts (the same values: a row subset
    # keeps its columns' dtypes), most rows of a large artefact have none (issue 43)
    with_entry = [i for i, e in enumerate(hit) if e is not None]
    judgements = iter([_judge_row(row, hit[i], spec, scale)
                       for row, i in zip(_rows(agg.iloc[with_entry]), with_entry, strict=True)])
    judged = [RowJudgement() if e is None else next(judgements) for e in hit]
    agg["eq_low"] = pd.Series([j.eq_low for j in judged], index=ix, dtype=float)
    agg["eq_high"] = pd.Series([j.eq_high for j in judged], index=ix, dtype=float)
    agg["equivalent"] = pd.Series([j.equivalent for j in judged], index=ix, dtype=object)
    agg["value_verdict"] = pd.Series([j.value_verdict for j in judged], index=ix, dtype=object)
    agg["verdict"] = pd.Series([j.verdict for j in judged], index=ix, dtype=object)
    return agg


def reprint_text(spec: ExperimentSpec, entry: dict | None) -> str:
    """"experiment: selectors" of the original a reprinted entry links to ("" if none)."""
    link = (entry or {}).get("same_as")
    if not link:
        return ""
    where = ", ".join(f"{k} {v}" for k, v in link.items() if k != "experiment")
    return f"{link.get('experiment', spec.id)}: {where}"

