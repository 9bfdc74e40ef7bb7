"""Aggregate result rows over folds/repeats and attach the paper's reported values."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpexp.experiments.schema import (
    REPLICATE_COLUMNS,
    RUN_COLUMNS,
    cell_columns,
    param_column,
    param_columns,
)
from dpexp.experiments.spec import ExperimentSpec
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
_VALUE_KEYS = ("value", "std", "note", "explained")


def _matches(entry: dict, row: pd.Series, ds_display: dict[str, str]) -> bool:
    for key, want in entry.items():
        if key in _VALUE_KEYS:
            continue
        if key == "dataset":
            if want not in (row["dataset"], ds_display.get(row["dataset"])):
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
DIAGNOSTIC_VERDICT = "timing (no verdict: machine-dependent)"
NO_TOLERANCE_VERDICT = "no tolerance stated"
NO_MEAN_VERDICT = "no value of ours (undefined mean)"

#: ``value_verdict`` of a printed value (issues 19, 21); see :func:`judge_value`.
REPRODUCED, EXPLAINED, UNEXPLAINED = "reproduced", "explained", "unexplained"
#: The marker shown beside the paper's value in tables and in the ``verdict`` column.
VERDICT_MARK = {REPRODUCED: "✓", EXPLAINED: "✗ (explained)", UNEXPLAINED: "✗"}
#: The marker of a value reproduced by the interval alone, farther than the tolerance:
#: with few noisy runs that means "not contradicted by our runs" rather than "matched".
INTERVAL_ONLY_MARK = "✓ (by interval)"


def verdict_mark(value_verdict: str | None, within_tolerance: bool | None) -> str:
    """The marker of a judged value ("" if none): :data:`VERDICT_MARK`, or
    :data:`INTERVAL_ONLY_MARK` for a reproduction outside a stated tolerance."""
    if value_verdict == REPRODUCED and within_tolerance is False:
        return INTERVAL_ONLY_MARK
    return VERDICT_MARK.get(value_verdict, "") if isinstance(value_verdict, str) else ""


#: Two-sided level of every interval below.
CI_LEVEL = 0.95


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
    from scipy.stats import t

    if n < 2 or not (math.isfinite(mean) and math.isfinite(std)):
        return (math.nan, math.nan)
    half = float(t.ppf(0.5 + level / 2, n - 1)) * std / math.sqrt(n)
    return (mean - half, mean + half)


def comparison_interval(mean: float, std: float, n: int, paper_std: float, paper_n: int,
                        level: float = CI_LEVEL) -> tuple[float, float]:
    """The interval around our mean that the paper's value must fall in to count as
    reproduced by chance variation alone.

    Without a printed std (or with fewer than 2 paper runs) it is our own interval
    (:func:`mean_interval`): the paper's value is then treated as exact. With one, the
    paper's mean is uncertain too, so the half-width uses the standard error of the
    difference of the two means, sqrt(std^2/n + paper_std^2/paper_n), with
    Welch-Satterthwaite degrees of freedom: the paper's value lies inside exactly when a
    two-sided Welch t-test at 1 - ``level`` does not reject that both means are equal.
    """
    from scipy.stats import t

    if n < 2 or not (math.isfinite(mean) and math.isfinite(std)):
        return (math.nan, math.nan)
    if not math.isfinite(paper_std) or paper_n < 2:
        return mean_interval(mean, std, n, level)
    ours, theirs = std**2 / n, paper_std**2 / paper_n
    if ours + theirs == 0:
        return (mean, mean)
    dof = (ours + theirs) ** 2 / (ours**2 / (n - 1) + theirs**2 / (paper_n - 1))
    half = float(t.ppf(0.5 + level / 2, dof)) * math.sqrt(ours + theirs)
    return (mean - half, mean + half)


def judge_value(within_tolerance: bool | None, paper_in_ci: bool | None, explanation: str) -> str | None:
    """``reproduced`` if within the spec's tolerance or the paper's value lies in the
    comparison interval; else ``explained`` if the spec's entry carries ``explained:``
    evidence, else ``unexplained``. None when neither test applies (no tolerance and n < 2)."""
    if within_tolerance is None and paper_in_ci is None:
        return None
    if within_tolerance or paper_in_ci:
        return REPRODUCED
    return EXPLAINED if explanation else UNEXPLAINED


def _match_entries(agg: pd.DataFrame, spec: ExperimentSpec) -> list[int]:
    """Index of the first paper_values entry matching each row (-1: none)."""
    entries = spec.paper_values.get("values") or []
    ds_display = {d.key: d.display for d in spec.datasets}
    return [next((k for k, e in enumerate(entries) if _matches(e, row, ds_display)), -1)
            for _, row in agg.iterrows()]


def _row_verdict(row: pd.Series, tol: float | None, paper_n: int, evaluated: bool) -> dict[str, Any]:
    """The comparison columns of one row that has a paper value (see attach_paper_values)."""
    n = int(row["n"])
    low, high = comparison_interval(float(row["mean"]), float(row["std"]), n,
                                    float(row["paper_std"]), paper_n)
    out: dict[str, Any] = {"match_low": low, "match_high": high, "within_tolerance": None,
                           "paper_in_ci": None, "value_verdict": None}
    if not evaluated or not math.isfinite(float(row["mean"])):
        return out  # no verdict on smoke, timings, or an undefined mean of ours
    if tol is not None:
        out["within_tolerance"] = bool(abs(float(row["diff"])) <= tol)
    if n >= 2:
        out["paper_in_ci"] = bool(low <= float(row["paper_value"]) <= high)
    out["value_verdict"] = judge_value(out["within_tolerance"], out["paper_in_ci"], row["explanation"])
    return out


def is_timing(metric: Any) -> bool:
    """Whether ``metric`` is a wall-clock timing (``seconds_per_tree``, ``fit_seconds``...):
    a property of the machine, so a printed timing is shown beside ours but never judged."""
    return "seconds" in str(metric)


def _unjudged(row: pd.Series, diagnostic: bool) -> bool:
    """A diagnostic timing: shown beside the paper's value without a verdict. Other
    diagnostics (counts, fractions, smooth sensitivities the paper prints) are judged."""
    return diagnostic and is_timing(row.get("metric"))


def _verdict_text(row: pd.Series, scale: str, diagnostic: bool) -> str:
    """The ``verdict`` column: the marker, or why a shown paper value has none."""
    if pd.isna(row["paper_value"]):
        return ""
    if scale == "smoke":
        return SMOKE_VERDICT
    if _unjudged(row, diagnostic):
        return DIAGNOSTIC_VERDICT
    if row["value_verdict"] is None:
        return NO_MEAN_VERDICT if not math.isfinite(float(row["mean"])) else NO_TOLERANCE_VERDICT
    return verdict_mark(row["value_verdict"], row["within_tolerance"])


def attach_paper_values(agg: pd.DataFrame, spec: ExperimentSpec, scale: str = "paper") -> pd.DataFrame:
    """Add the paper's value beside ours and, per printed value, a verdict.

    Columns: ``paper_value``, ``paper_std``, ``paper_entry`` (index in the spec, -1: none),
    ``diff`` (ours - paper), ``ci_low``/``ci_high`` (our 95% interval of the mean,
    :func:`mean_interval`; NaN for n = 1), ``match_low``/``match_high`` (the interval the
    verdict uses, :func:`comparison_interval`), ``within_tolerance`` (|diff| <= the spec's
    absolute tolerance), ``paper_in_ci`` (the paper's value inside ``match_low..high``),
    ``value_verdict`` (:func:`judge_value`), ``explanation`` (the entry's ``explained:``
    text, "" if none) and ``verdict`` (the marker or why there is none).

    The paper's value is shown wherever an entry matches, but verdicts (and
    ``within_tolerance``, ``paper_in_ci``) are given only at paper scale and only for
    non-timings: smoke numbers come from subsampled data and few trees, and a timing
    (:func:`is_timing`) measures the machine, not the algorithm. Other diagnostics (exact
    counts and fractions of the run that the paper prints: empty-leaf fractions, smooth
    sensitivities, changed majorities) are judged like metrics.
    """
    agg = agg.copy()
    entries = spec.paper_values.get("values") or []
    tol = spec.paper_values.get("tolerance")
    tol = None if tol is None else float(tol)
    idx = _match_entries(agg, spec)
    hit = [entries[i] if i >= 0 else None for i in idx]
    agg["paper_value"] = pd.Series([np.nan if e is None else float(e["value"]) for e in hit],
                                   index=agg.index, dtype=float)
    agg["paper_std"] = pd.Series([np.nan if e is None or "std" not in e else float(e["std"]) for e in hit],
                                 index=agg.index, dtype=float)
    agg["paper_entry"] = pd.Series(idx, index=agg.index, dtype=int)
    agg["explanation"] = pd.Series([str((e or {}).get("explained") or "") for e in hit],
                                   index=agg.index, dtype=object)
    agg["diff"] = agg["mean"] - agg["paper_value"]
    ci = [mean_interval(float(m), float(s), int(k)) for m, s, k in zip(agg["mean"], agg["std"], agg["n"], strict=True)]
    agg["ci_low"] = pd.Series([c[0] for c in ci], index=agg.index, dtype=float)
    agg["ci_high"] = pd.Series([c[1] for c in ci], index=agg.index, dtype=float)
    diagnostic = agg["diagnostic"].astype(bool) if "diagnostic" in agg else pd.Series(False, index=agg.index)
    paper_n = paper_runs(spec)
    cols: dict[str, list] = {c: [] for c in ("match_low", "match_high", "within_tolerance",
                                             "paper_in_ci", "value_verdict")}
    for (_, row), diag in zip(agg.iterrows(), diagnostic, strict=True):
        if pd.isna(row["paper_value"]):
            got = {"match_low": np.nan, "match_high": np.nan, "within_tolerance": None,
                   "paper_in_ci": None, "value_verdict": None}
        else:
            got = _row_verdict(row, tol, paper_n,
                               evaluated=scale != "smoke" and not _unjudged(row, diag))
        for c, v in got.items():
            cols[c].append(v)
    for c in ("match_low", "match_high"):
        agg[c] = pd.Series(cols[c], index=agg.index, dtype=float)
    for c in ("within_tolerance", "paper_in_ci", "value_verdict"):
        agg[c] = pd.Series(cols[c], index=agg.index, dtype=object)
    agg["verdict"] = pd.Series([_verdict_text(row, scale, d) for (_, row), d in
                                zip(agg.iterrows(), diagnostic, strict=True)],
                               index=agg.index, dtype=object)
    return agg


@dataclass(frozen=True)
class ComparisonSummary:
    """How many of the paper's printed values were shown and compared (honest footers)."""

    printed: int  # values the spec copies from the paper
    matched: int  # of those, how many match one of our cached entries
    compared: int  # entries of ours given a verdict
    within: int  # of those, within the spec's tolerance
    diagnostic: int  # timings shown beside the paper's value without a verdict
    tolerance: float | None
    smoke: bool
    source: str
    reproduced: int = 0  # value_verdict counts (judge_value), over the judged entries
    explained: int = 0
    unexplained: int = 0

    @property
    def judged(self) -> int:
        """Entries given a value_verdict (by the tolerance, the interval or both)."""
        return self.reproduced + self.explained + self.unexplained

    def _uncounted_cell(self, counted: int, none_text: str) -> str | None:
        """A summary cell saying why there are no counts to show (nothing printed, smoke
        scale, or ``none_text`` when ``counted`` is 0); None when the counts apply."""
        if not self.printed:
            return "—"
        if self.smoke:
            return SMOKE_VERDICT
        if not counted:
            return none_text
        return None

    def verdict_cell(self) -> str:
        """A summary column: "reproduced/explained/unexplained" counts, or why none."""
        why_none = self._uncounted_cell(self.judged, "none judged")
        if why_none is not None:
            return why_none
        return f"{self.reproduced} / {self.explained} / {self.unexplained}"

    def cell(self) -> str:
        """The report summary's "paper values within tol." column."""
        why_none = self._uncounted_cell(self.compared, "none compared")
        if why_none is not None:
            return why_none
        return f"{self.within}/{self.compared}"

    def text(self) -> str:
        """A footer sentence with the counts (empty when the paper prints no values)."""
        if not self.printed:
            return ""
        shown = (f"{self.matched} of the {self.printed} values printed in {self.source} "
                 "match a cell of ours and are shown beside ours (never in place of ours)")
        if self.smoke:
            return f"{shown}; {SMOKE_VERDICT}: smoke scale is not the paper's setting."
        parts = [shown]
        if self.tolerance is None:
            parts.append("the spec states no tolerance (values are judged by the interval alone)")
        elif self.compared:
            parts.append(f"{self.within} of {self.compared} compared values are within the "
                         f"spec's tolerance ±{self.tolerance:g}")
        else:
            parts.append(f"no value is judged against the spec's tolerance ±{self.tolerance:g}")
        if self.judged:
            parts.append(f"of {self.judged} judged values, {self.reproduced} are reproduced "
                         f"(within the tolerance or the paper's value inside our "
                         f"{CI_LEVEL:.0%} interval), {self.explained} missed with an explanation "
                         f"and {self.unexplained} missed unexplained")
        if self.diagnostic:
            parts.append(f"{self.diagnostic} timings are shown without a verdict "
                         "(machine-dependent)")
        return "; ".join(parts) + "."


