"""The audit targets of the primitive mechanisms and of the demo forest.

The registered estimators are audited end to end by the targets their paper manifests
declare (``dpexp/papers/<paper>/audit.py``); the targets here check the building blocks
(``kind="mechanism"``) and, on a stand-in forest (``kind="demo"``, :mod:`dpexp.audit.tiny_forest`), record-stable
parallel composition and the ledger-entry audit.

:data:`AUDIT_TARGETS` is read by :mod:`dpexp.audit.catalogue`
(:data:`~dpexp.audit.catalogue.BUILTIN_TARGET_LISTS`). Every dataset pair differs by
adding one record (the papers' neighbour relation, :mod:`dpexp.audit.fixtures`).
Known-unprivate rules are declared with ``expected_to_pass=False``; deliberately broken
variants live apart in :mod:`dpexp.audit.broken_targets`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpexp.audit import tiny_forest
from dpexp.audit.fixtures import (
    LABEL_DATASETS,
    LABEL_PAIRS,
    SUM_DATASETS,
    SUM_PAIRS,
    class_counts,
    clipped_sum,
)
from dpexp.audit.targets import AuditTarget, ledger_entry_target
from dpexp.privacy.mechanisms import (
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    report_noisy_max_one_sided,
    smooth_sensitivity_leaf_2017,
)


def _laplace(
    data: Any, *, epsilon: float, delta: float, rng: np.random.Generator, size: int
) -> np.ndarray:
    return laplace_mechanism(
        np.full(size, clipped_sum(data)), epsilon=epsilon, sensitivity=1.0, rng=rng
    )


def _gaussian(calibration: str) -> Any:
    def release(
        data: Any, *, epsilon: float, delta: float, rng: np.random.Generator, size: int
    ) -> np.ndarray:
        return gaussian_mechanism(
            np.full(size, clipped_sum(data)),
            epsilon=epsilon,
            delta=delta,
            sensitivity=1.0,
            rng=rng,
            calibration=calibration,
        )

    return release


def _exponential(
    data: Any, *, epsilon: float, delta: float, rng: np.random.Generator, size: int
) -> np.ndarray:
    # u_c = (records labelled c) - (records not labelled c): adding a record moves every
    # utility by exactly 1 (one up, the others down), the worst case for sensitivity 1.
    counts = class_counts(data, 3)
    utility = 2.0 * counts - counts.sum()
    return exponential_mechanism(utility, epsilon=epsilon, sensitivity=1.0, rng=rng, size=size)


def _rosnam(noise: str) -> Any:
    def release(
        data: Any, *, epsilon: float, delta: float, rng: np.random.Generator, size: int
    ) -> np.ndarray:
        return report_noisy_max_one_sided(
            class_counts(data), epsilon=epsilon, rng=rng, size=size, noise=noise
        )

    return release


def _smooth_2017(
    data: Any, *, epsilon: float, delta: float, rng: np.random.Generator, size: int
) -> np.ndarray:
    return smooth_sensitivity_leaf_2017(class_counts(data), epsilon=epsilon, rng=rng, size=size)


AUDIT_TARGETS: list[AuditTarget] = [
    AuditTarget(
        name="laplace",
        description="Laplace mechanism on a clipped sum (sensitivity 1)",
        release=_laplace,
        datasets=SUM_DATASETS,
        pairs=SUM_PAIRS,
        epsilon=1.0,
    ),
    AuditTarget(
        name="gaussian_classic",
        description="Gaussian mechanism, classic calibration, on a clipped sum (L2 sensitivity 1)",
        release=_gaussian("classic"),
        datasets=SUM_DATASETS,
        pairs=SUM_PAIRS,
        epsilon=0.5,
        delta=1e-5,
        gaussian=True,
    ),
    AuditTarget(
        name="gaussian_analytic",
        description="analytic Gaussian mechanism (Balle & Wang 2018) on a clipped sum",
        release=_gaussian("analytic"),
        datasets=SUM_DATASETS,
        pairs=SUM_PAIRS,
        epsilon=1.0,
        delta=1e-5,
        gaussian=True,
    ),
    AuditTarget(
        name="exponential",
        description="exponential mechanism over 3 labels, u_c = n_c - (n - n_c), sensitivity 1",
        release=_exponential,
        datasets=LABEL_DATASETS,
        pairs=LABEL_PAIRS,
        epsilon=1.0,
        output="discrete",
    ),
    AuditTarget(
        name="rosnam",
        description="report one-sided noisy arg-max of leaf class counts (Fletcher 2021 addendum)",
        release=_rosnam("gumbel"),
        datasets=LABEL_DATASETS,
        pairs=LABEL_PAIRS,
        epsilon=1.0,
        output="discrete",
    ),
    AuditTarget(
        name="rosnam_exponential_noise",
        description="one-sided noisy arg-max with Exp(1/epsilon) noise (permute-and-flip law)",
        release=_rosnam("exponential"),
        datasets=LABEL_DATASETS,
        pairs=LABEL_PAIRS,
        epsilon=1.0,
        output="discrete",
    ),
    AuditTarget(
        name="smooth_sensitivity_2017",
        description="2017 Fletcher-Islam smooth-sensitivity leaf rule: known NOT private (~2x epsilon)",
        release=_smooth_2017,
        datasets=LABEL_DATASETS,
        pairs=LABEL_PAIRS,
        epsilon=1.0,
        output="discrete",
        expected_to_pass=False,
    ),
    AuditTarget(
        name="forest_disjoint",
        description="DEMO (not a registered estimator): 3-tree forest on 6 records + canary, "
        "record_partition over trees, all 6 leaf labels released (parallel composition)",
        release=tiny_forest.forest_release,
        datasets=tiny_forest.DATASETS,
        pairs=((0, 1),),
        epsilon=1.0,
        output="discrete",
        kind="demo",
        samples=200_000,
        quick_samples=30_000,
    ),
    ledger_entry_target(
        "forest_disjoint_ledger",
        fit=tiny_forest.fit_forest,
        datasets=tiny_forest.DATASETS,
        pairs=[(0, 1)],
        epsilon=2.0,
        description="each leaf-label ledger entry of the tiny forest against its own share",
    ),
]
