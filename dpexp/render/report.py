"""``dpexp report``: every table and figure of every paper, ours beside the paper's.

Renders from the cache alone (no recomputation) into ``results/REPORT.md`` and a
self-contained ``results/report.html`` (figures embedded as base64 PNG, Markdown rendered
by markdown-it-py). For each experiment: our numbers beside the paper's printed values,
the difference and, at paper scale only, whether it is within the spec's tolerance; the
paper's claims checked against our results (at smoke scale "not evaluated (smoke)": a
pipeline check, never a pass); the feature-domain source; not-DP rows and the spec's
privacy caveats in caveat boxes; and which cells are missing. Spec text is escaped, so
``g*_l`` stays literal.
"""

from __future__ import annotations

import json
import math
import os
import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from dpexp.experiments.cache import atomic_write_text
from dpexp.experiments.runner import git_revision
from dpexp.experiments.spec import ExperimentSpec, all_specs
from dpexp.render.aggregate import ComparisonSummary, comparison_summary
from dpexp.render.claims import NOT_EVALUATED_SMOKE, ClaimResult, check_claims
from dpexp.render.frame import NOT_DP_TITLE, not_dp_caveats, replicate_statement
from dpexp.render.markup import SMOKE_LABEL, caveat_box, markdown_to_html, md_code, md_escape
from dpexp.render.render import NothingCachedError, RenderReport, render_experiment


@dataclass
class Section:
    spec: ExperimentSpec
    scale: str | None
    n_cells: int = 0
    n_missing: int = 0
    comparison: pd.DataFrame | None = None
    summary: ComparisonSummary | None = None
    claims: list[ClaimResult] = field(default_factory=list)
    figure: Path | None = None
    table_md: str = ""
    seeds: list[int] = field(default_factory=list)
    not_dp: list[str] = field(default_factory=list)  # plain-text caveat lines
    domain: str = ""
    replicates: str = ""
    display: dict[str, str] = field(default_factory=dict)
    datasets_done: list[str] = field(default_factory=list)  # dataset keys with results


def _scales(results_dir: Path, spec: ExperimentSpec, wanted: str | None) -> list[str]:
    """Scales to try, best first: paper where cached, else smoke (or just ``wanted``)."""
    from dpexp.experiments.committed import table_path

    scales = [wanted] if wanted else ["paper", "smoke"]
    return [s for s in scales if (Path(results_dir) / "cache" / spec.id / s).is_dir()
            or table_path(results_dir, spec.id, s).exists()]


def build_section(spec: ExperimentSpec, results_dir: Path, figures_dir: Path, scale: str | None) -> Section:
    """Render ``spec`` at the best cached scale and collect what the report shows of it."""
    for s in _scales(results_dir, spec, scale):
        try:
            rendered = render_experiment(spec.at_scale(s), s, results_dir, figures_dir)
        except NothingCachedError:
            continue
        return _section(spec, s, rendered)
    return Section(spec, None)


def _section(spec: ExperimentSpec, scale: str, rendered: RenderReport) -> Section:
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
    for f in rendered.files:
        if f.suffix == ".png":
            sec.figure = f
        if f.suffix == ".md":
            sec.table_md = f.read_text()
    return sec


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


