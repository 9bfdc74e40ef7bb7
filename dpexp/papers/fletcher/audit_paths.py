"""End-to-end audit targets of the Fletcher-Islam family on the paths users run (issue #38).

The targets of :mod:`dpexp.papers.fletcher.audit` fit with hand-picked arguments (fresh
noise, canaries appended). These fit as users do (:mod:`dpexp.audit.paths`):

* ``*_defaults``: the estimator built with ``epsilon``, an int ``random_state`` and the
  declared public metadata only (default noise source); the release is everything
  published, ``seeds_`` included, as exact bytes (one outcome per distinct release: noise
  recomputable from the published structure repeats bit for bit) and as labels;
* ``jpw_runner_depth_boundary``: JPW with the runner's parameters
  (:func:`dpexp.audit.runner_path.runner_fit`), n = 7 vs 8 records across the depth
  boundary of ``min(m/2, log_2 n - 1)``;
* ``fletcher_forest_canary_positions``: 4 trees, fixed ``random_state``, a canary
  inserted at row 0, in the middle and at the end (three pairs);
* ``jpw_two_fits_shared_random_state``: two fits with one ``random_state`` on one
  ``BudgetAccountant`` (epsilon 2/3 and 1/3 of the claim, which is what it charges);
  the release is the pair, read through the count both fits estimate;
* ``jpw_leaf_counts_float_bits`` (numpy Generator) and ``..._secure``
  (``secure_generator()``): the exact bits of the released counts of one leaf, empty vs
  holding the canary;
* ``fletcher_forest_observed_domain``: the observed min/max domain as the runner passes
  it; the row's verdict is part of the release (a row marked not DP publishes no DP
  claim, so the target outputs one fixed symbol for it): "observed and private" fails.

Each has a broken twin (``BROKEN_PATH_TARGETS``) that re-introduces the old behaviour
inside the twin itself (a subclass or an explicit argument), so it stays broken whatever
the estimators become: noise from ``random_state``, ``n_records = len(X)``, a partition
keyed by row position, numpy float Laplace counts with the old empty-leaf uniform, an
observed domain with the accountant's ``is_dp``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from dpexp.audit.defaults_path import old_default_noise
from dpexp.audit.paths import (
    CANARY_POSITIONS,
    covering,
    exact_code,
    grid_levels,
    insert_row,
)
from dpexp.audit.runner_path import RunnerCase, runner_fit, tiny_info
from dpexp.audit.targets import AuditTarget
from dpexp.papers.fletcher.comparators import JPWForestClassifier
from dpexp.papers.fletcher.forest import FletcherForestClassifier, leaf_counts
from dpexp.papers.fletcher.trees import key_uniform, leaf_index, route_forest
from dpexp.privacy import BudgetAccountant, secure_generator
from dpexp.privacy.partition import RecordIds, record_partition
from dpexp.privacy.randomness import estimator_streams

__all__ = ["BROKEN_PATH_TARGETS", "PATH_TARGETS"]

QUICK = 300  # a deterministic leak still gives a bound of about 2.8 > 1
FULL = 20_000
#: Output of a fit whose row says not DP: no DP claim is made, one symbol for all.
NOT_DP = 0

Release = Callable[..., Any]

#: The public label set (many classes: a label that is a function of the data stands out).
CLASSES = np.arange(16)
#: Public structure seed of every fit (the audit conditions on the structure).
STRUCTURE_SEED = 0
#: One feature on [0, 1], one tree of depth 1: the base's records at x = 0 fill the left
#: leaf; the right leaf (probe 1.0) is empty unless the canary is there.
FOREST_DOMAIN = [[0.0, 1.0]]
FOREST_PROBE = np.array([[0.0], [1.0]])
#: JPW: 8 binary-domain features, so log_2 n - 1 sets the depth: 7 records -> 1, 8 -> 2.
JPW_DOMAIN = [[0.0, 1.0]] * 8
JPW_PROBE = np.array([[0.0] * 8, [1.0] * 8])
FOREST_DATASETS = ("forest", "forest+canary")
JPW_DATASETS = ("jpw", "jpw+canary")


@cache
def dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """A base of class 0/1 records at the origin; ``+canary``: plus one record of class 2
    alone in the probed leaf (for JPW also the 8th record, across the depth boundary)."""
    d = 1 if name.startswith("forest") else 8
    n = 3 if name.startswith("forest") else 7
    X, y = np.zeros((n, d)), np.arange(n) % 2
    if name.endswith("+canary"):
        X, y = np.vstack([X, np.ones((1, d))]), np.r_[y, 2]
    return X, y


def _quiet(fn: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _target(name: str, algorithm: str, release: Release, datasets, pairs, description: str, *,
            paths: tuple[str, ...], expected_to_pass: bool = True, epsilon: float = 1.0,
            views: tuple[str, ...] = ("",), quick: int = QUICK) -> AuditTarget:
    """An end-to-end target of ``algorithm`` covering ``paths``; ``views``: the names of a
    release read several ways (each is the whole release's post-processing, so each claims
    the whole epsilon; the audit splits alpha over them)."""
    claims = None if views == ("",) else (lambda eps, delta: {v: (eps, delta) for v in views})
    target = AuditTarget(
        name=name, description=description, release=release, datasets=tuple(datasets),
        pairs=tuple(pairs), epsilon=epsilon, output="discrete", expected_to_pass=expected_to_pass,
        kind="end-to-end", samples=FULL, quick_samples=quick, claims=claims, algorithm=algorithm)
    return covering(target, *paths) if expected_to_pass else target


def _declared_index(est, scores: np.ndarray) -> np.ndarray:
    return np.searchsorted(CLASSES, est.classes_[np.argmax(scores, axis=1)])


# ------------------------------------------------------------------------------- defaults


def _forest_views(est) -> tuple[int, list[int]]:
    proba = est.predict_proba(FOREST_PROBE)
    published = exact_code(est.seeds_, est.depth_, est.classes_, proba)
    return published, [est.classes_.size, *_declared_index(est, proba)]


def _jpw_views(est) -> tuple[int, list[int]]:
    counts = est.tree_counts(JPW_PROBE)
    published = exact_code(est.seeds_, est.depth_, est.classes_, counts)
    return published, [est.depth_, *_declared_index(est, counts.sum(axis=0))]


def _old_fit(make: Callable[[float], Any], epsilon: float, data: str, random_state: int):
    est = make(epsilon).set_params(random_state=random_state)
    est.set_params(noise_rng=old_default_noise(random_state))
    return _quiet(lambda: est.fit(*dataset(data)))


@cache
def defaults_seed(which: str) -> int:
    """The public ``random_state`` of a defaults target: the first whose old-default fits
    of the two neighbours publish different bytes (with recomputable noise, the release of
    each dataset is one fixed value; the neighbours must not happen to share it). Chosen at
    first use, so the twin stays broken whatever the samplers become; any value is valid
    for the correct target (the audit conditions on the public structure)."""
    make, views = _DEFAULTS[which]
    for rs in range(256):
        codes = {views(_old_fit(make, 1.0, d, rs))[0] for d in _DEFAULTS_DATA[which]}
        if len(codes) == 2:
            return rs
    raise RuntimeError(f"no random_state below 256 separates the {which} neighbours")


def _defaults_release(which: str, *, old_noise: bool) -> Release:
    """``size`` fits with the default noise source (``old_noise``: the old default)."""

    def release(data: str, *, epsilon: float, delta: float, rng: np.random.Generator,
                size: int) -> dict[str, np.ndarray]:
        del delta, rng  # the default noise source is what is audited
        make, views = _DEFAULTS[which]
        rs = defaults_seed(which)
        codes, labels = [], []
        for _ in range(int(size)):
            est = (_old_fit(make, epsilon, data, rs) if old_noise else
                   _quiet(lambda: make(epsilon).set_params(random_state=rs).fit(*dataset(data))))
            code, lab = views(est)
            codes.append(code)
            labels.append(lab)
        return {"bytes": np.asarray(codes, dtype=np.int64), "labels": np.asarray(labels, dtype=np.int64)}

    return release


def _forest(**kw) -> FletcherForestClassifier:
    return FletcherForestClassifier(**{**dict(n_trees=1, max_depth=1, feature_domain=FOREST_DOMAIN,
                                              classes=CLASSES, random_state=STRUCTURE_SEED), **kw})


def _jpw(cls=JPWForestClassifier, **kw) -> JPWForestClassifier:
    return cls(**{**dict(n_trees=1, feature_domain=JPW_DOMAIN, classes=CLASSES,
                         random_state=STRUCTURE_SEED), **kw})


_DEFAULTS: dict[str, tuple[Callable[[float], Any], Callable[[Any], tuple[int, list[int]]]]] = {
    "fletcher_forest": (lambda eps: _forest(epsilon=eps), _forest_views),
    "jpw": (lambda eps: _jpw(epsilon=eps), _jpw_views),
}
_DEFAULTS_DATA = {"fletcher_forest": FOREST_DATASETS, "jpw": JPW_DATASETS}


def _defaults_targets(broken: bool) -> list[AuditTarget]:
    tag = "_noise_from_random_state" if broken else ""
    what = (" -- BROKEN: noise from a stream keyed by random_state (the old default)"
            if broken else "")
    return [
        _target(f"fletcher_forest_defaults{tag}", "fletcher_forest",
                _defaults_release("fletcher_forest", old_noise=broken),
                FOREST_DATASETS, [(0, 1)],
                "FletcherForestClassifier(epsilon, random_state=int, declared classes/domain), "
                "default noise; canary alone in an empty leaf; release: exact bytes of seeds_, "
                "depth_, classes_, predict_proba; labels" + what,
                paths=("defaults",), expected_to_pass=not broken, views=("bytes", "labels")),
        _target(f"jpw_defaults{tag}", "jpw",
                _defaults_release("jpw", old_noise=broken),
                JPW_DATASETS, [(0, 1)],
                "JPWForestClassifier(epsilon, random_state=int, declared classes/domain), default "
                "noise (noisy-count depth); canary alone in an empty leaf, n = 7 vs 8; release: "
                "exact bytes of seeds_, depth_, classes_, the probes' leaf counts; depth, labels" + what,
                paths=("defaults",), expected_to_pass=not broken, views=("bytes", "labels")),
    ]


# -------------------------------------------------------------------------------- runner

#: 8 binary-domain features, 7 declared rows: log_2 n - 1 gives depth 1 (2 with 8 rows).
JPW_RUNNER = RunnerCase("jpw", tiny_info("audit_jpw_depth", rows=7, features=8,
                                         classes=tuple(CLASSES.tolist()), domain=(0.0, 1.0)),
                        {"n_trees": 1}, STRUCTURE_SEED)


def _jpw_runner_release(n_from_data: bool) -> Release:
    def release(data: str, *, epsilon: float, delta: float, rng: np.random.Generator,
                size: int) -> np.ndarray:
        del delta
        X, y = dataset(data)
        rows = []
        for seed in rng.integers(0, 2**63, size=int(size)):
            fit = _quiet(lambda seed=seed: runner_fit(JPW_RUNNER, X, y, epsilon=epsilon,
                                                       noise_seed=int(seed), n_from_data=n_from_data))
            if not fit.private:
                rows.append([NOT_DP, 0, 0, 0])
                continue
            est = fit.estimator
            rows.append([1, est.depth_, *_declared_index(est, est.tree_counts(JPW_PROBE).sum(axis=0))])
        return np.asarray(rows, dtype=np.int64)

    return release


def _runner_targets(broken: bool) -> list[AuditTarget]:
    return [_target(
        "jpw_runner_n_from_len_x" if broken else "jpw_runner_depth_boundary", "jpw",
        _jpw_runner_release(broken), JPW_DATASETS, [(0, 1)],
        "JPW through the runner's cell path (n_records, metadata, seeded noise and verdict as the "
        "runner passes them; 7 declared rows), n = 7 vs 8 across the depth boundary; release: "
        "verdict, depth_, labels" + (" -- BROKEN: n_records = len(X) (the runner before the fix)"
                                     if broken else ""),
        paths=("runner",), expected_to_pass=not broken)]


# ------------------------------------------------------------------------ canary positions

N_POSITION_TREES = 4
#: The canary of the position targets: its own class, between the two clusters.
POSITION_CANARY = ([0.5], 4)


def old_row_partition(random_state: int, n: int, n_trees: int) -> np.ndarray:
    """BROKEN: the old partition, keyed by row position (the row index as the record id)."""
    ss_part = estimator_streams(random_state).structure.spawn(3)[1]
    ids = RecordIds(np.arange(n, dtype=np.uint64))
    return record_partition(ids, [1.0 / n_trees] * n_trees, np.random.default_rng(ss_part))


class RowKeyedPartitionForest(FletcherForestClassifier):
    """BROKEN: records go to trees by a keyed hash of their *row index* (the old partition):
    inserting a record at row 0 moves every later record to a new tree."""

    def _route_training(self, X, y, part, n_trees):
        if part is not None:
            part = old_row_partition(self.random_state, X.shape[0], n_trees)
            self.tree_sizes_ = np.bincount(part[part >= 0], minlength=n_trees).astype(np.int64)
        return super()._route_training(X, y, part, n_trees)


@cache
def position_base() -> tuple[np.ndarray, np.ndarray]:
    """48 distinct records in two clusters (x near 0.05 and 0.95), labelled by the tree the
    row-keyed partition sends each row to (class 2 + t for tree t): under it each of the 8
    leaves holding records is pure, and shifting the rows by one mixes them all."""
    x = np.r_[np.linspace(0.01, 0.12, 24), np.linspace(0.88, 0.99, 24)][:, None]
    part = old_row_partition(STRUCTURE_SEED, x.shape[0], N_POSITION_TREES)
    return x, (2 + np.maximum(part, 0)).astype(np.int64)


@cache
def position_dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    X, y = position_base()
    if name == "base":
        return X, y
    return insert_row(X, y, POSITION_CANARY[0], POSITION_CANARY[1], name)


POSITION_DATASETS = ("base", *CANARY_POSITIONS)
POSITION_PROBE = np.array([[0.05], [0.95]])


def _position_release(cls: type) -> Release:
    def release(data: str, *, epsilon: float, delta: float, rng: np.random.Generator,
                size: int) -> np.ndarray:
        del delta
        X, y = position_dataset(data)
        rows = []
        for child in rng.spawn(int(size)):
            est = cls(epsilon=epsilon, n_trees=N_POSITION_TREES, max_depth=1,
                      feature_domain=FOREST_DOMAIN, classes=CLASSES, random_state=STRUCTURE_SEED,
                      noise_rng=child).fit(X, y)
            rows.append(est._tree_labels(POSITION_PROBE).ravel())  # every tree's label: the release
        return np.asarray(rows, dtype=np.int64)

    return release


def _position_targets(broken: bool) -> list[AuditTarget]:
    return [_target(
        "fletcher_forest_row_keyed_partition" if broken else "fletcher_forest_canary_positions",
        "fletcher_forest", _position_release(RowKeyedPartitionForest if broken else FletcherForestClassifier),
        POSITION_DATASETS, [(0, 1), (0, 2), (0, 3)],
        "FletcherForestClassifier, 4 trees, fixed random_state, 48 records; a canary inserted at "
        "row 0, in the middle, at the end; release: every tree's label on both clusters" + (
            " -- BROKEN: partition keyed by row position" if broken else ""),
        paths=CANARY_POSITIONS, expected_to_pass=not broken, quick=300)]


# ------------------------------------------------------------- old JPW release (twins)


def old_empty_leaf_laplace(secret: np.uint64, keys: np.ndarray, n_classes: int,
                           scale: float) -> np.ndarray:
    """BROKEN: the old empty-leaf counts, float Laplace(scale) by the inverse CDF of a keyed
    uniform (53-bit) per class: pure noise with every low-order bit."""
    keys = np.asarray(keys, dtype=np.uint64).ravel()
    out = np.empty((keys.size, n_classes))
    for c in range(n_classes):
        u = key_uniform(keys ^ secret, np.uint64(0x9E3779B97F4A7C15 * (c + 1) % 2**64)) - 0.5
        out[:, c] = -scale * np.sign(u) * np.log1p(-2.0 * np.abs(u))
    return out


class FloatLaplaceJPW(JPWForestClassifier):
    """BROKEN (the old release): leaf counts plus numpy float Laplace noise
    (``count + rng.laplace(0, 1/eps)``), empty leaves' counts from the old keyed uniform;
    the noise from ``noise_rng``, or -- when it is None -- from ``random_state`` (the old
    default)."""

    def _old_rng(self):
        if self.noise_rng is None:
            return old_default_noise(self.random_state)
        return self.noise_rng.spawn(1)[0]

    def fit(self, X, y):
        super().fit(X, y)
        rng = self._old_rng()
        X = np.asarray(X, dtype=np.float64)
        y_enc = np.searchsorted(self.classes_, y)
        grid = route_forest(self.schema_, self.seeds_, X)
        C, scale = self.classes_.size, 1.0 / self.eps_tree_
        noisy = []
        for t in range(self.seeds_.size):
            _, counts = leaf_counts(grid[t], y_enc, C)
            noisy.append(counts.astype(np.float64) + rng.laplace(0.0, scale, size=counts.shape))
        self.leaf_counts_ = np.concatenate(noisy).reshape(-1, C)
        self._old_secret = np.uint64(int(rng.integers(0, 2**63)))
        return self

    def tree_counts(self, X) -> np.ndarray:
        n, C, T = X.shape[0], self.classes_.size, self.seeds_.size
        keys = route_forest(self.schema_, self.seeds_, X)
        idx = leaf_index(keys, self.leaf_offsets_, self.leaf_keys_).ravel()
        vals = old_empty_leaf_laplace(self._old_secret, keys.ravel(), C, 1.0 / self.eps_tree_)
        vals[idx >= 0] = self.leaf_counts_[idx[idx >= 0]]
        return vals.reshape(T, n, C)


# ---------------------------------------------------------------- shared random_state

#: One feature; the base's records sit at x = 0; the probed leaf (x = 1) holds 1 record of
#: class 2, and 2 with the neighbour's extra one.
SHARED_CLASSES = np.arange(3)
SHARED_PROBE = np.array([[1.0]])
_SHARED_X = np.array([[0.0], [0.0], [0.0], [1.0]])
_SHARED_Y = np.array([0, 1, 0, 2])
SHARED_DATASETS = ((_SHARED_X, _SHARED_Y),
                   (np.vstack([_SHARED_X, [[1.0]]]), np.r_[_SHARED_Y, 2]))
#: Budget shares of the two fits (of the claim): 0.5 and 0.25 of a claim of 0.75.
SHARES = (2.0 / 3.0, 1.0 / 3.0)


def _shared_counts(cls: type, X, y, epsilon: float) -> tuple[np.ndarray, float]:
    """The probed leaf's released counts of both fits, and what the budget charged."""
    budget = BudgetAccountant(epsilon=epsilon)
    counts = []
    for share in SHARES:
        est = cls(epsilon=share * epsilon, n_trees=1, max_depth=1, feature_domain=FOREST_DOMAIN,
                  classes=SHARED_CLASSES, random_state=STRUCTURE_SEED, accountant=budget)
        counts.append(est.fit(X, y).tree_counts(SHARED_PROBE)[0, 0])
    return np.asarray(counts), budget.total_spent[0]


