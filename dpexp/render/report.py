"""``dpexp report``: what reproduces, at a glance, then every artefact ours beside the paper's.

Renders from the cache and the committed results alone (no recomputation) into
``results/REPORT.md``, a self-contained ``results/report.html`` (figures embedded as base64
PNG, Markdown rendered by markdown-it-py, :mod:`dpexp.render.html`) and
``results/summary.json`` (issue 19).

The report's first line is the model-performance count, then the counts per kind of
printed value (issue 41: each printed number counted once, calibration values apart,
explanations split into shown and plausible, :func:`judge_sections`). Then one verdict
table: per paper and artefact, the scale, cells done of the cells of the datasets that
can be had, the paper's printed values (reprints / calibration, model performance
reproduced, reproduced / shown / plausible / unexplained / not judged), the claims
passing / failing (by how the failure is explained) / not evaluated, the datasets this
machine cannot load and the not-DP caveats, a totals row per paper and one over every
paper (issue 42); the HTML colours it and links each artefact to its section
(``#<experiment id>``). ``summary.json`` is written from the same rows.
Each section then shows our figure, the comparison with the paper's printed values (ours
± std, our 95% interval, the paper's value, the kind's rule, the 90% interval of the
difference, the status and, for an explained miss, the spec's evidence), the spec's
Wilcoxon tests where it asks for them (Fletcher & Islam,
Section 5.2), the claims with their evidence, the privacy caveats (collapsed in a
``<details>`` block under a one-line summary, right under the section's counts; the figure's
caption carries the feature-domain source) and the command that regenerates it. At smoke scale no value is compared and no claim is evaluated: a
pipeline check is never a pass. The environment comes last, as an appendix: the revision
(dirty only for changed code, not for the results and figures the report is rendered from
and into) and no absolute path. Spec text is
escaped, so ``g*_l`` stays literal.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from dpexp.errors import DpexpError
from dpexp.experiments.cache import atomic_write_text
from dpexp.experiments.noise import NO_NOISE, SEEDED_NOISE
from dpexp.experiments.schema import CELL_COLUMNS
from dpexp.experiments.spec import DatasetRef, ExperimentSpec, all_specs
from dpexp.experiments.stale import stale_rows, stale_summary
from dpexp.render.aggregate import (
    NOT_JUDGED,
    PLAUSIBLE,
    REFUTED,
    REPRODUCED,
    SHOWN,
    UNEXPLAINED,
    ComparisonSummary,
    ValueStatus,
    lands,
    pooled_cells,
    summarise_statuses,
    value_statuses,
)
from dpexp.render.claims import NOT_EVALUATED_SMOKE, ClaimResult, check_claims
from dpexp.render.frame import (
    NOT_DP_TITLE,
    not_dp_caveats,
    not_dp_mask,
    procedure_mask,
    replicate_statement,
)
from dpexp.render.html import (
    BAD,
    GOOD,
    NONE,
    TOTAL,
    WARN,
    Block,
    Cell,
    details_block,
    markdown_of,
    page,
    verdict_table,
)
from dpexp.render.markup import SMOKE_LABEL, caveat_box, md_code, md_escape
from dpexp.render.numbers import plain
from dpexp.render.render import NothingCachedError, render_frame

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
}

#: The kinds of printed values in the order the report counts them (model performance first).
KINDS = ("performance", "diagnostic", "formula", "descriptor", "timing")


def paper_title(paper: str) -> str:
    """The paper's title for the report (its id when the id is not known here)."""
    return PAPER_TITLES.get(paper, paper)


class Availability:
    """Whether a dataset can be had on this machine, asked once per name per report
    (:func:`dpexp.experiments.plan.dataset_available` reads the dataset registry each time)."""

    def __init__(self) -> None:
        self._known: dict[str, bool] = {}

    def __call__(self, name: str) -> bool:
        if name not in self._known:
            from dpexp.experiments.plan import dataset_available

            self._known[name] = dataset_available(name)
        return self._known[name]


@dataclass
class Section:
    spec: ExperimentSpec
    scale: str | None
    n_cells: int = 0
    n_missing: int = 0
    cells_total: int = 0  # cells of the datasets that can be had (done ones included)
    unavailable: list[str] = field(default_factory=list)  # dataset names, no result, not loadable
    #: series whose optional package does not import here, no result: "label (package)"
    algorithms_unavailable: list[str] = field(default_factory=list)
    comparison: pd.DataFrame | None = None
    agg: pd.DataFrame | None = None  # every aggregated row (a shown explanation's cells)
    summary: ComparisonSummary | None = None
    statuses: list[ValueStatus] = field(default_factory=list)  # one per printed value
    claims: list[ClaimResult] = field(default_factory=list)
    figure: Path | None = None
    significance: str = ""
    seeds: list[int] = field(default_factory=list)
    not_dp: list[str] = field(default_factory=list)  # plain-text caveat lines
    domain: str = ""
    replicates: str = ""
    display: dict[str, str] = field(default_factory=dict)
    datasets_done: list[str] = field(default_factory=list)  # dataset keys with results
    problem: str = ""  # why the spec's grid could not be expanded ("" if it could)
    noise: list[str] = field(default_factory=list)  # how its rows' noise was drawn
    rows_stale: int = 0  # rows the current code would compute differently (stale.py)
    stale: str = ""  # the one line that says so ("" when none)
    not_dp_cells: int = 0  # budgeted cells without a DP guarantee (the caveats' summary)
    not_dp_kinds: list[str] = field(default_factory=list)  # why, in a few words each

    @property
    def n_done(self) -> int:
        return self.n_cells - self.n_missing if self.scale else 0


