"""Empirical privacy audit: a statistical lower bound on the real epsilon of a release.

Method (two stages on independent draws, so the reported bound is a valid test)

1. *Selection.* For every neighbouring pair of tiny datasets (both orders) draw a first
   batch of outputs and build candidate events: for real outputs ``X > t`` and ``X <= t``
   with ``t`` at quantiles of the pooled batch; for discrete outputs, sets of outcomes
   ordered by their empirical likelihood ratio (prefixes), and the single most likely
   outcomes. Keep the (pair, event) with the best lower bound on this batch.
2. *Test.* On a second, fresh batch, compute one-sided Clopper-Pearson bounds for the
   chosen event, ``p_A >= p_A_lower`` and ``p_B <= p_B_upper``, each at level alpha/2
   (alpha = 1e-6), and report

   * pure epsilon claims: ``epsilon_lower_bound = ln(p_A_lower) - ln(p_B_upper)``
     (with a delta claim: ``ln((p_A_lower - delta) / p_B_upper)``);
   * Gaussian releases: the whole (epsilon, delta(epsilon)) curve is tested at once
     through Gaussian DP (Dong, Roth & Su 2019): a Gaussian mechanism is mu-GDP, and
     mu-GDP gives ``p_A <= Phi(mu + Phi^-1(p_B))`` for every event, so
     ``mu_lower = Phi^-1(p_A_lower) - Phi^-1(p_B_upper)``. The claim (epsilon, delta)
     allows at most ``mu_claim = 1 / analytic_gaussian_sigma(epsilon, delta, 1)`` (the
     analytic Gaussian of Balle & Wang 2018 is the least noisy Gaussian meeting the
     headline pair). The test fails when ``mu_lower > mu_claim``, i.e. when the
     observations violate *some* point of the claimed curve -- this is how a halved
     sigma is caught near epsilon = 0 where the headline (epsilon, delta) pair alone
     would need far more draws. ``epsilon_lower_bound`` is then the epsilon at the
     headline delta of a ``mu_lower``-GDP mechanism.

   The target fails when the bound exceeds the claim. If the mechanism is private, the
   probability of a false alarm is at most alpha per tested release (Bonferroni over the
   releases of a multi-release target), whatever happened in stage 1. The bound is a
   *lower* bound: passing does not prove privacy, it only fails to refute it.

Kinds of target (``AuditTarget.kind``, reported in ``dpexp audit --json``)

* ``"end-to-end"``: a *registered estimator* (``AuditTarget.algorithm`` names it in
  :func:`dpexp.registry.all_algorithms`) fitted on tiny neighbouring datasets
  with its public metadata passed explicitly; the output is everything the fit publishes
  (fitted attributes + predictions on a fixed probe set). Structure randomness is a fixed
  public ``random_state`` and the noise comes from ``noise_rng=<child of the audit's
  rng>``, so the audit is conditional on the public structure, as the privacy proofs are.
  This is the audit of what users run. Build them with :func:`end_to_end_target`.
* ``"mechanism"``: one primitive mechanism of :mod:`dpexp.privacy.mechanisms`.
* ``"demo"``: a mechanism-level stand-in model (:mod:`dpexp.privacy.tiny_forest`), *not*
  a registered estimator: it shows parallel composition over a record-stable partition.
* ``"ledger-entry"``: every ledger entry of a fit against its own share of the budget,
  each conditioned on fixed values of the earlier releases (:func:`ledger_entry_target`).

Where targets come from (discovered, never listed by hand)

* :data:`AUDIT_TARGET_MODULES` -- :mod:`dpexp.privacy.audit_targets` (mechanisms, demo),
  :mod:`dpexp.privacy.domain_audit` (the DP feature-domain estimate of
  :mod:`dpexp.privacy.bounds`) and :mod:`dpexp.privacy.audit_fixtures` (deliberately
  broken fixtures that test the audit itself) -- register at import with
  :func:`register_audit_target`;
* every paper's manifest (:func:`dpexp.registry.paper_manifests`: the ``dpexp.papers``
  packages and the ``dpexp.papers`` entry points) names its ``audit_targets`` -- lists of
  :class:`AuditTarget` of the real estimators, known-unprivate variants with
  ``expected_to_pass=False`` -- and ``broken_audit_targets`` (the estimator deliberately
  broken, e.g. a data-derived domain, which the audit must flag), as ``"module:ATTR"``
  references imported on first use.

The release paths users run (defaults, the runner, canary positions, float bits, ...) and
the target covering each are listed in :mod:`dpexp.privacy.audit_paths`; the runner's fit
is :func:`dpexp.privacy.audit_runner.runner_fit`.

Entry points: :func:`run_audit` / :func:`run_target` (one target),
:func:`cli_audit` (what ``dpexp audit`` runs: the only implementation of the command).
"""

