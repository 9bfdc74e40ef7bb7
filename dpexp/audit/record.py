"""The audit as a committed record: what ``dpexp audit --all --record`` keeps (issue 44).

``results/audit/audit.json`` holds one entry per declared target of the run (what it audits:
kind, algorithm, release paths, declaring module; its claim, the Clopper-Pearson lower bound
on epsilon, draws per dataset and stage, alpha and the outcome), the run's seed and mode
(``--quick`` or full), dpexp's git revision, and the registered private algorithms that
no target of the run covers, with why. ``results/audit/AUDIT.md`` is the same as a small
table. ``--broken`` writes ``audit-broken.json`` / ``AUDIT-broken.md`` instead, so the
record of the correct targets is never overwritten by the broken twins'.

The file is a function of the code and the seed: no timing, no absolute path, and one
``recorded_at`` field as the only timestamp. The targets of the release paths that audit an
estimator's *default* noise source (:data:`UNSEEDED_PATHS`) draw fresh OS entropy by design
-- deriving that noise from the audit's seed would audit a path nobody runs -- so their
draws do not follow the seed: such an entry is marked ``seeded: false``, keeps no event
(a list of hashes of random outputs) and records its bound clamped at 0 (epsilon is never
negative, so it is still a lower bound), which a private release gives on every run.

The report reads the record (:func:`read_record`, :func:`algorithm_audit`) to show, beside
each leaderboard entry, how many targets cover its algorithm and the largest lower bound
against its claim.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpexp.audit.run import TargetRun
from dpexp.audit.statistics import ALPHA
from dpexp.errors import DpexpError
from dpexp.experiments.cache import atomic_write_text
from dpexp.registry import all_algorithms

__all__ = [
    "AUDIT_DIR",
    "OUTCOMES",
    "RECORD_FORMAT",
    "UNSEEDED_PATHS",
    "AlgorithmAudit",
    "AuditRecord",
    "AuditRecordError",
    "RecordedTarget",
    "Unaudited",
    "algorithm_audit",
    "audit_record",
    "private_algorithms",
    "read_record",
    "record_markdown",
    "record_paths",
    "write_record",
]

#: The record's schema version (bump when a field changes meaning).
RECORD_FORMAT = 1
#: The record's folder under the results directory.
AUDIT_DIR = "audit"
#: Outcomes of a recorded target: a correct target's bound within its claim; a correct
#: target's bound above it; a known-unprivate or broken target flagged, as it must be; a
#: known-unprivate or broken target not flagged; a target not run here.
OUTCOMES = ("pass", "flagged", "expected-flagged", "unexpected-pass", "skipped")
#: Release paths whose targets audit the estimator's default noise source (fresh OS
#: entropy, never the audit's seed; :data:`dpexp.audit.paths.PATHS`).
UNSEEDED_PATHS = frozenset({"defaults", "shared random_state"})
#: What ``seeded: false`` means (written into the record).
UNSEEDED_NOTE = (
    "an entry with seeded false audits an estimator's default noise source (fresh OS "
    "entropy by design: the defaults path, two fits sharing a random_state); its draws do "
    "not follow the seed, so it keeps no event and its bound is clamped at 0"
)


class AuditRecordError(DpexpError):
    """An audit record that cannot be read (malformed, or of another format)."""


@dataclass(frozen=True)
class RecordedTarget:
    """One target of the record: what it audits, its claim, bound and outcome."""

    name: str
    #: mechanism, demo, ledger-entry or end-to-end (:data:`dpexp.audit.targets.KINDS`).
    kind: str
    #: The registered algorithm an end-to-end target fits (None: a primitive).
    algorithm: str | None
    #: The release paths users run that the target covers (:data:`dpexp.audit.paths.PATHS`).
    release_paths: tuple[str, ...]
    #: The module that declares the target.
    source: str | None
    description: str
    claimed_epsilon: float
    claimed_delta: float
    #: The Clopper-Pearson lower bound on epsilon at confidence 1 - alpha (None: not run;
    #: clamped at 0 when not ``seeded``).
    epsilon_lower_bound: float | None
    #: Draws per dataset and stage.
    samples: int
    alpha: float
    expected_to_pass: bool
    #: One of :data:`OUTCOMES`.
    outcome: str
    #: The counted event and the neighbour pair it was counted on ("" when not run).
    event: str = ""
    pair: tuple[int, ...] = ()
    #: Gaussian-DP targets: the lower bound on mu and the claim's mu (else None).
    mu_lower_bound: float | None = None
    mu_claim: float | None = None
    #: Why the target was not run ("" when it was).
    skipped: str = ""
    #: Whether its draws follow the audit's seed (False: :data:`UNSEEDED_PATHS`).
    seeded: bool = True


@dataclass(frozen=True)
class Unaudited:
    """A registered private algorithm that no target of the record covers, and why."""

    algorithm: str
    reason: str


@dataclass(frozen=True)
class AuditRecord:
    """The outcome of ``dpexp audit --all`` as kept in ``results/audit/audit.json``."""

    #: "correct" (the declared targets) or "broken" (the deliberately broken twins).
    suite: str
    #: "quick" (each target's CI size), "full", or "samples=N" (``--samples``).
    mode: str
    seed: int
    revision: str
    targets: tuple[RecordedTarget, ...]
    unaudited: tuple[Unaudited, ...]
    recorded_at: str = ""
    alpha: float = ALPHA
    format: int = RECORD_FORMAT
    note: str = UNSEEDED_NOTE

    @property
    def counts(self) -> dict[str, int]:
        """How many targets had each outcome (every one of :data:`OUTCOMES`)."""
        return {o: sum(t.outcome == o for t in self.targets) for o in OUTCOMES}

    def to_json(self) -> str:
        """The record as strict JSON (non-finite bounds as "inf"/"-inf"; the outcome
        counts as a convenience for readers, recomputed on reading)."""
        data = {**asdict(self), "counts": self.counts}
        return json.dumps(_finite_json(data), indent=2, allow_nan=False) + "\n"

    @property
    def as_expected(self) -> bool:
        """No correct target flagged and no known-unprivate/broken one missed."""
        return not any(t.outcome in ("flagged", "unexpected-pass") for t in self.targets)


def _finite_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def record_paths(results_dir: Path, *, broken: bool = False) -> tuple[Path, Path]:
    """The record's JSON file and its markdown table under ``results_dir``."""
    folder = Path(results_dir) / AUDIT_DIR
    tail = "-broken" if broken else ""
    return folder / f"audit{tail}.json", folder / f"AUDIT{tail}.md"