def _scales(results_dir: Path, spec: ExperimentSpec, wanted: str | None) -> list[str]:
    """Scales to try, best first: paper where cached, else smoke (or just ``wanted``)."""
    from dpexp.experiments.committed import table_path

    scales = [wanted] if wanted else ["paper", "smoke"]
    return [s for s in scales if (Path(results_dir) / "cache" / spec.cells_id / s).is_dir()
            or table_path(results_dir, spec.cells_id, s).exists()]


def _names(datasets: list[DatasetRef]) -> list[str]:
    return list(dict.fromkeys(d.name for d in datasets))


def build_section(spec: ExperimentSpec, results_dir: Path, figures_dir: Path, scale: str | None,
                  available: Availability | None = None) -> Section:
    """Render ``spec`` at the best cached scale and collect what the report shows of it."""
    from dpexp.experiments.cells import expand
    from dpexp.experiments.results import cached_results

    available = available or Availability()
    problem = ""
    for s in _scales(results_dir, spec, scale):
        at = spec.at_scale(s)
        try:
            res = cached_results(at, s, results_dir, current_only=True)
            rendered = render_frame(at, s, res.frame, results_dir, figures_dir,
                                    missing=len(res.missing), done=res.n_cells)
        except NothingCachedError:
            continue
        except DpexpError as exc:  # one broken spec must not hide the others' verdicts
            problem = str(exc)
            break
        sec = _section(spec, s, rendered)
        # cells of the spec's grid only: a peer's column or an override run is shown but
        # is neither done nor to do
        sec.n_cells = sum(len(expand(at, s, seed)) for seed in res.seeds)
        sec.n_missing = len(res.missing)
        done = set(sec.datasets_done)
        lacking = _missing_packages(at, {c.label for c in res.missing})
        sec.algorithms_unavailable = [f"{label} (needs {pkg})" for label, pkg in lacking.items()]
        have = [c for c in res.missing if c.label not in lacking
                and (c.dataset.key in done or available(c.dataset.name))]
        sec.cells_total = sec.n_done + len(have)
        sec.unavailable = [n for n in _names(at.datasets) if not available(n)
                           and not any(k.split("[")[0] == n for k in done)]
        return sec
    # Not run: what running it would take, at the scale asked for (paper by default).
    at = spec.at_scale(scale or "paper")
    sec = Section(spec, None, problem=problem)
    try:
        cells = expand(at, scale or "paper", 0)
        lacking = _missing_packages(at, {c.label for c in cells})
        sec.algorithms_unavailable = [f"{label} (needs {pkg})" for label, pkg in lacking.items()]
        sec.cells_total = sum(available(c.dataset.name) and c.label not in lacking for c in cells)
    except DpexpError as exc:
        sec.problem = sec.problem or str(exc)
    sec.unavailable = [n for n in _names(at.datasets) if not available(n)]
    return sec


def _missing_packages(spec: ExperimentSpec, labels: set[str]) -> dict[str, str]:
    """Series of ``labels`` whose algorithm needs an optional package that does not import
    here (label -> package): ``dpexp run`` skips them, so their cells are not counted."""
    from dpexp.experiments.runner import optional_unavailable
    from dpexp.registry import get_algorithm

    out = {}
    for a in spec.algorithms:
        if a.label in labels and a.name and get_algorithm(a.name).requires:
            why = optional_unavailable(get_algorithm(a.name).requires)
            if why:
                out[a.label] = why.split(" ")[0]
    return out


def _section(spec: ExperimentSpec, scale: str, rendered) -> Section:
    from dpexp.render.significance import significance_markdown

    frame, agg, ctx = rendered.frame, rendered.agg, rendered.context
    sec = Section(spec, scale, n_cells=rendered.total_cells, n_missing=rendered.missing_cells)
    sec.seeds = sorted(int(x) for x in frame["seed"].dropna().unique())
    sec.datasets_done = sorted(str(d) for d in frame["dataset"].dropna().unique())
    sec.comparison = agg[agg["paper_value"].notna()]
    sec.agg = agg
    sec.claims = check_claims(spec.claims, agg, ctx.tasks, scale)
    sec.not_dp = not_dp_caveats(frame, ctx)
    sec.not_dp_cells, sec.not_dp_kinds = not_dp_cell_count(frame)
    sec.domain = ctx.note
    sec.replicates = replicate_statement(frame, agg["n"])
    sec.noise = sorted(set(frame["noise"]) - {""}) if "noise" in frame else []
    sec.rows_stale, sec.stale = int(stale_rows(frame).sum()), stale_summary(frame)
    sec.display = ctx.display
    sec.significance = significance_markdown(spec, frame, scale, ctx.display)
    sec.figure = next((f for f in rendered.files if f.suffix == ".png"), None)
    return sec


