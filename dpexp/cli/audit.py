"""``dpexp audit``: empirical lower bounds on epsilon (:mod:`dpexp.audit` does the work).

:func:`cli_audit` is the only implementation of the command (the typer command
:func:`audit` parses and calls it): it selects the targets, runs them
(:func:`dpexp.audit.run.run_target`), prints one line per target and the summary of
``--all`` (or ``--json``), and returns the exit code.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import numpy as np
import typer

from dpexp.audit.catalogue import (
    audit_targets,
    get_audit_target,
    missing_requirements,
)
from dpexp.audit.targets import AuditResult, AuditTarget, check_samples
from dpexp.cli._common import ResultsDir, guarded
from dpexp.errors import DpexpError, check_epsilon
from dpexp.paths import default_results_dir
from dpexp.registry import install_hint

if TYPE_CHECKING:
    from dpexp.audit.run import TargetRun

__all__ = ["AuditUsageError", "audit", "cli_audit"]


class AuditUsageError(DpexpError, ValueError):
    """Bad input to ``dpexp audit`` (printed by the CLI as one line, exit code 2).

    Also a ``ValueError``, so library callers of :func:`cli_audit` can catch it as one.
    """


def _select_targets(name: str | None, all_targets: bool, broken: bool) -> list[AuditTarget]:
    if all_targets == (name is not None):
        raise AuditUsageError("give either a target NAME or --all.")
    if all_targets:
        return list(audit_targets(broken=broken).values())
    assert name is not None
    return [get_audit_target(name, broken=True if broken else None)]


def _check_cli_inputs(
    epsilon: float | None, samples: int | None, seed: int, all_targets: bool
) -> tuple[float | None, int | None]:
    """Validate the command's numbers; every message names the option."""
    if epsilon is not None:
        if all_targets:
            raise AuditUsageError(
                "--epsilon applies to one target; with --all every target is audited at "
                "its own claimed epsilon."
            )
        try:
            epsilon = check_epsilon(epsilon)
        except ValueError as exc:
            raise AuditUsageError(f"--epsilon: {exc}.") from None
    if samples is not None:
        try:
            samples = check_samples(samples)
        except ValueError as exc:
            raise AuditUsageError(f"--samples: {exc}.") from None
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise AuditUsageError(f"--seed must be an integer >= 0, got {seed!r}.")
    return epsilon, samples


def _exit_code(results: Sequence[AuditResult], all_targets: bool) -> int:
    """1 when the audit found what it must report, else 0.

    One target: 1 when its bound exceeds the claim (whatever was expected of it: a
    script asking "is this private?" gets "no"). ``--all``: 1 only on an unexpected
    outcome (a correct target flagged, or a known-unprivate/broken one not flagged).
    """
    if all_targets:
        return 0 if all(r.as_expected for r in results) else 1
    return 0 if results[0].passed else 1


def _summary(results: Sequence[AuditResult], seconds: float) -> str:
    unexpected = [r.name for r in results if not r.as_expected]
    flagged = sum(1 for r in results if not r.passed and r.as_expected)
    passed = sum(1 for r in results if r.passed and r.as_expected)
    end_to_end = sum(1 for r in results if r.kind == "end-to-end")
    tail = f"; UNEXPECTED: {', '.join(unexpected)}" if unexpected else ""
    return (
        f"{len(results)} targets ({end_to_end} end-to-end): {passed} passed, {flagged} "
        f"flagged as expected, {len(unexpected)} unexpected, in {seconds:.1f} s{tail}"
    )


def _record_command(broken: bool, quick: bool, seed: int, samples: int | None) -> str:
    """The command line that writes the record (written into ``AUDIT.md``)."""
    parts = ["dpexp audit --all", "--broken" if broken else "", "--quick" if quick else "",
             f"--samples {samples}" if samples is not None else "",
             f"--seed {seed}" if seed else "", "--record"]
    return " ".join(p for p in parts if p)


def _run_line(run: TargetRun) -> list[str]:
    """The lines of one target: its summary and event, or why it was skipped."""
    if run.result is None:
        return [f"{run.target.name}: skipped ({run.skipped})"]
    return [run.result.summary_line(),
            f"    event: {run.result.details.get('event')}  (datasets {run.result.details.get('pair')})"]