from __future__ import annotations

import importlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import ndtri

from dpexp.errors import DpexpError, UnknownNameError, check_epsilon
from dpexp.privacy.mechanisms import analytic_gaussian_sigma, check_delta, gaussian_delta

__all__ = [
    "ALPHA",
    "AUDIT_TARGETS",
    "AUDIT_TARGET_MODULES",
    "BROKEN_TARGETS",
    "KINDS",
    "AuditResult",
    "AuditTarget",
    "AuditUsageError",
    "paper_audit_sources",
    "audit_targets",
    "cli_audit",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "end_to_end_target",
    "get_audit_target",
    "ledger_entry_target",
    "register_audit_target",
    "run_all",
    "run_audit",
    "run_target",
    "target_source",
]

ALPHA = 1e-6

#: The kinds of audit target (see the module docstring).
KINDS = ("mechanism", "demo", "ledger-entry", "end-to-end")

#: The smallest number of draws per dataset and stage the audit accepts.
MIN_SAMPLES = 100

#: Release functions: ``release(dataset, *, epsilon, delta, rng, size)`` returns ``size``
#: independent outputs (shape ``(size,)`` or ``(size, k)``), or a dict of such arrays
#: (one per release of a multi-release target, keyed like ``AuditTarget.claims``).
Release = Callable[..., Any]


class AuditUsageError(DpexpError, ValueError):
    """Bad input to ``dpexp audit`` (printed by the CLI as one line, exit code 2).

    Also a ``ValueError``, so library callers of :func:`cli_audit` can catch it as one.
    """


def _check_samples(samples: Any, name: str = "samples") -> int:
    if isinstance(samples, bool) or not isinstance(samples, int | np.integer):
        raise ValueError(f"{name} must be an integer >= {MIN_SAMPLES}, got {samples!r}")
    if samples < MIN_SAMPLES:
        raise ValueError(f"{name} must be an integer >= {MIN_SAMPLES}, got {samples!r}")
    return int(samples)


@dataclass(frozen=True)
class AuditTarget:
    """A release to audit on tiny neighbouring datasets.

    ``datasets`` are any objects ``release`` understands; ``pairs`` are index pairs of
    datasets that differ by adding/removing one record. ``output`` is ``"real"`` (1-D
    floats) or ``"discrete"`` (non-negative integers, possibly tuples). ``claims`` maps the
    run's (epsilon, delta) to the claimed (epsilon, delta) of each release when
    ``release`` returns a dict (ledger entries audited against their own share).
    ``kind`` is one of :data:`KINDS`; ``algorithm`` is the registered algorithm an
    end-to-end target audits (a name of :func:`dpexp.registry.all_algorithms`).
    ``samples`` / ``quick_samples``: draws per dataset and stage of the full audit and of
    the quick (CI) audit.
    """

    name: str
    description: str
    release: Release
    datasets: tuple[Any, ...]
    pairs: tuple[tuple[int, int], ...]
    epsilon: float = 1.0
    delta: float = 0.0
    output: str = "real"
    gaussian: bool = False
    expected_to_pass: bool = True
    kind: str = "mechanism"
    samples: int = 1_000_000
    quick_samples: int = 100_000
    claims: Callable[[float, float], dict[str, tuple[float, float]]] | None = None
    algorithm: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        if self.output not in ("real", "discrete"):
            raise ValueError(f"output must be 'real' or 'discrete', got {self.output!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.algorithm is not None and (
            not isinstance(self.algorithm, str) or not self.algorithm
        ):
            raise ValueError(f"algorithm must be None or an algorithm name, got {self.algorithm!r}")
        if not self.pairs:
            raise ValueError("pairs must not be empty")
        n = len(self.datasets)
        for pair in self.pairs:
            if len(pair) != 2 or not all(0 <= i < n for i in pair) or pair[0] == pair[1]:
                raise ValueError(f"pairs must be pairs of distinct dataset indices < {n}, got {pair!r}")
        _check_samples(self.samples, "samples")
        _check_samples(self.quick_samples, "quick_samples")