def not_dp_cell_count(frame: pd.DataFrame) -> tuple[int, list[str]]:
    """How many cells run with a budget give no DP guarantee, and why in a few words
    ("marked not DP by the run", "domains from data"): the caveats' one-line summary."""
    budgeted = np.isfinite(frame["epsilon"].astype(float)) & ~procedure_mask(frame)
    marked = not_dp_mask(frame)
    from_data = (budgeted & ~marked & (frame["domain_source"] != "")
                 & ~frame["domain_source"].str.startswith("declared"))
    keys = [c for c in CELL_COLUMNS if c in frame]
    n = int(frame[marked | from_data].groupby(keys, dropna=False).ngroups) if keys else 0
    kinds = [k for k, m in (("marked not DP by the run", marked), ("domains from data", from_data))
             if m.any()]
    return n, kinds


# -- per-value verdicts ---------------------------------------------------------------------

def shown_checker(sections: list[Section]):
    """A check of declared ``shown`` explanations against the named experiment's cells in
    this report (:func:`dpexp.render.aggregate.lands`, the rule of a reproduction)."""
    by_id = {s.spec.id: s for s in sections}

    def check(spec: ExperimentSpec, entry: dict) -> tuple[bool, str]:
        shown = entry["shown"]
        other = by_id.get(str(shown["experiment"]))
        if other is None or other.agg is None or other.scale != "paper":
            return False, f"experiment {shown['experiment']} has no paper-scale results here"
        cells = ", ".join(f"{k} {v}" for k, v in shown["cells"].items())
        stats = pooled_cells(other.agg, other.spec, dict(shown["cells"]))
        if stats is None:
            return False, f"no cell of {shown['experiment']} matches ({cells})"
        ok, detail = lands(entry, spec, stats)
        return ok, f"{shown['experiment']} ({cells}): {detail}"

    return check


def judge_sections(sections: list[Section]) -> None:
    """Every section's per-value statuses and summary, once all sections are built (a shown
    explanation is checked against another section's cells)."""
    check = shown_checker(sections)
    _check_claims_shown(sections)
    for sec in sections:
        if sec.scale is None or sec.agg is None:
            continue
        sec.statuses = value_statuses(sec.agg, sec.spec, sec.scale, tuple(sec.unavailable), check)
        entries = sec.spec.paper_values.get("values") or []
        has = sec.agg["paper_value"].notna()
        sec.summary = summarise_statuses(sec.statuses, len(entries),
                                         len(set(sec.agg.loc[has, "paper_entry"])),
                                         sec.scale == "smoke",
                                         str(sec.spec.paper_values.get("source", "the paper")))


def _check_claims_shown(sections: list[Section]) -> None:
    """A claim explanation declared shown counts as shown only when the experiment it names
    has paper-scale results in this report; otherwise it is plausible, and says why."""
    done = {s.spec.id for s in sections if s.scale == "paper"}
    for sec in sections:
        sec.claims = [c if c.explanation_status != SHOWN or c.shown_by in done else
                      replace(c, explanation_status=PLAUSIBLE,
                              explanation=f"{c.explanation} [declared shown by {c.shown_by}, "
                                          "which has no paper-scale results here]")
                      for c in sec.claims]


def _status_text(sec: Section, entry: int) -> ValueStatus | None:
    return next((s for s in sec.statuses if s.entry == entry), None)


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


def _claim_explanation(c: ClaimResult) -> str:
    """shown | plausible of a failing claim's explanation ("" if none): a post-hoc one is
    plausible, never shown."""
    if c.status != "fail" or not c.explanation:
        return ""
    return PLAUSIBLE if c.post_hoc else c.explanation_status


# -- the verdict table and summary.json ------------------------------------------------------

#: The fields of ``results/summary.json``, in order (issues 19 and 41). Printed values are
#: counted once each (``values_reprinted`` repeat a number counted elsewhere), calibration
#: values apart; the rest by status: reproduced, shown (a committed experiment lands on
#: the paper's value), plausible (a cause whose numbers do not land), unexplained, not
#: judged; ``values_by_kind`` splits them by kind, model performance first.
SUMMARY_FIELDS = ("artefact", "paper", "title", "scale", "cells_done", "cells_total",
                  "datasets_unavailable", "algorithms_unavailable", "values_total",
                  "values_reprinted", "values_calibration", "values_reproduced", "values_shown",
                  "values_refuted", "values_plausible", "values_landed_post_hoc", "values_unexplained",
                  "values_not_judged", "values_by_kind", "claims_pass", "claims_fail",
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
    cells_total: int
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
    why = [_claim_explanation(c) for c in fails]
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
    )


def summary_rows(sections: list[Section]) -> list[dict]:
    """``results/summary.json``: the verdict table's rows, machine-readable."""
    return [verdict_row(s).summary() for s in sections]


_HEADER = [("artefact", ["artefact"]), ("scale", ["scale"]), ("cells", ["done / total"]),
           ("printed values (each number counted once)",
            ["printed", "reprints / calibration", "model performance reproduced",
             "reproduced", "shown", "refuted", "plausible", "unexplained", "not judged"]),
           ("claims", ["pass", "fail (shown / plausible / unexplained)", "not evaluated"]),
           ("unavailable here", ["unavailable here"]), ("not-DP caveats", ["not-DP caveats"])]

#: How many value and claim cells follow the "printed" one (grey when not run).
_VALUE_CELLS, _CLAIM_CELLS = 8, 3

