"""Running the audit: :func:`run_target` (one target), :func:`run_audit` (a declared target
by name), :func:`run_targets` (a list of targets, skipping those whose optional packages do
not import here) and :func:`run_all` (every declared target, what ``dpexp audit --all``
computes; :mod:`dpexp.audit.record` keeps its outcome).

Stage 1 draws a first batch per dataset and picks the best (pair, event)
(:func:`dpexp.audit.events.candidate_events`); stage 2 counts the chosen event on a
fresh batch and bounds it (:mod:`dpexp.audit.statistics`), at level alpha / (number of
releases) per release of a multi-release target (Bonferroni).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpexp.audit.catalogue import (
    catalogue_entries,
    get_audit_target,
    missing_requirements,
    target_source,
)
from dpexp.audit.events import Event, candidate_events, count_event
from dpexp.audit.statistics import (
    ALPHA,
    clopper_pearson_lower,
    clopper_pearson_upper,
    gdp_epsilon,
    score,
)
from dpexp.audit.targets import AuditResult, AuditTarget, check_samples
from dpexp.errors import check_epsilon
from dpexp.privacy.calibration import analytic_gaussian_sigma, check_delta

__all__ = ["TargetRun", "run_all", "run_audit", "run_target", "run_targets"]


@dataclass(frozen=True)
class TargetRun:
    """One target of a run of several: its result, or why it was not run."""

    target: AuditTarget
    #: None when the target was not run (``skipped`` says why).
    result: AuditResult | None
    #: Why the target was not run ("" when it was): the optional packages its algorithm
    #: needs do not import here.
    skipped: str = ""
    #: The module that declares the target (None: no declared list holds it).
    source: str | None = None


def _draw(
    target: AuditTarget,
    data_index: int,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    size: int,
) -> dict[str, np.ndarray]:
    out = target.release(
        target.datasets[data_index], epsilon=epsilon, delta=delta, rng=rng, size=size
    )
    if not isinstance(out, dict):
        out = {"": out}
    for key, val in out.items():
        if len(val) != size:
            raise ValueError(
                f"release of {target.name!r}[{key}] returned {len(val)} draws, expected {size}"
            )
    return out


def _audit_one(
    name: str,
    stage1: dict[int, np.ndarray],
    stage2_draw: Callable[[int], np.ndarray],
    target: AuditTarget,
    claim: tuple[float, float],
    alpha: float,
) -> dict[str, Any]:
    eps_c, delta_c = claim
    alpha_side = alpha / 2.0
    gaussian = target.gaussian
    score_delta = 0.0 if gaussian else delta_c
    best: tuple[float, int, int, Event] | None = None
    for i, j in target.pairs:
        for a, b in ((i, j), (j, i)):
            s, ev = candidate_events(
                stage1[a], stage1[b], target.output, alpha_side, score_delta, gaussian
            )
            if best is None or s > best[0]:
                best = (s, a, b, ev)
    assert best is not None
    s1, a, b, event = best
    xa, xb = stage2_draw(a), stage2_draw(b)
    ka, kb = count_event(xa, event), count_event(xb, event)
    p_a_lo = float(clopper_pearson_lower(ka, len(xa), alpha_side))
    p_b_hi = float(clopper_pearson_upper(kb, len(xb), alpha_side))
    bound = float(score(np.array(p_a_lo), np.array(p_b_hi), score_delta, gaussian))
    rec: dict[str, Any] = {
        "release": name,
        "claimed_epsilon": eps_c,
        "claimed_delta": delta_c,
        "pair": [a, b],
        "event": event.describe(),
        "stage1_bound": s1,
        "count_a": ka,
        "count_b": kb,
        "p_a_lower": p_a_lo,
        "p_b_upper": p_b_hi,
        "p_a_hat": ka / len(xa),
        "p_b_hat": kb / len(xb),
    }
    if gaussian:
        mu_claim = 1.0 / analytic_gaussian_sigma(epsilon=eps_c, delta=delta_c, sensitivity=1.0)
        rec.update(mu_lower_bound=bound, mu_claim=mu_claim)
        rec["epsilon_lower_bound"] = gdp_epsilon(bound, delta_c)
        rec["passed"] = bool(bound <= mu_claim)
    else:
        rec["epsilon_lower_bound"] = bound
        rec["passed"] = bool(bound <= eps_c * (1 + 1e-12))
    return rec


def run_target(
    target: AuditTarget,
    *,
    epsilon: float | None = None,
    samples: int | None = None,
    seed: int = 0,
    quick: bool = False,
    alpha: float = ALPHA,
    source: str | None = None,
) -> AuditResult:
    """Audit ``target`` (see :mod:`dpexp.audit`). ``samples`` = draws per dataset and stage;
    ``source`` (the module that declares the target) is reported in the result."""
    eps = check_epsilon(target.epsilon if epsilon is None else epsilon)
    delta = target.delta
    if delta:
        check_delta(delta)
    if samples is None:
        samples = target.quick_samples if quick else target.samples
    samples = check_samples(samples)
    started = time.perf_counter()
    root = np.random.SeedSequence([int(seed), *(ord(c) for c in target.name)])
    ss1, ss2 = root.spawn(2)
    used = sorted({i for pair in target.pairs for i in pair})
    rng1 = {i: np.random.default_rng(s) for i, s in zip(used, ss1.spawn(len(used)), strict=True)}
    rng2 = {i: np.random.default_rng(s) for i, s in zip(used, ss2.spawn(len(used)), strict=True)}
    stage1 = {
        i: _draw(target, i, epsilon=eps, delta=delta, rng=rng1[i], size=samples) for i in used
    }
    stage2_cache: dict[int, dict[str, np.ndarray]] = {}

    def stage2(i: int) -> dict[str, np.ndarray]:
        if i not in stage2_cache:
            stage2_cache[i] = _draw(target, i, epsilon=eps, delta=delta, rng=rng2[i], size=samples)
        return stage2_cache[i]

    claims = target.claims(eps, delta) if target.claims is not None else {"": (eps, delta)}
    keys = list(stage1[used[0]].keys())
    if set(keys) != set(claims):
        raise ValueError(
            f"release keys {sorted(keys)} of {target.name!r} do not match its claims {sorted(claims)}"
        )
    per_release_alpha = alpha / len(keys)
    records = [
        _audit_one(
            key,
            {i: stage1[i][key] for i in used},
            lambda i, key=key: stage2(i)[key],
            target,
            claims[key],
            per_release_alpha,
        )
        for key in keys
    ]
    if target.gaussian:
        worst = max(records, key=lambda r: r["mu_lower_bound"] - r["mu_claim"])
    else:
        worst = max(records, key=lambda r: r["epsilon_lower_bound"] - r["claimed_epsilon"])
    passed = all(r["passed"] for r in records)
    details: dict[str, Any] = {
        "description": target.description,
        "alpha": alpha,
        "n_releases": len(records),
        "worst_release": worst["release"],
        "pair": worst["pair"],
        "event": worst["event"],
        "seconds": round(time.perf_counter() - started, 3),
    }
    for k in ("mu_lower_bound", "mu_claim", "p_a_lower", "p_b_upper", "p_a_hat", "p_b_hat"):
        if k in worst:
            details[k] = worst[k]
    if len(records) > 1:
        details["releases"] = records
    return AuditResult(
        name=target.name,
        claimed_epsilon=float(worst["claimed_epsilon"]),
        claimed_delta=float(worst["claimed_delta"]),
        epsilon_lower_bound=float(worst["epsilon_lower_bound"]),
        confidence=1.0 - alpha,
        passed=passed,
        expected_to_pass=target.expected_to_pass,
        samples=samples,
        details=details,
        kind=target.kind,
        algorithm=target.algorithm,
        source=source,
    )


def run_audit(
    name: str,
    *,
    epsilon: float | None = None,
    samples: int | None = None,
    seed: int = 0,
    quick: bool = False,
    broken: bool | None = None,
) -> AuditResult:
    """Audit the registered target ``name``; ``epsilon`` overrides its claimed epsilon."""
    return run_target(
        get_audit_target(name, broken=broken),
        epsilon=epsilon,
        samples=samples,
        seed=seed,
        quick=quick,
        source=target_source(name),
    )


def run_targets(
    targets: Iterable[AuditTarget],
    *,
    quick: bool = False,
    seed: int = 0,
    epsilon: float | None = None,
    samples: int | None = None,
    sources: dict[str, str] | None = None,
    on_run: Callable[[TargetRun], None] | None = None,
) -> list[TargetRun]:
    """Audit each of ``targets`` in order (at its own claim, or ``epsilon``); a target whose
    algorithm needs optional packages that do not import here is skipped with the reason
    (a machine without interpret cannot fit DP-EBM). ``sources``: target name -> declaring
    module (looked up in the catalogue when absent); ``on_run`` sees each outcome as it
    comes."""
    runs = []
    for target in targets:
        source = (sources or {}).get(target.name) or target_source(target.name)
        missing = missing_requirements(target)
        if missing:
            run = TargetRun(target, None, f"needs the optional package(s) {', '.join(missing)}",
                            source)
        else:
            run = TargetRun(target, run_target(target, epsilon=epsilon, samples=samples, seed=seed,
                                               quick=quick, source=source), source=source)
        if on_run is not None:
            on_run(run)
        runs.append(run)
    return runs


def run_all(
    *,
    quick: bool = False,
    seed: int = 0,
    broken: bool = False,
    on_run: Callable[[TargetRun], None] | None = None,
) -> list[TargetRun]:
    """Audit every declared target (the broken ones when ``broken``): what ``dpexp audit
    --all`` computes and :func:`dpexp.audit.record.audit_record` keeps."""
    entries = [e for e in catalogue_entries() if e.broken == broken]
    return run_targets([e.target for e in entries], quick=quick, seed=seed,
                       sources={e.target.name: e.source for e in entries}, on_run=on_run)
