"""Aggregate result rows over folds/repeats and attach the paper's reported values."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from dpexp.experiments.schema import (
    REPLICATE_COLUMNS,
    RUN_COLUMNS,
    cell_columns,
    param_column,
    param_columns,
)
from dpexp.experiments.spec import EQUIVALENCE_KINDS, ExperimentSpec, entry_kind
from dpexp.render.frame import normalise, not_dp_mask, row_param, with_not_dp_mark

#: What one aggregated entry is: a cell without its replicates (pooled), the columns
#: constant in one experiment at one scale, and the algorithm (its label names it).
SETTING_COLUMNS = cell_columns(without=[*RUN_COLUMNS, "algorithm", *REPLICATE_COLUMNS])
GROUP = [*SETTING_COLUMNS, "metric", "step"]


def series_name(label: str, params: Mapping[str, Any], grid_keys: list[str]) -> str:
    """Legend/column name: the label plus the grid parameters that vary (``params`` maps a
    parameter name to its value; absent names show as None)."""
    if not grid_keys:
        return label
    inner = ", ".join(f"{k}={params.get(k)}" for k in grid_keys)
    return f"{label} ({inner})"


def series_names(agg: pd.DataFrame, grid_keys: dict[str, list[str]]) -> list[str]:
    """The series name of every row of ``agg`` (a raw or an aggregated frame with ``label``
    and ``p_<name>`` columns), see :func:`series_name`."""
    values = {c: agg[c].tolist() for c in param_columns(agg.columns)}
    out = []
    for i, label in enumerate(agg["label"]):
        keys = grid_keys.get(label, [])
        params = {k: values[param_column(k)][i] for k in keys if param_column(k) in values}
        out.append(series_name(label, params, keys))
    return out


def grid_keys_by_label(spec: ExperimentSpec) -> dict[str, list[str]]:
    """Grid parameters that distinguish series (not those already on an axis)."""
    axes = {spec.plot.get("x")}
    for key in ("rows", "columns"):
        v = (spec.table or {}).get(key)
        axes |= set(v) if isinstance(v, list) else {v}
    return {a.label: sorted(k for k in a.grid if f"param:{k}" not in axes) for a in spec.algorithms}


AGG_COLUMNS = [*GROUP, "series", "display", "mean", "std", "n", "epsilon_spent", "not_dp",
               "not_dp_reason", "diagnostic"]


def aggregate(frame: pd.DataFrame, spec: ExperimentSpec) -> pd.DataFrame:
    """Mean, std and count of each (dataset, algorithm, params, epsilon, metric, step),
    with the entry's ``p_<name>`` parameter columns.

    Rows of different seeds, folds and repeats are pooled as independent replicates
    (``n`` counts them). ``not_dp`` marks a group with any row whose release is not DP
    (:func:`dpexp.render.frame.not_dp_mask`), ``diagnostic`` one whose values come from an
    estimator's ``diagnostics_`` (exact quantities of the run, not DP releases);
    ``display`` is the series name marked "(not DP)" for legends and table columns, while
    ``series`` stays the spec's name (paper values and claims refer to it).
    """
    if frame.empty:
        return pd.DataFrame(columns=AGG_COLUMNS)
    f = normalise(frame)
    f["step"] = f["step"].fillna(-1).astype(int)
    f["_not_dp"] = not_dp_mask(f)
    f["_diag"] = f["metric_kind"] == "diagnostic"
    agg = (
        f.groupby(GROUP, dropna=False)
        .agg(mean=("value", "mean"), std=("value", "std"), n=("value", "size"),
             epsilon_spent=("epsilon_spent", "max"), not_dp=("_not_dp", "any"),
             not_dp_reason=("not_dp_reason", "max"), diagnostic=("_diag", "any"))
        .reset_index()
    )
    agg["std"] = agg["std"].fillna(0.0)
    # The parameter columns are functions of ``params`` (grouped on): one row per params.
    pcols = param_columns(f.columns)
    if pcols:
        agg = agg.merge(f[["params", *pcols]].drop_duplicates("params"), on="params", how="left",
                        sort=False, validate="many_to_one")
    agg["series"] = series_names(agg, grid_keys_by_label(spec))
    agg["display"] = [with_not_dp_mark(s) if bad else s
                      for s, bad in zip(agg["series"], agg["not_dp"], strict=True)]
    agg["step"] = agg["step"].replace(-1, np.nan)
    return agg[[*AGG_COLUMNS, *pcols]]


#: Keys of a paper_values entry that describe the value rather than select our row.
_VALUE_KEYS = ("value", "std", "note", "explained", "kind", "tolerance", "tolerance_reason",
               "calibration", "same_as", "shown", "post_hoc", "not_judged", "experiment")


def _dataset_matches(want: Any, row: pd.Series, ds_display: dict[str, str], by_name: bool) -> bool:
    """A dataset selector: the row's key or display name (or, ``by_name``, the dataset's
    name, so ``synthD_sep1`` selects every draw ``synthD_sep1[seed=K]``)."""
    if want in (row["dataset"], ds_display.get(row["dataset"])):
        return True
    return by_name and str(row["dataset"]).split("[")[0] == want


def _matches(entry: dict, row: pd.Series, ds_display: dict[str, str], by_name: bool = False) -> bool:
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
#: Kept under its old name for callers that test for a timing row.
DIAGNOSTIC_VERDICT = TIMING_VERDICT
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

#: TOST at 5% on each side: the two one-sided tests at 5% reject together exactly when the
#: 90% two-sided interval of ours - paper lies inside ±tolerance.
EQUIVALENCE_LEVEL = 0.90
#: Two-sided level of our interval of the mean shown beside the value (not used to judge).
CI_LEVEL = 0.95


def verdict_mark(value_verdict: str | None, status: str = "", post_hoc: bool = False) -> str:
    """The marker of a judged value ("" if none): ✓, ✗, or "✗ (explained: shown|plausible
    [, post hoc])" for a miss with an explanation of that status."""
    if not isinstance(value_verdict, str):
        return ""
    if value_verdict == EXPLAINED and status:
        return f"✗ (explained: {status}{', post hoc' if post_hoc else ''})"
    return VERDICT_MARK.get(value_verdict, "")