#: The value columns' text at smoke scale (nothing is compared there).
SMOKE_VALUES = "not compared"


def _count(n: int, cls: str) -> Cell:
    return Cell(str(n), cls if n else None, numeric=True)


def verdict_cells(row: VerdictRow) -> list[Cell]:
    """The verdict table's cells of ``row``, with their colour (see dpexp.render.html)."""
    name = Cell(f"{row.name} ({row.artefact})", link=row.artefact)
    missing = [*row.datasets_unavailable, *row.algorithms_unavailable]
    unavailable = Cell(", ".join(missing) or "—", NONE if missing else None)
    cells = f"{row.cells_done} / {row.cells_total}"
    if row.scale is None:
        grey = [Cell("—", NONE)] * (_VALUE_CELLS + _CLAIM_CELLS)
        state = Cell("spec error", BAD) if row.problem else Cell("not run", NONE)
        return [name, state, Cell(cells, NONE, numeric=True),
                Cell(str(row.values_total), NONE, numeric=True), *grey, unavailable,
                Cell("—", NONE)]
    smoke = row.scale == "smoke"
    return [name, Cell(SMOKE_LABEL if smoke else f"{row.scale}", NONE if smoke else None),
            Cell(cells, numeric=True), Cell(str(row.values_total), numeric=True),
            *_value_cells(row), *_claim_cells(row), unavailable,
            Cell(str(row.not_dp_caveats) if row.not_dp_caveats else "—", WARN if row.not_dp_caveats else None)]


def _performance_cell(row: VerdictRow) -> Cell:
    """"R of N": model-performance values reproduced of those counted (once, calibration apart)."""
    perf = row.performance
    if not perf.get("printed"):
        return Cell("—")
    good = perf.get("reproduced", 0)
    return Cell(f"{good} of {perf['printed']}", GOOD if good == perf["printed"] else BAD if not good else WARN,
                numeric=True)


def _value_cells(row: VerdictRow) -> list[Cell]:
    """Reprints / calibration, model performance, then the statuses of the counted values:
    "—" when the paper prints none, grey at smoke."""
    if not row.values_total:
        return [Cell("—")] * _VALUE_CELLS
    if row.scale == "smoke":
        return [Cell(SMOKE_VALUES, NONE)] * _VALUE_CELLS
    plausible = str(row.values_plausible) + (f" ({row.values_landed_post_hoc} land post hoc)"
                                             if row.values_landed_post_hoc else "")
    return [Cell(f"{row.values_reprinted} / {row.values_calibration}", NONE, numeric=True),
            _performance_cell(row), _count(row.values_reproduced, GOOD),
            _count(row.values_shown, WARN), _count(row.values_refuted, WARN),
            Cell(plausible, BAD if row.values_plausible else None, numeric=True),
            _count(row.values_unexplained, BAD),
            _count(row.values_not_judged, NONE)]


def _claim_cells(row: VerdictRow) -> list[Cell]:
    """Pass / fail (split by how the failure is explained) / not evaluated; "—" for none."""
    if not row.claims_pass + row.claims_fail + row.claims_not_evaluated:
        return [Cell("—")] * _CLAIM_CELLS
    fail = str(row.claims_fail) + (f" ({row.claims_fail_shown} / {row.claims_fail_plausible} / "
                                   f"{row.claims_fail_unexplained})" if row.claims_fail else "")
    fail_cls = None if not row.claims_fail else WARN if row.claims_fail == row.claims_fail_shown else BAD
    return [_count(row.claims_pass, GOOD), Cell(fail, fail_cls, numeric=True),
            _count(row.claims_not_evaluated, NONE)]


def _grouped(rows: list[VerdictRow]) -> list[tuple[str, list[VerdictRow]]]:
    groups: dict[str, list[VerdictRow]] = {}
    for r in rows:
        groups.setdefault(r.paper, []).append(r)
    return [(f"{paper_title(p)} ({p})", rs) for p, rs in groups.items()]


def _md_cell(c: Cell) -> str:
    text = md_escape(c.text)
    return f"[{text}](#{c.link})" if c.link else text


def _merged_kinds(rows: list[VerdictRow]) -> dict:
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
            ("cells_done", "cells_total", "values_total", "values_reprinted", "values_calibration",
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
        values_by_kind=_merged_kinds(rows), **sums)


def total_cells(rows: list[VerdictRow], name: str) -> list[Cell]:
    """A totals row of the verdict table: ``name``, the number of artefacts, the sums."""
    cells = verdict_cells(total_row(rows, name))
    run = sum(r.scale is not None for r in rows)
    return [Cell(name), Cell(f"{run} of {len(rows)} run", numeric=True), *cells[2:]]


def verdict_block(rows: list[VerdictRow]) -> Block:
    """The verdict table: Markdown (a bold row per paper) and coloured HTML, same rows; a
    totals row closes each paper, and one over every paper closes the table."""
    cols = [c for _, cs in _HEADER for c in cs]
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    groups = []
    for title, rs in _grouped(rows):
        md.append(f"| **{md_escape(title)}** |" + " |" * (len(cols) - 1))
        cells = [verdict_cells(r) for r in rs] + [total_cells(rs, f"{TOTAL}, {rs[0].paper}")]
        md += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in cells[:-1]]
        md.append("| " + " | ".join(f"**{_md_cell(c)}**" for c in cells[-1]) + " |")
        groups.append((title, cells))
    if rows:
        overall = total_cells(rows, f"{TOTAL}, all papers")
        md.append("| " + " | ".join(f"**{_md_cell(c)}**" for c in overall) + " |")
        groups.append(("All papers", [overall]))
    return Block("\n".join(md), html=verdict_table(_HEADER, groups))


