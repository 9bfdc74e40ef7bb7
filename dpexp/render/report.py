"""``dpexp report``: every table and figure of every paper, ours beside the paper's.

Renders from the cache alone (no recomputation) into ``results/REPORT.md`` and a
self-contained ``results/report.html`` (figures embedded as base64 PNG). For each
experiment: our numbers beside the paper's printed values, the difference and whether it
is within the spec's tolerance, the paper's claims checked against our results, the
privacy caveats, and which cells are missing.
"""

from __future__ import annotations

import base64
import html
import math
import os
import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from dpexp.experiments.cache import atomic_write_text
from dpexp.experiments.runner import collect, git_revision
from dpexp.experiments.spec import ExperimentSpec, all_specs
from dpexp.render.aggregate import aggregate, attach_paper_values
from dpexp.render.claims import ClaimResult, check_claim
from dpexp.render.render import render_experiment


@dataclass
class Section:
    spec: ExperimentSpec
    scale: str | None
    n_cells: int = 0
    n_missing: int = 0
    comparison: pd.DataFrame | None = None
    claims: list[ClaimResult] = field(default_factory=list)
    figure: Path | None = None
    table_md: str = ""
    seeds: list[int] = field(default_factory=list)


def _pick_scale(spec: ExperimentSpec, results_dir: Path, wanted: str | None) -> str | None:
    scales = [wanted] if wanted else ["paper", "smoke"]
    for s in scales:
        if (Path(results_dir) / "cache" / spec.id / s).is_dir():
            return s
    return None


def build_section(spec: ExperimentSpec, results_dir: Path, figures_dir: Path, scale: str | None) -> Section:
    from dpexp.datasets.registry import get_dataset_info

    scale = _pick_scale(spec, results_dir, scale)
    if scale is None:
        return Section(spec, None)
    scaled = spec.at_scale(scale)
    frame, missing = collect(scaled, scale, results_dir)
    sec = Section(spec, scale, n_missing=len(missing))
    sec.n_cells = len(missing) + (
        frame.groupby(["dataset", "label", "params", "epsilon", "fold", "repeat"]).ngroups if len(frame) else 0
    )
    if frame.empty:
        return sec
    sec.seeds = sorted(int(s) for s in frame["seed"].unique())
    agg = attach_paper_values(aggregate(frame, scaled), scaled)
    sec.comparison = agg[agg["paper_value"].notna()]
    tasks = {d.key: get_dataset_info(d.name).task for d in scaled.datasets}
    sec.claims = [check_claim(c, agg, tasks) for c in spec.claims]
    rendered = render_experiment(scaled, scale, results_dir, figures_dir)
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
    c = sec.comparison
    if c is None or c.empty:
        return "_The paper prints no values for this artefact that the spec records._"
    tol = sec.spec.paper_values.get("tolerance")
    lines = ["| dataset | algorithm | ε | metric | ours (mean ± std) | paper | diff | within tol. |",
             "|---|---|---|---|---|---|---|---|"]
    for _, r in c.iterrows():
        eps = "—" if math.isinf(float(r["epsilon"])) else f"{float(r['epsilon']):g}"
        wt = r["within_tolerance"]
        mark = "—" if wt is None or (isinstance(wt, float) and math.isnan(wt)) else ("✓" if wt else "✗")
        step = "" if pd.isna(r["step"]) else f" @ {int(r['step'])}"
        lines.append(f"| {r['dataset']} | {r['series']} | {eps} | {r['metric']}{step} | "
                     f"{r['mean']:.4g} ± {r['std']:.2g} | {r['paper_value']:.4g} | {r['diff']:+.3g} | {mark} |")
    if tol is not None:
        ok = c["within_tolerance"].dropna()
        lines.append("")
        lines.append(f"Within the stated tolerance (±{tol}): {int(sum(bool(v) for v in ok))} of {len(ok)}.")
    return "\n".join(lines)


def _claims_md(sec: Section) -> str:
    if not sec.claims:
        return ""
    icon = {"pass": "✓ pass", "fail": "✗ fail", "not checked": "· not checked", "no data": "? no data"}
    return "\n".join(f"- **{icon[c.status]}** — {c.text}: {c.detail}" for c in sec.claims)


