"""End-to-end privacy audits of XGBoost-DP (Shi et al. 2021, Table 1, Section 5.1) and its
Table 2 comparators (DP random forest, DP AdaBoost) on the real registered estimators.

As for DPBoost (:mod:`dpexp.audit.estimator_releases`): every draw fits the estimator on a tiny
dataset with the public metadata passed explicitly, a fixed public ``random_state`` (the
forest's per-node feature draws, AdaBoost's resampling keys) and ``noise_rng`` = a fresh
child of the audit's generator; the output is the whole release (``classes_``,
predictions and ``predict_proba`` width on a probe set, every tree's split structure,
AdaBoost's weights on a coarse grid).

* ``xgboost_dp_last_record_of_class``: the only record of class 1 removed (declared
  classes keep the release's shape; the broken twin reads them from ``y``).
* ``dp_rf_xgbdp_canary``: a canary alone in its region of the feature space (n vs n + 1).
* ``dp_adaboost_canary``: the same for AdaBoost, whose resampling weights depend on every
  earlier round.
* ``xgboost_dp_paper_feature_selection`` (known unprivate, ``expected_to_pass=False``):
  Table 1 step 5 picks the features of the DP trees with a non-private model; one record
  flips the chosen feature, so the released split feature is a deterministic leak.
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
    classifier_codes,
    discrete_release,
    tiny_public_metadata,
)
from dpexp.audit.targets import AuditTarget, end_to_end_target
from dpexp.papers.xgbdp.comparators import (
    DPAdaBoostXGBDPClassifier,
    DPRandomForestXGBDPClassifier,
)
from dpexp.papers.xgbdp.estimators import XGBoostDPClassifier

_X_CLS = np.array([[0.1], [0.2], [0.3], [0.4], [0.6], [0.9]])
_Y_CLS = np.array([0, 0, 0, 0, 0, 1])
#: The only record of class 1 (x = 0.9) present / removed.
LAST_OF_CLASS = ((_X_CLS, _Y_CLS), (_X_CLS[:-1], _Y_CLS[:-1]))

_X_CANARY = np.array([[0.1, 0.2], [0.2, 0.1], [0.3, 0.3], [0.35, 0.2], [0.95, 0.95]])
_Y_CANARY = np.array([0, 1, 0, 1, 1])
#: n = 4 vs n + 1 = 5: the canary (0.95, 0.95) lies where no other record is.
CANARY = ((_X_CANARY[:-1], _Y_CANARY[:-1]), (_X_CANARY, _Y_CANARY))

#: Two identical informative features (a tie: the non-private selection keeps feature 0);
#: the added record (0.9, 0.1, class 0) makes feature 1 the better split.
_X_SEL = np.array([[0.1, 0.1], [0.2, 0.2], [0.8, 0.8], [0.9, 0.9], [0.9, 0.1]])
_Y_SEL = np.array([0, 0, 1, 1, 0])
SELECTION_FLIP = ((_X_SEL[:-1], _Y_SEL[:-1]), (_X_SEL, _Y_SEL))

PROBE_1D = np.array([[0.15], [0.5], [0.9]])
PROBE_2D = np.array([[0.15, 0.15], [0.5, 0.5], [0.95, 0.95]])
_META_1D = tiny_public_metadata(1)
_META_2D = tiny_public_metadata(2)


def _xgb(classes: Sequence[Any] | None = CLASSES, **kw: Any
         ) -> Callable[[np.random.Generator], XGBoostDPClassifier]:
    def make(noise: np.random.Generator) -> XGBoostDPClassifier:
        return XGBoostDPClassifier(n_trees=1, max_depth=1, classes=classes,
                                   random_state=STRUCTURE_SEED, noise_rng=noise, **kw)

    return make


def _forest(noise: np.random.Generator) -> DPRandomForestXGBDPClassifier:
    return DPRandomForestXGBDPClassifier(n_trees=2, max_depth=1, max_features=1,
                                         min_noisy_count=0, classes=CLASSES,
                                         random_state=STRUCTURE_SEED, noise_rng=noise,
                                         **_META_2D)


def _adaboost(noise: np.random.Generator) -> DPAdaBoostXGBDPClassifier:
    return DPAdaBoostXGBDPClassifier(n_trees=2, max_depth=1, min_noisy_count=0,
                                     classes=CLASSES, random_state=STRUCTURE_SEED,
                                     noise_rng=noise, **_META_2D)


def adaboost_codes(est: DPAdaBoostXGBDPClassifier, probe: np.ndarray) -> list[int]:
    """:func:`classifier_codes` plus the released round weights on a 0.5 grid (any
    function of the release is a fair event for the audit)."""
    alphas = np.rint(np.asarray(est.tree_weights_, dtype=np.float64) * 2).astype(np.int64)
    return [*classifier_codes(est, probe), *alphas.clip(0, 40).tolist()]


def _target(name: str, algorithm: str, release: Callable[..., np.ndarray], datasets: Sequence,
            description: str, expected_to_pass: bool = True) -> AuditTarget:
    return end_to_end_target(
        name, release=release, datasets=datasets, pairs=[(0, 1)], epsilon=AUDIT_EPSILON,
        description=description, output="discrete", expected_to_pass=expected_to_pass,
        samples=SAMPLES, quick_samples=QUICK_SAMPLES, algorithm=algorithm,
    )


AUDIT_TARGETS: list[AuditTarget] = [
    _target(
        "xgboost_dp_last_record_of_class", "xgboost_dp",
        discrete_release(_xgb(**_META_1D), PROBE_1D), LAST_OF_CLASS,
        "XGBoost-DP (1 tree, depth 1, auto noisy-count termination), declared classes: the "
        "only record of class 1 removed; release = classes_, predictions, predict_proba "
        "width, split structure",
    ),
    _target(
        "dp_rf_xgbdp_canary", "dp_rf_xgbdp",
        discrete_release(_forest, PROBE_2D), CANARY,
        "DP random forest of XGBoost-DP trees (2 trees, depth 1, 1 feature drawn per node): "
        "a canary alone in its corner added; release = predictions, split structure",
    ),
    _target(
        "dp_adaboost_canary", "dp_adaboost",
        discrete_release(_adaboost, PROBE_2D, codes=adaboost_codes), CANARY,
        "DP AdaBoost (2 rounds, depth 1, record-keyed Poisson resampling): a canary alone "
        "in its corner added; release = predictions, split structure, round weights",
    ),
    _target(
        "xgboost_dp_paper_feature_selection", "xgboost_dp_paper",
        discrete_release(_xgb(variant="paper", n_selected_features=1, min_noisy_count=0,
                              **_META_2D),
                         PROBE_2D), SELECTION_FLIP,
        "XGBoost-DP as published (Table 1 step 5: features chosen by a non-private model): "
        "one record flips the chosen feature, which every DP split then shows (known "
        "unprivate, must be flagged)",
        expected_to_pass=False,
    ),
]

BROKEN_AUDIT_TARGETS: list[AuditTarget] = [
    _target(
        "xgboost_dp_classes_from_y", "xgboost_dp",
        discrete_release(_xgb(classes=None, **_META_1D), PROBE_1D), LAST_OF_CLASS,
        "XGBoost-DP WITHOUT declared classes (label set read from y): removing the last "
        "record of class 1 changes what the fit releases (must be flagged)",
        expected_to_pass=False,
    ),
]

# The defaults path (issue #38): fitted as users do, with the default noise source.
AUDIT_TARGETS += defaults_targets(("xgboost_dp", "dp_rf_xgbdp", "dp_adaboost"))
BROKEN_AUDIT_TARGETS += defaults_targets(("xgboost_dp", "dp_rf_xgbdp", "dp_adaboost"), broken=True)