def _json_safe(value: Any) -> Any:
    """Strict JSON has no infinities: write them as strings, as the Accountant does."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        return str(float(value))
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclass
class AuditResult:
    """The outcome of one audit (see the module docstring for the method)."""

    name: str
    claimed_epsilon: float
    claimed_delta: float
    epsilon_lower_bound: float
    confidence: float
    passed: bool
    expected_to_pass: bool
    samples: int
    details: dict[str, Any] = field(default_factory=dict)
    kind: str = "mechanism"
    algorithm: str | None = None
    source: str | None = None

    @property
    def as_expected(self) -> bool:
        return self.passed == self.expected_to_pass

    @property
    def outcome(self) -> str:
        if self.passed and self.expected_to_pass:
            return "pass"
        if not self.passed and not self.expected_to_pass:
            return "known unprivate, flagged as expected"
        if self.passed:
            return "UNEXPECTED PASS (known-unprivate target not flagged)"
        return "FAIL"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite numbers as the strings "inf", "-inf", "nan")."""
        d = asdict(self)
        d["outcome"] = self.outcome
        d["as_expected"] = self.as_expected
        return _json_safe(d)

    def summary_line(self) -> str:
        delta = f", delta={self.claimed_delta:g}" if self.claimed_delta else ""
        what = f"[{self.kind}{': ' + self.algorithm if self.algorithm else ''}]"
        return (
            f"{self.name} {what}: claimed epsilon={self.claimed_epsilon:g}{delta}; "
            f"lower bound {self.epsilon_lower_bound:.4f} at confidence {self.confidence:.6f} "
            f"({self.samples} draws per dataset and stage) -> {self.outcome}"
        )


# --------------------------------------------------------------------------- statistics


def clopper_pearson_lower(k: Any, n: int, alpha: float) -> np.ndarray:
    """One-sided (1 - alpha) Clopper-Pearson lower bound of a binomial proportion."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lo = stats.beta.ppf(alpha, k, n - k + 1)
    return np.where(k <= 0, 0.0, lo)


def clopper_pearson_upper(k: Any, n: int, alpha: float) -> np.ndarray:
    """One-sided (1 - alpha) Clopper-Pearson upper bound of a binomial proportion."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        hi = stats.beta.ppf(1.0 - alpha, k + 1, n - k)
    return np.where(k >= n, 1.0, hi)


