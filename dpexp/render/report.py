"""``dpexp report``: what reproduces, at a glance, then every artefact ours beside the paper's.

Renders from the cache and the committed results alone (no recomputation) into
``results/REPORT.md``, a self-contained ``results/report.html`` (figures embedded as base64
PNG, Markdown rendered by markdown-it-py, :mod:`dpexp.render.html`) and
``results/summary.json`` (issue 19).

The report opens with one verdict table: per paper and artefact, the scale, cells done of
the cells of the datasets that can be had, the paper's printed values reproduced /
explained / unexplained, the claims passing / failing / not evaluated, the datasets this
machine cannot load and the not-DP caveats; the HTML colours it and links each artefact
to its section (``#<experiment id>``). ``summary.json`` is written from the same rows.
Each section then shows our figure, the comparison with the paper's printed values (ours
± std, our 95% interval, the paper's value, the verdict and, for an explained miss, the
spec's evidence), the spec's Wilcoxon tests where it asks for them (Fletcher & Islam,
Section 5.2), the claims with their evidence, the privacy caveats in a box and the command
that regenerates it. At smoke scale no value is compared and no claim is evaluated: a
pipeline check is never a pass. The environment comes last, as an appendix. Spec text is
escaped, so ``g*_l`` stays literal.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from dpexp.errors import DpexpError
from dpexp.experiments.cache import atomic_write_text
from dpexp.experiments.runner import git_revision
from dpexp.experiments.spec import DatasetRef, ExperimentSpec, all_specs
from dpexp.render.aggregate import ComparisonSummary, comparison_summary
from dpexp.render.claims import NOT_EVALUATED_SMOKE, ClaimResult, check_claims
from dpexp.render.frame import NOT_DP_TITLE, not_dp_caveats, replicate_statement
from dpexp.render.html import BAD, GOOD, NONE, WARN, Block, Cell, markdown_of, page, verdict_table
from dpexp.render.markup import SMOKE_LABEL, caveat_box, md_code, md_escape
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

#: The per-value verdicts (``value_verdict`` of :func:`dpexp.render.aggregate.attach_paper_values`).
REPRODUCED, EXPLAINED, UNEXPLAINED = "reproduced", "explained", "unexplained"


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
    summary: ComparisonSummary | None = None
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
    sec.summary = comparison_summary(agg, spec, scale)
    sec.claims = check_claims(spec.claims, agg, ctx.tasks, scale)
    sec.not_dp = not_dp_caveats(frame, ctx)
    sec.domain = ctx.note
    sec.replicates = replicate_statement(frame, agg["n"])
    sec.display = ctx.display
    sec.significance = significance_markdown(spec, frame, scale, ctx.display)
    sec.figure = next((f for f in rendered.files if f.suffix == ".png"), None)
    return sec


# -- per-value verdicts ---------------------------------------------------------------------

def _row_verdict(row: pd.Series, sec: Section) -> str | None:
    """``reproduced`` | ``explained`` | ``unexplained`` of one compared row, or None.

    Uses the frame's ``value_verdict`` where the aggregation gives it; else the older rule:
    within the spec's tolerance, else explained when the spec's entry carries
    ``explained: <evidence>``, else unexplained (paper scale only)."""
    if "value_verdict" in row.index:
        v = row["value_verdict"]
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    ok = row.get("within_tolerance")
    if sec.scale != "paper" or ok is None or (isinstance(ok, float) and math.isnan(ok)):
        return None
    if bool(ok):
        return REPRODUCED
    return EXPLAINED if _explanation(row, sec) else UNEXPLAINED


def _explanation(row: pd.Series, sec: Section) -> str:
    """The spec's ``explained:`` evidence for the paper value of ``row`` ("" if none)."""
    text = row.get("explanation")
    if isinstance(text, str):
        return text
    entries = sec.spec.paper_values.get("values") or []
    i = int(row.get("paper_entry", -1))
    return str(entries[i].get("explained") or "") if 0 <= i < len(entries) else ""


def value_counts(sec: Section) -> dict[str, int]:
    """Compared rows by verdict (``values_reproduced`` / ``_explained`` / ``_unexplained``)."""
    out = {"values_reproduced": 0, "values_explained": 0, "values_unexplained": 0}
    comp = sec.comparison
    if sec.scale is None or comp is None or comp.empty:
        return out
    for _, row in comp.iterrows():
        v = _row_verdict(row, sec)
        if v in (REPRODUCED, EXPLAINED, UNEXPLAINED):
            out[f"values_{v}"] += 1
    return out