def paper_runs(spec: ExperimentSpec) -> int:
    """How many runs stand behind each value the paper prints, read from the spec's ``cv``.

    At paper scale the spec's cross-validation is the paper's protocol (e.g. Fletcher &
    Islam, Section 2.4: "repeated ten times, with each test using ten-fold cross
    validation, for a total of 100 results", with "one standard deviation"; Shi et al.,
    Section 5: the given Adult split), so a printed std is taken as the std over
    ``folds x repeats`` runs (k-fold) or ``repeats`` runs (a given split or a holdout),
    the same unit as our ``std``.
    """
    cv = spec.cv
    return int(cv.folds) * int(cv.repeats) if cv.scheme == "kfold" else int(cv.repeats)


def mean_interval(mean: float, std: float, n: int, level: float = CI_LEVEL) -> tuple[float, float]:
    """Our ``level`` confidence interval of the mean: Student t with n - 1 degrees of
    freedom over the n fold x repeat values; (nan, nan) for n < 2 (no spread is measured)."""
    if n < 2 or not (math.isfinite(mean) and math.isfinite(std)):
        return (math.nan, math.nan)
    half = float(student_t.ppf(0.5 + level / 2, n - 1)) * std / math.sqrt(n)
    return (mean - half, mean + half)


def difference_interval(diff: float, std: float, n: int, paper_std: float, paper_n: int,
                        level: float = EQUIVALENCE_LEVEL) -> tuple[float, float]:
    """The ``level`` interval of ours - paper, the equivalence test's interval.

    Without a printed std (or with fewer than 2 paper runs) the paper's value is taken as
    exact and the interval is ours: t with n - 1 degrees of freedom times std / sqrt(n).
    With one, the standard error of the difference of the two means is
    sqrt(std^2/n + paper_std^2/paper_n), with Welch-Satterthwaite degrees of freedom.
    A noisier run of ours has a wider interval, which makes equivalence *harder*: the
    interval must fit inside ±tolerance. (nan, nan) for n < 2.
    """
    if n < 2 or not (math.isfinite(diff) and math.isfinite(std)):
        return (math.nan, math.nan)
    ours = std**2 / n
    theirs = paper_std**2 / paper_n if math.isfinite(paper_std) and paper_n >= 2 else 0.0
    if ours + theirs == 0:
        return (diff, diff)
    if theirs:
        dof = (ours + theirs) ** 2 / (ours**2 / (n - 1) + theirs**2 / (paper_n - 1))
    else:
        dof = n - 1
    half = float(student_t.ppf(0.5 + level / 2, dof)) * math.sqrt(ours + theirs)
    return (diff - half, diff + half)


def equivalent(low: float, high: float, tolerance: float) -> bool:
    """TOST at 5%: the 90% interval of ours - paper lies inside ±tolerance."""
    return bool(-tolerance <= low and high <= tolerance)