def _shared_release(cls: type) -> Release:
    """Both fits' counts of the probed leaf, read through the count they both estimate:
    ``(s2 r1 - s1 r2) / (s2 - s1)`` (s = the fits' noise scales) -- exact when the two share
    their noise, a noisy mix of both when they do not; rounded, clipped to [-3, 6]."""
    s1, s2 = 1.0 / SHARES[0], 1.0 / SHARES[1]

    def release(data: tuple[np.ndarray, np.ndarray], *, epsilon: float, delta: float,
                rng: np.random.Generator, size: int) -> np.ndarray:
        del delta, rng  # the default noise source of both fits is what is audited
        rows = []
        for _ in range(int(size)):
            (r1, r2), charged = _shared_counts(cls, *data, epsilon)
            if not np.isclose(charged, epsilon):
                raise AssertionError(f"the budget charged {charged}, the target claims {epsilon}")
            joint = (s2 * r1 - s1 * r2) / (s2 - s1)
            rows.append(np.clip(np.round(joint), -3, 6).astype(np.int64) + 3)
        return np.asarray(rows, dtype=np.int64)

    return release


def _shared_targets(broken: bool) -> list[AuditTarget]:
    return [_target(
        "jpw_two_fits_noise_from_random_state" if broken else "jpw_two_fits_shared_random_state",
        "jpw", _shared_release(FloatLaplaceJPW if broken else JPWForestClassifier),
        SHARED_DATASETS, [(0, 1)],
        "two JPW fits with one random_state on one BudgetAccountant (2/3 and 1/3 of the claim = "
        "what it charges), default noise; a leaf with 1 vs 2 records; release: both fits' "
        "counts through the count they estimate" + (
            " -- BROKEN: both fits' noise from random_state (old default), float Laplace"
            if broken else ""),
        paths=("shared random_state",), expected_to_pass=not broken, epsilon=0.75)]