def _score(p_a_lo: np.ndarray, p_b_hi: np.ndarray, delta: float, gaussian: bool) -> np.ndarray:
    """The lower bound implied by (p_A_lower, p_B_upper): epsilon, or mu for Gaussian."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if gaussian:
            return ndtri(np.clip(p_a_lo, 0, 1)) - ndtri(np.clip(p_b_hi, 0, 1))
        num = p_a_lo - delta
        out = np.log(num) - np.log(p_b_hi)
    return np.where(num > 0, out, -np.inf)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Epsilon at ``delta`` of a mu-GDP mechanism (Gaussian with sensitivity 1, sigma 1/mu)."""
    if not mu > 0:
        return 0.0
    if math.isinf(mu):
        return math.inf
    sigma = 1.0 / mu
    if gaussian_delta(epsilon=0.0, sigma=sigma, sensitivity=1.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gaussian_delta(epsilon=hi, sigma=sigma, sensitivity=1.0) > delta:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(epsilon=mid, sigma=sigma, sensitivity=1.0) > delta:
            lo = mid
        else:
            hi = mid
    return lo


# --------------------------------------------------------------------------- events


@dataclass
class _Event:
    kind: str  # "gt" | "le" | "set"
    threshold: float = 0.0
    outcomes: np.ndarray | None = None  # rows of the outcome set (discrete)

    def describe(self) -> str:
        if self.kind == "gt":
            return f"X > {self.threshold:.6g}"
        if self.kind == "le":
            return f"X <= {self.threshold:.6g}"
        assert self.outcomes is not None
        shown = [tuple(int(v) for v in row) if row.ndim else int(row) for row in self.outcomes[:5]]
        more = f" and {len(self.outcomes) - 5} more" if len(self.outcomes) > 5 else ""
        return f"X in {shown}{more}"


def _as_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"discrete outputs must have shape (n,) or (n, k), got {x.shape}")
    if not np.issubdtype(x.dtype, np.integer):
        if not np.all(np.equal(np.mod(x, 1), 0)):
            raise ValueError("discrete outputs must be integers")
        x = x.astype(np.int64)
    if x.size and x.min() < 0:
        raise ValueError("discrete outputs must be >= 0")
    return x.astype(np.int64)