# -- the per-artefact sections ---------------------------------------------------------------

def _num(x: object, fmt: str = ".4g") -> str:
    """A number of the report; a ``g`` format in positional notation (1,000,000 rather
    than 1e+06, :func:`dpexp.render.numbers.plain`)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "—"
    if math.isnan(v):
        return "—"
    m = re.fullmatch(r"(\+?)\.(\d+)g", fmt)
    return plain(v, int(m[2]), sign=bool(m[1])) if m else format(v, fmt)


def _flags(status: ValueStatus | None, row: pd.Series) -> str:
    """" [calibration]" / " [reprint of ...]" of a printed value."""
    out = ""
    if row.get("calibration"):
        out += " [calibration: counted apart]"
    if row.get("reprint_of"):
        out += f" [reprint of {row['reprint_of']}: counted there]"
    return out


def _verdict_text(row: pd.Series, sec: Section, notes: list[str]) -> str:
    """The comparison table's verdict cell: the value's status (an explanation points to
    its note), or why it has none, with its calibration / reprint flags."""
    status = _status_text(sec, int(row.get("paper_entry", -1)))
    flags = _flags(status, row).strip()
    flags = f" {md_escape(flags)}" if flags else ""
    if status is None or status.status is None:
        text = str(row.get("verdict") or "")
        return (md_escape(text) if text and not text.startswith(("✓", "✗")) else "—") + flags
    if status.status in (SHOWN, PLAUSIBLE):
        evidence = str(row.get("explanation") or "")
        if status.reason:
            evidence += f" [{status.reason}]"
        if status.post_hoc:
            evidence += f" Post hoc: {row.get('post_hoc')}"
        notes.append(evidence)
        post = ", post hoc" if status.post_hoc else ""
        return f"{status.status}{post} (note {len(notes)})" + flags
    if status.status == REFUTED:
        notes.append(f"Refuted by the paper's own numbers: {status.reason}")
        return f"refuted (note {len(notes)})" + flags
    if status.status == NOT_JUDGED:
        return f"not judged: {md_escape(status.reason)}" + flags
    return str(status.status) + flags


def _rule_text(r: pd.Series) -> str:
    """The rule column: the kind and, for an equivalence test, the tolerance."""
    kind = str(r.get("paper_kind") or "")
    tol = r.get("tolerance")
    if kind in ("performance", "diagnostic") and _num(tol) != "—":
        return f"{kind}, ±{_num(tol, 'g')}"
    return {"descriptor": "descriptor, equal", "formula": "formula, equal"}.get(kind, kind)


def _comparison_md(sec: Section) -> str:
    """Ours (± std, n, 95% interval) beside the paper's printed values, with verdicts."""
    c = sec.comparison
    if not sec.spec.paper_values.get("values"):
        return "The paper prints no values for this artefact that the spec records."
    footer = md_escape(sec.summary.text()) if sec.summary else ""
    reason = sec.spec.paper_values.get("tolerance_reason")
    if reason:
        footer = f"{footer} Tolerance: {md_escape(str(reason))}".strip()
    if c is None or c.empty:
        return footer
    lines = ["| dataset | algorithm | ε | metric | ours (mean ± std) | n | our 95% interval | paper | "
             "diff | rule | 90% interval of diff | verdict |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    notes: list[str] = []
    for _, r in c.iterrows():
        eps = "no noise" if math.isinf(float(r["epsilon"])) else f"{float(r['epsilon']):g}"
        step = "" if pd.isna(r["step"]) else f" @ {int(r['step'])}"
        ds = sec.display.get(r["dataset"], r["dataset"])
        lo, hi = r.get("ci_low"), r.get("ci_high")
        interval = "—" if _num(lo) == "—" else f"[{_num(lo)}, {_num(hi)}]"
        elo, ehi = r.get("eq_low"), r.get("eq_high")
        eq = "—" if _num(elo) == "—" else f"[{_num(elo, '+.3g')}, {_num(ehi, '+.3g')}]"
        paper = _num(r["paper_value"], ".6g") + (f" ± {_num(r['paper_std'], '.2g')}"
                                          if _num(r.get("paper_std")) != "—" else "")
        lines.append(f"| {md_escape(ds)} | {md_escape(r['display'])} | {eps} | "
                     f"{md_escape(r['metric'])}{step} | {_num(r['mean'], '.6g')} ± {_num(r['std'], '.2g')} | "
                     f"{int(r['n'])} | {interval} | {paper} | {_num(r['diff'], '+.3g')} | "
                     f"{md_escape(_rule_text(r))} | {eq} | {_verdict_text(r, sec, notes)} |")
    out = [*lines, "", footer]
    unmatched = [s for s in sec.statuses if s.status == NOT_JUDGED
                 and s.entry not in set(c["paper_entry"].astype(int))]
    if unmatched:
        reasons = sorted({s.reason for s in unmatched})
        out += ["", f"{len(unmatched)} printed values have no row of ours and are not judged: "
                f"{md_escape('; '.join(reasons))}."]
    if notes:
        out += ["", *[f"- *Note {i}:* {md_escape(t)}" for i, t in enumerate(notes, 1)]]
    return "\n".join(out)


_ICON = {"pass": "✓ pass", "fail": "✗ fail", "not checked": "· not checked", "no data": "? no data",
         NOT_EVALUATED_SMOKE: "· not evaluated (smoke)"}


def _claim_md(c: ClaimResult) -> str:
    status = _claim_explanation(c)
    post = ", post hoc" if status and c.post_hoc else ""
    icon = f"✗ fail (explained: {status}{post})" if status else _ICON.get(c.status, c.status)
    line = f"- **{icon}** — {md_escape(c.text)}: {md_escape(c.detail)}"
    if not status:
        return line
    shown = f" (shown by {c.shown_by})" if c.shown_by else ""
    line += f" *Explained{shown}:* {md_escape(c.explanation)}"
    return line + (f" *Post hoc:* {md_escape(c.post_hoc)}" if c.post_hoc else "")


def _scale_text(scale: str) -> str:
    return SMOKE_LABEL if scale == "smoke" else f"{scale} scale"


def _commands(sec: Section) -> list[str]:
    """The exact commands that regenerate the artefact (at paper scale, and at the smoke
    scale of a smoke section)."""
    seed = f" --seed {sec.seeds[0]}" if len(sec.seeds) == 1 and sec.seeds[0] != 0 else ""
    scales = ["paper"] + (["smoke"] if sec.scale == "smoke" else [])
    return [f"{md_code(f'dpexp run {sec.spec.id} --scale {s}{seed}')} then "
            f"{md_code(f'dpexp render {sec.spec.id} --scale {s}')}" for s in scales]


def _unavailable_md(sec: Section) -> list[str]:
    md = []
    if sec.algorithms_unavailable:
        md += [f"**Series not run on this machine:** {md_escape(', '.join(sec.algorithms_unavailable))} "
               "(the optional package does not import here; their cells are not counted in the "
               "total; install it, e.g. `pip install \"dpexp[peers]\"`, then the command below).", ""]
    if not sec.unavailable:
        return md
    fetch = ", ".join(md_code(f"dpexp datasets download {n}") for n in sec.unavailable)
    return md + [f"**Datasets not available on this machine:** {md_escape(', '.join(sec.unavailable))} "
            f"(their cells are not counted in the total; {fetch}, or `dpexp datasets info` for "
            "user-supplied ones, then the command below).", ""]


def _caveats_md(sec: Section) -> list[str]:
    md: list[str] = []
    if sec.not_dp:
        md += caveat_box(NOT_DP_TITLE, [md_escape(x) for x in sec.not_dp])
    if sec.spec.privacy_caveats:
        md += caveat_box("Privacy caveats (from the spec):", [md_escape(c) for c in sec.spec.privacy_caveats])
    return md


def caveats_summary(sec: Section) -> str:
    """The one line a collapsed caveat block shows, e.g. "1,058 cells not DP: domains from
    data — details"."""
    parts = []
    if sec.not_dp:
        n = sec.not_dp_cells or len(sec.not_dp)
        what = ", ".join(sec.not_dp_kinds) or "see the list"
        parts.append(f"{n:,} {'cell' if n == 1 else 'cells'} not DP: {what}")
    if sec.spec.privacy_caveats:
        n = len(sec.spec.privacy_caveats)
        parts.append(f"{n} privacy {'caveat' if n == 1 else 'caveats'} from the spec")
    return "; ".join(parts) + " — details"


def caveat_blocks(sec: Section, results_dir: Path) -> list[Block]:
    """The artefact's privacy caveats, collapsed under their one-line summary (none: [])."""
    md = _caveats_md(sec)
    return [details_block(caveats_summary(sec), "\n".join(md), results_dir)] if md else []


def section_blocks(s: Section, results_dir: Path) -> list[Block]:
    """One artefact: its heading and counts (carrying the anchor), its caveats collapsed,
    then its figure with the caption under it, the comparison and the claims."""
    head, body = _section_md(s, results_dir)
    return [Block("\n".join(head), anchor=s.spec.id), *caveat_blocks(s, results_dir),
            *([Block("\n".join(body))] if body else [])]


def _section_md(s: Section, results_dir: Path) -> tuple[list[str], list[str]]:
    """The Markdown before the caveats and after them."""
    md = [f"### {md_escape(s.spec.artefact)} — {md_code(s.spec.id)}"
          + (f" ({_scale_text(s.scale)})" if s.scale else " (not run)"), "", md_escape(s.spec.caption), ""]
    if s.spec.notes:
        md += [f"*Notes:* {md_escape(s.spec.notes)}", ""]
    md += _unavailable_md(s)
    if s.problem:
        md += [f"**The spec cannot be run as it stands:** {md_escape(s.problem)}", ""]
    if s.scale is None:
        return md, ["**Regenerate:** " + "; ".join(_commands(s)) + ".", ""]
    if s.scale == "smoke":
        md += [f"**Scale:** {SMOKE_LABEL}. A pipeline check on subsampled data; claims are not "
               "evaluated and no value is compared with the paper's.", ""]
    md += [f"**Cells:** {s.n_done} of {s.cells_total} done (the cells of the datasets that can be had). "
           f"**Aggregation:** {s.replicates}.", ""]
    if s.stale:
        md += [f"**Stale:** {s.stale}.", ""]  # our own text (a command in backticks)
    if s.domain and s.figure is None:
        md += [f"**{md_escape(s.domain)}**", ""]
    head, md = md, []
    if s.figure is not None:  # the caveats are the figure's caption, never its title
        md += [f"![{md_escape(s.spec.id)}]({os.path.relpath(s.figure, results_dir)})", ""]
        if s.domain:
            md += [f"*{md_escape(s.domain)}*", ""]
    md += ["**Ours vs the paper**", "", _comparison_md(s), ""]
    if s.significance:
        md += ["**Significance**", "", s.significance, ""]
    if s.claims:
        title = ("**The paper's claims (not evaluated at smoke scale: pipeline checks only)**"
                 if s.scale == "smoke" else "**The paper's claims, checked on our results**")
        md += [title, "", "\n".join(_claim_md(c) for c in s.claims), ""]
    return head, [*md, "**Regenerate:** " + "; ".join(_commands(s)) + ".", ""]


# -- the whole report ------------------------------------------------------------------------

def _environment(results_dir: Path) -> dict[str, str]:
    import numpy
    import scipy
    import sklearn

    import dpexp

    return {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "dpexp": dpexp.__version__,
        "git revision": report_revision(),
        "python": platform.python_version(),
        "numpy / scipy / scikit-learn / pandas": f"{numpy.__version__} / {scipy.__version__} / {sklearn.__version__} / {pd.__version__}",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "results directory": _shown_path(results_dir),
    }


#: Paths whose changes do not make a report's revision dirty: the report's own outputs
#: (regenerating the report before committing it must not mark it "-dirty").
OUTPUT_PATHS = ("results/", "figures/")


def report_revision() -> str:
    """The commit the report's code is at: ``<hash>``, or ``<hash>-dirty`` when code (not
    the results and figures the report is rendered from and into) differs from it."""
    import subprocess

    from dpexp.paths import project_root

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=project_root(), capture_output=True, text=True,
                              timeout=10, check=False)

    try:
        rev = git("rev-parse", "--short=12", "HEAD")
        status = git("status", "--porcelain", "--untracked-files=no")
    except OSError:
        return "unknown"
    if rev.returncode != 0:
        return "unknown"
    changed = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    code = [p for p in changed if not p.startswith(OUTPUT_PATHS)]
    return rev.stdout.strip() + ("-dirty" if code else "")