def printed_unit(value: float) -> float:
    """One unit of the last digit of ``value`` as printed (and copied into the spec):
    0.90483 -> 1e-05, 1.93e-22 -> 1e-24, 3340 -> 1. The value is first written with 12
    significant digits, so float noise (0.7909999999999999) does not add digits."""
    text = f"{float(value):.12g}"
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def equal_at_precision(ours: float, paper: float) -> bool:
    """Whether ``ours`` printed to the paper's digits gives the paper's value, rounded or
    truncated (papers do both: Fletcher & Islam's Table 2 prints exp(-0.1) = 0.904837 as
    0.90483 and exp(-1) = 0.367879 as 0.36788)."""
    unit = printed_unit(paper)
    diff = ours - paper
    slack = 1e-9 * unit  # binary floats of decimal digits
    low, high = (-unit / 2, unit) if paper >= 0 else (-unit, unit / 2)
    return bool(low - slack <= diff < high - slack or abs(diff) <= unit / 2 + slack)


def judge_value(equivalent_: bool | None, explanation: str) -> str | None:
    """``reproduced`` if the value's rule holds (:func:`equal_at_precision` for descriptors
    and formulas, :func:`equivalent` for performance and diagnostics); else ``explained``
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
    ds_display = {d.key: d.display for d in spec.datasets}
    return [next((k for k, e in enumerate(entries) if _matches(e, row, ds_display)), -1)
            for _, row in agg.iterrows()]


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


def _judge_row(row: pd.Series, entry: dict, spec: ExperimentSpec, scale: str) -> RowJudgement:
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


def is_timing(metric: Any) -> bool:
    """Whether ``metric`` is a wall-clock timing (``seconds_per_tree``, ``fit_seconds``...):
    a property of the machine, so a printed timing is shown beside ours but never judged."""
    return "seconds" in str(metric)


def _entry_column(hit: list[dict | None], index: pd.Index, get, dtype=object) -> pd.Series:
    return pd.Series([get(e) for e in hit], index=index, dtype=dtype)


def attach_paper_values(agg: pd.DataFrame, spec: ExperimentSpec, scale: str = "paper") -> pd.DataFrame:
    """Add the paper's value beside ours and, per printed value, a verdict by its kind.

    Columns: ``paper_value``, ``paper_std``, ``paper_entry`` (index in the spec, -1: none),
    ``paper_kind`` (descriptor | formula | diagnostic | performance | timing),
    ``tolerance`` (of an equivalence-judged value), ``diff`` (ours - paper),
    ``ci_low``/``ci_high`` (our 95% interval of the mean, shown, not used to judge),
    ``eq_low``/``eq_high`` (the 90% interval of ours - paper, :func:`difference_interval`),
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
    judged = [RowJudgement() if e is None else _judge_row(row, e, spec, scale)
              for (_, row), e in zip(agg.iterrows(), hit, strict=True)]
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


# -- counting printed values (each printed number once) ------------------------------------

@dataclass(frozen=True)
class ValueStatus:
    """How one printed value of a spec is counted (issue 41).

    ``status`` is one of :data:`STATUSES` (None at smoke scale); ``reason`` says why a
    value is not judged, or why a declared ``shown`` explanation counts as plausible.
    A reprint (``same_as``) is shown with its own verdict but counted at its original;
    a calibration value is counted apart from the reproduction.
    """

    entry: int
    kind: str
    status: str | None
    reason: str = ""
    calibration: bool = False
    reprint: bool = False
    post_hoc: bool = False
    #: A plausible value whose named cells land, on a choice made after seeing the miss.
    landed_post_hoc: bool = False


#: ``shown_check(spec, entry) -> (lands, detail)``: whether a declared shown explanation's
#: cells land on the paper's value (None: not checked here, e.g. a single table's render).
ShownCheck = Callable[[ExperimentSpec, dict], "tuple[bool, str] | None"]


def _status_of(entry: dict, verdict: str | None, spec: ExperimentSpec,
               shown_check: ShownCheck | None) -> tuple[str, str, bool]:
    """(status, reason, lands) of a judged entry from its row's ``value_verdict``.

    A miss is ``shown`` only when its named cells land (where checked) *and* the
    explanation does not rest on a choice made after seeing the miss: a post-hoc
    explanation whose cells land stays ``plausible`` (``lands`` says they did)."""
    if verdict == REPRODUCED:
        return REPRODUCED, "", False
    if entry.get("refuted"):
        return REFUTED, str(entry["refuted"]), False
    if verdict == UNEXPLAINED:
        return UNEXPLAINED, "", False
    if not entry.get("shown"):
        return PLAUSIBLE, "", False
    checked = shown_check(spec, entry) if shown_check else None
    if checked is not None and not checked[0]:
        return PLAUSIBLE, f"declared shown, but the named cells do not land: {checked[1]}", False
    detail = "" if checked is None else checked[1]
    if entry.get("post_hoc"):
        return PLAUSIBLE, f"the named cells land, but post hoc: {detail}".rstrip(": "), True
    return SHOWN, detail, True


