"""End-to-end privacy audit targets of the Fletcher-Islam family (real estimators).

Each target fits the *registered* estimator once per draw on a tiny dataset, with the
public inputs passed explicitly (``classes``, ``feature_domain``) and the structure
``random_state`` fixed (a public value: the audit is conditional on the public structure
randomness, as the privacy proofs are), while the noise comes from ``noise_rng`` = a child
of the audit's generator. The output of a draw is the whole release, encoded as integers:
``classes_.size``, the ``predict_proba`` width, ``depth_`` where it is data-dependent, and
the predicted class (index in the declared label set) on a fixed probe set, plus, for JPW,
whether the released counts of the probed leaf equal the seed-derived noise (a public
function of the release, so post-processing: a DP release passes whatever it is).

One neighbouring pair per estimator carries every adversarial case at once (Fletcher &
Islam 2017, Section 2.1: add/remove one record):

* a canary in a leaf that is otherwise empty (Section 4.2.1: an empty leaf's label or
  counts are pure noise, which must not be a function of the published seeds);
* the canary is the only record of its class (removing a class's last record must not
  change ``classes_`` nor ``predict_proba``'s shape);
* for JPW, n = 7 vs n + 1 = 8 records of 8 binary-domain features crosses the depth
  boundary of ``min(m/2, log_2 n - 1)`` (Section 5.2): 1 vs 2.

``BROKEN_AUDIT_TARGETS`` re-introduce the old behaviours (empty-leaf noise hashed from the
leaf key, classes read from ``y``, JPW's depth from the exact n); the audit must flag them.
Both lists also hold the targets of :mod:`dpexp.papers.fletcher.audit_paths`: the same
estimators on the paths users run (defaults, the runner, canary positions, two fits on one
budget, float bits, an observed domain) and their broken twins.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache

import numpy as np

from dpexp.audit.defaults_path import defaults_targets
from dpexp.audit.targets import AuditTarget, end_to_end_target
from dpexp.papers.fletcher.audit_paid_domain import BROKEN_PAID_DOMAIN_TARGETS, PAID_DOMAIN_TARGETS
from dpexp.papers.fletcher.audit_paths import BROKEN_PATH_TARGETS, PATH_TARGETS
from dpexp.papers.fletcher.comparators import (
    DiffprivlibForestClassifier,
    FSTreeClassifier,
    JPWForestClassifier,
)
from dpexp.papers.fletcher.forest import FletcherForestClassifier
from dpexp.papers.fletcher.trees import jpw_depth, key_uniform, leaf_index, route_forest
from dpexp.privacy.partition import GOLDEN as _GOLDEN

#: The public label set: many classes make a seed-determined empty-leaf label stand out
#: (under the neighbour with the canary ROSNAM gives it probability 1 / (e^eps + 15)).
CLASSES = np.arange(16)
#: Public structure seed of every fit (the audit conditions on the structure).
STRUCTURE_SEED = 0
QUICK = 500  # a deterministic leak still gives a bound of ~3.5 > 1 (p_B <= 14.5 / 500)
FULL = 20_000

# The old seed-hashed empty-leaf rule (before the fix), for the broken variants only.
_OLD_SALT_LABEL = np.uint64(0x2545F4914F6CDD1D)
_OLD_SALT_EXTRA = np.uint64(0x9FB21C651E98DF25)


def seed_hashed_label(keys: np.ndarray, n_classes: int) -> np.ndarray:
    """The old empty-leaf label: a function of the leaf key alone (hence of ``seeds_``)."""
    lab = np.floor(key_uniform(keys, _OLD_SALT_LABEL) * n_classes).astype(np.int64)
    return np.minimum(lab, n_classes - 1)


def seed_hashed_laplace(keys: np.ndarray, n_classes: int, scale: float) -> np.ndarray:
    """The old JPW empty-leaf noise: Laplace(scale) per class from the leaf key alone."""
    out = np.empty((keys.shape[0], n_classes))
    for c in range(n_classes):
        salt = np.uint64((int(_OLD_SALT_EXTRA) + c * int(_GOLDEN)) % 2**64)
        u = key_uniform(keys, salt) - 0.5
        out[:, c] = -scale * np.sign(u) * np.log1p(-2.0 * np.abs(u))
    return out


# ----------------------------------------------------------------------- broken variants


class SeedHashedEmptyLeafForest(FletcherForestClassifier):
    """BROKEN: empty leaves label themselves by a hash of their key (the old rule)."""

    def _tree_labels(self, X) -> np.ndarray:
        labels = super()._tree_labels(X)
        keys = route_forest(self.schema_, self.seeds_, np.asarray(X, dtype=np.float64))
        empty = leaf_index(keys, self.leaf_offsets_, self.leaf_keys_) < 0
        labels[empty] = seed_hashed_label(keys[empty], self.classes_.size)
        return labels


class SeedHashedEmptyLeafJPW(JPWForestClassifier):
    """BROKEN: empty leaves' Laplace counts are a hash of their key (the old rule)."""

    def _summed_counts(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        n, C, T = X.shape[0], self.classes_.size, self.seeds_.size
        keys = route_forest(self.schema_, self.seeds_, X)
        idx = leaf_index(keys, self.leaf_offsets_, self.leaf_keys_).ravel()
        vals = seed_hashed_laplace(keys.ravel(), C, 1.0 / self.eps_tree_)
        vals[idx >= 0] = self.leaf_counts_[idx[idx >= 0]]
        return vals.reshape(T, n, C).sum(axis=0)


class ExactDepthJPW(JPWForestClassifier):
    """BROKEN: JPW's depth from the exact private record count (as JPW and the paper)."""

    def _depth(self, n: int, m: int, b: float, epsilon: float, rng) -> tuple[int, float]:
        return jpw_depth(m, n, b), 0.0


# ------------------------------------------------------------------------------ datasets

#: One continuous feature on [0, 1], one tree of depth 1: the records at 0 fill the left
#: leaf; the right leaf (probe 1.0) is empty unless the canary is there.
FOREST_DOMAIN = [[0.0, 1.0]]
FOREST_PROBE = np.array([[0.0], [1.0]])
#: JPW: 8 features (m/2 = 4, b = 2) so log_2 n - 1 sets the depth: 7 records -> 1, 8 -> 2.
JPW_DOMAIN = [[0.0, 1.0]] * 8
JPW_PROBE = np.array([[0.0] * 8, [1.0] * 8])


def _forest(cls=FletcherForestClassifier, **kw) -> FletcherForestClassifier:
    params = dict(n_trees=1, max_depth=1, feature_domain=FOREST_DOMAIN, classes=CLASSES,
                  random_state=STRUCTURE_SEED)
    return cls(**{**params, **kw})


@cache
def forest_canary_class() -> int:
    """The canary's class: the first class (beyond the base's 0 and 1) that is *not* the old
    seed-hashed label of its leaf, so the broken variant's leak shows at full strength."""
    est = _forest().set_params(noise_rng=np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(np.zeros((1, 1)), np.zeros(1, dtype=int))
    key = route_forest(est.schema_, est.seeds_, FOREST_PROBE[1:])[0]
    hashed = int(seed_hashed_label(key, CLASSES.size)[0])
    return 2 if hashed != 2 else 3


@cache
def dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The tiny datasets, built on first use (the canary class needs the public structure)."""
    if name.startswith("forest"):
        X, y = np.zeros((3, 1)), np.array([0, 1, 0])
        canary = (np.ones((1, 1)), np.array([forest_canary_class()]))
    else:
        X, y = np.zeros((7, 8)), np.array([0, 1, 0, 1, 0, 1, 0])
        canary = (np.ones((1, 8)), np.array([2]))
    if name.endswith("+canary"):
        X, y = np.vstack([X, canary[0]]), np.concatenate([y, canary[1]])
    return X, y


FOREST_DATASETS = ("forest", "forest+canary")
JPW_DATASETS = ("jpw", "jpw+canary")


# ------------------------------------------------------------------------------ releases

Maker = Callable[[float, np.random.Generator], object]


def _declared_index(est, proba: np.ndarray) -> np.ndarray:
    """Predicted class of each probe as its index in the declared label set."""
    return np.searchsorted(CLASSES, est.classes_[np.argmax(proba, axis=1)])


def _encode_forest(est) -> list[int]:
    proba = est.predict_proba(FOREST_PROBE)
    return [est.classes_.size, proba.shape[1], *_declared_index(est, proba)]


def _encode_jpw(est) -> list[int]:
    counts = est._summed_counts(JPW_PROBE)  # the released counts, summed over the trees
    keys = route_forest(est.schema_, est.seeds_, JPW_PROBE[1:])[0]
    seeded = seed_hashed_laplace(keys, est.classes_.size, 1.0 / est.eps_tree_)
    equal_to_seeded = bool(np.any(counts[1] == seeded[0]))
    return [est.classes_.size, counts.shape[1], est.depth_, *_declared_index(est, counts),
            int(equal_to_seeded)]


def _encode_fs(est) -> list[int]:
    proba = est.predict_proba(FOREST_PROBE)
    return [est.classes_.size, proba.shape[1], *_declared_index(est, proba)]


def _release(make: Maker, encode: Callable[[object], list[int]]):
    """``size`` independent fits (fresh noise, fixed public structure), encoded as rows."""

    def release(data: str, *, epsilon: float, delta: float, rng: np.random.Generator,
                size: int) -> np.ndarray:
        X, y = dataset(data)
        rows = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the classes-from-y variant warns every fit
            for child in rng.spawn(size):
                rows.append(encode(make(epsilon, child).fit(X, y)))
        return np.asarray(rows, dtype=np.int64)

    return release


def _target(name: str, algorithm: str, make: Maker, encode, datasets, description: str, *,
            expected_to_pass: bool = True) -> AuditTarget:
    return end_to_end_target(
        name, release=_release(make, encode), datasets=datasets, pairs=[(0, 1)], epsilon=1.0,
        description=description, output="discrete", expected_to_pass=expected_to_pass,
        samples=FULL, quick_samples=QUICK, algorithm=algorithm,
    )


_FOREST_CASES = ("canary alone in an empty leaf and the only record of its class; release = "
                 "classes_, predict_proba width, predictions on both leaves")
_JPW_CASES = ("canary alone in an empty leaf, only record of its class, n = 7 vs 8 across the "
              "depth boundary; release = classes_, width, depth_, predictions, counts == seed hash")

AUDIT_TARGETS: list[AuditTarget] = [
    _target(
        "fletcher_forest_end_to_end", "fletcher_forest",
        lambda eps, rng: _forest(epsilon=eps, noise_rng=rng), _encode_forest, FOREST_DATASETS,
        f"FletcherForestClassifier (ROSNAM, 1 tree, depth 1): {_FOREST_CASES}",
    ),
    _target(
        "jpw_end_to_end", "jpw",
        lambda eps, rng: JPWForestClassifier(
            epsilon=eps, n_trees=1, feature_domain=JPW_DOMAIN, classes=CLASSES,
            random_state=STRUCTURE_SEED, noise_rng=rng),
        _encode_jpw, JPW_DATASETS, f"JPWForestClassifier (1 tree, noisy-count depth): {_JPW_CASES}",
    ),
    _target(
        "fs_c45_end_to_end", "fs_c45",
        lambda eps, rng: FSTreeClassifier(
            epsilon=eps, max_depth=2, feature_domain=FOREST_DOMAIN, classes=CLASSES,
            random_state=STRUCTURE_SEED, noise_rng=rng),
        _encode_fs, FOREST_DATASETS, f"FSTreeClassifier (depth 2): {_FOREST_CASES}",
    ),
    # Runs where diffprivlib imports here or its side environment exists (`dpexp peers
    # setup diffprivlib`: the same estimator fits there); dpexp audit skips it otherwise,
    # saying it is not audited here and how to get it.
    _target(
        "diffprivlib_rf_end_to_end", "diffprivlib_rf",
        lambda eps, rng: DiffprivlibForestClassifier(
            epsilon=eps, n_trees=1, max_depth=1, feature_domain=FOREST_DOMAIN, classes=CLASSES,
            random_state=STRUCTURE_SEED, noise_rng=rng),
        _encode_fs, FOREST_DATASETS,
        f"diffprivlib RandomForestClassifier (shuffle=True, 1 tree, depth 1; in-process or in its "
        f"side environment): {_FOREST_CASES}",
    ),
]

BROKEN_AUDIT_TARGETS: list[AuditTarget] = [
    _target(
        "fletcher_forest_seed_hashed_empty_leaf", "fletcher_forest",
        lambda eps, rng: _forest(SeedHashedEmptyLeafForest, epsilon=eps, noise_rng=rng),
        _encode_forest, FOREST_DATASETS,
        "BROKEN: Fletcher forest whose empty leaves take a label hashed from the leaf key",
        expected_to_pass=False,
    ),
    _target(
        "fletcher_forest_classes_from_y", "fletcher_forest",
        lambda eps, rng: _forest(epsilon=eps, classes=None, noise_rng=rng),
        _encode_forest, FOREST_DATASETS,
        "BROKEN: Fletcher forest with classes=None (label set read from the training labels)",
        expected_to_pass=False,
    ),
    _target(
        "jpw_seed_hashed_empty_leaf", "jpw",
        lambda eps, rng: SeedHashedEmptyLeafJPW(
            epsilon=eps, n_trees=1, feature_domain=JPW_DOMAIN, classes=CLASSES,
            random_state=STRUCTURE_SEED, noise_rng=rng),
        _encode_jpw, JPW_DATASETS,
        "BROKEN: JPW whose empty leaves' Laplace counts are hashed from the leaf key",
        expected_to_pass=False,
    ),
    _target(
        "jpw_exact_depth", "jpw",
        lambda eps, rng: ExactDepthJPW(
            epsilon=eps, n_trees=1, feature_domain=JPW_DOMAIN, classes=CLASSES,
            random_state=STRUCTURE_SEED, noise_rng=rng),
        _encode_jpw, JPW_DATASETS,
        "BROKEN: JPW whose depth min(m/2, log_b n - 1) uses the exact record count",
        expected_to_pass=False,
    ),
]

# The same estimators on the paths users run (defaults, the runner, canary positions, two
# fits on one budget, float bits, an observed domain; issue #38).
AUDIT_TARGETS += [*PATH_TARGETS, *PAID_DOMAIN_TARGETS, *defaults_targets(("fs_c45", "diffprivlib_rf"))]
BROKEN_AUDIT_TARGETS += [*BROKEN_PATH_TARGETS, *BROKEN_PAID_DOMAIN_TARGETS,
                         *defaults_targets(("fs_c45", "diffprivlib_rf"), broken=True)]