def _shown_path(path: Path) -> str:
    """A path as the report may show it: relative to the project, never absolute."""
    from dpexp.paths import project_root

    p = Path(path).resolve()
    try:
        return str(p.relative_to(project_root().resolve()))
    except ValueError:
        return p.name  # outside the project: its name only, no machine's layout


_INTRO = (
    "Every number is computed by running the algorithms, except those labelled *paper* (printed "
    "in the papers, copied into the specs). Each printed value has a kind and is judged by its "
    "kind's rule: descriptors (facts about the data) and formulas (deterministic computations) "
    "are *reproduced* when equal at the printed precision; model performance and diagnostics "
    "(stochastic outcomes of a run) when an equivalence test holds (TOST at 5%: the 90% interval "
    "of ours − paper, with the paper's printed std where there is one, inside the spec's stated "
    "tolerance); timings are shown, never judged. Each printed number is counted once (a "
    "reprint is linked to its original) and values a setting was calibrated on are counted "
    "apart. A miss is *shown* when a committed experiment named in the spec lands on the "
    "paper's value under the same rule (the report checks the named cells), *plausible* when "
    "a cause is argued with numbers that do not land (counted with the *unexplained* as not "
    "reproduced); *post hoc* marks an explanation resting on a choice made after seeing the "
    "miss (never shown, even when its cells land); *refuted* marks a miss the paper's own "
    "printed numbers exclude, proved arithmetically in the spec (not reproducible by any "
    f"run). Smoke-scale rows ({SMOKE_LABEL}) are pipeline checks, never compared or evaluated."
)