def cli_audit(
    name: str | None = None,
    *,
    all_targets: bool = False,
    broken: bool = False,
    epsilon: float | None = None,
    samples: int | None = None,
    seed: int = 0,
    quick: bool = False,
    as_json: bool = False,
    record: bool = False,
    results_dir: Path | None = None,
    echo: Callable[[str], None] = print,
) -> int:
    """``dpexp audit``: the only implementation of the command; returns its exit code.

    ``dpexp audit NAME [--epsilon E] [--samples N] [--seed S] [--quick] [--json]`` audits
    one target and returns 1 when its lower bound exceeds the claim. ``dpexp audit --all
    [--quick] [--json]`` audits every registered target (mechanisms, demo, and the
    end-to-end targets of every paper manifest) and returns 1 only on
    an unexpected outcome; ``--broken`` selects the deliberately broken targets instead.
    ``--quick`` uses each target's CI size (``quick_samples``), the default its full size.
    ``--json`` prints one object (NAME) or a list (``--all``) with ``kind``,
    ``algorithm``, ``claimed_epsilon``, ``epsilon_lower_bound``, ``outcome``, ...
    ``--all --record`` also keeps the outcome (:mod:`dpexp.audit.record`) in
    ``RESULTS/audit/audit.json`` and ``AUDIT.md`` (``--broken``: ``audit-broken.*``),
    ``RESULTS`` being ``results_dir`` (default: the project's ``results/``), checked
    writable before any target runs.

    Bad input raises :class:`AuditUsageError` (a ``DpexpError`` and ``ValueError`` naming
    the option), :class:`~dpexp.errors.UnknownNameError` or a ``DpexpError`` for an
    unwritable results directory; the CLI prints each as one line and exits 2 (1 for the
    last).
    """
    # lazy: the audit's run and record import scipy and dpexp.privacy (numba, scikit-learn), the environment the dataset registry: `dpexp --help` stays fast
    from dpexp.audit.record import AUDIT_DIR, audit_record, private_algorithms, write_record
    from dpexp.audit.run import run_targets
    from dpexp.experiments.environment import check_writable, git_revision

    epsilon, samples = _check_cli_inputs(epsilon, samples, seed, all_targets)
    if record and not all_targets:
        raise AuditUsageError("--record keeps the outcome of --all: give --all.")
    results_dir = Path(results_dir) if results_dir is not None else default_results_dir()
    if record:
        check_writable(results_dir / AUDIT_DIR, "the audit record's folder")
    targets = _select_targets(name, all_targets, broken)
    if not all_targets:
        missing = missing_requirements(targets[0])
        if missing:
            raise AuditUsageError(f"audit {targets[0].name}: needs the optional package(s) "
                                  f"{', '.join(missing)}, not audited here; "
                                  + "; ".join(install_hint(p) for p in missing) + ".")
    started = time.perf_counter()

    def show(run: TargetRun) -> None:
        if not as_json:
            for line in _run_line(run):
                echo(line)

    runs = run_targets(targets, quick=quick, seed=int(seed), epsilon=epsilon, samples=samples,
                       on_run=show)
    results = [r.result for r in runs if r.result is not None]
    skipped = [{"name": r.target.name, "algorithm": str(r.target.algorithm),
                "outcome": f"skipped ({r.skipped})"} for r in runs if r.result is None]
    seconds = time.perf_counter() - started
    if as_json:
        payload = [r.to_dict() for r in results]
        echo(json.dumps(payload + skipped if all_targets else payload[0], indent=2, default=str))
    elif all_targets:
        echo(_summary(results, seconds)
             + (f"; {len(skipped)} skipped for missing optional packages" if skipped else ""))
    if record:
        kept = audit_record(runs, private_algorithms=private_algorithms(), broken=broken,
                            quick=quick, seed=int(seed), samples=samples, revision=git_revision())
        paths = write_record(kept, results_dir, _record_command(broken, quick, int(seed), samples))
        if not as_json:
            echo(f"audit record: {' and '.join(str(p) for p in paths)} ({seconds:.1f} s)")
    return _exit_code(results, all_targets)


@guarded
def audit(
    name: Annotated[str | None, typer.Argument(help="Audit target (a registered estimator end to end, a mechanism, a demo or ledger entries).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Audit every registered target.")] = False,
    broken: Annotated[bool, typer.Option("--broken", help="Use the deliberately broken fixtures.")] = False,
    epsilon: Annotated[float | None, typer.Option("--epsilon", help="Claimed epsilon to test.")] = None,
    samples: Annotated[int | None, typer.Option("--samples", help="Draws per dataset and stage.")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    quick: Annotated[bool, typer.Option("--quick", help="Each target's CI size (fewer draws); the default is the full size.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    record: Annotated[bool, typer.Option("--record", help="With --all: keep the outcome in results/audit/audit.json and AUDIT.md (the report reads it).")] = False,
    results_dir: ResultsDir = None,
):
    """Empirically lower-bound the epsilon of a release (mechanisms and real estimators).

    With NAME: exits 1 when the lower bound exceeds the claimed epsilon (the release is
    not as private as claimed), even for targets known to be unprivate. With --all: exits
    1 only on unexpected outcomes (a correct target flagged, or a known-unprivate one
    not flagged). --json lists kind, algorithm, claim, lower bound and outcome. --record
    (with --all) writes the audit record, results/audit/audit.json and AUDIT.md, that the
    report shows beside each leaderboard entry. Implemented by dpexp.cli.audit.cli_audit.
    """
    code = cli_audit(name, all_targets=all_, broken=broken, epsilon=epsilon, samples=samples,
                     seed=seed, quick=quick, as_json=as_json, record=record,
                     results_dir=results_dir, echo=typer.echo)
    raise typer.Exit(code)
