"""The comparators of Fletcher & Islam (2017) Section 5.2, each its own estimator.

* :class:`JPWForestClassifier` (``jpw``): Jagannathan, Pillaipakkamnatt & Wright (2012),
  random decision trees (the same data-independent trees as ours, with their continuous
  extension of a uniformly random split point), depth ``min(m/2, log_b n - 1)`` with ``b``
  the mean domain size of the features (Section 5.2), 10 trees on all records (Definition
  2), Laplace noise (sensitivity 1) on every leaf's class counts, including empty leaves
  (Section 4.2.1). ``n`` in the depth is the record count, which is private: it is the
  declared ``n_records`` when given (public, free), otherwise a Laplace count (sensitivity
  1) charged ``depth_epsilon_share`` (5%) of epsilon; the trees share the rest,
  ``(1 - share) epsilon / 10`` each. (JPW and the paper used the exact n, which is not DP:
  ``depth_`` changes between n = 63 and 64 for 14 binary features.) With an explicit
  ``max_depth`` no count is needed and the trees get all of epsilon. The forest sums the
  trees' noisy counts and predicts their arg-max; ``predict_proba`` normalises the summed
  counts clipped at 0.
* :class:`FSTreeClassifier` (``fs_c45``): Friedman & Schuster (2010) DiffP-C4.5, one greedy
  tree of depth 5. Budget ``epsilon' = epsilon / (2 (d + 1))`` per level (each level
  partitions the records): a noisy node count (Laplace, epsilon'); the node becomes a leaf
  when no attribute is left, at depth d, or when ``N / (t |C|) < sqrt(2) / epsilon'`` (t =
  largest attribute domain); otherwise the split is chosen with the exponential mechanism
  (epsilon') using the Max operator score (sum over children of the largest class count,
  sensitivity 1). Continuous attributes (their extension): half of epsilon' picks the
  attribute among all, the other half is shared by the continuous attributes, each
  picking its split point with the exponential mechanism over the intervals between
  consecutive data values, weighted by interval length. Leaves release Laplace-noised
  class counts (epsilon') and predict their arg-max. This follows the published outline;
  the exact budget split for continuous attributes is our reading and is documented as
  such (the FS paper is not in ``../shared/papers``).
* :class:`DiffprivlibForestClassifier` (``diffprivlib_rf``): IBM diffprivlib's
  ``RandomForestClassifier`` (an independent implementation of this forest), when the
  optional ``diffprivlib`` package imports here (it needs scikit-learn < 1.6) or, as a rule,
  in the side environment of ``dpexp peers setup diffprivlib`` (:mod:`.diffprivlib_side`).

RGV (Rana, Gupta & Venkatesh 2016) is not implemented: its description (a weaker privacy
definition, tree counts from formulas of their paper) is not available to us in enough
detail; Fig. 14's spec shows the paper's printed values for it, labelled as such.
"""

from __future__ import annotations

import inspect
import math
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.errors import DpexpError, check_epsilon
from dpexp.papers.fletcher.diffprivlib_side import fit_in_side_env
from dpexp.papers.fletcher.forest import encode_labels, leaf_counts, mark_metadata, resolve_metadata
from dpexp.papers.fletcher.trees import (
    TreeSchema,
    draw_empty_leaf_secret,
    empty_leaf_laplace,
    jpw_depth,
    leaf_index,
    route_forest,
    theorem2_depth,
)
from dpexp.privacy import Accountant
from dpexp.privacy.budget import charges_budget
from dpexp.privacy.randomness import estimator_streams
from dpexp.side_envs import how_to_get, side_python
from dpexp.trees.tree import ArrayTree, TreeBuilder

# ------------------------------------------------------------------------------ JPW


