"""Count the paper's printed values by status: each printed number once (a reprint at its
original), calibration values apart, a declared ``shown`` explanation checked (issue 41)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from dpexp.experiments.spec import ExperimentSpec
from dpexp.render.equivalence import difference_interval, equal_at_precision, equivalent, paper_runs
from dpexp.render.paper_values import (
    NOT_JUDGED,
    PLAUSIBLE,
    REFUTED,
    REPRODUCED,
    SHOWN,
    SMOKE_VERDICT,
    UNEXPLAINED,
    entry_tolerance,
    matches_entry,
    value_kind,
)


@dataclass(frozen=True)
class ValueStatus:
    """How one printed value of a spec is counted (issue 41).

    ``status`` is one of :data:`dpexp.render.paper_values.STATUSES` (None at smoke scale); ``reason`` says why a
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
    # rows as dicts (iterrows builds a Series a row: most of the report's judging)
    rows = agg[[matches_entry(cells, row, ds_display, by_name=True) for row in agg.to_dict("records")]]
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