def _comparison_md(sec: Section) -> str:
    """Ours beside the paper's printed values, with the verdict column and honest counts."""
    c = sec.comparison
    if not sec.spec.paper_values.get("values"):
        return "The paper prints no values for this artefact that the spec records."
    footer = md_escape(sec.summary.text()) if sec.summary else ""
    if c is None or c.empty:
        return footer
    lines = ["| dataset | algorithm | ε | metric | ours (mean ± std) | paper | diff | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for _, r in c.iterrows():
        eps = "—" if math.isinf(float(r["epsilon"])) else f"{float(r['epsilon']):g}"
        step = "" if pd.isna(r["step"]) else f" @ {int(r['step'])}"
        kind = " (diagnostic)" if r.get("diagnostic") else ""
        ds = sec.display.get(r["dataset"], r["dataset"])
        lines.append(f"| {md_escape(ds)} | {md_escape(r['display'])} | {eps} | "
                     f"{md_escape(r['metric'])}{step}{kind} | {r['mean']:.4g} ± {r['std']:.2g} | "
                     f"{r['paper_value']:.4g} | {r['diff']:+.3g} | {r['verdict'] or '—'} |")
    return "\n".join([*lines, "", footer])


_ICON = {"pass": "✓ pass", "fail": "✗ fail", "not checked": "· not checked", "no data": "? no data",
         NOT_EVALUATED_SMOKE: "· not evaluated (smoke)"}


def _claims_md(sec: Section) -> str:
    return "\n".join(f"- **{_ICON.get(c.status, c.status)}** — {md_escape(c.text)}: {md_escape(c.detail)}"
                      for c in sec.claims)


def _claims_cell(sec: Section) -> str:
    """The summary's claims column: never a pass count at smoke scale."""
    if sec.scale == "smoke" and any(c.status == NOT_EVALUATED_SMOKE for c in sec.claims):
        return NOT_EVALUATED_SMOKE
    checked = [x for x in sec.claims if x.status in ("pass", "fail")]
    return f"{sum(x.status == 'pass' for x in checked)}/{len(checked)}" if checked else "—"


def _scale_text(scale: str) -> str:
    return SMOKE_LABEL if scale == "smoke" else f"{scale} scale"


def _summary_md(sections: list[Section]) -> list[str]:
    md = ["| experiment | paper | artefact | scale | cells cached | paper values within tol. | "
          "claims passed | not DP |", "|---|---|---|---|---|---|---|---|"]
    for s in sections:
        head = f"| {md_escape(s.spec.id)} | {md_escape(s.spec.paper)} | {md_escape(s.spec.artefact)}"
        if s.scale is None:
            md.append(f"{head} | — | not run | — | — | — |")
            continue
        within = s.summary.cell() if s.summary else "—"
        not_dp = f"{len(s.not_dp)} caveat(s)" if s.not_dp else "—"
        md.append(f"{head} | {s.scale} | {s.n_cells - s.n_missing}/{s.n_cells} | {within} | "
                  f"{_claims_cell(s)} | {not_dp} |")
    return md


def _not_dp_lines(sec: Section) -> list[str]:
    return [md_escape(line) for line in sec.not_dp]


def _section_md(s: Section, results_dir: Path) -> list[str]:
    md = [f"### {md_escape(s.spec.artefact)} — {md_code(s.spec.id)}"
          + (f" ({_scale_text(s.scale)})" if s.scale else ""), "", md_escape(s.spec.caption), ""]
    if s.spec.notes:
        md += [f"*Notes:* {md_escape(s.spec.notes)}", ""]
    if s.scale is None:
        return [*md, f"Not run yet: {md_code(f'dpexp run {s.spec.id}')}.", ""]
    if s.scale == "smoke":
        md += [f"**Scale:** {SMOKE_LABEL}. A pipeline check on subsampled data; claims are not "
               "evaluated and no value is compared with the paper's.", ""]
    md += [f"**Aggregation:** {s.replicates}.", ""]
    if s.domain:
        md += [f"**{md_escape(s.domain)}**", ""]
    if s.not_dp:
        md += caveat_box(NOT_DP_TITLE, _not_dp_lines(s))
    if s.spec.privacy_caveats:
        md += caveat_box("Privacy caveats (from the spec):", [md_escape(c) for c in s.spec.privacy_caveats])
    if s.n_missing:
        md += [f"**Missing cells:** {s.n_missing} of the spec's grid "
               f"({md_code(f'dpexp run {s.spec.id} --scale {s.scale}')} completes them).", ""]
    if s.figure is not None:
        md += [f"![{md_escape(s.spec.id)}]({os.path.relpath(s.figure, results_dir)})", ""]
    md += ["**Ours vs the paper**", "", _comparison_md(s), ""]
    if s.claims:
        title = ("**The paper's claims (not evaluated at smoke scale: pipeline checks only)**"
                 if s.scale == "smoke" else "**The paper's claims, checked on our results**")
        md += [title, "", _claims_md(s), ""]
    return md


def _report_md(sections: list[Section], env: dict[str, str], results_dir: Path) -> str:
    md = ["# dpexp reproduction report", ""]
    md += [f"- **{k}**: {md_escape(v)}" for k, v in env.items()]
    md += ["", "Numbers labelled *paper* are the values printed in the papers, copied into the "
           "experiment specs; every other number was computed by running the algorithms. "
           f"Smoke-scale sections ({SMOKE_LABEL}) come from subsampled data and few trees: they "
           "check the pipeline; their claims are not evaluated and their numbers are not "
           "compared with the paper's.", "", "## Summary", "", *_summary_md(sections), ""]
    not_dp = [f"{md_escape(s.spec.id)}: {line}" for s in sections for line in _not_dp_lines(s)]
    if not_dp:
        md += caveat_box("Not-DP results in this report (shown for reproduction only):", not_dp)
    by_paper: dict[str, list[Section]] = {}
    for s in sections:
        by_paper.setdefault(s.spec.paper, []).append(s)
    for paper, secs in by_paper.items():
        md += ["", f"## {md_escape(paper)}", ""]
        for s in secs:
            md += _section_md(s, results_dir)
    return "\n".join(md) + "\n"


def _value_verdicts(sec: Section) -> dict[str, int]:
    """Printed values reproduced (within the spec's tolerance), explained (a miss whose spec
    entry carries ``explained: <evidence>``) and unexplained (any other miss)."""
    out = {"values_reproduced": 0, "values_explained": 0, "values_unexplained": 0}
    comp = sec.comparison
    if sec.scale != "paper" or comp is None or not len(comp) or "within_tolerance" not in comp:
        return out
    entries = sec.spec.paper_values.get("values") or []
    for _, row in comp.dropna(subset=["within_tolerance"]).iterrows():
        if bool(row["within_tolerance"]):
            out["values_reproduced"] += 1
            continue
        i = int(row["paper_entry"])
        explained = 0 <= i < len(entries) and bool(entries[i].get("explained"))
        out["values_explained" if explained else "values_unexplained"] += 1
    return out


def _unavailable_datasets(spec: ExperimentSpec, frame_datasets: set[str]) -> list[str]:
    """Datasets of the spec with no result that this machine cannot load either."""
    from dpexp.experiments.plan import dataset_available

    return [d.name for d in spec.datasets
            if d.key not in frame_datasets and not dataset_available(d.name)]


def summary_rows(sections: list[Section]) -> list[dict]:
    """``results/summary.json``: the report's verdicts, one row per artefact."""
    rows = []
    for sec in sections:
        claims = [c.status for c in sec.claims]
        done = sec.n_cells - sec.n_missing if sec.scale else 0
        rows.append({
            "artefact": sec.spec.id, "paper": sec.spec.paper, "scale": sec.scale,
            "cells_done": done, "cells_total": sec.n_cells if sec.scale else None,
            "datasets_unavailable": _unavailable_datasets(sec.spec, set(sec.datasets_done)),
            "values_total": len(sec.spec.paper_values.get("values") or []),
            **_value_verdicts(sec),
            "claims_pass": claims.count("pass"), "claims_fail": claims.count("fail"),
            "claims_not_evaluated": len(claims) - claims.count("pass") - claims.count("fail"),
        })
    return rows


def write_report(results_dir: Path, figures_dir: Path, scale: str | None = None) -> tuple[Path, Path]:
    specs = all_specs()
    sections = [build_section(s, results_dir, figures_dir, scale) for s in specs.values()]
    env = _environment(results_dir)
    seeds = sorted({x for s in sections for x in s.seeds})
    env["seeds"] = ", ".join(map(str, seeds)) or "—"
    text = _report_md(sections, env, results_dir)
    # The paper-scale report is committed; a smoke-only report must not overwrite it.
    tag = "-smoke" if scale == "smoke" else ""
    md_path = Path(results_dir) / f"REPORT{tag}.md"
    atomic_write_text(md_path, text)
    html_path = Path(results_dir) / f"report{tag}.html"
    atomic_write_text(html_path, markdown_to_html(text, results_dir))
    atomic_write_text(Path(results_dir) / f"summary{tag}.json",
                      json.dumps(summary_rows(sections), indent=1) + "\n")
    return md_path, html_path