# -- the verdict table and summary.json ------------------------------------------------------

#: The fields of ``results/summary.json``, in order (issue 19, plus ``paper`` and ``title``).
SUMMARY_FIELDS = ("artefact", "paper", "title", "scale", "cells_done", "cells_total",
                  "datasets_unavailable", "algorithms_unavailable", "values_total", "values_reproduced", "values_explained",
                  "values_unexplained", "claims_pass", "claims_fail", "claims_not_evaluated")


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
    values_reproduced: int
    values_explained: int
    values_unexplained: int
    claims_pass: int
    claims_fail: int
    claims_fail_explained: int
    claims_not_evaluated: int
    not_dp_caveats: int
    problem: str = ""  # the spec's error, when it cannot be expanded or rendered

    def summary(self) -> dict:
        """The row as ``summary.json`` has it (:data:`SUMMARY_FIELDS`)."""
        d = asdict(self)
        return {k: d[k] for k in SUMMARY_FIELDS}


def verdict_row(sec: Section) -> VerdictRow:
    claims = [c.status for c in sec.claims] if sec.scale else []
    fails = [c for c in sec.claims if c.status == "fail"] if sec.scale else []
    return VerdictRow(
        artefact=sec.spec.id, paper=sec.spec.paper, title=paper_title(sec.spec.paper),
        name=sec.spec.artefact, scale=sec.scale, cells_done=sec.n_done, cells_total=sec.cells_total,
        datasets_unavailable=list(sec.unavailable),
        algorithms_unavailable=list(sec.algorithms_unavailable),
        values_total=len(sec.spec.paper_values.get("values") or []), **value_counts(sec),
        claims_pass=claims.count("pass"), claims_fail=len(fails),
        claims_fail_explained=sum(bool(getattr(c, "explanation", "")) for c in fails),
        claims_not_evaluated=len(sec.claims) - claims.count("pass") - len(fails),
        not_dp_caveats=len(sec.not_dp), problem=sec.problem,
    )


def summary_rows(sections: list[Section]) -> list[dict]:
    """``results/summary.json``: the verdict table's rows, machine-readable."""
    return [verdict_row(s).summary() for s in sections]


_HEADER = [("artefact", ["artefact"]), ("scale", ["scale"]), ("cells", ["done / total"]),
           ("printed values", ["printed", "reproduced", "explained", "unexplained"]),
           ("claims", ["pass", "fail", "not evaluated"]),
           ("unavailable here", ["unavailable here"]), ("not-DP caveats", ["not-DP caveats"])]


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
        grey = [Cell("—", NONE)] * 6
        state = Cell("spec error", BAD) if row.problem else Cell("not run", NONE)
        return [name, state, Cell(cells, NONE, numeric=True),
                Cell(str(row.values_total), NONE, numeric=True), *grey, unavailable,
                Cell("—", NONE)]
    smoke = row.scale == "smoke"
    return [name, Cell(SMOKE_LABEL if smoke else f"{row.scale}", NONE if smoke else None),
            Cell(cells, numeric=True), Cell(str(row.values_total), numeric=True),
            *_value_cells(row), *_claim_cells(row), unavailable,
            Cell(str(row.not_dp_caveats) if row.not_dp_caveats else "—", WARN if row.not_dp_caveats else None)]


def _value_cells(row: VerdictRow) -> list[Cell]:
    """Reproduced / explained / unexplained: "—" when the paper prints none, grey at smoke."""
    if not row.values_total:
        return [Cell("—")] * 3
    if row.scale == "smoke":
        return [Cell(SMOKE_VALUES, NONE)] * 3
    return [_count(row.values_reproduced, GOOD), _count(row.values_explained, WARN),
            _count(row.values_unexplained, BAD)]


def _claim_cells(row: VerdictRow) -> list[Cell]:
    """Pass / fail (explained ones amber, counted as fails) / not evaluated; "—" for none."""
    if not row.claims_pass + row.claims_fail + row.claims_not_evaluated:
        return [Cell("—")] * 3
    fail = str(row.claims_fail) + (f" ({row.claims_fail_explained} explained)" if row.claims_fail_explained else "")
    fail_cls = None if not row.claims_fail else BAD if row.claims_fail > row.claims_fail_explained else WARN
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