def value_statuses(agg: pd.DataFrame, spec: ExperimentSpec, scale: str,
                   unavailable: tuple[str, ...] = (), shown_check: ShownCheck | None = None) -> list[ValueStatus]:
    """One :class:`ValueStatus` per printed value of ``spec`` (its first matching row judges it)."""
    entries = spec.paper_values.get("values") or []
    first: dict[int, pd.Series] = {}
    if "paper_entry" in agg:
        for _, row in agg[agg["paper_entry"] >= 0].iterrows():
            first.setdefault(int(row["paper_entry"]), row)
    out = []
    for i, e in enumerate(entries):
        kind = value_kind(spec, e)
        flags = {"calibration": bool(e.get("calibration")), "reprint": bool(e.get("same_as")),
                 "post_hoc": bool(e.get("post_hoc"))}
        row = first.get(i)
        if scale == "smoke":
            out.append(ValueStatus(i, kind, None, **flags))
            continue
        verdict = None if row is None else row.get("value_verdict")
        if isinstance(verdict, str):
            status, reason, landed = _status_of(e, verdict, spec, shown_check)
        else:
            status, reason, landed = NOT_JUDGED, _not_judged_reason(e, kind, row, unavailable), False
        out.append(ValueStatus(i, kind, status, reason, landed_post_hoc=landed and flags["post_hoc"], **flags))
    return out


def _not_judged_reason(entry: dict, kind: str, row: pd.Series | None, unavailable: tuple[str, ...]) -> str:
    """Why a printed value has no verdict (the entry's own ``not_judged`` reason first)."""
    if entry.get("not_judged"):
        return str(entry["not_judged"])
    if kind == "timing":
        return "a timing (hardware-bound)"
    if row is None:
        if str(entry.get("dataset", "")) in unavailable:
            return "the dataset is not available here"
        return "no result of ours for it"
    return str(row.get("verdict") or "no verdict")


@dataclass(frozen=True)
class ComparisonSummary:
    """How many of the paper's printed values were shown and how each is counted: each
    printed number once (reprints at their original), calibration values apart."""

    printed: int  # values the spec copies from the paper (reprints included)
    matched: int  # of those, how many match one of our cached entries
    smoke: bool
    source: str
    reprinted: int = 0  # entries that are a number already counted elsewhere (same_as)
    calibration: int = 0  # counted entries used to choose a setting (not reproduction)
    reproduced: int = 0  # the counted, non-calibration entries by status
    shown: int = 0
    refuted: int = 0
    plausible: int = 0
    unexplained: int = 0
    not_judged: int = 0
    landed_post_hoc: int = 0  # of the plausible, how many land on a choice made after the miss
    timings: int = 0  # of the not judged, timings

    @property
    def counted(self) -> int:
        """Printed numbers counted once, calibration values apart."""
        return self.judged + self.not_judged

    @property
    def judged(self) -> int:
        return self.reproduced + self.shown + self.refuted + self.plausible + self.unexplained

    def verdict_cell(self) -> str:
        """"reproduced / shown / refuted / plausible / unexplained / not judged", or why none."""
        if not self.printed:
            return "—"
        if self.smoke:
            return SMOKE_VERDICT
        return (f"{self.reproduced} / {self.shown} / {self.refuted} / {self.plausible} / "
                f"{self.unexplained} / {self.not_judged}")

    def text(self) -> str:
        """A footer sentence with the counts (empty when the paper prints no values)."""
        if not self.printed:
            return ""
        shown = (f"{self.matched} of the {self.printed} values printed in {self.source} "
                 "match a cell of ours and are shown beside ours (never in place of ours)")
        if self.smoke:
            return f"{shown}; {SMOKE_VERDICT}: smoke scale is not the paper's setting."
        parts = [shown]
        if self.reprinted:
            parts.append(f"{self.reprinted} reprint a number the paper prints elsewhere and are "
                         "counted once, at the original")
        if self.calibration:
            parts.append(f"{self.calibration} were used to calibrate a setting and are counted "
                         "apart, not as reproductions")
        post = (f", {self.landed_post_hoc} of them on a choice made after seeing the miss, "
                "whose cells land" if self.landed_post_hoc else "")
        parts.append(f"of the other {self.counted}, {self.reproduced} are reproduced (their "
                     f"kind's rule), {self.shown} missed with an explanation shown by an "
                     f"experiment, {self.refuted} missed where the paper's own numbers exclude "
                     f"its value, {self.plausible} missed with a plausible cause only{post}, "
                     f"{self.unexplained} missed unexplained and {self.not_judged} not judged"
                     + (f" ({self.timings} timings)" if self.timings else ""))
        return "; ".join(parts) + "."