def _outcome(run: TargetRun) -> str:
    result = run.result
    if result is None:
        return "skipped"
    if result.passed:
        return "pass" if result.expected_to_pass else "unexpected-pass"
    return "expected-flagged" if not result.expected_to_pass else "flagged"


def recorded_target(run: TargetRun, *, quick: bool, samples: int | None) -> RecordedTarget:
    """The record's entry of one run (without its timing: the record must not vary)."""
    target, result = run.target, run.result
    seeded = not UNSEEDED_PATHS & set(target.release_paths)
    common = dict(name=target.name, kind=target.kind, algorithm=target.algorithm,
                  release_paths=tuple(target.release_paths), description=target.description,
                  expected_to_pass=target.expected_to_pass, outcome=_outcome(run), seeded=seeded)
    if result is None:
        return RecordedTarget(
            **common, source=run.source, claimed_epsilon=float(target.epsilon),
            claimed_delta=float(target.delta), epsilon_lower_bound=None,
            samples=samples or (target.quick_samples if quick else target.samples),
            alpha=ALPHA, skipped=run.skipped)
    details = result.details
    bound, mu = result.epsilon_lower_bound, _float(details.get("mu_lower_bound"))
    if not seeded:  # max(bound, 0) is a lower bound too, and the same on every private run
        bound, mu = max(bound, 0.0), None if mu is None else max(mu, 0.0)
    return RecordedTarget(
        **common, source=result.source, claimed_epsilon=result.claimed_epsilon,
        claimed_delta=result.claimed_delta, epsilon_lower_bound=bound,
        samples=result.samples, alpha=float(details.get("alpha", 1.0 - result.confidence)),
        event=str(details.get("event", "")) if seeded else "",
        pair=tuple(int(i) for i in details.get("pair", ())) if seeded else (),
        mu_lower_bound=mu, mu_claim=_float(details.get("mu_claim")))


