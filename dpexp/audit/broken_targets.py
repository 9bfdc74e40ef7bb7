"""Deliberately BROKEN releases: test fixtures for the audit, never for real use.

Each one claims a privacy level it does not have; the audit must flag all of them (they
test the audit itself: mechanisms, the demo forest and the ledger-entry audit). Read by
:mod:`dpexp.audit.catalogue` as broken targets (``dpexp audit --broken NAME``). Broken
variants of the registered estimators live beside their end-to-end targets, in the
``BROKEN_AUDIT_TARGETS`` of each ``dpexp/papers/<paper>/audit.py`` (``broken_audit_targets``
of the paper manifest).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpexp.audit import tiny_forest
from dpexp.audit.fixtures import SUM_DATASETS, SUM_PAIRS, clipped_sum
from dpexp.audit.targets import AuditTarget, ledger_entry_target
from dpexp.privacy.calibration import gaussian_sigma_classic


def laplace_half_scale(
    data: Any, *, epsilon: float, delta: float, rng: np.random.Generator, size: int
) -> np.ndarray:
    """BROKEN: Laplace noise of scale sensitivity / (2 epsilon): really 2 epsilon-DP."""
    return clipped_sum(data) + rng.laplace(0.0, 1.0 / (2.0 * epsilon), size=size)


def gaussian_half_sigma(
    data: Any, *, epsilon: float, delta: float, rng: np.random.Generator, size: int
) -> np.ndarray:
    """BROKEN: half the classic sigma."""
    sigma = gaussian_sigma_classic(epsilon=epsilon, delta=delta, sensitivity=1.0) / 2.0
    return clipped_sum(data) + rng.normal(0.0, sigma, size=size)


def position_blocks(data: Any, rng: np.random.Generator, size: int) -> np.ndarray:
    """BROKEN: records split among trees by position blocks ``arange(n) // (n / T)``.

    Adding one record at the end moves block boundaries, so other records change tree.
    """
    n = len(data)
    parts = (np.arange(n) // (n / tiny_forest.N_TREES)).astype(np.int64)
    return np.broadcast_to(parts, (size, n))


def forest_position_blocks(
    data: Any, *, epsilon: float, delta: float, rng: np.random.Generator, size: int
) -> np.ndarray:
    return tiny_forest.forest_release(
        data, epsilon=epsilon, delta=delta, rng=rng, size=size, partition=position_blocks
    )


def fit_forest_leaf_half_noise(
    data: Any,
    *,
    epsilon: float,
    rng: np.random.Generator,
    public_rng: np.random.Generator,
    fixed_outputs: Any = None,
) -> Any:
    """BROKEN: leaf 0 of every tree is released with 2 epsilon but the ledger says epsilon."""
    return tiny_forest.fit_forest(
        data,
        epsilon=epsilon,
        rng=rng,
        public_rng=public_rng,
        fixed_outputs=fixed_outputs,
        leaf_epsilon_factor=2.0,
    )


BROKEN_AUDIT_TARGETS: list[AuditTarget] = [
    AuditTarget(
        name="laplace_half_scale",
        description="BROKEN Laplace with half the scale",
        release=laplace_half_scale,
        datasets=SUM_DATASETS,
        pairs=SUM_PAIRS,
        epsilon=1.0,
        expected_to_pass=False,
    ),
    AuditTarget(
        name="gaussian_half_sigma",
        description="BROKEN classic Gaussian with half the sigma",
        release=gaussian_half_sigma,
        datasets=SUM_DATASETS,
        pairs=SUM_PAIRS,
        epsilon=0.5,
        delta=1e-5,
        gaussian=True,
        expected_to_pass=False,
    ),
    AuditTarget(
        name="forest_position_blocks",
        description="BROKEN demo 3-tree forest splitting records by position blocks",
        release=forest_position_blocks,
        datasets=tiny_forest.DATASETS,
        pairs=((0, 1),),
        epsilon=1.0,
        output="discrete",
        expected_to_pass=False,
        kind="demo",
        samples=200_000,
        quick_samples=30_000,
    ),
    ledger_entry_target(
        "forest_leaf_half_noise_ledger",
        fit=fit_forest_leaf_half_noise,
        datasets=tiny_forest.DATASETS,
        pairs=[(0, 1)],
        epsilon=2.0,
        expected_to_pass=False,
        description="BROKEN tiny forest whose leaf-0 releases use half the noise their ledger entry claims",
    ),
]