# ------------------------------------------------------------------------------ float bits

FLOAT_CLASSES = np.arange(3)
FLOAT_CANARY_CLASS = 2
FLOAT_PROBE = np.array([[1.0]])
_FLOAT_X = np.array([[0.0]] * 4)
_FLOAT_Y = np.array([0, 1, 0, 1])
#: The probed leaf (x = 1) is empty, then holds the canary (class 2).
FLOAT_DATASETS = ((_FLOAT_X, _FLOAT_Y), (np.vstack([_FLOAT_X, [[1.0]]]), np.r_[_FLOAT_Y, FLOAT_CANARY_CLASS]))


def _float_release(cls: type, noise: Callable[[np.random.Generator], Any]) -> Release:
    """The grid level (:func:`grid_levels`) of the probed leaf's released count of the
    canary's class (a function of the release: the attacker reads the count it targets)."""

    def release(data: tuple[np.ndarray, np.ndarray], *, epsilon: float, delta: float,
                rng: np.random.Generator, size: int) -> np.ndarray:
        del delta
        rows = []
        for child in rng.spawn(int(size)):
            est = cls(epsilon=epsilon, n_trees=1, max_depth=1, feature_domain=FOREST_DOMAIN,
                      classes=FLOAT_CLASSES, random_state=STRUCTURE_SEED, noise_rng=noise(child))
            counts = est.fit(*data).tree_counts(FLOAT_PROBE)[0, 0]
            rows.append(grid_levels(counts[FLOAT_CANARY_CLASS:FLOAT_CANARY_CLASS + 1]))
        return np.asarray(rows, dtype=np.int64)

    return release