class JPWForestClassifier(ClassifierMixin, BaseEstimator):
    """JPW differentially private random decision forest (Jagannathan et al. 2012).

    Parameters
    ----------
    epsilon : total budget: ``depth_epsilon_share`` of it for the noisy record count (only
        when the depth needs n), the rest split evenly over the trees (all records in each).
    n_trees : 10 (JPW's recommendation, Section 5.2).
    max_depth : None (``min(m/2, log_b n - 1)``) or an int (public, no count needed).
    n_records : a declared, public record count for the depth (no budget); None = noisy count.
    depth_epsilon_share : share of epsilon for the noisy count (Laplace, sensitivity 1).
    feature_domain, categorical_features, n_categories, classes : public metadata.
    random_state : seeds the public structure (``seeds_``); noise_rng : the noise (counts,
        Laplace leaf counts, the empty-leaf secret), see :func:`estimator_streams`.

    Released (DP): ``depth_``, ``seeds_``, ``classes_`` and the noisy class counts of every
    leaf of every tree (empty leaves: pure Laplace noise keyed by a noise-stream secret),
    observed through ``predict``/``predict_proba`` (the summed counts). ``leaf_keys_`` /
    ``leaf_counts_`` (non-empty leaves only) and the secret are an implementation cache.
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        n_trees: int = 10,
        max_depth=None,
        n_records=None,
        depth_epsilon_share: float = 0.05,
        feature_domain=None,
        categorical_features=None,
        n_categories=None,
        classes=None,
        random_state=None,
        noise_rng=None,
        accountant=None,
    ):
        self.epsilon = epsilon
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.n_records = n_records
        self.depth_epsilon_share = depth_epsilon_share
        self.feature_domain = feature_domain
        self.categorical_features = categorical_features
        self.n_categories = n_categories
        self.classes = classes
        self.random_state = random_state
        self.noise_rng = noise_rng
        self.accountant = accountant

    def _depth(self, n: int, m: int, b: float, epsilon: float, rng) -> tuple[int, float]:
        """``(depth, epsilon spent on it)``: public when max_depth/n_records are given."""
        if self.max_depth is not None:
            if not isinstance(self.max_depth, int | np.integer) or self.max_depth < 1:
                raise ValueError(f"max_depth must be None or an int >= 1, got {self.max_depth!r}")
            return int(self.max_depth), 0.0
        if self.n_records is not None:
            if not isinstance(self.n_records, int | np.integer) or self.n_records < 1:
                raise ValueError(f"n_records must be None or an int >= 1, got {self.n_records!r}")
            return jpw_depth(m, int(self.n_records), b), 0.0
        share = float(self.depth_epsilon_share)
        if not 0.0 < share < 1.0:
            raise ValueError(f"depth_epsilon_share must be in (0, 1), got {self.depth_epsilon_share!r}")
        eps_n = share * epsilon
        n_noisy = int(self.accountant_.discrete_laplace(
            n, epsilon=eps_n, rng=rng, what="noisy record count (JPW depth)"))
        # log_b of a count below 1 is meaningless; jpw_depth clamps it (post-processing).
        return jpw_depth(m, max(1, int(round(n_noisy))), b), eps_n

    @charges_budget
    def fit(self, X, y):
        epsilon = check_epsilon(self.epsilon)
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite="allow-nan")
        T = int(self.n_trees)
        if T < 1:
            raise ValueError(f"n_trees must be >= 1, got {self.n_trees!r}")
        self.accountant_ = Accountant(epsilon=epsilon)
        y_enc = encode_labels(self, y, self.accountant_)
        C = self.classes_.size
        meta = resolve_metadata(X, self.feature_domain, self.categorical_features, self.n_categories)
        mark_metadata(meta, self.accountant_)
        m = X.shape[1]
        b = float(np.mean(np.where(meta.categorical, meta.n_categories, 2)))
        streams = estimator_streams(self.random_state, self.noise_rng)
        count_rng, secret_rng, *rngs = streams.noise_generators(T + 2)
        self.depth_, eps_depth = self._depth(X.shape[0], m, b, epsilon, count_rng)
        self.schema_ = TreeSchema(meta.lows, meta.highs, meta.categorical, meta.n_categories, self.depth_)
        self.seeds_ = np.random.default_rng(streams.structure).integers(0, 2**63, size=T).astype(np.uint64)
        self.eps_tree_ = (epsilon - eps_depth) / T
        self._empty_leaf_secret = draw_empty_leaf_secret(secret_rng)
        # Every record through every tree in one compiled call (10 trees by default).
        grid = route_forest(self.schema_, self.seeds_, X)
        keys_all, counts_all = [], []
        with self.accountant_.sequential("trees (all records in each)"):
            for t in range(T):
                uk, counts = leaf_counts(grid[t], y_enc, C)
                # The leaves partition the records: one parallel release per tree, exact
                # integers (the same sampler as an empty leaf's counts at predict time).
                noisy = self.accountant_.discrete_laplace(
                    np.asarray(counts, dtype=np.int64), epsilon=self.eps_tree_, rng=rngs[t],
                    what=f"tree {t} noisy leaf counts").astype(np.float64)
                keys_all.append(uk)
                counts_all.append(np.asarray(noisy).reshape(-1, C))
        # Leaf table grouped by tree, each segment sorted by key (for leaf_index).
        sizes = np.array([k.size for k in keys_all], dtype=np.int64)
        self.leaf_offsets_ = np.concatenate([[0], np.cumsum(sizes)])
        self.leaf_keys_ = np.concatenate(keys_all)
        self.leaf_counts_ = np.concatenate(counts_all)
        self.leaf_trees_ = np.repeat(np.arange(T, dtype=np.int32), sizes)
        self.n_features_in_ = m
        return self

    def _summed_counts(self, X) -> np.ndarray:
        check_is_fitted(self, "leaf_keys_")
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite="allow-nan")
        return self.tree_counts(X).sum(axis=0)

    def tree_counts(self, X) -> np.ndarray:
        """Noisy class counts of the leaf each row of ``X`` (validated) reaches in each
        tree: ``(n_trees, n, C)``; :meth:`predict_proba` sums them over the trees."""
        n, C, T = X.shape[0], self.classes_.size, self.seeds_.size
        keys = route_forest(self.schema_, self.seeds_, X)
        idx = leaf_index(keys, self.leaf_offsets_, self.leaf_keys_).ravel()
        vals = np.empty((idx.size, C))
        hit = idx >= 0
        vals[hit] = self.leaf_counts_[idx[hit]]
        # Empty leaves: pure Laplace noise on zero counts (Section 4.2.1), keyed by the fit's
        # noise-stream secret -- never a function of the published seeds alone.
        miss = np.flatnonzero(~hit)
        vals[miss] = empty_leaf_laplace(self._empty_leaf_secret, miss // n, keys.ravel()[miss], C,
                                        self.eps_tree_)
        return vals.reshape(T, n, C)

    def predict_proba(self, X) -> np.ndarray:
        s = np.maximum(self._summed_counts(X), 0.0)
        tot = s.sum(axis=1, keepdims=True)
        C = self.classes_.size
        return np.where(tot > 0, s / np.where(tot > 0, tot, 1.0), 1.0 / C)

    def predict(self, X) -> np.ndarray:
        counts = self._summed_counts(X)
        return self.classes_[np.argmax(counts, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags


# ------------------------------------------------------------------------------- FS


def _max_score_categorical(codes: np.ndarray, y: np.ndarray, k: int, C: int) -> float:
    """Max operator: sum over the attribute's values of the largest class count."""
    cnt = np.bincount(codes * C + y, minlength=k * C).reshape(k, C)
    return float(cnt.max(axis=1).sum())