def _totals(rows: list[VerdictRow]) -> dict[str, dict[str, int]]:
    """Counts over every artefact by kind (paper-scale rows only), in the kinds' order."""
    out = _merged_kinds(rows)
    return {k: out[k] for k in KINDS if k in out}


def headline(rows: list[VerdictRow]) -> str:
    """The report's first line (model performance) and the counts per kind and of claims."""
    kinds = _totals(rows)
    perf = kinds.get("performance", {})
    total = sum(r.values_total for r in rows)
    reprints = sum(r.values_reprinted for r in rows)
    calibration = sum(r.values_calibration for r in rows)
    post_hoc = sum(r.values_landed_post_hoc for r in rows)
    first = (f"**Model performance: {perf.get('reproduced', 0)} of {perf.get('printed', 0)} printed "
             f"model-performance values reproduced** (each number counted once, calibration values "
             f"apart); {perf.get('shown', 0)} missed with an explanation shown by an experiment, "
             f"{perf.get('refuted', 0)} refuted by the paper's own numbers, "
             f"{perf.get('plausible', 0)} plausible, {perf.get('unexplained', 0)} unexplained, "
             f"{perf.get('not_judged', 0)} not judged.")
    lines = [first, "", f"All {total} printed values: {reprints} reprint a number counted elsewhere, "
             f"{calibration} were used for calibration (counted apart); the other "
             f"{total - reprints - calibration} by kind ({post_hoc} of the plausible land on a "
             "choice made after seeing the miss, post hoc, which is not shown):", "",
             "| kind | counted | reproduced | shown | refuted | plausible | unexplained | not judged |",
             "|---|---|---|---|---|---|---|---|"]
    for kind, c in kinds.items():
        lines.append(f"| {kind} | {c.get('printed', 0)} | {c.get('reproduced', 0)} | "
                     f"{c.get('shown', 0)} | {c.get('refuted', 0)} | {c.get('plausible', 0)} | "
                     f"{c.get('unexplained', 0)} | {c.get('not_judged', 0)} |")
    stale = sum(r.rows_stale for r in rows)
    if stale:
        lines += ["", f"**{stale:,} result rows are stale**: computed before this code's exact "
                  "discrete samplers and record-keyed partitions (issue 38), which change every "
                  "private algorithm's numbers; each section says how many of its rows, and the "
                  "paper-scale re-run that replaces them is pending. Verdicts are on these rows."]
    fails = sum(r.claims_fail for r in rows)
    lines += ["", f"Claims: {sum(r.claims_pass for r in rows)} pass, {fails} fail "
              f"({sum(r.claims_fail_shown for r in rows)} explained by an experiment, "
              f"{sum(r.claims_fail_plausible for r in rows)} with a plausible cause, "
              f"{sum(r.claims_fail_unexplained for r in rows)} unexplained), "
              f"{sum(r.claims_not_evaluated for r in rows)} not evaluated."]
    return "\n".join(lines)