def _float_targets(broken: bool) -> list[AuditTarget]:
    out = []
    for suffix, noise, what in (("", lambda g: g, "numpy Generator"),
                                ("_secure", lambda g: secure_generator(), "secure_generator()")):
        name = (f"jpw_float_laplace_counts{suffix}" if broken
                else f"jpw_leaf_counts_float_bits{suffix}")
        out.append(_target(
            name, "jpw", _float_release(FloatLaplaceJPW if broken else JPWForestClassifier, noise),
            FLOAT_DATASETS, [(0, 1)],
            f"JPW leaf counts with noise_rng = {what}: an empty leaf vs the canary's leaf; release: "
            "how far below the 2^-52 grid the lowest bit of the released count of the canary's "
            "class lies (exact bits)" + (
                " -- BROKEN: numpy float Laplace counts, the old empty-leaf uniform" if broken else ""),
            # 1,000 draws: the secure twin's leak (about 0.23 vs 0) then bounds near 2.4,
            # well clear of the claim whatever the fresh entropy gives
            paths=("float bits",), expected_to_pass=not broken, quick=1000))
    return out


# -------------------------------------------------------------------------- observed domain

#: The feature domain is observed (no declaration): the loader reads min/max from the data.
OBSERVED_RUNNER = RunnerCase("fletcher_forest", tiny_info(
    "audit_observed_domain", rows=None, features=1, classes=tuple(CLASSES.tolist()), domain=None),
    {"n_trees": 1, "max_depth": 1}, STRUCTURE_SEED)