def _split_point(x, y, lo, hi, C, epsilon, rng, accountant: Accountant,
                 what: str) -> tuple[float, float]:
    """FS continuous extension: exponential mechanism over the intervals between sorted
    values (Max operator score, sensitivity 1), weighted by interval length; the point is
    uniform within the chosen interval, charged ``epsilon`` to ``accountant``. Returns
    (split point, its Max score)."""
    order = np.argsort(x, kind="stable")
    xs = np.clip(x[order], lo, hi)
    ys = y[order]
    onehot = np.zeros((xs.size, C))
    onehot[np.arange(xs.size), ys] = 1.0
    left = np.vstack([np.zeros((1, C)), np.cumsum(onehot, axis=0)])  # records <= interval
    right = left[-1] - left
    score = left.max(axis=1) + right.max(axis=1)
    edges = np.concatenate([[lo], xs, [hi]])
    length = np.diff(edges)
    ok = length > 0
    if not ok.any():
        return float(lo + (hi - lo) * rng.random()), float(score[0])
    util = score[ok] + (2.0 / epsilon) * np.log(length[ok])  # weight len * exp(eps q / 2)
    i = int(accountant.exponential(util, epsilon=epsilon, sensitivity=1.0, rng=rng, what=what))
    a = edges[:-1][ok][i]
    b = edges[1:][ok][i]
    return float(a + (b - a) * rng.random()), float(score[ok][i])