def _codes(rows: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Encode the rows of several arrays consistently as integers 0..m-1 (joint unique).

    Small non-negative integer rows are packed in mixed radix first (a 1-D unique is far
    faster than a row-wise one); otherwise fall back to ``np.unique(axis=0)``.
    """
    stacked = np.concatenate(rows, axis=0)
    base = int(stacked.max(initial=0)) + 1
    k = stacked.shape[1]
    if k * math.log2(base + 1) < 62:
        packed = stacked @ (base ** np.arange(k, dtype=np.int64))
        _, inverse = np.unique(packed, return_inverse=True)
    else:
        _, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    out, start = [], 0
    for r in rows:
        out.append(inverse[start : start + len(r)])
        start += len(r)
    return out


def _count_event(x: np.ndarray, event: _Event) -> int:
    if event.kind == "gt":
        return int(np.count_nonzero(x > event.threshold))
    if event.kind == "le":
        return int(np.count_nonzero(x <= event.threshold))
    assert event.outcomes is not None
    rows = _as_rows(x)
    if rows.shape[1] != event.outcomes.shape[1]:
        return 0
    code_x, code_e = _codes([rows, event.outcomes])
    return int(np.count_nonzero(np.isin(code_x, code_e)))


def _candidate_events(
    xa: np.ndarray, xb: np.ndarray, output: str, alpha_side: float, delta: float, gaussian: bool
) -> tuple[float, _Event]:
    """Best (score, event) for "A more likely than B" on stage-1 draws."""
    n_a, n_b = len(xa), len(xb)
    if output == "real":
        xa = np.asarray(xa, dtype=np.float64).ravel()
        xb = np.asarray(xb, dtype=np.float64).ravel()
        pooled = np.concatenate([xa, xb])
        qs = np.unique(np.quantile(pooled, np.linspace(0.0005, 0.9995, 400)))
        sa, sb = np.sort(xa), np.sort(xb)
        le_a = np.searchsorted(sa, qs, side="right")
        le_b = np.searchsorted(sb, qs, side="right")
        best: tuple[float, _Event] = (-np.inf, _Event("gt", float(qs[0])))
        for kind, ka, kb in (("gt", n_a - le_a, n_b - le_b), ("le", le_a, le_b)):
            s = _score(
                clopper_pearson_lower(ka, n_a, alpha_side),
                clopper_pearson_upper(kb, n_b, alpha_side),
                delta,
                gaussian,
            )
            i = int(np.argmax(s))
            if s[i] > best[0]:
                best = (float(s[i]), _Event(kind, float(qs[i])))
        return best
    ra, rb = _as_rows(xa), _as_rows(xb)
    ca, cb = _codes([ra, rb])
    m = int(max(ca.max(initial=-1), cb.max(initial=-1))) + 1
    cnt_a = np.bincount(ca, minlength=m)
    cnt_b = np.bincount(cb, minlength=m)
    table = np.zeros((m, ra.shape[1]), dtype=np.int64)
    table[ca] = ra
    table[cb] = rb
    order = np.lexsort((-cnt_a, -(cnt_a + 0.5) / (cnt_b + 0.5)))
    pref_a, pref_b = np.cumsum(cnt_a[order]), np.cumsum(cnt_b[order])
    s_pref = _score(
        clopper_pearson_lower(pref_a, n_a, alpha_side),
        clopper_pearson_upper(pref_b, n_b, alpha_side),
        delta,
        gaussian,
    )
    likely = np.argsort(-cnt_a, kind="stable")[:20]
    s_single = _score(
        clopper_pearson_lower(cnt_a[likely], n_a, alpha_side),
        clopper_pearson_upper(cnt_b[likely], n_b, alpha_side),
        delta,
        gaussian,
    )
    i, j = int(np.argmax(s_pref)), int(np.argmax(s_single))
    if s_pref[i] >= s_single[j]:
        return float(s_pref[i]), _Event("set", outcomes=table[order[: i + 1]])
    return float(s_single[j]), _Event("set", outcomes=table[likely[j : j + 1]])


# --------------------------------------------------------------------------- the audit


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
    best: tuple[float, int, int, _Event] | None = None
    for i, j in target.pairs:
        for a, b in ((i, j), (j, i)):
            s, ev = _candidate_events(
                stage1[a], stage1[b], target.output, alpha_side, score_delta, gaussian
            )
            if best is None or s > best[0]:
                best = (s, a, b, ev)
    assert best is not None
    s1, a, b, event = best
    xa, xb = stage2_draw(a), stage2_draw(b)
    ka, kb = _count_event(xa, event), _count_event(xb, event)
    p_a_lo = float(clopper_pearson_lower(ka, len(xa), alpha_side))
    p_b_hi = float(clopper_pearson_upper(kb, len(xb), alpha_side))
    bound = float(_score(np.array(p_a_lo), np.array(p_b_hi), score_delta, gaussian))
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
) -> AuditResult:
    """Audit ``target`` (see the module docstring). ``samples`` = draws per dataset and stage."""
    eps = check_epsilon(target.epsilon if epsilon is None else epsilon)
    delta = target.delta
    if delta:
        check_delta(delta)
    if samples is None:
        samples = target.quick_samples if quick else target.samples
    samples = _check_samples(samples)
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
        source=_SOURCES.get(target.name),
    )


# --------------------------------------------------------------------------- registry

AUDIT_TARGETS: dict[str, AuditTarget] = {}
BROKEN_TARGETS: dict[str, AuditTarget] = {}
#: target name -> the module that registered it (reported as ``source``).
_SOURCES: dict[str, str] = {}

#: Modules of :mod:`dpexp.privacy` imported (once) before the registries are read; each
#: registers its targets at import time with :func:`register_audit_target`.
AUDIT_TARGET_MODULES: list[str] = [
    "dpexp.privacy.audit_targets",
    "dpexp.privacy.domain_audit",
    "dpexp.privacy.audit_fixtures",
]

_loaded: set[str] = set()


def register_audit_target(
    target: AuditTarget,
    *,
    broken: bool = False,
    replace: bool = False,
    source: str | None = None,
) -> AuditTarget:
    """Register ``target`` (in ``BROKEN_TARGETS`` when ``broken``). Returns it."""
    if not isinstance(target, AuditTarget):
        raise TypeError(f"expected an AuditTarget, got {type(target).__name__}")
    registry = BROKEN_TARGETS if broken else AUDIT_TARGETS
    other = AUDIT_TARGETS if broken else BROKEN_TARGETS
    if not replace and (target.name in registry or target.name in other):
        if registry.get(target.name) is target:
            return target
        where = _SOURCES.get(target.name, "another module")
        raise ValueError(f"audit target {target.name!r} is already registered (by {where})")
    registry[target.name] = target
    if source is not None:
        _SOURCES[target.name] = source
    return target


def target_source(name: str) -> str | None:
    """The module that registered target ``name`` (None if registered by hand)."""
    return _SOURCES.get(name)


def paper_audit_sources() -> list[tuple[str, Any, bool]]:
    """``(source module, reference, broken)`` of every paper manifest's audit-target lists."""
    from dpexp.registry import manifest_audit_refs

    return [
        (source, ref, broken)
        for broken in (False, True)
        for source, ref in manifest_audit_refs(broken=broken)
    ]


def _import_privacy_module(module_name: str) -> None:
    """Import a module that registers itself; attribute its new targets to it."""
    before = set(AUDIT_TARGETS) | set(BROKEN_TARGETS)
    importlib.import_module(module_name)
    for name in (set(AUDIT_TARGETS) | set(BROKEN_TARGETS)) - before:
        _SOURCES.setdefault(name, module_name)


def _targets_of(targets: Any, where: str) -> list[AuditTarget]:
    if callable(targets) and not isinstance(targets, AuditTarget):
        targets = targets()
    if isinstance(targets, AuditTarget | str | Mapping) or not isinstance(targets, Sequence):
        raise TypeError(f"{where} must be a list of AuditTarget")
    return list(targets)


def _register_paper_targets(source: str, ref: Any, broken: bool) -> None:
    """Resolve one manifest reference (``"module:ATTR"``) and register its targets.

    An audit module that fails to import is an error, not a skipped module: a silently
    missing audit is exactly how a privacy break goes unnoticed.
    """
    from dpexp.registry import resolve

    try:
        targets = resolve(ref)
    except Exception as exc:
        raise ImportError(f"audit module {source} failed to import: {exc}") from exc
    where = ref if isinstance(ref, str) else source
    for target in _targets_of(targets, where):
        register_audit_target(target, broken=broken, source=source)


def _load_modules(include_algorithms: bool) -> None:
    for module_name in AUDIT_TARGET_MODULES:
        if module_name not in _loaded:
            _import_privacy_module(module_name)
            _loaded.add(module_name)
    if include_algorithms:
        for source, ref, broken in paper_audit_sources():
            key = f"{'broken ' if broken else ''}{ref if isinstance(ref, str) else id(ref)}"
            if key not in _loaded:
                _register_paper_targets(source, ref, broken)
                _loaded.add(key)


def audit_targets(
    *, broken: bool = False, include_algorithms: bool = True
) -> dict[str, AuditTarget]:
    """The registered targets (the broken ones when ``broken``).

    ``include_algorithms`` also loads every paper manifest's audit targets (which
    imports the estimators); without it only the mechanisms and the demo are loaded.
    """
    _load_modules(include_algorithms)
    return dict(BROKEN_TARGETS if broken else AUDIT_TARGETS)


def get_audit_target(name: str, *, broken: bool | None = None) -> AuditTarget:
    """Look a target up by name (both registries when ``broken`` is None)."""
    pools = (
        [AUDIT_TARGETS, BROKEN_TARGETS]
        if broken is None
        else [BROKEN_TARGETS if broken else AUDIT_TARGETS]
    )
    for include_algorithms in (False, True):  # the estimators are imported only if needed
        _load_modules(include_algorithms)
        for pool in pools:
            if name in pool:
                return pool[name]
    known = [n for pool in pools for n in pool]
    raise UnknownNameError("audit target", name, known)


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
    )