def comparison_summary(agg: pd.DataFrame, spec: ExperimentSpec, scale: str) -> ComparisonSummary:
    """Counts behind the footer of a table / the report's comparison (see the class)."""
    entries = spec.paper_values.get("values") or []
    tol = spec.paper_values.get("tolerance")
    has = agg["paper_value"].notna() if "paper_value" in agg else pd.Series(dtype=bool)
    matched = len(set(agg.loc[has, "paper_entry"])) if len(has) else 0
    verdict = agg["within_tolerance"].dropna() if "within_tolerance" in agg else pd.Series(dtype=object)
    diag = int((agg.loc[has, "verdict"] == DIAGNOSTIC_VERDICT).sum()) if len(has) else 0
    judged = (agg["value_verdict"].dropna() if "value_verdict" in agg else pd.Series(dtype=object)).tolist()
    return ComparisonSummary(
        printed=len(entries), matched=matched, compared=len(verdict),
        within=int(sum(bool(v) for v in verdict)), diagnostic=diag,
        tolerance=None if tol is None else float(tol), smoke=scale == "smoke",
        source=str(spec.paper_values.get("source", "the paper")),
        reproduced=judged.count(REPRODUCED), explained=judged.count(EXPLAINED),
        unexplained=judged.count(UNEXPLAINED),
    )
