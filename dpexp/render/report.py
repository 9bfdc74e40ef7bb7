"""``dpexp report``: what reproduces, at a glance, then every artefact ours beside the paper's.

Renders from the cache and the committed results alone (no recomputation) into
``results/REPORT.md``, a self-contained ``results/report.html`` (figures embedded as base64
PNG, Markdown rendered by markdown-it-py, :mod:`dpexp.render.html`) and
``results/summary.json`` (issue 19).

The report's first line is the model-performance count, then the counts per kind of
printed value (issue 41: each printed number counted once, calibration values apart,
explanations split into shown and plausible, :func:`dpexp.render.section.judge_sections`). Then one verdict
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

This module assembles the page and writes the three files; the pieces live in
:mod:`dpexp.render.section` (each artefact built and judged), :mod:`dpexp.render.verdict_rows`
(its counts, the rows of ``summary.json``), :mod:`dpexp.render.verdict_table`,
:mod:`dpexp.render.section_markdown` and :mod:`dpexp.render.provenance` (the appendix).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from dpexp.experiments.cache import write_text_if_changed
from dpexp.experiments.catalog import all_specs
from dpexp.experiments.committed import SharedReads, table_path
from dpexp.experiments.completion import Availability
from dpexp.experiments.noise import NO_NOISE, SEEDED_NOISE
from dpexp.experiments.spec import ExperimentSpec
from dpexp.experiments.stale import NUMBER_CHANGES
from dpexp.optional_packages import finish_probes
from dpexp.render.audit_summary import audit_summary_block
from dpexp.render.html import Block, markdown_of, page
from dpexp.render.leaderboard_section import is_leaderboard, leaderboard_extras
from dpexp.render.markup import SMOKE_LABEL, md_code, md_escape
from dpexp.render.provenance import report_environment
from dpexp.render.section import Section, build_section, judge_sections
from dpexp.render.section_markdown import section_blocks
from dpexp.render.verdict_rows import (
    KINDS,
    VerdictRow,
    merged_kinds,
    paper_title,
    summary_rows,
    verdict_row,
)
from dpexp.render.verdict_table import verdict_block

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
    out = merged_kinds(rows)
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
        before = " and before ".join(change.what for change in NUMBER_CHANGES)
        lines += ["", f"**{stale:,} result rows are stale**: computed before {before}; each "
                  "section says how many of its rows, and the paper-scale re-run that replaces "
                  "them is pending. Verdicts are on these rows."]
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


def report_blocks(sections: list[Section], env: dict[str, str], results_dir: Path,
                  extras: dict[str, list[Block]] | None = None) -> list[Block]:
    """The report: title, intro, noise, verdict table, sections by paper (caveats collapsed
    in each; ``extras``: blocks appended to a section, by spec id), environment."""
    extras = extras or {}
    rows = [verdict_row(s) for s in sections]
    noise = noise_statement(sections)
    blocks = [Block("# dpexp reproduction report"), Block(headline(rows)), Block(_INTRO),
              *([Block(noise)] if noise else []), Block("## Verdicts"), verdict_block(rows),
              audit_summary_block(results_dir)]
    # Caveats are per artefact, collapsed in its section (issue 42): no wall of them here.
    by_paper: dict[str, list[Section]] = {}
    for s in sections:
        by_paper.setdefault(s.spec.paper, []).append(s)
    for paper, secs in by_paper.items():
        blocks.append(Block(f"## {md_escape(paper_title(paper))} ({md_code(paper)})"))
        blocks += [b for s in secs for b in (*section_blocks(s, results_dir),
                                             *extras.get(s.spec.id, []))]
    env_md = [f"- **{k}**: {md_escape(v)}" for k, v in env.items()]
    blocks.append(Block("\n".join(["## Appendix: environment", "", *env_md])))
    return blocks


def _natural(text: str) -> list:
    """Sort key putting ``fig4`` before ``fig10``."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def write_report(results_dir: Path, figures_dir: Path, scale: str | None = None,
                 progress: Callable[[int, int, str], None] | None = None,
                 workers: int = 1) -> tuple[Path, Path]:
    """REPORT.md, report.html and summary.json (``-smoke`` suffixed with ``scale="smoke"``,
    so a smoke report never overwrites the committed paper-scale one). ``progress(i, n,
    id)`` is called before each of the n experiments is rendered (with ``workers`` > 1, as
    each is built). ``workers``: processes building the sections
    (:func:`report_workers`); the files are the same, byte for byte, whatever their number."""
    specs = sorted(all_specs().values(), key=lambda s: _natural(s.id))
    built = _build_sections(specs, results_dir, figures_dir, scale, progress, workers)
    sections = [b.section for b in built]
    judge_sections(sections)
    env = report_environment(results_dir)
    env["seeds"] = ", ".join(map(str, sorted({x for s in sections for x in s.seeds}))) or "—"
    # the leaderboard's ranks, tests and CD diagrams (dpexp.render.leaderboard_section)
    blocks = report_blocks(sections, env, results_dir,
                           {b.section.spec.id: b.extras for b in built if b.extras})
    tag = "-smoke" if scale == "smoke" else ""
    md_path = Path(results_dir) / f"REPORT{tag}.md"
    write_text_if_changed(md_path, markdown_of(blocks))
    html_path = Path(results_dir) / f"report{tag}.html"
    write_text_if_changed(html_path, page(blocks, results_dir, "dpexp reproduction report"))
    write_text_if_changed(Path(results_dir) / f"summary{tag}.json",
                      json.dumps(summary_rows(sections), indent=1) + "\n")
    return md_path, html_path


