"""Releases of tiny estimator fits, shared by the end-to-end targets of several papers.

Every draw fits a real registered estimator on a tiny dataset with all public input passed
explicitly, a fixed public ``random_state`` (:data:`STRUCTURE_SEED`) and ``noise_rng`` = a
fresh child of the audit's generator (:func:`noise_children`), so only the mechanism noise
varies between draws. :func:`discrete_release` encodes the whole release (``classes_``,
predictions and ``predict_proba`` width on a probe set, split structure) as a row of
integers; :func:`real_release` / :func:`real_valued_release` return one real number per
fit (see :func:`dpexp.audit.targets.end_to_end_target`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "AUDIT_EPSILON",
    "CLASSES",
    "CODE_WIDTH",
    "QUICK_SAMPLES",
    "SAMPLES",
    "STRUCTURE_SEED",
    "classifier_codes",
    "discrete_release",
    "noise_children",
    "pad_rows",
    "real_release",
    "real_valued_release",
    "tiny_public_metadata",
    "tree_codes",
    "with_budget",
]

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
            est = with_budget(make(noise), epsilon, delta)
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


def with_budget(est: Any, epsilon: float, delta: float) -> Any:
    """``est`` set to the audited budget (``delta`` only where the estimator takes one)."""
    est.set_params(epsilon=epsilon)
    if "delta" in est.get_params():
        est.set_params(delta=delta)
    return est


def real_valued_release(make: Callable[[np.random.Generator], Any],
                         read: Callable[[Any], Any]) -> Callable[..., np.ndarray]:
    """A release that fits ``make(noise_rng)`` per draw and returns ``float(read(fitted))``."""

    def release(data: tuple[np.ndarray, np.ndarray], *, epsilon: float, delta: float,
                rng: np.random.Generator, size: int) -> np.ndarray:
        X, y = data
        out = np.empty(size)
        for i, noise in enumerate(noise_children(rng, size)):
            est = with_budget(make(noise), epsilon, delta)
            with warnings.catch_warnings():
                # only the broken targets read public input from the data; they warn
                warnings.simplefilter("ignore")
                out[i] = float(read(est.fit(X, y)))
        return out

    return release


def real_release(make: Callable[[np.random.Generator], Any], probe: np.ndarray
                 ) -> Callable[..., np.ndarray]:
    """A release that fits ``make(noise_rng)`` per draw and returns ``predict(probe)[0]``."""
    return real_valued_release(make, lambda est: est.predict(probe[:1])[0])