def private_algorithms() -> list[str]:
    """The registered algorithms that take a privacy budget (``AlgorithmInfo.private``),
    those known not to be DP included: each should have an end-to-end target."""
    return sorted(name for name, info in all_algorithms().items() if info.private)


def unaudited_algorithms(runs: Sequence[TargetRun],
                         private_algorithms: Sequence[str]) -> tuple[Unaudited, ...]:
    """Each of ``private_algorithms`` that no end-to-end target of ``runs`` fitted, with why:
    its targets were skipped (an optional package does not import here), or it has none."""
    out = []
    for algorithm in sorted(private_algorithms):
        mine = [r for r in runs if r.target.algorithm == algorithm and r.target.kind == "end-to-end"]
        if any(r.result is not None for r in mine):
            continue
        reasons = sorted({r.skipped for r in mine if r.skipped})
        out.append(Unaudited(algorithm, "; ".join(reasons) + " (not importable where the record "
                             "was written)" if reasons else "no end-to-end audit target declared"))
    return tuple(out)


def audit_record(runs: Sequence[TargetRun], *, private_algorithms: Sequence[str], broken: bool,
                 quick: bool, seed: int, samples: int | None, revision: str,
                 recorded_at: str | None = None) -> AuditRecord:
    """The record of a run of :func:`dpexp.audit.run.run_all` (``recorded_at``: now, UTC)."""
    mode = f"samples={samples}" if samples is not None else ("quick" if quick else "full")
    stamp = recorded_at or datetime.now(UTC).replace(microsecond=0).isoformat()
    return AuditRecord(
        suite="broken" if broken else "correct", mode=mode, seed=int(seed), revision=revision,
        targets=tuple(recorded_target(r, quick=quick, samples=samples) for r in runs),
        unaudited=unaudited_algorithms(runs, private_algorithms), recorded_at=stamp)


# ----------------------------------------------------------------------------- reading


def _target_from(data: Mapping[str, Any]) -> RecordedTarget:
    values = dict(data)
    for key in ("claimed_epsilon", "claimed_delta", "epsilon_lower_bound", "alpha",
                "mu_lower_bound", "mu_claim"):
        values[key] = _float(values.get(key))
    values["release_paths"] = tuple(values.get("release_paths", ()))
    values["pair"] = tuple(values.get("pair", ()))
    return RecordedTarget(**values)


