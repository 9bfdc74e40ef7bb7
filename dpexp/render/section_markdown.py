"""The Markdown of one artefact's section of ``dpexp report``: heading and counts, the
privacy caveats collapsed under a one-line summary, the figure with its caption, ours beside
the paper's printed values with each value's status, the significance tests, the claims and
the commands that regenerate it."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pandas as pd

from dpexp.experiments.completion import COMPLETION_HEADER
from dpexp.registry import install_hint
from dpexp.render.claims import NOT_EVALUATED_SMOKE, ClaimResult
from dpexp.render.frame import NOT_DP_TITLE
from dpexp.render.html import Block, details_block
from dpexp.render.markup import SMOKE_LABEL, caveat_box, md_code, md_escape
from dpexp.render.numbers import plain
from dpexp.render.paper_values import NOT_JUDGED, PLAUSIBLE, REFUTED, SHOWN
from dpexp.render.section import Section
from dpexp.render.value_status import ValueStatus
from dpexp.render.verdict_rows import claim_explanation


def _status_text(sec: Section, entry: int) -> ValueStatus | None:
    return next((s for s in sec.statuses if s.entry == entry), None)



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


def comparison_md(sec: Section) -> str:
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
    status = claim_explanation(c)
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
        # the registry's hint per package: a side environment (diffprivlib) or pip
        hints = "; ".join(f"for {pkg}, {install_hint(pkg)}" for pkg in sec.packages_unavailable)
        md += [f"**Series not run on this machine:** {md_escape(', '.join(sec.algorithms_unavailable))} "
               "(the optional package does not import here; their cells are not counted in the "
               f"total; {hints or 'install it'}, then the command below).", ""]
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
    md += [f"**Cells ({COMPLETION_HEADER}):** {s.completion.text()} (finished / this machine can "
           "have / in the paper's grid). "
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
    md += ["**Ours vs the paper**", "", comparison_md(s), ""]
    if s.significance:
        md += ["**Significance**", "", s.significance, ""]
    if s.claims:
        title = ("**The paper's claims (not evaluated at smoke scale: pipeline checks only)**"
                 if s.scale == "smoke" else "**The paper's claims, checked on our results**")
        md += [title, "", "\n".join(_claim_md(c) for c in s.claims), ""]
    return head, [*md, "**Regenerate:** " + "; ".join(_commands(s)) + ".", ""]