def run_all(*, quick: bool = False, seed: int = 0, broken: bool = False) -> list[AuditResult]:
    """Audit every registered target (what ``dpexp audit --all`` computes)."""
    return [run_target(t, seed=seed, quick=quick) for t in audit_targets(broken=broken).values()]


# --------------------------------------------------------------------------- helpers for algorithm modules


def end_to_end_target(
    name: str,
    *,
    release: Release,
    datasets: Sequence[Any],
    pairs: Sequence[tuple[int, int]],
    epsilon: float,
    delta: float = 0.0,
    description: str = "",
    output: str = "discrete",
    expected_to_pass: bool = True,
    samples: int = 20_000,
    quick_samples: int = 2_000,
    algorithm: str | None = None,
    gaussian: bool = False,
) -> AuditTarget:
    """A registered estimator, audited whole: ``release`` returns everything a fit publishes.

    ``release(dataset, *, epsilon, delta, rng, size)`` fits the *real* estimator class
    ``size`` times (public metadata such as ``classes`` and ``feature_domain`` passed
    explicitly, a fixed public ``random_state``, ``noise_rng`` a fresh child of ``rng``
    for each fit) and returns the published attributes and the predictions on a fixed
    probe set, encoded as ``(size,)`` / ``(size, k)`` integers (``output="discrete"``) or
    ``(size,)`` floats (``"real"``). ``algorithm`` is the name it audits in
    :func:`dpexp.registry.all_algorithms` (the coverage test requires one
    end-to-end target per private algorithm). A deterministic leak is caught with ~2,000
    draws, so ``quick_samples`` (the CI size) stays small; every fit is run
    ``4 * samples`` times per neighbour pair. ``gaussian=True`` tests an (epsilon, delta)
    Gaussian release on its whole privacy curve (see the module docstring).
    """
    return AuditTarget(
        name=name,
        description=description or f"end-to-end release of {algorithm or name}",
        release=release,
        datasets=tuple(datasets),
        pairs=tuple(tuple(p) for p in pairs),  # type: ignore[misc]
        epsilon=epsilon,
        delta=delta,
        output=output,
        gaussian=gaussian,
        expected_to_pass=expected_to_pass,
        kind="end-to-end",
        samples=samples,
        quick_samples=quick_samples,
        algorithm=algorithm,
    )


