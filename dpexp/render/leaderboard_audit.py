"""The leaderboard's ``audit`` column (issue 44): beside each entry, what the committed audit
record (``results/audit/audit.json``, written by ``dpexp audit --all --record``,
:mod:`dpexp.audit.record`) says of its algorithm.

A DP entry: the number of end-to-end targets that fitted its registered algorithm and the
largest empirical lower bound against its claim, with the verdict (e.g. ``3 targets, ε̂ ≥
0.41 (claim ε = 1): pass``), or ``not audited: <reason>`` (an optional package missing where
the record was written, no target). A non-private reference: ``—``. No record: the command
that writes it. The report never runs the audit: it shows what was recorded, and with
which revision and mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from dpexp.audit.record import (
    AlgorithmAudit,
    AuditRecord,
    AuditRecordError,
    algorithm_audit,
    claim_text,
    read_record,
    record_paths,
)
from dpexp.experiments.spec import ExperimentSpec
from dpexp.registry import all_algorithms
from dpexp.render.markup import md_code

__all__ = [
    "NO_RECORD",
    "NON_PRIVATE",
    "RECORD_COMMAND",
    "LeaderboardAudit",
    "algorithm_cell",
    "format_bound",
    "leaderboard_audit",
]

#: The command that writes the record the column reads.
RECORD_COMMAND = "dpexp audit --all --record"
#: The column of every entry when there is no record.
NO_RECORD = f"no audit record (run {RECORD_COMMAND})"
#: The column of a non-private reference.
NON_PRIVATE = "—"


@dataclass(frozen=True)
class LeaderboardAudit:
    """The audit column of one leaderboard: entry label -> cell, and the line saying where
    the column comes from."""

    cells: dict[str, str]
    caption: str

    def cell(self, entry: str) -> str:
        """The column of ``entry`` (an entry the spec does not name: not audited)."""
        return self.cells.get(entry, "not audited: not an entry of the leaderboard's spec")


def format_bound(value: float | None) -> str:
    """The bound as shown: epsilon is never negative, so max(bound, 0) is a lower bound too
    (a bound at or below 0 -- nothing told the neighbours apart -- reads ``0.00``)."""
    if value is None:
        return "none"
    if math.isinf(value) and value > 0:
        return "∞"
    return f"{max(value, 0.0):.2f}"


def algorithm_cell(audit: AlgorithmAudit) -> str:
    """``N targets, ε̂ ≥ B (claim ε = E): verdict``, or ``not audited: reason``."""
    worst = audit.worst
    if worst is None:
        return f"not audited: {audit.reason}"
    n = len(audit.targets)
    return (f"{n} target{'s' if n != 1 else ''}, ε̂ ≥ {format_bound(worst.epsilon_lower_bound)} "
            f"(claim {claim_text(worst)}): {audit.verdict}")


def _caption(record: AuditRecord, where: str) -> str:
    counts = record.counts
    unexpected = counts["flagged"] + counts["unexpected-pass"]
    state = ("every outcome as expected" if not unexpected
             else f"**{unexpected} unexpected outcome(s)**")
    return (f"*Audit column:* from the audit record {md_code(where)} ({record.mode} mode, seed "
            f"{record.seed}, dpexp revision {md_code(record.revision)}; "
            f"{len(record.targets)} targets, {state}): per DP entry, the end-to-end targets "
            f"that fitted its algorithm and the largest Clopper-Pearson lower bound ε̂ on its "
            f"epsilon (confidence 1 − {record.alpha:g}; 0 when nothing told the neighbours "
            f"apart) against the claim; passing does not prove privacy, it fails to refute "
            f"it. Written by {md_code(RECORD_COMMAND)}.")


def leaderboard_audit(spec: ExperimentSpec, results_dir: Path) -> LeaderboardAudit:
    """The audit column of every entry of ``spec`` from the record under ``results_dir``."""
    path = record_paths(results_dir)[0]
    where = path.relative_to(results_dir).as_posix()
    try:
        record = read_record(path)
    except AuditRecordError as exc:
        cell = f"audit record unreadable (run {RECORD_COMMAND})"
        return LeaderboardAudit({a.label: cell for a in spec.algorithms},
                                f"*Audit column:* **{exc}**")
    if record is None:
        return LeaderboardAudit({a.label: NO_RECORD for a in spec.algorithms},
                                f"*Audit column:* no audit record ({md_code(where)}): run "
                                f"{md_code(RECORD_COMMAND)}.")
    registered = all_algorithms()
    cells = {}
    for algo in spec.algorithms:
        info = registered.get(algo.name) if algo.name else None
        if info is None:
            cells[algo.label] = "not audited: not a registered algorithm"
        elif not info.private:
            cells[algo.label] = NON_PRIVATE
        else:
            cells[algo.label] = algorithm_cell(algorithm_audit(record, info.name))
    return LeaderboardAudit(cells, _caption(record, where))
