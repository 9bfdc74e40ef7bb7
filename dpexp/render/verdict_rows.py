"""One artefact's verdict, counted: its printed values by status and kind (each printed
number once, calibration values apart, issue 41) and its claims, as the row of the report's
verdict table and of ``results/summary.json`` (issues 19 and 42)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dpexp.render.claims import ClaimResult
from dpexp.render.paper_values import (
    NOT_JUDGED,
    PLAUSIBLE,
    REFUTED,
    REPRODUCED,
    SHOWN,
    UNEXPLAINED,
)
from dpexp.render.section import Section

#: The titles of the papers the specs' ``paper`` ids name (as printed on each paper).
PAPER_TITLES = {
    "dpboost-li-2020": "Li et al. 2020, Privacy-Preserving Gradient Boosting Decision Trees",
    "fletcher-islam-2017": "Fletcher & Islam 2017, Differentially Private Random Decision "
                           "Forests using Smooth Sensitivity",
    "fletcher-islam-2017-with-2021-addendum": "Fletcher & Islam 2017 (with the 2021 addendum), "
                                              "Differentially Private Random Decision Forests "
                                              "using Smooth Sensitivity",
    "gaussian-bdt-peinemann-slides": "Peinemann (slides), Approximating Boosted Decision Trees "
                                     "with Differential Privacy",
    "inprivate-digging-zhao-2018": "Zhao et al. 2018, InPrivate Digging: Enabling Tree-based "
                                   "Distributed Data Mining with Differential Privacy",
    "xgboost-dp-shi-2021": "Shi et al. 2021, XGBoost Algorithm under Differential Privacy Protection",
    "leaderboard": "The DP tree-ensemble leaderboard (dpexp): the five papers' methods, their "
                   "peers and non-private references on the same folds",
}

#: The kinds of printed values in the order the report counts them (model performance first).
KINDS = ("performance", "diagnostic", "formula", "descriptor", "timing")


def paper_title(paper: str) -> str:
    """The paper's title for the report (its id when the id is not known here)."""
    return PAPER_TITLES.get(paper, paper)


def value_counts(sec: Section) -> dict[str, object]:
    """Printed values by status (each printed number once, calibration apart) and by kind."""
    out: dict[str, object] = {"values_reprinted": 0, "values_calibration": 0,
                              **{f"values_{k.replace(' ', '_')}": 0 for k in
                                 (REPRODUCED, SHOWN, REFUTED, PLAUSIBLE, UNEXPLAINED, NOT_JUDGED)},
                              "values_landed_post_hoc": 0, "values_by_kind": {}}
    if sec.scale is None or sec.scale == "smoke":
        return out
    by_kind: dict[str, dict[str, int]] = {}
    for s in sec.statuses:
        if s.reprint:
            out["values_reprinted"] += 1
            continue
        if s.calibration:
            out["values_calibration"] += 1
            continue
        key = f"values_{str(s.status).replace(' ', '_')}"
        out[key] += 1
        out["values_landed_post_hoc"] += s.landed_post_hoc
        kind = by_kind.setdefault(s.kind, {"printed": 0, **{str(x).replace(" ", "_"): 0 for x in
                                                            (REPRODUCED, SHOWN, REFUTED, PLAUSIBLE,
                                                             UNEXPLAINED, NOT_JUDGED)}})
        kind["printed"] += 1
        kind[str(s.status).replace(" ", "_")] += 1
    out["values_by_kind"] = {k: by_kind[k] for k in KINDS if k in by_kind}
    return out