_OBS_X = np.array([[0.0], [0.2], [0.8], [1.0]])
_OBS_Y = np.array([0, 1, 0, 1])
#: One extra record at x = 10 stretches the observed domain from [0, 1] to [0, 10].
OBSERVED_DATASETS = ((_OBS_X, _OBS_Y), (np.vstack([_OBS_X, [[10.0]]]), np.r_[_OBS_Y, 1]))


def _observed_release(honour_inputs: bool) -> Release:
    def release(data: tuple[np.ndarray, np.ndarray], *, epsilon: float, delta: float,
                rng: np.random.Generator, size: int) -> np.ndarray:
        del delta
        rows = []
        for seed in rng.integers(0, 2**63, size=int(size)):
            fit = _quiet(lambda seed=seed: runner_fit(OBSERVED_RUNNER, *data, epsilon=epsilon,
                                                       noise_seed=int(seed), honour_inputs=honour_inputs))
            if not fit.private:
                rows.append([NOT_DP, 0])
                continue
            schema = fit.estimator.schema_
            rows.append([1, exact_code(schema.lows, schema.highs)])
        return np.asarray(rows, dtype=np.int64)

    return release


def _observed_targets(broken: bool) -> list[AuditTarget]:
    return [_target(
        "fletcher_forest_observed_domain_is_dp" if broken else "fletcher_forest_observed_domain",
        "fletcher_forest", _observed_release(not broken), OBSERVED_DATASETS, [(0, 1)],
        "Fletcher forest through the runner on a dataset without a declared domain (observed "
        "min/max passed as public input), one extra record at x = 10; release: the row's verdict "
        "and, when it says DP, the published schema (domain bounds)" + (
            " -- BROKEN: the verdict from the accountant alone (is_dp stays True)" if broken else ""),
        paths=("observed domain",), expected_to_pass=not broken)]


def _all(broken: bool) -> list[AuditTarget]:
    return [*_defaults_targets(broken), *_runner_targets(broken), *_position_targets(broken),
            *_shared_targets(broken), *_float_targets(broken), *_observed_targets(broken)]


PATH_TARGETS: list[AuditTarget] = _all(broken=False)
BROKEN_PATH_TARGETS: list[AuditTarget] = _all(broken=True)