def summarise_statuses(statuses: list[ValueStatus], printed: int, matched: int, smoke: bool,
                       source: str) -> ComparisonSummary:
    """The counts of :class:`ComparisonSummary` from per-value statuses."""
    counted = [s for s in statuses if not s.reprint and not s.calibration]
    by = [s.status for s in counted]
    return ComparisonSummary(
        printed=printed, matched=matched, smoke=smoke, source=source,
        reprinted=sum(s.reprint for s in statuses),
        calibration=sum(s.calibration and not s.reprint for s in statuses),
        reproduced=by.count(REPRODUCED), shown=by.count(SHOWN), refuted=by.count(REFUTED),
        plausible=by.count(PLAUSIBLE),
        unexplained=by.count(UNEXPLAINED), not_judged=by.count(NOT_JUDGED),
        landed_post_hoc=sum(s.landed_post_hoc for s in counted),
        timings=sum(s.status == NOT_JUDGED and s.kind == "timing" for s in counted),
    )


def comparison_summary(agg: pd.DataFrame, spec: ExperimentSpec, scale: str,
                       unavailable: tuple[str, ...] = (),
                       shown_check: ShownCheck | None = None) -> ComparisonSummary:
    """Counts behind the footer of a table / the report's comparison (see the class)."""
    entries = spec.paper_values.get("values") or []
    has = agg["paper_value"].notna() if "paper_value" in agg else pd.Series(dtype=bool)
    matched = len(set(agg.loc[has, "paper_entry"])) if len(has) else 0
    statuses = value_statuses(agg, spec, scale, unavailable, shown_check)
    return summarise_statuses(statuses, len(entries), matched, scale == "smoke",
                              str(spec.paper_values.get("source", "the paper")))


def pooled_cells(agg: pd.DataFrame, spec: ExperimentSpec, cells: dict) -> tuple[float, float, int] | None:
    """Mean, std and count of the aggregated rows of ``spec`` that ``cells`` selects (a
    dataset name selects all its draws): one row gives its own mean, std and n; several
    (draws of a generator) are pooled with each row's mean as one replicate, since the
    draw-to-draw spread is then the variation. None when nothing matches."""
    ds_display = {d.key: d.display for d in spec.datasets}
    rows = agg[[_matches(cells, row, ds_display, by_name=True) for _, row in agg.iterrows()]]
    rows = rows[rows["mean"].map(lambda m: math.isfinite(float(m)))]
    if rows.empty:
        return None
    if len(rows) == 1:
        r = rows.iloc[0]
        return float(r["mean"]), float(r["std"]), int(r["n"])
    means = rows["mean"].astype(float)
    return float(means.mean()), float(means.std(ddof=1)), len(means)


def lands(entry: dict, spec: ExperimentSpec, stats: tuple[float, float, int]) -> tuple[bool, str]:
    """Whether pooled cells (mean, std, n) land on ``entry``'s value by the entry's rule
    (the same as a reproduction's), with the numbers."""
    mean, std, n = stats
    paper = float(entry["value"])
    if value_kind(spec, entry) in ("descriptor", "formula"):
        ok = equal_at_precision(mean, paper)
        return ok, f"{mean:.6g} vs the paper's {paper:g} (equal at the printed precision: {ok})"
    tol = entry_tolerance(spec, entry)
    low, high = difference_interval(mean - paper, std, n, float(entry.get("std", math.nan)),
                                    paper_runs(spec))
    if tol is None or not math.isfinite(low):
        return False, f"{mean:.4g} ± {std:.2g} (n = {n}): no interval to test"
    ok = equivalent(low, high, tol)
    return ok, (f"{mean:.4g} ± {std:.2g} (n = {n}) vs the paper's {paper:g}: 90% interval of "
                f"the difference [{low:+.3g}, {high:+.3g}] {'inside' if ok else 'not inside'} "
                f"±{tol:g}")