class FSTreeClassifier(ClassifierMixin, BaseEstimator):
    """Friedman & Schuster (2010) DiffP-C4.5: one greedy DP tree of depth 5.

    Every random choice of FS depends on the data (noisy counts, exponential-mechanism
    splits, the point inside the chosen interval), so all of it is noise: it comes from
    ``noise_rng`` (None: fresh OS entropy; a SeedSequence for reproducible experiments,
    :func:`dpexp.privacy.seeded_noise`). ``classes`` is the public label
    set (leaf counts and ``predict_proba`` have a column for each declared class).
    Released (DP): the whole tree ``tree_`` (splits and leaf class distributions).
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        max_depth: int = 5,
        feature_domain=None,
        categorical_features=None,
        n_categories=None,
        classes=None,
        random_state=None,
        noise_rng=None,
        accountant=None,
    ):
        self.epsilon = epsilon
        self.max_depth = max_depth
        self.feature_domain = feature_domain
        self.categorical_features = categorical_features
        self.n_categories = n_categories
        self.classes = classes
        self.random_state = random_state
        self.noise_rng = noise_rng
        self.accountant = accountant

    @charges_budget
    def fit(self, X, y):
        epsilon = check_epsilon(self.epsilon)
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite="allow-nan")
        self.accountant_ = Accountant(epsilon=epsilon)
        y_enc = encode_labels(self, y, self.accountant_)
        C = self.classes_.size
        meta = resolve_metadata(X, self.feature_domain, self.categorical_features, self.n_categories)
        mark_metadata(meta, self.accountant_)
        d = int(self.max_depth)
        eps1 = epsilon / (2.0 * (d + 1))
        rng = estimator_streams(self.random_state, self.noise_rng).noise_generator()
        builder = TreeBuilder(n_outputs=C)
        root = builder.add_node(0)
        codes = np.where(meta.categorical, np.nan_to_num(X, nan=-1.0), 0).astype(np.int64)
        codes = np.where((codes < 0) | (codes >= np.maximum(meta.n_categories, 1)),
                         np.maximum(meta.n_categories, 1) - 1, codes)
        frontier = [(root, np.arange(X.shape[0]), meta.lows.copy(), meta.highs.copy(),
                     np.zeros(X.shape[1], dtype=bool))]
        for level in range(d + 1):
            nxt = []
            with self.accountant_.sequential(f"level {level}"), self.accountant_.parallel("nodes"):
                for node, rows, lo, hi, used in frontier:
                    with self.accountant_.sequential(f"node {node}"):
                        nxt += self._grow(builder, node, rows, lo, hi, used, level, d, eps1,
                                          X, codes, y_enc, meta, C, rng)
            frontier = nxt
        self.tree_: ArrayTree = builder.build()
        self.n_features_in_ = X.shape[1]
        return self

    def _leaf(self, builder, node, rows, y, C, eps1, rng):
        counts = np.bincount(y[rows], minlength=C)
        noisy = np.asarray(self.accountant_.discrete_laplace(
            counts, epsilon=eps1, rng=rng, what=f"node {node} noisy class counts"), dtype=np.float64)
        clipped = np.maximum(noisy, 0.0)
        if clipped.sum() <= 0:
            clipped = np.zeros(C)
            clipped[int(np.argmax(noisy))] = 1.0
        builder.set_value(node, clipped / clipped.sum())
        return []

    def _grow(self, builder, node, rows, lo, hi, used, level, d, eps1, X, codes, y, meta, C, rng):
        cat = meta.categorical
        avail = np.flatnonzero(~(cat & used))
        n_noisy = float(self.accountant_.discrete_laplace(
            int(rows.size), epsilon=eps1, rng=rng, what=f"node {node} noisy count"))
        t = max([int(meta.n_categories[f]) if cat[f] else 2 for f in avail], default=2)
        if avail.size == 0 or level >= d or n_noisy / (t * C) < math.sqrt(2.0) / eps1:
            return self._leaf(builder, node, rows, y, C, eps1, rng)
        num = avail[~cat[avail]]
        eps_attr = eps1 / 2.0 if num.size else eps1
        eps_point = eps1 / 2.0 / max(num.size, 1)
        scores, points = [], {}
        for f in avail:  # the numeric attributes' points share eps1 / 2 (sequential)
            if cat[f]:
                k = int(meta.n_categories[f])
                scores.append(_max_score_categorical(codes[rows, f], y[rows], k, C))
            else:
                p, s = _split_point(X[rows, f], y[rows], lo[f], hi[f], C, eps_point, rng,
                                    self.accountant_, f"node {node} split point of attribute {f}")
                points[int(f)] = p
                scores.append(s)
        f = int(avail[int(self.accountant_.exponential(
            np.asarray(scores), epsilon=eps_attr, sensitivity=1.0, rng=rng,
            what=f"node {node} split attribute"))])
        out = []
        if cat[f]:
            k = int(meta.n_categories[f])
            kids = builder.split_categorical(node, f, k)
            u2 = used.copy()
            u2[f] = True
            for c, kid in enumerate(kids):
                out.append((kid, rows[codes[rows, f] == c], lo, hi, u2))
        else:
            p = points[f]
            left, right = builder.split_numeric(node, f, p)
            go_left = ~(X[rows, f] > p)
            hl, lr = hi.copy(), lo.copy()
            hl[f], lr[f] = p, p
            out.append((left, rows[go_left], lo, hl, used))
            out.append((right, rows[~go_left], lr, hi, used))
        return out

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "tree_")
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite="allow-nan")
        return self.tree_.predict_value(X)

    def predict(self, X) -> np.ndarray:
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags


# ------------------------------------------------------------------------ diffprivlib


class DiffprivlibForestClassifier(ClassifierMixin, BaseEstimator):
    """IBM diffprivlib's ``RandomForestClassifier`` on the same folds (optional peer).

    ``max_depth=None`` uses Theorem 2's depth (:func:`theorem2_depth`, all features as
    diffprivlib treats them: continuous with public ``bounds`` = ``feature_domain``).
    ``shuffle=True`` is always passed: without it diffprivlib splits the records over the
    trees by position blocks, which is not record-stable (adding a record moves others to
    other trees; audited epsilon lower bound 1.76 at a claim of 1). ``classes`` (public)
    is passed to diffprivlib. All of diffprivlib's randomness (trees, partition, noise) is
    seeded from the noise stream (``noise_rng``; None: fresh OS entropy),
    since none of it is published apart from the model.

    Where diffprivlib imports in this process it fits here (``model_``); otherwise (0.6.6
    next to scikit-learn >= 1.6) in the side environment of ``dpexp peers setup
    diffprivlib`` with the same arguments and seed, keeping its trees as arrays
    (``forest_``, a :class:`~dpexp.papers.fletcher.diffprivlib_side.SideForest`) that
    predict here without it. ``side_env_`` says which.
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        n_trees: int = 100,
        max_depth=None,
        feature_domain=None,
        classes=None,
        random_state=None,
        noise_rng=None,
        accountant=None,
    ):
        self.epsilon = epsilon
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.feature_domain = feature_domain
        self.classes = classes
        self.random_state = random_state
        self.noise_rng = noise_rng
        self.accountant = accountant

    @charges_budget
    def fit(self, X, y):
        forest_class, import_error = _in_process_forest()
        python = side_python("diffprivlib") if forest_class is None else None
        if forest_class is None and python is None:
            raise DpexpError(
                f"diffprivlib_rf needs diffprivlib, which does not import here ({import_error}); "
                f"{how_to_get('diffprivlib')}"
            )
        epsilon = check_epsilon(self.epsilon)
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.accountant_ = Accountant(epsilon=epsilon)
        y_codes = encode_labels(self, y, self.accountant_)
        meta = resolve_metadata(X, self.feature_domain, None, None)
        mark_metadata(meta, self.accountant_)
        depth = self.max_depth if self.max_depth is not None else theorem2_depth(X.shape[1], 0)
        seed = int(estimator_streams(self.random_state, self.noise_rng).noise_generator().integers(2**31 - 1))
        self.side_env_ = forest_class is None
        if self.side_env_:
            draw = partial(fit_in_side_env, python, X, y_codes, n_classes=self.classes_.size,
                           lows=meta.lows, highs=meta.highs, epsilon=epsilon,
                           n_estimators=int(self.n_trees), max_depth=int(depth), seed=seed)
            self.forest_, _ = self.accountant_.release(
                draw, epsilon=epsilon,
                what="diffprivlib RandomForestClassifier, side environment (its own accounting)")
            return self
        forest = forest_class(
            n_estimators=int(self.n_trees), epsilon=epsilon, bounds=(meta.lows, meta.highs),
            classes=self.classes_, max_depth=int(depth), random_state=seed, shuffle=True,
        )
        self.model_ = self.accountant_.release(
            partial(forest.fit, X, y), epsilon=epsilon,
            what="diffprivlib RandomForestClassifier (its own accounting)")
        return self

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "side_env_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.forest_.predict_proba(X) if self.side_env_ else self.model_.predict_proba(X)

    def predict(self, X) -> np.ndarray:
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


def _in_process_forest() -> tuple[type | None, str]:
    """diffprivlib's ``RandomForestClassifier`` when it imports here and takes ``shuffle=``
    (else None), and why not. Not cached: a failed import is retried each fit (tens of
    microseconds when diffprivlib is absent), so installing it or a test's stand-in counts."""
    try:
        # lazy: optional peer, importable only next to a scikit-learn it supports (< 1.6)
        from diffprivlib.models import RandomForestClassifier
    except Exception as exc:  # noqa: BLE001 - diffprivlib 0.6 fails with ImportError or others
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if "shuffle" not in inspect.signature(RandomForestClassifier).parameters:
        raise DpexpError(
            "diffprivlib_rf needs a diffprivlib whose RandomForestClassifier takes shuffle= "
            "(without it the records are split over the trees by position blocks, which is "
            "not differentially private); upgrade diffprivlib"
        )
    return RandomForestClassifier, ""