def not_judged_reasons(sec: Section) -> str:
    """Why the counted printed values without a verdict have none: each reason once, with
    how many values it holds back ("4: the dataset is not available here")."""
    if sec.scale is None or sec.scale == "smoke":
        return ""
    reasons: dict[str, int] = {}
    for s in sec.statuses:
        if s.status == NOT_JUDGED and not s.reprint and not s.calibration:
            reasons[s.reason] = reasons.get(s.reason, 0) + 1
    return "; ".join(f"{n}: {why}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]))


def claim_explanation(c: ClaimResult) -> str:
    """shown | plausible of a failing claim's explanation ("" if none): a post-hoc one is
    plausible, never shown."""
    if c.status != "fail" or not c.explanation:
        return ""
    return PLAUSIBLE if c.post_hoc else c.explanation_status


#: The fields of ``results/summary.json``, in order (issues 19 and 41). Printed values are
#: counted once each (``values_reprinted`` repeat a number counted elsewhere), calibration
#: values apart; the rest by status: reproduced, shown (a committed experiment lands on
#: the paper's value), plausible (a cause whose numbers do not land), unexplained, not
#: judged; ``values_by_kind`` splits them by kind, model performance first.
SUMMARY_FIELDS = ("artefact", "paper", "title", "scale", "cells_done", "cells_total", "cells_grid",
                  "datasets_unavailable", "algorithms_unavailable", "values_total",
                  "values_reprinted", "values_calibration", "values_reproduced", "values_shown",
                  "values_refuted", "values_plausible", "values_landed_post_hoc", "values_unexplained",
                  "values_not_judged", "not_judged_why", "values_by_kind", "claims_pass", "claims_fail",
                  "claims_fail_shown", "claims_fail_plausible", "claims_fail_unexplained",
                  "claims_not_evaluated", "rows_stale")


@dataclass(frozen=True)
class VerdictRow:
    """One artefact's line of the verdict table and of ``summary.json``."""

    artefact: str  # the experiment id
    paper: str
    title: str  # the paper's title
    name: str  # the artefact as the paper names it ("Figure 2")
    scale: str | None
    cells_done: int
    cells_total: int  # the cells this machine can have ("here"; done ones included)
    datasets_unavailable: list[str]
    algorithms_unavailable: list[str]
    values_total: int
    values_reprinted: int
    values_calibration: int
    values_reproduced: int
    values_shown: int
    values_refuted: int
    values_plausible: int
    values_landed_post_hoc: int
    values_unexplained: int
    values_not_judged: int
    values_by_kind: dict
    claims_pass: int
    claims_fail: int
    claims_fail_shown: int
    claims_fail_plausible: int
    claims_fail_unexplained: int
    claims_not_evaluated: int
    not_dp_caveats: int
    rows_stale: int = 0
    cells_grid: int = 0  # every cell of the spec's grid (dpexp.experiments.completion)
    #: why printed values have no verdict, in a few words each ("" when all are judged)
    not_judged_why: str = ""
    problem: str = ""  # the spec's error, when it cannot be expanded or rendered

    @property
    def performance(self) -> dict:
        """The model-performance counts (zeros when none)."""
        return self.values_by_kind.get("performance", {})

    def summary(self) -> dict:
        """The row as ``summary.json`` has it (:data:`SUMMARY_FIELDS`)."""
        d = asdict(self)
        return {k: d[k] for k in SUMMARY_FIELDS}


def verdict_row(sec: Section) -> VerdictRow:
    claims = [c.status for c in sec.claims] if sec.scale else []
    fails = [c for c in sec.claims if c.status == "fail"] if sec.scale else []
    why = [claim_explanation(c) for c in fails]
    return VerdictRow(
        artefact=sec.spec.id, paper=sec.spec.paper, title=paper_title(sec.spec.paper),
        name=sec.spec.artefact, scale=sec.scale, cells_done=sec.n_done, cells_total=sec.cells_total,
        datasets_unavailable=list(sec.unavailable),
        algorithms_unavailable=list(sec.algorithms_unavailable),
        values_total=len(sec.spec.paper_values.get("values") or []), **value_counts(sec),
        claims_pass=claims.count("pass"), claims_fail=len(fails),
        claims_fail_shown=why.count(SHOWN), claims_fail_plausible=why.count(PLAUSIBLE),
        claims_fail_unexplained=why.count(""),
        claims_not_evaluated=len(sec.claims) - claims.count("pass") - len(fails),
        not_dp_caveats=len(sec.not_dp), rows_stale=sec.rows_stale, problem=sec.problem,
        cells_grid=sec.completion.grid, not_judged_why=not_judged_reasons(sec),
    )


def summary_rows(sections: list[Section]) -> list[dict]:
    """``results/summary.json``: the verdict table's rows, machine-readable."""
    return [verdict_row(s).summary() for s in sections]

def merged_kinds(rows: list[VerdictRow]) -> dict:
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        for kind, counts in r.values_by_kind.items():
            acc = out.setdefault(kind, {})
            for k, v in counts.items():
                acc[k] = acc.get(k, 0) + v
    return out


def total_row(rows: list[VerdictRow], name: str) -> VerdictRow:
    """The sum of ``rows`` (counts, cells, unavailable names once each) as one row."""
    first = rows[0]
    sums = {f: sum(getattr(r, f) for r in rows) for f in
            ("cells_done", "cells_total", "cells_grid", "values_total", "values_reprinted", "values_calibration",
             "values_reproduced", "values_shown", "values_refuted", "values_plausible",
             "values_landed_post_hoc", "values_unexplained", "values_not_judged", "claims_pass",
             "claims_fail", "claims_fail_shown", "claims_fail_plausible", "claims_fail_unexplained",
             "claims_not_evaluated", "not_dp_caveats")}
    scales = {r.scale for r in rows}
    return VerdictRow(
        artefact="", paper=first.paper, title=first.title, name=name,
        scale="paper" if "paper" in scales else next(iter(scales - {None}), None),
        datasets_unavailable=list(dict.fromkeys(d for r in rows for d in r.datasets_unavailable)),
        algorithms_unavailable=list(dict.fromkeys(a for r in rows for a in r.algorithms_unavailable)),
        values_by_kind=merged_kinds(rows), **sums)