def noise_statement(sections: list[Section]) -> str:
    """Once per report: how the noise of its rows was drawn (the ``noise`` column)."""
    shown = sorted({n for s in sections for n in s.noise} - {NO_NOISE})
    if not shown:
        return ""
    own = ("**Noise: reproducible from the run seed — a research result, not a release.** The "
           "runner fits every private estimator with `noise_rng=seeded_noise(random_state)`, so "
           "anyone who knows a cell's seed can recompute its noise; an estimator's default "
           "(`noise_rng=None`) draws fresh OS entropy, never derived from `random_state`.")
    others = [n for n in shown if n != SEEDED_NOISE]
    return own + ("" if not others else " Other rows: " + "; ".join(md_escape(n) for n in others) + ".")


def report_blocks(sections: list[Section], env: dict[str, str], results_dir: Path) -> list[Block]:
    """The report: title, intro, noise, verdict table, sections by paper (caveats collapsed
    in each), environment."""
    rows = [verdict_row(s) for s in sections]
    noise = noise_statement(sections)
    blocks = [Block("# dpexp reproduction report"), Block(headline(rows)), Block(_INTRO),
              *([Block(noise)] if noise else []), Block("## Verdicts"), verdict_block(rows)]
    # Caveats are per artefact, collapsed in its section (issue 42): no wall of them here.
    by_paper: dict[str, list[Section]] = {}
    for s in sections:
        by_paper.setdefault(s.spec.paper, []).append(s)
    for paper, secs in by_paper.items():
        blocks.append(Block(f"## {md_escape(paper_title(paper))} ({md_code(paper)})"))
        blocks += [b for s in secs for b in section_blocks(s, results_dir)]
    env_md = [f"- **{k}**: {md_escape(v)}" for k, v in env.items()]
    blocks.append(Block("\n".join(["## Appendix: environment", "", *env_md])))
    return blocks


def _natural(text: str) -> list:
    """Sort key putting ``fig4`` before ``fig10``."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def write_report(results_dir: Path, figures_dir: Path, scale: str | None = None,
                 progress: Callable[[int, int, str], None] | None = None) -> tuple[Path, Path]:
    """REPORT.md, report.html and summary.json (``-smoke`` suffixed with ``scale="smoke"``,
    so a smoke report never overwrites the committed paper-scale one). ``progress(i, n,
    id)`` is called before each of the n experiments is rendered."""
    available = Availability()
    specs = sorted(all_specs().values(), key=lambda s: _natural(s.id))
    sections = []
    for i, s in enumerate(specs):
        if progress is not None:
            progress(i, len(specs), s.id)
        sections.append(build_section(s, results_dir, figures_dir, scale, available))
    judge_sections(sections)
    env = _environment(results_dir)
    env["seeds"] = ", ".join(map(str, sorted({x for s in sections for x in s.seeds}))) or "—"
    blocks = report_blocks(sections, env, results_dir)
    tag = "-smoke" if scale == "smoke" else ""
    md_path = Path(results_dir) / f"REPORT{tag}.md"
    atomic_write_text(md_path, markdown_of(blocks))
    html_path = Path(results_dir) / f"report{tag}.html"
    atomic_write_text(html_path, page(blocks, results_dir, "dpexp reproduction report"))
    atomic_write_text(Path(results_dir) / f"summary{tag}.json",
                      json.dumps(summary_rows(sections), indent=1) + "\n")
    return md_path, html_path
