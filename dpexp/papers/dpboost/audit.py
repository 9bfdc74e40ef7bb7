"""End-to-end privacy audits of DPBoost, SEQ and PARA (Li et al. 2020, Algorithms 1-2,
Section 4) on the real registered estimators (:mod:`dpexp.papers.dpboost.estimators`).

Every draw fits :class:`~dpexp.papers.dpboost.estimators.DPBoostClassifier` /
:class:`~dpexp.papers.dpboost.estimators.DPBoostRegressor` on a tiny dataset with all public
input passed explicitly (``feature_domain``, ``categorical_features``, ``n_categories``,
``classes``, ``label_domain``), a fixed public ``random_state`` (the record partitions of
DPBoost's ensembles and of PARA: the privacy proof conditions on them, Theorems 7-8) and
``noise_rng`` = a fresh child of the audit's generator, so only the mechanism noise varies
between draws. The output is the whole release: ``classes_``, the predictions and the
width of ``predict_proba`` on a fixed probe set, and the split structure of every tree
(``output="discrete"``), or the predicted value at a probe point (``output="real"``).
The release encoders and the datasets shared with the other boosting papers are in
:mod:`dpexp.audit.estimator_releases` and :mod:`dpexp.audit.fixtures`.

Neighbours (add/remove one record, docs/PRIVACY.md):

* ``dpboost_last_record_of_class``: the only record of class 1 removed. With declared
  classes the release keeps its shape; ``BROKEN_AUDIT_TARGETS`` re-introduces the label set
  read from ``y`` (the fit then fails or changes ``classes_`` -- a certain event under one
  dataset, impossible under the other) and must be flagged.
* ``seq_label_at_domain_edge``: a record whose label sits at the edge of the public
  ``label_domain``; release = the prediction at that record's point. The broken twin takes
  the label domain from the data (one extreme label rescales every prediction).
* ``para_n_vs_n_plus_1``: ``n`` vs ``n + 1`` records: PARA's shares (1/2, 1/4, ...) and the
  record-stable partition must not move any other record when one is added.
* ``dpboost_honest_canary`` / ``dpboost_honest_canary_score`` /
  ``dpboost_honest_ensembles_score`` / ``dpboost_honest_regressor_canary``: DPBoost (clipped) (:mod:`dpexp.papers.dpboost.honest`;
  the noisy initial score, clipped gradients, noisy leaf sums and counts) with a canary
  at the edge of the public feature domain (x = 1) that is the only record of class 1 --
  it moves the class counts of the initial score, the largest gradient of its leaf and
  its leaf's count at once -- or, for the regressor, carries the extreme label 1 of
  the public label domain. Releases: classes_, predictions and split structure
  (discrete), and the real-valued score / prediction at the canary's point. The broken
  twin ``dpboost_honest_classes_from_y`` reads the label set from ``y``.
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
    real_valued_release,
    tiny_public_metadata,
)
from dpexp.audit.fixtures import LABEL_EDGE, LABEL_EXTREME, LAST_OF_CLASS, PROBE
from dpexp.audit.targets import AuditTarget, end_to_end_target
from dpexp.papers.dpboost.estimators import DPBoostClassifier, DPBoostRegressor
from dpexp.papers.dpboost.honest import HonestDPBoostClassifier, HonestDPBoostRegressor

# ----------------------------------------------------------------------------- datasets
# The shared ones (LAST_OF_CLASS, LABEL_EDGE, LABEL_EXTREME, PROBE) are in dpexp.audit.fixtures.

#: n = 4 vs n + 1 = 5 (the canary at x = 0.95 is class 1).
_X_N = np.array([[0.1], [0.35], [0.6], [0.8], [0.95]])
_Y_N = np.array([0, 1, 0, 1, 1])
N_VS_N_PLUS_1 = ((_X_N[:-1], _Y_N[:-1]), (_X_N, _Y_N))

#: Five records of class 0 vs the same plus a canary at the domain edge x = 1 that is the
#: only record of class 1 (an extreme feature *and* label: it is the whole positive count
#: of the initial score and the most extreme clipped gradient of its leaf).
_X_CAN = np.array([[0.1], [0.2], [0.3], [0.45], [0.6], [1.0]])
_Y_CAN = np.array([0, 0, 0, 0, 0, 1])
CANARY = ((_X_CAN[:-1], _Y_CAN[:-1]), (_X_CAN, _Y_CAN))
#: Regression: labels in the public domain [0, 1]; the canary at x = 1 has the label 1.
_X_CAN_REG = np.array([[0.1], [0.3], [0.5], [0.7], [1.0]])
_Y_CAN_REG = np.array([0.0, 0.1, 0.0, 0.1, 1.0])
CANARY_REG = ((_X_CAN_REG[:-1], _Y_CAN_REG[:-1]), (_X_CAN_REG, _Y_CAN_REG))
CANARY_POINT = np.array([[1.0]])

_META = tiny_public_metadata()
_TREES = {"n_trees": 2, "max_depth": 1, "learning_rate": 0.3}


def _classifier(mode: str, classes: Sequence[Any] | None = CLASSES, **kw: Any
                ) -> Callable[[np.random.Generator], DPBoostClassifier]:
    def make(noise: np.random.Generator) -> DPBoostClassifier:
        return DPBoostClassifier(mode=mode, trees_per_ensemble=2, classes=classes,
                                 random_state=STRUCTURE_SEED, noise_rng=noise,
                                 **_TREES, **_META, **kw)

    return make


def _regressor(mode: str, label_domain: tuple[float, float] | None
               ) -> Callable[[np.random.Generator], DPBoostRegressor]:
    def make(noise: np.random.Generator) -> DPBoostRegressor:
        return DPBoostRegressor(mode=mode, trees_per_ensemble=2, label_domain=label_domain,
                                random_state=STRUCTURE_SEED, noise_rng=noise,
                                **_TREES, **_META)

    return make


def _honest(classes: Sequence[Any] | None = CLASSES, n_trees: int = _TREES["n_trees"]
            ) -> Callable[[np.random.Generator], HonestDPBoostClassifier]:
    def make(noise: np.random.Generator) -> HonestDPBoostClassifier:
        return HonestDPBoostClassifier(trees_per_ensemble=2, classes=classes,
                                       random_state=STRUCTURE_SEED, noise_rng=noise,
                                       **{**_TREES, "n_trees": n_trees}, **_META)

    return make


def _honest_regressor(noise: np.random.Generator) -> HonestDPBoostRegressor:
    return HonestDPBoostRegressor(trees_per_ensemble=2, label_domain=(0.0, 1.0),
                                  random_state=STRUCTURE_SEED, noise_rng=noise,
                                  **_TREES, **_META)


def score_release(make: Callable[[np.random.Generator], Any], point: np.ndarray
                  ) -> Callable[..., np.ndarray]:
    """A release that fits ``make(noise_rng)`` per draw and returns the real-valued
    ``decision_function(point)[0]`` (the initial score plus every tree's leaf there)."""
    return real_valued_release(make, lambda est: est.decision_function(point[:1])[0])


def _target(name: str, algorithm: str, release: Callable[..., np.ndarray], datasets: Sequence,
            description: str, output: str = "discrete", expected_to_pass: bool = True
            ) -> AuditTarget:
    return end_to_end_target(
        name, release=release, datasets=datasets, pairs=[(0, 1)], epsilon=AUDIT_EPSILON,
        description=description, output=output, expected_to_pass=expected_to_pass,
        samples=SAMPLES, quick_samples=QUICK_SAMPLES, algorithm=algorithm,
    )


AUDIT_TARGETS: list[AuditTarget] = [
    _target(
        "dpboost_last_record_of_class", "dpboost",
        discrete_release(_classifier("dpboost"), PROBE), LAST_OF_CLASS,
        "DPBoost classifier (2 trees in one ensemble, depth 1), declared classes: the only "
        "record of class 1 removed; release = classes_, predictions and predict_proba width "
        "on 3 probes, split structure",
    ),
    _target(
        "seq_label_at_domain_edge", "seq",
        real_release(_regressor("seq", (0.0, 1.0)), np.array([[0.9]])), LABEL_EDGE,
        "SEQ regressor (2 trees, depth 1), public label domain [0, 1]: a record with the "
        "edge label 1 added; release = the prediction at its point",
        output="real",
    ),
    _target(
        "para_n_vs_n_plus_1", "para",
        discrete_release(_classifier("para"), PROBE), N_VS_N_PLUS_1,
        "PARA classifier (2 trees on 1/2 and 1/4 of the records), n = 4 vs 5: the record-"
        "stable partition keeps every other record's tree; release = classes_, predictions, "
        "split structure",
    ),
    _target(
        "dpboost_honest_canary", "dpboost_honest",
        discrete_release(_honest(), PROBE), CANARY,
        "DPBoost (clipped) classifier (noisy initial log-odds, 2 trees in one ensemble, depth "
        "1, noisy leaf sums/counts), declared classes: a canary at the domain edge x = 1, the "
        "only record of class 1, added; release = classes_, predictions on 3 probes, "
        "predict_proba width, split structure",
    ),
    _target(
        "dpboost_honest_canary_score", "dpboost_honest",
        score_release(_honest(), CANARY_POINT), CANARY,
        "DPBoost (clipped) classifier as dpboost_honest_canary; release = the real-valued "
        "score (initial log-odds + leaves) at the canary's point x = 1",
        output="real",
    ),
    _target(
        "dpboost_honest_ensembles_score", "dpboost_honest",
        score_release(_honest(n_trees=4), CANARY_POINT), CANARY,
        "DPBoost (clipped) classifier in 2 ensembles of 2 trees (the classifier's default "
        "splits its 50 trees into 5 ensembles: epsilon_0 + 2 epsilon_t, sequential between "
        "ensembles), depth 1, declared classes; release = the real-valued score at the "
        "canary's point x = 1",
        output="real",
    ),
    _target(
        "dpboost_honest_regressor_canary", "dpboost_honest",
        real_release(_honest_regressor, CANARY_POINT), CANARY_REG,
        "DPBoost (clipped) regressor (noisy initial mean, clipped square-loss gradients), "
        "public label domain [0, 1]: a canary at x = 1 with the edge label 1 added; release "
        "= the prediction at its point",
        output="real",
    ),
]

BROKEN_AUDIT_TARGETS: list[AuditTarget] = [
    _target(
        "dpboost_classes_from_y", "dpboost",
        discrete_release(_classifier("dpboost", classes=None), PROBE), LAST_OF_CLASS,
        "DPBoost classifier WITHOUT declared classes (label set read from y): removing the "
        "last record of class 1 changes what the fit releases (must be flagged)",
        expected_to_pass=False,
    ),
    _target(
        "seq_label_domain_from_data", "seq",
        real_release(_regressor("seq", None), np.array([[0.9]])), LABEL_EXTREME,
        "SEQ regressor WITHOUT a declared label domain (scaled by the data range): one "
        "extreme label rescales every prediction (must be flagged)",
        output="real", expected_to_pass=False,
    ),
    _target(
        "dpboost_honest_classes_from_y", "dpboost_honest",
        discrete_release(_honest(classes=None), PROBE), CANARY,
        "DPBoost (clipped) classifier WITHOUT declared classes (label set read from y): "
        "adding the canary, the only record of class 1, changes what the fit releases "
        "(must be flagged)",
        expected_to_pass=False,
    ),
]

# The defaults path (issue #38): fitted as users do, with the default noise source.
AUDIT_TARGETS += defaults_targets(("dpboost", "seq", "para", "dpboost_honest"))
BROKEN_AUDIT_TARGETS += defaults_targets(("dpboost", "seq", "para", "dpboost_honest"), broken=True)
