"""What the audit tests: :class:`AuditTarget` (a release on tiny neighbouring datasets),
:class:`AuditResult` (its outcome), and the builders the paper packages use,
:func:`end_to_end_target` (a registered estimator, audited whole) and
:func:`ledger_entry_target` (every ledger entry against its own share).

Kinds of target (``AuditTarget.kind``, reported in ``dpexp audit --json``)

* ``"end-to-end"``: a *registered estimator* (``AuditTarget.algorithm`` names it in
  :func:`dpexp.registry.all_algorithms`) fitted on tiny neighbouring datasets
  with its public metadata passed explicitly; the output is everything the fit publishes
  (fitted attributes + predictions on a fixed probe set). Structure randomness is a fixed
  public ``random_state`` and the noise comes from ``noise_rng=<child of the audit's
  rng>``, so the audit is conditional on the public structure, as the privacy proofs are.
  This is the audit of what users run. Build them with :func:`end_to_end_target`.
* ``"mechanism"``: one primitive mechanism of :mod:`dpexp.privacy.mechanisms`.
* ``"demo"``: a mechanism-level stand-in model (:mod:`dpexp.audit.tiny_forest`), *not*
  a registered estimator: it shows parallel composition over a record-stable partition.
* ``"ledger-entry"``: every ledger entry of a fit against its own share of the budget,
  each conditioned on fixed values of the earlier releases (:func:`ledger_entry_target`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "KINDS",
    "MIN_SAMPLES",
    "AuditResult",
    "AuditTarget",
    "Release",
    "check_samples",
    "end_to_end_target",
    "ledger_entry_target",
]

#: The kinds of audit target (see the module docstring).
KINDS = ("mechanism", "demo", "ledger-entry", "end-to-end")

#: The smallest number of draws per dataset and stage the audit accepts.
MIN_SAMPLES = 100

#: Release functions: ``release(dataset, *, epsilon, delta, rng, size)`` returns ``size``
#: independent outputs (shape ``(size,)`` or ``(size, k)``), or a dict of such arrays
#: (one per release of a multi-release target, keyed like ``AuditTarget.claims``).
Release = Callable[..., Any]


def check_samples(samples: Any, name: str = "samples") -> int:
    """``samples`` as an int, or a ValueError naming ``name`` (at least :data:`MIN_SAMPLES`)."""
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
    the quick (CI) audit. ``release_paths``: the release paths of its algorithm that the
    target covers (names of :data:`dpexp.audit.paths.PATHS`; set by
    :func:`dpexp.audit.paths.covering`).
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
    release_paths: tuple[str, ...] = ()

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
        if self.release_paths and self.algorithm is None:
            raise ValueError(f"{self.name}: a path target must name its algorithm")
        if not self.pairs:
            raise ValueError("pairs must not be empty")
        n = len(self.datasets)
        for pair in self.pairs:
            if len(pair) != 2 or not all(0 <= i < n for i in pair) or pair[0] == pair[1]:
                raise ValueError(f"pairs must be pairs of distinct dataset indices < {n}, got {pair!r}")
        check_samples(self.samples, "samples")
        check_samples(self.quick_samples, "quick_samples")


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


@dataclass(frozen=True)
class AuditResult:
    """The outcome of one audit (see :mod:`dpexp.audit` for the method)."""

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


# --------------------------------------------------------------------------- builders


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
    Gaussian release on its whole privacy curve (see :mod:`dpexp.audit`).
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