def ledger_entry_target(
    name: str,
    *,
    fit: Callable[..., Any],
    datasets: Sequence[Any],
    pairs: Sequence[tuple[int, int]],
    epsilon: float,
    description: str = "",
    output: str = "discrete",
    expected_to_pass: bool = True,
    samples: int = 20_000,
    quick_samples: int = 3_000,
    public_seed: int = 0,
    reference_seed: int = 0,
) -> AuditTarget:
    """Audit every ledger entry of a fit against its own share, earlier releases held fixed.

    ``fit(dataset, *, epsilon, rng, public_rng, fixed_outputs)`` runs the algorithm once
    and returns its :class:`~dpexp.privacy.Accountant`, created with
    ``Accountant(..., keep_outputs=True, fixed_outputs=fixed_outputs)``; every release
    goes through ``value = acc.record_output(what, value)`` and the algorithm continues
    with the *returned* value. ``public_rng`` drives all data-independent randomness
    (record partition keys, random split choices, ...) and ``rng`` all mechanism noise.

    Why the conditioning: sequential composition of adaptive releases (a leaf released
    after a split chosen on the same data, DPBoost's leaves after its chosen splits) holds
    when each release is private *for every fixed value of the earlier outputs*. Audited
    unconditioned, a later release would carry the earlier ones' dependence on the data
    and be compared with a budget share that does not cover it (a false alarm, or,
    mixed over several prefixes, a masked leak). So the audit first fits once on
    ``datasets[0]`` with fixed seeds; the outputs of that *reference* fit are handed to
    every audited fit as ``fixed_outputs``: each entry's value is drawn afresh, but all
    code after it sees the reference value. Each entry is then audited, conditionally on
    the reference outputs before it and on the public randomness (``public_rng`` is
    re-created from ``public_seed`` for every fit), against its ledger epsilon -- so a
    leaf whose noise is halved is caught even when the end-to-end total hides it.

    The set of ledger entries must not depend on the data (it is public). The fit runs
    once per draw, so keep it tiny. This audits the accounting of one fit; the
    end-to-end audit of the registered estimator (:func:`end_to_end_target`) is what
    audits what users run.
    """
    references: dict[float, tuple[dict[str, Any], dict[str, tuple[float, float]]]] = {}

    def reference(eps: float) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
        if eps not in references:
            acc = fit(
                datasets[0],
                epsilon=eps,
                rng=np.random.default_rng(reference_seed),
                public_rng=np.random.default_rng(public_seed),
                fixed_outputs=None,
            )
            claims = {e["what"]: (e["epsilon"], e["delta"]) for e in acc.ledger()}
            if set(acc.outputs) != set(claims):
                raise ValueError(
                    f"{name}: the fit must record_output every ledger entry: ledger "
                    f"{sorted(claims)}, outputs {sorted(acc.outputs)}"
                )
            references[eps] = (dict(acc.outputs), claims)
        return references[eps]

    def claims(eps: float, delta: float) -> dict[str, tuple[float, float]]:
        return reference(eps)[1]

    def release(
        data: Any, *, epsilon: float, delta: float, rng: np.random.Generator, size: int
    ) -> dict[str, np.ndarray]:
        fixed = reference(epsilon)[0]
        cols: dict[str, list[Any]] = {}
        for _ in range(size):
            acc = fit(
                data,
                epsilon=epsilon,
                rng=rng,
                public_rng=np.random.default_rng(public_seed),
                fixed_outputs=fixed,
            )
            if acc.fixed_outputs is None or set(acc.fixed_outputs) != set(fixed):
                raise ValueError(
                    f"{name}: the fit must create its Accountant with fixed_outputs=fixed_outputs"
                )
            for what, value in acc.outputs.items():
                cols.setdefault(what, []).append(value)
        return {k: np.asarray(v) for k, v in cols.items()}

    return AuditTarget(
        name=name,
        description=description
        or f"each ledger entry of {name} against its own budget share, earlier releases fixed",
        release=release,
        datasets=tuple(datasets),
        pairs=tuple(tuple(p) for p in pairs),  # type: ignore[misc]
        epsilon=epsilon,
        output=output,
        expected_to_pass=expected_to_pass,
        kind="ledger-entry",
        samples=samples,
        quick_samples=quick_samples,
        claims=claims,
    )