def read_record(path: Path) -> AuditRecord | None:
    """The record at ``path`` (None when there is none); a malformed record is an
    :class:`AuditRecordError` naming the file."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        if data.get("format") != RECORD_FORMAT:
            raise AuditRecordError(f"audit record {path} has format {data.get('format')!r}, "
                                   f"this dpexp reads {RECORD_FORMAT}: run `dpexp audit --all "
                                   f"--record` again.")
        data.pop("counts", None)
        targets = tuple(_target_from(t) for t in data.pop("targets"))
        unaudited = tuple(Unaudited(**u) for u in data.pop("unaudited"))
        return AuditRecord(**data, targets=targets, unaudited=unaudited)
    except AuditRecordError:
        raise
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise AuditRecordError(f"audit record {path} cannot be read ({exc}): run `dpexp audit "
                               f"--all --record` again.") from None


@dataclass(frozen=True)
class AlgorithmAudit:
    """What the record says of one registered algorithm."""

    algorithm: str
    #: Its end-to-end targets that ran.
    targets: tuple[RecordedTarget, ...]
    #: Why it has none (when ``targets`` is empty).
    reason: str = ""

    @property
    def worst(self) -> RecordedTarget | None:
        """The target whose lower bound is largest against its claim (a bound below 0 counts
        as 0, as it is shown: epsilon is never negative; ties: the first)."""
        def excess(t: RecordedTarget) -> float:
            bound = -math.inf if t.epsilon_lower_bound is None else t.epsilon_lower_bound
            return max(bound, 0.0) - t.claimed_epsilon

        return max(self.targets, key=excess, default=None)

    @property
    def verdict(self) -> str:
        """pass; FLAGGED (a correct target's bound exceeds its claim); flagged as expected
        (a known-unprivate variant); NOT FLAGGED (a known-unprivate variant that passed)."""
        outcomes = [t.outcome for t in self.targets]
        flagged = [t.name for t in self.targets if t.outcome == "flagged"]
        if flagged:
            return f"FLAGGED ({', '.join(flagged)})"
        if "unexpected-pass" in outcomes:
            return "known unprivate, NOT FLAGGED"
        if "expected-flagged" in outcomes:
            return "known unprivate, flagged as expected"
        return "pass"


def algorithm_audit(record: AuditRecord, algorithm: str) -> AlgorithmAudit:
    """The end-to-end targets of ``algorithm`` that ran, or why there are none."""
    ran = tuple(t for t in record.targets if t.algorithm == algorithm and t.kind == "end-to-end"
                and t.outcome != "skipped")
    reason = next((u.reason for u in record.unaudited if u.algorithm == algorithm),
                  "no end-to-end audit target in the record")
    return AlgorithmAudit(algorithm, ran, "" if ran else reason)


# ----------------------------------------------------------------------------- markdown


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if math.isfinite(value) else str(value)


def claim_text(target: RecordedTarget) -> str:
    """``ε = 1`` or ``ε = 1, δ = 1e-06``."""
    delta = f", δ = {target.claimed_delta:g}" if target.claimed_delta else ""
    return f"ε = {target.claimed_epsilon:g}{delta}"


def _audits(target: RecordedTarget) -> str:
    what = target.kind + (f": {target.algorithm}" if target.algorithm else "")
    return what + (f" ({', '.join(target.release_paths)})" if target.release_paths else "")


def record_markdown(record: AuditRecord, command: str) -> str:
    """``AUDIT.md``: the record as one table, and the private algorithms left unaudited."""
    suite = "deliberately broken twins" if record.suite == "broken" else "declared targets"
    counts = ", ".join(f"{n} {o}" for o, n in record.counts.items())
    lines = [f"# Privacy audit record ({suite})", "",
             f"Written by `{command}` at dpexp revision `{record.revision}` "
             f"({record.mode} mode, seed {record.seed}, α = {record.alpha:g} per release, "
             f"recorded {record.recorded_at}). ε̂ is the Clopper-Pearson lower bound on the "
             f"epsilon of the release; a target passes when it does not exceed the claim. "
             f"{len(record.targets)} targets: {counts}. Note: {record.note}.", "",
             "| target | audits | claim | ε̂ ≥ | draws | outcome |", "|---|---|---|---|---|---|"]
    for t in record.targets:
        outcome = t.outcome + (f" ({t.skipped})" if t.skipped else "")
        lines.append(f"| {t.name} | {_audits(t)} | {claim_text(t)} | "
                     f"{_number(t.epsilon_lower_bound)} | {t.samples:,} | {outcome} |")
    lines.append("")
    if record.unaudited:
        lines += ["Registered private algorithms no target of this record covers:", ""]
        lines += [f"* {u.algorithm}: {u.reason}" for u in record.unaudited]
    else:
        lines.append("Every registered private algorithm is covered by an end-to-end target.")
    return "\n".join(lines) + "\n"


def write_record(record: AuditRecord, results_dir: Path, command: str) -> tuple[Path, Path]:
    """Write the record's JSON and markdown under ``results_dir`` (each atomically: a
    reader never sees half a file); their paths."""
    json_path, md_path = record_paths(results_dir, broken=record.suite == "broken")
    atomic_write_text(json_path, record.to_json())
    atomic_write_text(md_path, record_markdown(record, command))
    return json_path, md_path
