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

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpexp.papers.dpboost.estimators import DPBoostClassifier, DPBoostRegressor
from dpexp.papers.dpboost.honest import HonestDPBoostClassifier, HonestDPBoostRegressor
from dpexp.privacy.audit import AuditTarget, end_to_end_target
from dpexp.privacy.audit_defaults import defaults_targets

#: Budget claimed by the audits (a deterministic leak then shows as a bound of ~3.5-5).
AUDIT_EPSILON = 1.0
#: Draws per dataset and stage: a tiny fit costs a few milliseconds (4 fits per draw and
#: pair), so the quick audit uses few draws -- still enough to expose a deterministic leak
#: (an outcome certain under one dataset and impossible under the other gives a lower
#: bound of ln(0.95 / 0.05) ~ 2.9 > 1 at 300 draws and alpha = 1e-6).
QUICK_SAMPLES = 300
SAMPLES = 5_000
#: The fixed public structure seed of every audited fit.
STRUCTURE_SEED = 0
CLASSES = (0, 1)


def tiny_public_metadata(n_features: int = 1, max_bins: int = 4) -> dict[str, Any]:
    """Public metadata of the tiny audit datasets: every feature numeric on ``[0, 1]``."""
    return {
        "feature_domain": np.tile([0.0, 1.0], (n_features, 1)),
        "categorical_features": np.zeros(n_features, dtype=bool),
        "n_categories": np.zeros(n_features, dtype=np.int64),
        "max_bins": max_bins,
    }


def noise_children(rng: np.random.Generator, size: int) -> list[np.random.Generator]:
    """One independent noise generator per draw (children of the audit's generator)."""
    return list(rng.spawn(size))


def tree_codes(trees: Sequence[Any]) -> list[int]:
    """The published split structure of ``trees`` as non-negative integers: per node,
    ``feature + 1`` (0 = leaf) and the threshold on a 1e-6 grid (the thresholds are points
    of the public bin grid, so this loses nothing)."""
    out: list[int] = []
    for tree in trees:
        feat = np.asarray(tree.feature, dtype=np.int64)
        thr = np.where(feat >= 0, np.asarray(tree.threshold, dtype=np.float64), 0.0)
        out.append(int(feat.size))
        out.extend((feat + 1).tolist())
        out.extend(np.rint(np.nan_to_num(thr) * 1e6).astype(np.int64).clip(min=0).tolist())
    return out


def classifier_codes(est: Any, probe: np.ndarray, classes: Sequence[Any] = CLASSES) -> list[int]:
    """``classes_``, the predictions on ``probe`` (index in the public label set), the
    width of ``predict_proba`` and the trees' structure, as one row of integers."""
    public = list(classes)
    labels = [public.index(c) + 1 if c in public else 0 for c in est.classes_.tolist()]
    pred = [public.index(c) for c in est.predict(probe).tolist()]
    width = est.predict_proba(probe).shape[1] if hasattr(est, "predict_proba") else 0
    return [len(labels), *labels, *pred, int(width), *tree_codes(est.trees_)]


#: Width of an encoded discrete outcome: the same for every dataset of a target, so the
#: audit can compare outcomes across neighbours (tiny models need far fewer codes).
CODE_WIDTH = 64


def pad_rows(rows: list[list[int]]) -> np.ndarray:
    """Rows of possibly different lengths as one ``(size, CODE_WIDTH + 1)`` int array: the
    length in front, then the codes shifted by 1 (0 = padding), so padding is unambiguous."""
    out = np.zeros((len(rows), CODE_WIDTH + 1), dtype=np.int64)
    for i, r in enumerate(rows):
        if len(r) > CODE_WIDTH:
            raise ValueError(f"an audit outcome has {len(r)} codes, more than {CODE_WIDTH}")
        out[i, 0] = len(r)
        out[i, 1 : len(r) + 1] = np.asarray(r, dtype=np.int64) + 1
    return out