# --------------------------------------------------------------------------- the command


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
            samples = _check_samples(samples)
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


def missing_requirements(target: AuditTarget) -> list[str]:
    """Optional packages the audited algorithm needs (``AlgorithmInfo.requires``) that
    are not importable here (absent, or installed but failing on import); such a target
    cannot run on this machine."""
    if target.algorithm is None:
        return []
    from dpexp.registry import all_algorithms, import_failure

    info = all_algorithms().get(target.algorithm)
    return [r for r in (info.requires if info else ()) if import_failure(r) is not None]


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

    Bad input raises :class:`AuditUsageError` (a ``DpexpError`` and ``ValueError`` naming
    the option) or :class:`~dpexp.errors.UnknownNameError`; the CLI prints either as one
    line and exits 2.
    """
    epsilon, samples = _check_cli_inputs(epsilon, samples, seed, all_targets)
    targets = _select_targets(name, all_targets, broken)
    started = time.perf_counter()
    results = []
    skipped: list[dict[str, str]] = []
    for target in targets:
        missing = missing_requirements(target)
        if missing:
            note = f"needs the optional package(s) {', '.join(missing)}"
            if not all_targets:
                raise AuditUsageError(f"audit {target.name}: {note}; install them to run it.")
            skipped.append({"name": target.name, "algorithm": str(target.algorithm),
                            "outcome": f"skipped ({note})"})
            if not as_json:
                echo(f"{target.name}: skipped ({note})")
            continue
        result = run_target(target, epsilon=epsilon, samples=samples, seed=int(seed), quick=quick)
        results.append(result)
        if not as_json:
            echo(result.summary_line())
            echo(f"    event: {result.details.get('event')}  (datasets {result.details.get('pair')})")
    if as_json:
        payload = [r.to_dict() for r in results]
        echo(json.dumps(payload + skipped if all_targets else payload[0], indent=2, default=str))
    elif all_targets:
        echo(_summary(results, time.perf_counter() - started)
             + (f"; {len(skipped)} skipped for missing optional packages" if skipped else ""))
    return _exit_code(results, all_targets)