def write_report(results_dir: Path, figures_dir: Path, scale: str | None = None) -> tuple[Path, Path]:
    specs = all_specs()
    sections = [build_section(s, results_dir, figures_dir, scale) for s in specs.values()]
    env = _environment(results_dir)
    seeds = sorted({x for s in sections for x in s.seeds})
    env["seeds"] = ", ".join(map(str, seeds)) or "—"
    md = ["# dpexp reproduction report", ""]
    md += [f"- **{k}**: {v}" for k, v in env.items()]
    md += ["", "Numbers labelled *paper* are the values printed in the papers, copied into the "
           "experiment specs; every other number was computed by running the algorithms. "
           "Smoke-scale numbers come from subsampled data and few trees: they check the "
           "pipeline, not the paper's claims.", "", "## Summary", "",
           "| experiment | paper | artefact | scale | cells done | paper values within tol. | claims passed |",
           "|---|---|---|---|---|---|---|"]
    for s in sections:
        if s.scale is None:
            md.append(f"| {s.spec.id} | {s.spec.paper} | {s.spec.artefact} | — | not run | — | — |")
            continue
        c = s.comparison
        within = "—"
        if c is not None and not c.empty and s.spec.paper_values.get("tolerance") is not None:
            ok = c["within_tolerance"].dropna()
            within = f"{int(sum(bool(v) for v in ok))}/{len(ok)}"
        checked = [x for x in s.claims if x.status in ("pass", "fail")]
        claims = f"{sum(x.status == 'pass' for x in checked)}/{len(checked)}" if checked else "—"
        md.append(f"| {s.spec.id} | {s.spec.paper} | {s.spec.artefact} | {s.scale} | "
                  f"{s.n_cells - s.n_missing}/{s.n_cells} | {within} | {claims} |")
    by_paper: dict[str, list[Section]] = {}
    for s in sections:
        by_paper.setdefault(s.spec.paper, []).append(s)
    for paper, secs in by_paper.items():
        md += ["", f"## {paper}", ""]
        for s in secs:
            md += [f"### {s.spec.artefact} — `{s.spec.id}`" + (f" ({s.scale} scale)" if s.scale else ""), "",
                   s.spec.caption, ""]
            if s.spec.notes:
                md += [f"*Notes:* {s.spec.notes}", ""]
            if s.scale is None:
                md += [f"Not run yet: `dpexp run {s.spec.id}`.", ""]
                continue
            if s.n_missing:
                md += [f"**Missing cells:** {s.n_missing} of {s.n_cells} "
                       f"(`dpexp run {s.spec.id} --scale {s.scale}` completes them).", ""]
            if s.figure is not None:
                md += [f"![{s.spec.id}]({os.path.relpath(s.figure, results_dir)})", ""]
            md += ["**Ours vs the paper**", "", _comparison_md(s), ""]
            if s.claims:
                md += ["**The paper's claims, checked on our results**", "", _claims_md(s), ""]
            if s.spec.privacy_caveats:
                md += ["**Privacy caveats**", ""] + [f"- {c}" for c in s.spec.privacy_caveats] + [""]
    text = "\n".join(md) + "\n"
    md_path = Path(results_dir) / "REPORT.md"
    atomic_write_text(md_path, text)
    html_path = Path(results_dir) / "report.html"
    atomic_write_text(html_path, _to_html(text, results_dir))
    return md_path, html_path


def _to_html(markdown: str, results_dir: Path) -> str:
    """A small Markdown subset -> self-contained HTML with embedded images."""
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>dpexp report</title>",
           "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.4}"
           "table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;padding:2px 6px}"
           "img{max-width:100%}code{background:#f3f3f3}</style></head><body>"]
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                if not set(lines[i]) <= set("|-: "):
                    rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            out.append("<table>")
            for k, r in enumerate(rows):
                tag = "th" if k == 0 else "td"
                out.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in r) + "</tr>")
            out.append("</table>")
            continue
        if line.startswith("!["):
            rel = line[line.index("(") + 1 : line.rindex(")")]
            p = (Path(results_dir) / rel).resolve()
            if p.exists():
                data = base64.b64encode(p.read_bytes()).decode()
                out.append(f"<p><img alt='{html.escape(p.stem)}' src='data:image/png;base64,{data}'></p>")
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.startswith("- "):
            out.append(f"<li>{_inline(line[2:])}</li>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    out.append("</body></html>")
    return "\n".join(out)


def _inline(text: str) -> str:
    import re

    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
    t = re.sub(r"`(.+?)`", r"<code>\1</code>", t)
    t = re.sub(r"\*(.+?)\*", r"<i>\1</i>", t)
    return t
