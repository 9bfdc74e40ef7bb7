"""End-to-end privacy audits of the Gaussian-mechanism boosted decision trees (Peinemann,
slides "DP-Proof"; :mod:`dpexp.papers.gaussian_bdt.estimators`) on the real estimators.

Every draw fits the estimator with the public metadata passed explicitly, a fixed public
``random_state`` (the random splits: data-independent, the proof conditions on them) and
``noise_rng`` = a fresh child of the audit's generator. The release is (epsilon, delta)
with Gaussian noise, so the audit tests it on its whole privacy curve
(``gaussian=True``: Gaussian DP, see :mod:`dpexp.audit`).

* ``gaussian_bdt_last_record_of_class``: the only record of class 1 removed; release =
  ``classes_``, predictions and ``predict_proba`` width on a probe set, split structure.
  The broken twin reads the label set from ``y`` and must be flagged.
* ``gaussian_bdt_label_at_domain_edge``: a record whose label is the edge of the public
  ``label_domain`` added; release = the prediction at its point (``output="real"``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpexp.audit.defaults_path import defaults_targets
from dpexp.audit.estimator_releases import (
    AUDIT_EPSILON,
    CLASSES,
    QUICK_SAMPLES,
    SAMPLES,
    STRUCTURE_SEED,
    discrete_release,
    real_release,
    tiny_public_metadata,
)
from dpexp.audit.fixtures import LABEL_EDGE, LAST_OF_CLASS, PROBE
from dpexp.audit.targets import AuditTarget, end_to_end_target
from dpexp.papers.gaussian_bdt.estimators import GaussianBDTClassifier, GaussianBDTRegressor

#: The (epsilon, delta) claimed by the audits.
AUDIT_DELTA = 1e-5
_META = tiny_public_metadata()
_TREES = {"n_trees": 1, "max_depth": 1, "learning_rate": 1.0}


def _classifier(classes: Sequence[Any] | None = CLASSES
                ) -> Callable[[np.random.Generator], GaussianBDTClassifier]:
    def make(noise: np.random.Generator) -> GaussianBDTClassifier:
        return GaussianBDTClassifier(classes=classes, random_state=STRUCTURE_SEED,
                                     noise_rng=noise, **_TREES, **_META)

    return make


def _regressor(noise: np.random.Generator) -> GaussianBDTRegressor:
    return GaussianBDTRegressor(label_domain=(0.0, 1.0), random_state=STRUCTURE_SEED,
                                noise_rng=noise, **_TREES, **_META)


def _target(name: str, release: Callable[..., np.ndarray], datasets: Sequence,
            description: str, output: str = "discrete", expected_to_pass: bool = True
            ) -> AuditTarget:
    return end_to_end_target(
        name, release=release, datasets=datasets, pairs=[(0, 1)], epsilon=AUDIT_EPSILON,
        delta=AUDIT_DELTA, description=description, output=output, gaussian=True,
        expected_to_pass=expected_to_pass, samples=SAMPLES, quick_samples=QUICK_SAMPLES,
        algorithm="gaussian_bdt",
    )


AUDIT_TARGETS: list[AuditTarget] = [
    _target(
        "gaussian_bdt_last_record_of_class", discrete_release(_classifier(), PROBE),
        LAST_OF_CLASS,
        "Gaussian BDT classifier (1 random-split tree, depth 1), declared classes: the only "
        "record of class 1 removed; release = classes_, predictions, predict_proba width, "
        "split structure",
    ),
    _target(
        "gaussian_bdt_label_at_domain_edge", real_release(_regressor, np.array([[0.9]])),
        LABEL_EDGE,
        "Gaussian BDT regressor (1 tree, depth 1), public label domain [0, 1]: a record with "
        "the edge label added; release = the prediction at its point",
        output="real",
    ),
]

BROKEN_AUDIT_TARGETS: list[AuditTarget] = [
    _target(
        "gaussian_bdt_classes_from_y", discrete_release(_classifier(None), PROBE),
        LAST_OF_CLASS,
        "Gaussian BDT classifier WITHOUT declared classes (label set read from y): removing "
        "the last record of class 1 changes what the fit releases (must be flagged)",
        expected_to_pass=False,
    ),
]

# The defaults path (issue #38): fitted as users do, with the default noise source.
AUDIT_TARGETS += defaults_targets(("gaussian_bdt",))
BROKEN_AUDIT_TARGETS += defaults_targets(("gaussian_bdt",), broken=True)