def verdict_block(rows: list[VerdictRow]) -> Block:
    """The verdict table: Markdown (a bold row per paper) and coloured HTML, same rows."""
    cols = [c for _, cs in _HEADER for c in cs]
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    groups = []
    for title, rs in _grouped(rows):
        md.append(f"| **{md_escape(title)}** |" + " |" * (len(cols) - 1))
        cells = [verdict_cells(r) for r in rs]
        md += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in cells]
        groups.append((title, cells))
    return Block("\n".join(md), html=verdict_table(_HEADER, groups))


# -- the per-artefact sections ---------------------------------------------------------------

def _num(x: object, fmt: str = ".4g") -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "—"
    return "—" if math.isnan(v) else format(v, fmt)


def _verdict_text(row: pd.Series, sec: Section, notes: list[str]) -> str:
    """The comparison table's verdict cell; an explained miss points to its note."""
    v = _row_verdict(row, sec)
    if v is None:
        text = str(row.get("verdict") or "")
        return md_escape(text) if text and text not in ("✓", "✗") else "—"
    if v == EXPLAINED:
        notes.append(_explanation(row, sec))
        return f"explained (note {len(notes)})"
    return v


def _comparison_md(sec: Section) -> str:
    """Ours (± std, n, 95% interval) beside the paper's printed values, with verdicts."""
    c = sec.comparison
    if not sec.spec.paper_values.get("values"):
        return "The paper prints no values for this artefact that the spec records."
    footer = md_escape(sec.summary.text()) if sec.summary else ""
    if c is None or c.empty:
        return footer
    lines = ["| dataset | algorithm | ε | metric | ours (mean ± std) | n | our 95% interval | paper | "
             "diff | verdict |", "|---|---|---|---|---|---|---|---|---|---|"]
    notes: list[str] = []
    for _, r in c.iterrows():
        eps = "no noise" if math.isinf(float(r["epsilon"])) else f"{float(r['epsilon']):g}"
        step = "" if pd.isna(r["step"]) else f" @ {int(r['step'])}"
        kind = " (diagnostic)" if r.get("diagnostic") else ""
        ds = sec.display.get(r["dataset"], r["dataset"])
        lo, hi = r.get("ci_low"), r.get("ci_high")
        interval = "—" if _num(lo) == "—" else f"[{_num(lo)}, {_num(hi)}]"
        paper = _num(r["paper_value"]) + (f" ± {_num(r['paper_std'], '.2g')}"
                                          if _num(r.get("paper_std")) != "—" else "")
        lines.append(f"| {md_escape(ds)} | {md_escape(r['display'])} | {eps} | "
                     f"{md_escape(r['metric'])}{step}{kind} | {_num(r['mean'])} ± {_num(r['std'], '.2g')} | "
                     f"{int(r['n'])} | {interval} | {paper} | {_num(r['diff'], '+.3g')} | "
                     f"{_verdict_text(r, sec, notes)} |")
    out = [*lines, "", footer]
    if notes:
        out += ["", *[f"- *Note {i}:* {md_escape(t)}" for i, t in enumerate(notes, 1)]]
    return "\n".join(out)


_ICON = {"pass": "✓ pass", "fail": "✗ fail", "not checked": "· not checked", "no data": "? no data",
         NOT_EVALUATED_SMOKE: "· not evaluated (smoke)"}


def _claim_md(c: ClaimResult) -> str:
    why = getattr(c, "explanation", "") if c.status == "fail" else ""
    icon = "✗ fail (explained)" if why else _ICON.get(c.status, c.status)
    line = f"- **{icon}** — {md_escape(c.text)}: {md_escape(c.detail)}"
    return line + (f" *Explained:* {md_escape(why)}" if why else "")


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


