"""Privacy audits of the public feature domain (issue 16 item 5): the DP range estimate
:func:`dpexp.privacy.bounds.dp_feature_domain` against the ``observed`` domain that
``datasets.yaml`` falls back on where no documentation declares one.

Adversarial neighbours of a small dataset: one record added to the bin whose count sits
at the release threshold, and an extreme-value canary (far outside the bulk, where a
domain could be data-derived) added in both features. Release = the ``[low, high]`` of every feature, encoded as the indices of
the public log2 bin edges (``output="discrete"``).

* ``domain_dp_range_estimate``: claims epsilon (Laplace histogram, sensitivity d);
* ``domain_observed_min_max`` (broken, must be flagged): the min/max over the data, what
  ``feature_domain: observed`` releases through thresholds and clipping ranges. The
  canary moves it deterministically, so the audit's lower bound exceeds any claim.

Both lists are read by :mod:`dpexp.audit.catalogue` (mechanism-level targets of
:mod:`dpexp.privacy`, like :mod:`dpexp.audit.mechanism_targets`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpexp.audit.targets import AuditTarget
from dpexp.privacy.bounds import dp_feature_domain, log2_bin_edges

#: The epsilon both targets claim.
AUDIT_EPSILON = 1.0
#: Public binning of the audit (kept small so that a draw is cheap).
MIN_EXPONENT, MAX_EXPONENT = -2, 6
_EDGES = log2_bin_edges(MIN_EXPONENT, MAX_EXPONENT)
#: Public false-positive rate of the audited estimate (a low threshold, so that the bin
#: at the edge of the bulk is released about half of the time and the output varies).
BETA = 0.25
# Feature 0: 10 records in the bin [4, 8) and 9 in [8, 16), whose count sits at the
# threshold T = (d / eps) ln(d K / (2 beta)) ~ 8.6 (K = 18); feature 1: spread over [-3, 3].
_BULK = np.column_stack([np.r_[np.full(10, 5.0), np.full(9, 12.0)], np.linspace(-3.0, 3.0, 19)])
#: 0: the bulk; 1: + a record in the threshold bin; 2: + an extreme canary in both features.
DATASETS = (
    _BULK,
    np.vstack([_BULK, [12.0, 0.0]]),
    np.vstack([_BULK, [2.0**20, -(2.0**20)]]),
)
PAIRS = ((0, 1), (0, 2))


def _edge_codes(domain: np.ndarray) -> list[int]:
    """A domain's bounds as indices into the public edges (a value off the grid: -1)."""
    codes = []
    for value in domain.ravel():
        hit = np.flatnonzero(value == _EDGES)
        codes.append(int(hit[0]) if hit.size else -1)
    return codes


def _dp_release(X: np.ndarray, *, epsilon: float, delta: float, rng: np.random.Generator,  # noqa: ARG001
                size: int) -> np.ndarray:
    """``size`` fits of the DP range estimate, each with a fresh child noise stream."""
    return np.array([
        _edge_codes(dp_feature_domain(X, epsilon, noise, min_exponent=MIN_EXPONENT,
                                      max_exponent=MAX_EXPONENT, beta=BETA))
        for noise in rng.spawn(size)
    ])


def _observed_release(X: np.ndarray, *, epsilon: float, delta: float,  # noqa: ARG001
                      rng: np.random.Generator, size: int) -> np.ndarray:  # noqa: ARG001
    """The observed domain (min/max over the data): no noise, the same every draw. Encoded
    on the same grid (rounded outwards to a power of two, as a coarse public grid would)."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    lo_idx = np.searchsorted(_EDGES, lo, side="right") - 1
    hi_idx = np.searchsorted(_EDGES, hi, side="left")
    # beyond the grid: one code past each end (the value itself is released, not a bin)
    row = np.clip(np.column_stack([lo_idx + 1, hi_idx + 1]).ravel(), 0, len(_EDGES) + 1)
    return np.tile(row, (size, 1))


def _target(name: str, release: Callable[..., np.ndarray], description: str,
            expected_to_pass: bool) -> AuditTarget:
    # kind "mechanism": it audits a release of public metadata, not a registered estimator
    # (end-to-end targets must name one), though the release is the whole published domain.
    return AuditTarget(
        name=name, description=description, release=release, datasets=DATASETS, pairs=PAIRS,
        epsilon=AUDIT_EPSILON, output="discrete", expected_to_pass=expected_to_pass,
        kind="mechanism", samples=20_000, quick_samples=2_000,
    )


AUDIT_TARGETS: list[AuditTarget] = [
    _target("domain_dp_range_estimate", _dp_release,
            "dp_feature_domain (Laplace histogram over public log2 bins, sensitivity d): "
            "an extreme canary added", True),
]

BROKEN_AUDIT_TARGETS: list[AuditTarget] = [
    _target("domain_observed_min_max", _observed_release,
            "feature_domain: observed (min/max over the data): an extreme canary added; "
            "not DP, must be flagged", False),
]