def discrete_release(
    make: Callable[[np.random.Generator], Any], probe: np.ndarray,
    classes: Sequence[Any] = CLASSES,
    codes: Callable[[Any, np.ndarray], list[int]] | None = None,
) -> Callable[..., np.ndarray]:
    """A release that fits ``make(noise_rng)`` on ``(X, y)`` per draw and encodes it with
    ``codes(est, probe)`` (default :func:`classifier_codes` over ``classes``); a fit that
    refuses the data is its own outcome (code 0)."""

    def release(data: tuple[np.ndarray, np.ndarray], *, epsilon: float, delta: float,
                rng: np.random.Generator, size: int) -> np.ndarray:
        X, y = data
        rows = []
        for noise in noise_children(rng, size):
            est = _with_budget(make(noise), epsilon, delta)
            with warnings.catch_warnings():
                # only the broken targets read public input from the data; they warn
                warnings.simplefilter("ignore")
                try:
                    est.fit(X, y)
                except ValueError:
                    rows.append([0])  # the fit refused this data: an observable outcome
                    continue
            rows.append(classifier_codes(est, probe, classes) if codes is None
                        else codes(est, probe))
        return pad_rows(rows)

    return release


def _with_budget(est: Any, epsilon: float, delta: float) -> Any:
    """``est`` set to the audited budget (``delta`` only where the estimator takes one)."""
    est.set_params(epsilon=epsilon)
    if "delta" in est.get_params():
        est.set_params(delta=delta)
    return est


def _real_valued_release(make: Callable[[np.random.Generator], Any],
                         read: Callable[[Any], Any]) -> Callable[..., np.ndarray]:
    """A release that fits ``make(noise_rng)`` per draw and returns ``float(read(fitted))``."""

    def release(data: tuple[np.ndarray, np.ndarray], *, epsilon: float, delta: float,
                rng: np.random.Generator, size: int) -> np.ndarray:
        X, y = data
        out = np.empty(size)
        for i, noise in enumerate(noise_children(rng, size)):
            est = _with_budget(make(noise), epsilon, delta)
            with warnings.catch_warnings():
                # only the broken targets read public input from the data; they warn
                warnings.simplefilter("ignore")
                out[i] = float(read(est.fit(X, y)))
        return out

    return release


def real_release(make: Callable[[np.random.Generator], Any], probe: np.ndarray
                 ) -> Callable[..., np.ndarray]:
    """A release that fits ``make(noise_rng)`` per draw and returns ``predict(probe)[0]``."""
    return _real_valued_release(make, lambda est: est.predict(probe[:1])[0])


# ----------------------------------------------------------------------------- datasets

#: Five records of class 0 and the only record of class 1 (x = 0.9); its removal leaves a
#: training set without class 1.
_X_CLS = np.array([[0.1], [0.2], [0.3], [0.4], [0.6], [0.9]])
_Y_CLS = np.array([0, 0, 0, 0, 0, 1])
LAST_OF_CLASS = ((_X_CLS, _Y_CLS), (_X_CLS[:-1], _Y_CLS[:-1]))

#: Regression labels in the public domain [0, 1]; the added record's label is the edge 1.
_X_REG = np.array([[0.1], [0.3], [0.5], [0.7], [0.9]])
_Y_REG = np.array([0.0, 0.2, 0.1, 0.3, 1.0])
LABEL_EDGE = ((_X_REG[:-1], _Y_REG[:-1]), (_X_REG, _Y_REG))
#: The same with an extreme label far outside anything a declared domain would allow:
#: only a data-derived domain is moved by it.
LABEL_EXTREME = ((_X_REG[:-1], _Y_REG[:-1]), (_X_REG, np.array([0.0, 0.2, 0.1, 0.3, 50.0])))

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

PROBE = np.array([[0.15], [0.5], [0.9]])
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
    return _real_valued_release(make, lambda est: est.decision_function(point[:1])[0])


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
