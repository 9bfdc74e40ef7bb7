"""The report's short "Privacy audit" section, after the verdict table (issue 44): what the
committed audit record (``results/audit/audit.json``, :mod:`dpexp.audit.record`) holds, one
line per paper -- how many targets, their outcomes, the largest lower bound against its
claim -- and the private algorithms it leaves unaudited, with why. The leaderboard's ranking
tables show each entry's own audit (:mod:`dpexp.render.leaderboard_audit`). The report never
runs the audit; with no record, the command that writes it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dpexp.audit.record import (
    AuditRecord,
    AuditRecordError,
    RecordedTarget,
    read_record,
    record_paths,
)
from dpexp.render.html import Block
from dpexp.render.leaderboard_audit import RECORD_COMMAND, format_bound
from dpexp.render.markup import md_code, md_escape

__all__ = ["audit_summary_block", "paper_of_source"]

TITLE = "## Privacy audit"


def paper_of_source(source: str | None) -> str:
    """The paper package of a target's declaring module (``dpexp.papers.X.audit`` -> X), the
    audit's own primitives, or the module itself (a plugin)."""
    if not source:
        return "unknown"
    parts = source.split(".")
    if parts[:2] == ["dpexp", "papers"] and len(parts) > 2:
        return parts[2]
    if parts[:2] == ["dpexp", "audit"]:
        return "primitives (dpexp.audit)"
    return source


def _outcomes(targets: Sequence[RecordedTarget]) -> str:
    labels = {"pass": "pass", "expected-flagged": "known unprivate, flagged as expected",
              "flagged": "**FLAGGED**", "unexpected-pass": "**known unprivate, NOT flagged**",
              "skipped": "skipped"}
    counts = {o: sum(t.outcome == o for t in targets) for o in labels}
    return ", ".join(f"{n} {labels[o]}" for o, n in counts.items() if n)


def _paper_line(paper: str, targets: Sequence[RecordedTarget]) -> str:
    ran = [t for t in targets if t.epsilon_lower_bound is not None and t.expected_to_pass]
    worst = max(ran, key=lambda t: t.epsilon_lower_bound - t.claimed_epsilon, default=None)
    if worst is None:
        bound = ""
    elif worst.epsilon_lower_bound <= 0:
        bound = "; no ε̂ above 0"
    else:
        bound = (f"; largest ε̂ of a target expected to pass "
                 f"{format_bound(worst.epsilon_lower_bound)} (claim ε = "
                 f"{worst.claimed_epsilon:g}, {md_escape(worst.name)})")
    n = len(targets)
    return (f"- **{md_escape(paper)}**: {n} target{'s' if n != 1 else ''}: "
            f"{_outcomes(targets)}{bound}")


def summary_markdown(record: AuditRecord, where: str) -> str:
    """The section's markdown for ``record`` (read from ``where``, relative to results/)."""
    by_paper: dict[str, list[RecordedTarget]] = {}
    for t in record.targets:
        by_paper.setdefault(paper_of_source(t.source), []).append(t)
    lines = [TITLE, "",
             f"From the audit record {md_code(where)} ({record.mode} mode, seed {record.seed}, "
             f"dpexp revision {md_code(record.revision)}, α = {record.alpha:g} per release): "
             f"{len(record.targets)} targets, {_outcomes(record.targets)}. ε̂ is the empirical "
             f"lower bound on epsilon; a target passes when it does not exceed its claim. The "
             f"leaderboard shows each entry's own audit.", ""]
    lines += [_paper_line(paper, targets) for paper, targets in by_paper.items()]
    if record.unaudited:
        lines += ["", "*Private algorithms no target covers:* " + "; ".join(
            f"{md_escape(u.algorithm)} ({md_escape(u.reason)})" for u in record.unaudited) + "."]
    return "\n".join(lines)


def audit_summary_block(results_dir: Path) -> Block:
    """The section, from the record under ``results_dir`` (or why there is none)."""
    path = record_paths(results_dir)[0]
    where = path.relative_to(results_dir).as_posix()
    try:
        record = read_record(path)
    except AuditRecordError as exc:
        return Block(f"{TITLE}\n\n**{md_escape(str(exc))}**")
    if record is None:
        return Block(f"{TITLE}\n\nNo audit record ({md_code(where)}): run "
                     f"{md_code(RECORD_COMMAND)} to keep the audit's outcome with the results.")
    return Block(summary_markdown(record, where))
