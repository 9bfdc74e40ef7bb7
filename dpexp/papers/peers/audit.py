"""End-to-end privacy audits of the DP-EBM peer (:mod:`dpexp.papers.peers.ebm`).

interpret's internals are its own; dpexp audits what the wrapper releases, end to end:

* ``dp_ebm_corner_record``: the classifier (declared classes and feature domain, 20
  boosting rounds so a draw costs milliseconds) on the tiny dataset of the defaults path
  and the same plus one record alone in an empty corner; release = ``classes_``, the
  predictions on a probe grid and ``predict_proba``'s width. The claim is interpret's
  (epsilon, delta) at delta = 1e-6, tested on its whole privacy curve (``gaussian=True``:
  DP-EBM composes Gaussian noise with Gaussian DP).
* the defaults path (issue #38): fitted through ``make_estimator`` as users do, with the
  default noise source (fresh entropy: interpret's seed is drawn from dpexp's noise
  stream, never from ``random_state``); its broken twin, noise keyed by ``random_state``,
  must be flagged.
"""

from __future__ import annotations

import numpy as np

from dpexp.audit.defaults_path import DATASETS, PROBE, defaults_targets
from dpexp.audit.estimator_releases import (
    AUDIT_EPSILON,
    CLASSES,
    QUICK_SAMPLES,
    SAMPLES,
    STRUCTURE_SEED,
    discrete_release,
)
from dpexp.audit.targets import AuditTarget, end_to_end_target
from dpexp.papers.peers.ebm import DELTA, DPEBMClassifier

_DOMAIN = np.array([[0.0, 1.0], [0.0, 1.0]])


def _codes(est: DPEBMClassifier, probe: np.ndarray) -> list[int]:
    """``classes_`` (index + 1 in the public set), the predictions on ``probe`` and the
    width of ``predict_proba``: what a fitted DP-EBM answers (it has no dpexp trees)."""
    public = list(CLASSES)
    labels = [public.index(c) + 1 for c in est.classes_.tolist()]
    pred = [public.index(c) for c in est.predict(probe).tolist()]
    return [len(labels), *labels, *pred, int(est.predict_proba(probe).shape[1])]


def _classifier(noise: np.random.Generator) -> DPEBMClassifier:
    return DPEBMClassifier(max_rounds=20, feature_domain=_DOMAIN, classes=CLASSES,
                           random_state=STRUCTURE_SEED, noise_rng=noise)


AUDIT_TARGETS: list[AuditTarget] = [
    end_to_end_target(
        "dp_ebm_corner_record", release=discrete_release(_classifier, PROBE, codes=_codes),
        datasets=DATASETS, pairs=[(0, 1)], epsilon=AUDIT_EPSILON, delta=DELTA,
        description="InterpretML DP-EBM classifier (20 rounds), declared classes and domain: "
                    "a record alone in an empty corner added; release = classes_, predictions "
                    "on a probe grid, predict_proba width",
        output="discrete", gaussian=True, samples=SAMPLES, quick_samples=QUICK_SAMPLES,
        algorithm="dp_ebm",
    ),
    *defaults_targets(("dp_ebm",)),
]

BROKEN_AUDIT_TARGETS: list[AuditTarget] = defaults_targets(("dp_ebm",), broken=True)
