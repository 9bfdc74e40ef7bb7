"""The release paths users run, and which audit target covers each (issue #38, item 7).

An end-to-end target that fits the estimator with hand-picked arguments (fresh noise,
canaries appended at the end, the estimator called directly) audits a path nobody runs.
The paths that matter are:

* ``defaults``: the estimator constructed with only ``epsilon``, an int ``random_state``
  and the declared public metadata -- the default noise source, whatever it is. The
  attacker sees everything published, ``seeds_`` included (from which a small
  ``random_state`` is recovered by trying them all).
* ``runner``: the parameters the experiment runner passes (``n_records`` from the
  design, the dataset's public metadata, the runner's noise source and its ``private``
  verdict), on neighbours across a boundary that a count computed from the data would
  cross (JPW's depth, InPrivate's shares).
* ``row 0`` / ``middle`` / ``end``: a canary inserted at that row (a record partition
  keyed by row position moves every later record when a row is inserted).
* ``float bits``: the exact bits of released floats (a textbook floating-point Laplace
  sampler leaks through the low-order bits, Mironov 2012).
* ``shared random_state``: two fits with one ``random_state`` on one
  :class:`~dpexp.privacy.BudgetAccountant` (claim: the sum it charged).
* ``observed domain``: a domain read from the data, as the runner passes it: the row
  must say not DP (or the release must pass).

Every path of :func:`required_paths` needs a target (:func:`covering` sets the paths a
target covers, ``AuditTarget.release_paths``) or an entry of :data:`EXEMPTIONS` with its
reason; ``tests/audit/test_audit_coverage.py`` enforces it. The targets live with their papers:
:mod:`dpexp.papers.fletcher.audit_paths`, the runner target of
:mod:`dpexp.papers.inprivate.audit`, and the defaults target of every other private
algorithm (:mod:`dpexp.audit.defaults_path`). This module also holds the encoders the
path targets share (exact bytes, float grid levels, canary insertion).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpexp.audit.targets import AuditTarget
from dpexp.errors import UnknownNameError
from dpexp.registry import accepted_params

__all__ = [
    "CANARY_POSITIONS",
    "COUNT_ALGORITHMS",
    "EXEMPTIONS",
    "PARTITION_ALGORITHMS",
    "PATHS",
    "ReleasePath",
    "coverage",
    "covering",
    "exemption",
    "exact_code",
    "grid_levels",
    "insert_row",
    "required_paths",
    "uncovered_paths",
]

#: Every path kind (see the module docstring).
PATHS = ("defaults", "runner", "row 0", "middle", "end", "float bits", "shared random_state",
         "observed domain")
#: Where a canary is inserted, and the row index it gets (``middle``: ``n // 2``).
CANARY_POSITIONS = ("row 0", "middle", "end")

#: Registered algorithms that split their records with a record partition (parallel
#: composition, disjoint samples): each needs the three canary positions. The coverage
#: test checks the list against the estimators' sources (``record_partition`` /
#: ``record_ids`` calls in the modules of their classes).
PARTITION_ALGORITHMS = ("fletcher_forest", "inprivate", "dpboost", "seq", "para",
                        "dpboost_honest", "dp_rf_xgbdp", "dp_adaboost")
#: Registered algorithms that publish noisy counts as numbers (not only an arg-max):
#: each needs a ``float bits`` target.
COUNT_ALGORITHMS = ("jpw", "fs_c45")


@dataclass(frozen=True)
class ReleasePath:
    """One way users obtain a release of ``algorithm`` (``path``: one of :data:`PATHS`)."""

    algorithm: str
    path: str

    def __post_init__(self) -> None:
        if self.path not in PATHS:
            raise ValueError(f"path must be one of {PATHS}, got {self.path!r}")

    def __str__(self) -> str:
        return f"{self.algorithm} x {self.path}"


#: The private algorithms that take no ``n_records`` (the runner passes them nothing the
#: data could have shaped but the registry's metadata).
RUNNER_WITHOUT_N = ("dpboost", "seq", "para", "dpboost_honest", "fletcher_forest", "fs_c45",
                    "diffprivlib_rf", "gaussian_bdt", "xgboost_dp", "dp_rf_xgbdp", "dp_adaboost",
                    "dp_ebm")
#: Partition users without a canary-position target yet.
POSITIONS_BY_CONTENT = ("dpboost", "seq", "para", "dpboost_honest", "dp_rf_xgbdp",
                        "dp_adaboost")

#: Paths without a target, each with its reason; ``tests/audit/test_audit_coverage.py``
#: checks each reason's premise in the code (the calls it names, the parameters it says
#: are absent). An exemption is a debt, not a proof: remove it when a target is written.
#: Why the runner path of an estimator without ``n_records`` needs no target of its own.
RUNNER_WITHOUT_N_REASON = (
    "takes no n_records (checked): the runner passes it the registry's public metadata, "
    "the cell seed and seeded noise only (a research result by design, `noise` column), "
    "and its verdict comes from the same privacy_of and public_input_reasons that "
    "fletcher_forest_observed_domain audits")


EXEMPTIONS: dict[ReleasePath, str] = {
    **{ReleasePath(a, "runner"): RUNNER_WITHOUT_N_REASON for a in RUNNER_WITHOUT_N},
    **{ReleasePath(a, p): (
        "keys its record partition by content, dpexp.privacy.record_ids (checked), so an "
        "insertion moves no other record; no end-to-end canary-position target yet")
        for a in POSITIONS_BY_CONTENT for p in CANARY_POSITIONS},
    ReleasePath("fs_c45", "float bits"): (
        "publishes normalised leaf distributions (noisy counts clipped at 0 over their sum), "
        "and draws the counts with the accountant's discrete_laplace (checked): integers; no "
        "float-bits target of its own yet"),
}


def covering(target: AuditTarget, *paths: str) -> AuditTarget:
    """``target`` marked as covering ``paths`` of its algorithm (a copy with
    ``release_paths``; each path one of :data:`PATHS`)."""
    if target.algorithm is None:
        raise ValueError(f"{target.name}: a path target must name its algorithm")
    for path in paths:
        ReleasePath(target.algorithm, path)  # checks the path name
    return replace(target, release_paths=tuple(paths))


def coverage(targets: Iterable[AuditTarget]) -> dict[str, tuple[ReleasePath, ...]]:
    """Target name -> the release paths it covers, for the targets that cover any."""
    return {t.name: tuple(ReleasePath(t.algorithm, p) for p in t.release_paths)
            for t in targets if t.release_paths and t.algorithm is not None}


def required_paths(private_algorithms: Iterable[str]) -> list[ReleasePath]:
    """Every path that needs a target: each private algorithm x {defaults, runner}, the
    partition users x the canary positions, the count publishers x float bits."""
    private = sorted(set(private_algorithms))
    out = [ReleasePath(a, p) for a in private for p in ("defaults", "runner")]
    out += [ReleasePath(a, p) for a in PARTITION_ALGORITHMS if a in private
            for p in CANARY_POSITIONS]
    out += [ReleasePath(a, "float bits") for a in COUNT_ALGORITHMS if a in private]
    return out


def exemption(path: ReleasePath) -> str | None:
    """Why ``path`` needs no target (None: it needs one): an entry of :data:`EXEMPTIONS`,
    or, for an algorithm registered outside dpexp (a plugin), the rule behind
    :data:`RUNNER_WITHOUT_N`: the runner path of an estimator that accepts no
    ``n_records`` differs from its defaults path only by the seeded noise the runner asks
    for, so the defaults target covers its release."""
    if path in EXEMPTIONS:
        return EXEMPTIONS[path]
    if path.path != "runner":
        return None
    try:
        accepted = accepted_params(path.algorithm)
    except UnknownNameError:
        return None
    return None if "n_records" in accepted else RUNNER_WITHOUT_N_REASON


def uncovered_paths(private_algorithms: Iterable[str], targets: Iterable[AuditTarget],
                    ) -> list[ReleasePath]:
    """The required paths that none of ``targets`` covers and no exemption excuses."""
    covered = {p for paths in coverage(targets).values() for p in paths}
    return [p for p in required_paths(private_algorithms)
            if p not in covered and exemption(p) is None]


# ------------------------------------------------------------------------------ encoders


def exact_code(*values: Any) -> int:
    """A 62-bit code of the exact bytes of ``values`` (arrays, numbers, strings).

    Two releases get one code only if they are bit for bit the same, so a release that
    repeats (noise recomputable from a seed) shows as one outcome drawn every time.
    """
    h = hashlib.blake2b(digest_size=8)
    for v in values:
        arr = np.ascontiguousarray(np.asarray(v))
        h.update(str(arr.dtype).encode() + str(arr.shape).encode() + arr.tobytes())
    return int.from_bytes(h.digest(), "little") >> 2


def grid_levels(values: Any, cap: int = 3) -> np.ndarray:
    """How far below the 2^-52 grid the lowest set bit of each float lies, capped at ``cap``.

    ``count + noise`` with an integer count >= 1 is rounded to a multiple of 2^-53 (the
    exact sum is a multiple of the noise's ulp and is rounded to the result's): level <= 1.
    Pure noise (an empty leaf) has bits far below the grid whenever it is small. A release
    on a public grid (integers, or multiples of a power of two >= 2^-52) is always 0.
    """
    x = np.abs(np.asarray(values, dtype=np.float64)).ravel()
    out = np.zeros(x.size, dtype=np.int64)
    finite = np.isfinite(x) & (x > 0)
    scaled = x[finite] * 2.0**52  # exact: a power-of-two scaling
    level = np.zeros(scaled.size, dtype=np.int64)
    for k in range(1, cap + 1):  # below the grid by k bits: scaled * 2^(k-1) not an integer
        level = np.where(np.floor(scaled * 2.0 ** (k - 1)) != scaled * 2.0 ** (k - 1), k, level)
    out[finite] = level
    return out


def insert_row(X: np.ndarray, y: np.ndarray, x_row: Sequence[float], y_row: Any,
               position: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` with one record inserted at ``position`` (one of :data:`CANARY_POSITIONS`)."""
    at = {"row 0": 0, "middle": X.shape[0] // 2, "end": X.shape[0]}[position]
    X2 = np.insert(np.asarray(X, dtype=np.float64), at, np.asarray(x_row, dtype=np.float64), axis=0)
    return X2, np.insert(np.asarray(y), at, y_row)
