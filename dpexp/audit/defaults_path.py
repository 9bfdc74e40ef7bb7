"""The ``defaults`` release path of any registered private classifier (issue #38).

:func:`defaults_target` fits the registered algorithm as a user would, through
:func:`dpexp.registry.make_estimator` with ``epsilon``, an int ``random_state``, the
declared public metadata and a few small structure parameters, and **no** ``noise_rng``:
the estimator's default noise source is what is audited. The release is everything the
model answers on a public probe grid (``predict_proba``), as exact bytes: a release whose
noise can be recomputed from public input (the old default: a stream keyed by
``random_state``) repeats bit for bit, one value per dataset, and is flagged; fresh noise
gives distinct releases and passes. Neighbours: a tiny dataset and the same plus one
record in an empty corner.

``broken=True`` builds the twin: the same fits with ``noise_rng`` = the old default,
re-introduced explicitly (:func:`old_default_noise`).
"""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np

from dpexp.audit.paths import covering, exact_code
from dpexp.audit.targets import AuditTarget
from dpexp.registry import accepted_params, get_algorithm, make_estimator

__all__ = ["OLD_NOISE_KEY", "defaults_target", "defaults_targets", "old_default_noise"]

#: The spawn key the noise stream was derived with from ``random_state`` before issue #38.
OLD_NOISE_KEY = 0x6E6F697365
QUICK = 150  # a deterministic leak still gives a bound of about 2.2 > 1
FULL = 5_000

#: Small structure parameters, where the algorithm takes them (a fit is a few ms).
SMALL = {"n_trees": 2, "n_estimators": 2, "max_depth": 2, "depth": 2, "n_participants": 2,
         "trees_per_ensemble": 2}
_X = np.array([[0.1, 0.2], [0.3, 0.9], [0.8, 0.4], [0.6, 0.7], [0.2, 0.5], [0.4, 0.1]])
_Y = np.array([0, 1, 0, 1, 0, 1])
#: The base, and the base plus one record alone in the empty corner near (1, 1).
DATASETS = ((_X, _Y), (np.vstack([_X, [[0.95, 0.95]]]), np.r_[_Y, 1]))
PROBE = np.array([[a, b] for a in (0.1, 0.5, 0.95) for b in (0.1, 0.5, 0.95)])
PUBLIC = {"feature_domain": np.array([[0.0, 1.0]] * 2), "classes": np.array([0, 1]),
          "categorical_features": np.zeros(2, dtype=bool), "n_categories": np.zeros(2, dtype=np.int64),
          "label_domain": None}


def old_default_noise(random_state: int) -> np.random.Generator:
    """BROKEN: the noise the estimators drew when ``noise_rng=None`` before the fix: a
    stream keyed by ``random_state``, recomputable by whoever recovers it (a small int,
    found from the published structure, e.g. ``seeds_``, by trying them all)."""
    return np.random.default_rng(np.random.SeedSequence([OLD_NOISE_KEY, int(random_state)]))


def _fit(algorithm: str, epsilon: float, data: tuple[np.ndarray, np.ndarray], random_state: int,
         old_noise: bool) -> int:
    """One fit with the default noise (``old_noise``: the old default); its release's code."""
    params = {k: v for k, v in SMALL.items() if k in accepted_params(algorithm)}
    est = make_estimator(algorithm, "classification", params, epsilon=epsilon,
                         random_state=random_state, public=PUBLIC)
    if old_noise:
        est.set_params(noise_rng=old_default_noise(random_state))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(*data)
    return exact_code(est.predict_proba(PROBE))


@cache
def public_seed(algorithm: str) -> int:
    """The first ``random_state`` whose old-default fits of the neighbours differ (with
    recomputable noise each dataset has one release; they must not happen to coincide).
    Any value is valid for the correct target: the audit conditions on the structure."""
    for rs in range(256):
        if len({_fit(algorithm, 1.0, d, rs, True) for d in DATASETS}) == 2:
            return rs
    raise RuntimeError(f"{algorithm}: no random_state below 256 separates the neighbours")


def default_delta(algorithm: str) -> float:
    """The delta a default fit of ``algorithm`` claims (0 for pure epsilon-DP)."""
    cls = get_algorithm(algorithm).estimator_class("classification")
    return float(cls().get_params().get("delta") or 0.0)


def defaults_target(algorithm: str, *, broken: bool = False) -> AuditTarget:
    """The defaults-path target of ``algorithm`` (``broken``: its twin, old default noise).
    The claim is the default fit's: epsilon 1 and its default delta."""

    def release(data: tuple[np.ndarray, np.ndarray], *, epsilon: float, delta: float,
                rng: np.random.Generator, size: int) -> np.ndarray:
        del delta, rng  # the estimator's own default noise source is what is audited
        rs = public_seed(algorithm)
        return np.array([_fit(algorithm, epsilon, data, rs, broken) for _ in range(int(size))],
                        dtype=np.int64)

    target = AuditTarget(
        name=f"{algorithm}_defaults" + ("_noise_from_random_state" if broken else ""),
        description=f"{algorithm} through make_estimator with epsilon, an int random_state and "
                    "the declared metadata, default noise; a record in an empty corner; release: "
                    "exact bytes of predict_proba on a probe grid" + (
                        " -- BROKEN: noise from a stream keyed by random_state (the old default)"
                        if broken else ""),
        release=release, datasets=DATASETS, pairs=((0, 1),), epsilon=1.0,
        delta=default_delta(algorithm), output="discrete",
        expected_to_pass=not broken, kind="end-to-end", samples=FULL, quick_samples=QUICK,
        algorithm=algorithm)
    return target if broken else covering(target, "defaults")


def defaults_targets(algorithms: tuple[str, ...], *, broken: bool = False) -> list[AuditTarget]:
    """:func:`defaults_target` of each of ``algorithms``."""
    return [defaults_target(a, broken=broken) for a in algorithms]