def _section_md(s: Section, results_dir: Path) -> list[str]:
    md = [f"### {md_escape(s.spec.artefact)} — {md_code(s.spec.id)}"
          + (f" ({_scale_text(s.scale)})" if s.scale else " (not run)"), "", md_escape(s.spec.caption), ""]
    if s.spec.notes:
        md += [f"*Notes:* {md_escape(s.spec.notes)}", ""]
    md += _unavailable_md(s)
    if s.problem:
        md += [f"**The spec cannot be run as it stands:** {md_escape(s.problem)}", ""]
    if s.scale is None:
        return [*md, *_caveats_md(s), "**Regenerate:** " + "; ".join(_commands(s)) + ".", ""]
    if s.scale == "smoke":
        md += [f"**Scale:** {SMOKE_LABEL}. A pipeline check on subsampled data; claims are not "
               "evaluated and no value is compared with the paper's.", ""]
    md += [f"**Cells:** {s.n_done} of {s.cells_total} done (the cells of the datasets that can be had). "
           f"**Aggregation:** {s.replicates}.", ""]
    if s.domain:
        md += [f"**{md_escape(s.domain)}**", ""]
    md += _caveats_md(s)
    if s.figure is not None:
        md += [f"![{md_escape(s.spec.id)}]({os.path.relpath(s.figure, results_dir)})", ""]
    md += ["**Ours vs the paper**", "", _comparison_md(s), ""]
    if s.significance:
        md += ["**Significance**", "", s.significance, ""]
    if s.claims:
        title = ("**The paper's claims (not evaluated at smoke scale: pipeline checks only)**"
                 if s.scale == "smoke" else "**The paper's claims, checked on our results**")
        md += [title, "", "\n".join(_claim_md(c) for c in s.claims), ""]
    return [*md, "**Regenerate:** " + "; ".join(_commands(s)) + ".", ""]


# -- the whole report ------------------------------------------------------------------------

def _environment(results_dir: Path) -> dict[str, str]:
    import numpy
    import scipy
    import sklearn

    import dpexp

    return {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "dpexp": dpexp.__version__,
        "git revision": git_revision(),
        "python": platform.python_version(),
        "numpy / scipy / scikit-learn / pandas": f"{numpy.__version__} / {scipy.__version__} / {sklearn.__version__} / {pd.__version__}",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "results directory": str(results_dir),
    }


_INTRO = (
    "Every number is computed by running the algorithms, except those labelled *paper* (printed "
    "in the papers, copied into the specs). A printed value is *reproduced* when within the "
    "spec's tolerance or inside our 95% interval, *explained* when it is missed and the spec "
    "gives the evidence why, *unexplained* otherwise; smoke-scale rows "
    f"({SMOKE_LABEL}) are pipeline checks, never compared or evaluated."
)


def report_blocks(sections: list[Section], env: dict[str, str], results_dir: Path) -> list[Block]:
    """The report: title, intro, verdict table, not-DP box, sections by paper, environment."""
    blocks = [Block("# dpexp reproduction report"), Block(_INTRO),
              Block("## Verdicts"), verdict_block([verdict_row(s) for s in sections])]
    not_dp = [f"{md_escape(s.spec.id)}: {md_escape(line)}" for s in sections for line in s.not_dp]
    if not_dp:
        blocks.append(Block("\n".join(caveat_box("Not-DP results in this report (shown for "
                                                 "reproduction only):", not_dp))))
    by_paper: dict[str, list[Section]] = {}
    for s in sections:
        by_paper.setdefault(s.spec.paper, []).append(s)
    for paper, secs in by_paper.items():
        blocks.append(Block(f"## {md_escape(paper_title(paper))} ({md_code(paper)})"))
        blocks += [Block("\n".join(_section_md(s, results_dir)), anchor=s.spec.id) for s in secs]
    env_md = [f"- **{k}**: {md_escape(v)}" for k, v in env.items()]
    blocks.append(Block("\n".join(["## Appendix: environment", "", *env_md])))
    return blocks


def _natural(text: str) -> list:
    """Sort key putting ``fig4`` before ``fig10``."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def write_report(results_dir: Path, figures_dir: Path, scale: str | None = None) -> tuple[Path, Path]:
    """REPORT.md, report.html and summary.json (``-smoke`` suffixed with ``scale="smoke"``,
    so a smoke report never overwrites the committed paper-scale one)."""
    available = Availability()
    specs = sorted(all_specs().values(), key=lambda s: _natural(s.id))
    sections = [build_section(s, results_dir, figures_dir, scale, available) for s in specs]
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