def report_workers() -> int:
    """Processes ``dpexp report`` builds its sections in: the cores this process may use,
    at most 2 (issue 43: a fresh clone's report read and rendered 57 artefacts one after
    another on one core), 1 where processes cannot be forked (they inherit the loaded
    modules instead of importing them again)."""
    if "fork" not in multiprocessing.get_all_start_methods() or sys.platform == "darwin":
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(2, cores or 1))


@dataclass(frozen=True)
class _Built:
    """An artefact's section and the blocks appended to it (a leaderboard's ranks:
    :func:`~dpexp.render.leaderboard_section.leaderboard_extras`), made together."""

    section: Section
    extras: list[Block]


def _build_sections(specs: list[ExperimentSpec], results_dir: Path, figures_dir: Path,
                    scale: str | None, progress: Callable[[int, int, str], None] | None,
                    workers: int) -> list[_Built]:
    """Every spec's section, in the order of ``specs``. The specs showing one experiment's
    cells (``cells_from``) are built together, that table read once for them
    (:class:`SharedReads`); with ``workers`` > 1, such groups go to forked processes,
    the longest first: the leaderboards (their ranks are made with them), then by the
    size of the committed table."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(specs):
        groups.setdefault(s.cells_id, []).append(i)
    if workers < 2 or len(groups) < 2:
        return _build_group(specs, results_dir, figures_dir, scale, progress, len(specs))
    built: list[_Built | None] = [None] * len(specs)
    longest_first = sorted(groups.values(), key=lambda idx: (
        not any(is_leaderboard(specs[i]) for i in idx), -_table_bytes(specs[idx[0]], results_dir)))
    finish_probes()  # the workers must not share a running probe's pipes
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(_build_group, [specs[i] for i in idx], results_dir, figures_dir,
                               scale, None, len(specs)): idx for idx in longest_first}
        finished = 0
        for done in as_completed(futures):
            for i, b in zip(futures[done], done.result(), strict=True):
                built[i] = b
                if progress is not None:  # as each is built (not before: they run together)
                    progress(finished, len(specs), specs[i].id)
                finished += 1
    return [b for b in built if b is not None]


def _table_bytes(spec: ExperimentSpec, results_dir: Path) -> int:
    """The size of the committed table of ``spec``'s cells (0 when there is none)."""
    try:
        return table_path(results_dir, spec.cells_id, "paper").stat().st_size
    except OSError:
        return 0


def _build_group(specs: list[ExperimentSpec], results_dir: Path, figures_dir: Path,
                 scale: str | None, progress: Callable[[int, int, str], None] | None,
                 total: int) -> list[_Built]:
    """The sections of ``specs``, one after another, each with the blocks appended to it;
    a table shown by several artefacts (``cells_from``) is read once for them all."""
    available = Availability()
    shared = SharedReads(uses=dict(Counter(s.cells_id for s in specs)))
    built = []
    for i, s in enumerate(specs):
        if progress is not None:
            progress(i, total, s.id)
        sec = build_section(s, results_dir, figures_dir, scale, available, shared,
                            keep_rows=is_leaderboard(s))
        built.append(_Built(sec, leaderboard_extras(sec, results_dir, figures_dir)))
    return built
