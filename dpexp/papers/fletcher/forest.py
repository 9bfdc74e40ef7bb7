"""Fletcher & Islam (2017, with the 2021 addendum): differentially private random decision forest.

Algorithm 1 (BuildForest) and Algorithm 2 (BuildTree, GetMajorityLabels):

* ``tau`` (``n_trees``, default 100, Section 4.4) random trees built without the data
  (:mod:`dpexp.papers.fletcher.trees`), depth from Theorem 2 plus r/2 (Section 4.3).
* Disjoint subsets of the training records, one per tree (Section 4.2, Definition 3),
  drawn with :func:`dpexp.privacy.record_partition`; every tree then uses the whole
  budget ``epsilon``. ``disjoint=False`` is the Fig. 5 alternative: all records in every
  tree, ``epsilon / tau`` per tree (Definition 2).
* The leaf label (line 25 of Algorithm 2) is chosen by ``leaf_rule``:

  - ``"rosnam"`` (default): Report One-Sided Noisy Arg-Max of the 2021 addendum
    (Section 2, Table 5): P(c) ∝ exp(epsilon * count_c), utility = count, sensitivity 1.
  - ``"smooth_2017"``: Theorem 1 of the 2017 paper, u = 1 for the majority label, smooth
    sensitivity S* = exp(-j epsilon) (Eq. 8). **Not proven differentially private** (2021
    addendum, Section 1: the true cost may be about twice epsilon); kept only to
    reproduce the 2017 figures.
  - ``"global_2017"``: the same 0/1 utility with global sensitivity 1 (the "global
    sensitivity" bars of Fig. 4).

  Empty leaves output a uniformly random label (Section 4.2.1), drawn from the noise
  stream (a keyed pseudorandom function of a 128-bit secret drawn from it, see
  :mod:`dpexp.papers.fletcher.trees`), never from the published tree seeds.
* Prediction: majority vote of the trees; ``predict_proba`` = vote shares (used for AUC),
  one column per declared class (``classes``), whether or not the training fold has it.

:class:`FletcherNonPrivateForestClassifier` is the non-private version of Section 2.4 /
Fig. 10: epsilon = infinity (exact majority label) and all records through every tree.

Privacy note -- what is released: the public structure (``seeds_``, ``depth_``,
``classes_``, ``schema_``: functions of public inputs only) and the *label function* of
the labelled full trees, i.e. predictions (``predict``/``predict_proba``/
``staged_predict``) on any inputs. Every leaf's label, empty or not, is epsilon-DP, and
the release is epsilon-DP by parallel composition over the disjoint leaves and trees. The fitted attributes ``leaf_keys_``/``leaf_labels_``
(labels of the non-empty leaves only: *which* leaves are non-empty can be read from them),
``tree_sizes_`` (exact subset sizes), the empty-leaf secret and ``diagnostics_`` (Table 3
empty-leaf fractions, Fig. 5b/8 statistics, non-private diagnostics in the paper too) are
an implementation cache, not DP artefacts: publish predictions, not the fitted object.
Public inputs: ``classes`` (the label set), ``feature_domain``, ``categorical_features``,
``n_categories`` and the structure ``random_state``; when the domain or classes are not
given they are read from the training data with a warning and the fit is marked not DP
(``accountant_.is_dp`` is False), as is every fit with ``leaf_rule="smooth_2017"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.errors import check_epsilon
from dpexp.papers.fletcher.trees import (
    MaterialisedCache,
    MaterialisedForest,
    TreeSchema,
    count_leaves,
    dense_leaf_labels,
    draw_empty_leaf_secret,
    forest_leaf_labels,
    materialised_grid,
    materialised_route,
    route,
    route_forest,
    theorem2_depth,
    vote_counts,
)
from dpexp.privacy import (
    Accountant,
    exponential_mechanism,
    record_ids,
    record_partition,
    report_noisy_max_one_sided,
    smooth_sensitivity_leaf_2017,
)
from dpexp.privacy.budget import charges_budget
from dpexp.privacy.public import (
    DataDependentDomainWarning,
    public_classes,
    warn_outside_package,
)
from dpexp.privacy.randomness import NOT_PRIVATE, estimator_streams

LEAF_RULES = ("rosnam", "smooth_2017", "global_2017")
DEPTH_RULES = ("theorem2", "half_m", "m")
_ROUTE_BLOCK = 4_000_000  # (samples x trees) leaf keys held at once: 32 MB, bounds memory


SMOOTH_2017_NOT_DP = (
    "leaf_rule='smooth_2017': the 2017 smooth-sensitivity leaf rule is not differentially "
    "private (2021 addendum, Section 1); kept only to reproduce the 2017 figures"
)


class PublicMetadataWarning(DataDependentDomainWarning):
    """Public metadata (domains, categories) was read from the private training data."""


@dataclass
class _Metadata:
    lows: np.ndarray
    highs: np.ndarray
    categorical: np.ndarray
    n_categories: np.ndarray
    #: Why the metadata is not public ("" when everything was declared).
    data_derived: str = ""


def resolve_metadata(X, feature_domain, categorical_features, n_categories) -> _Metadata:
    """Public feature domains and discrete-feature cardinalities (Section 1.1: public schema)."""
    m = X.shape[1]
    derived = []
    if feature_domain is None:
        derived.append("feature_domain read from the training data")
        warn_outside_package(
            "feature_domain not given: using the training data's min/max (not private).",
            PublicMetadataWarning,
        )
        lows, highs = (X.min(axis=0), X.max(axis=0)) if X.shape[0] else (np.zeros(m), np.ones(m))
    else:
        dom = np.asarray(feature_domain, dtype=np.float64).reshape(m, 2)
        lows, highs = dom[:, 0].copy(), dom[:, 1].copy()
    cat = (
        np.zeros(m, dtype=bool)
        if categorical_features is None
        else np.asarray(categorical_features, dtype=bool).reshape(m)
    )
    if n_categories is None:
        if cat.any():
            derived.append("n_categories read from the training data")
            warn_outside_package(
                "n_categories not given: using the training data's codes (not private).",
                PublicMetadataWarning,
            )
        k = np.where(cat, np.nan_to_num(X.max(axis=0), nan=0).astype(np.int64) + 1, 0)
    else:
        k = np.asarray(n_categories, dtype=np.int64).reshape(m)
    k = np.where(cat, np.maximum(k, 1), 0)
    return _Metadata(lows.astype(np.float64), highs.astype(np.float64), cat, k, "; ".join(derived))


def encode_labels(estimator, y, accountant: Accountant) -> np.ndarray:
    """Set ``estimator.classes_`` to the declared label set and return ``y``'s class indices.

    ``classes_`` (hence ``predict_proba``'s columns and every per-class count) is the
    public ``classes`` parameter, so removing a class's last record changes no shape; a
    fold without a class still gets its column. Without ``classes`` the set is read from
    ``y`` (warned by :func:`public_classes`) and the fit is marked not DP.
    """
    estimator.classes_ = public_classes(y, estimator.classes)
    if estimator.classes is None:
        accountant.mark_not_dp("classes read from the training labels")
    return np.searchsorted(estimator.classes_, np.asarray(y)).astype(np.int64)


def mark_metadata(meta: _Metadata, accountant: Accountant) -> None:
    """Mark the fit not DP when a domain shaping the release came from the data."""
    if meta.data_derived:
        accountant.mark_not_dp(meta.data_derived)


def forest_depth(meta: _Metadata, max_depth) -> int:
    """``max_depth``: an int, or "theorem2" (Section 4.3), "half_m" (m/2) or "m" (Fig. 6)."""
    m = meta.lows.shape[0]
    r = int(meta.categorical.sum())
    if max_depth is None or max_depth == "theorem2":
        return theorem2_depth(m - r, r)
    if max_depth == "half_m":
        return max(1, m // 2)
    if max_depth == "m":
        return m
    if isinstance(max_depth, int | np.integer) and max_depth >= 0:
        return int(max_depth)
    raise ValueError(f"max_depth must be an int >= 0 or one of {DEPTH_RULES}, got {max_depth!r}")


def leaf_counts(keys: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct leaf keys reached by records and their class counts ``(L, C)``."""
    uk, inv = np.unique(keys, return_inverse=True)
    counts = np.bincount(inv * n_classes + y, minlength=uk.size * n_classes)
    return uk, counts.reshape(uk.size, n_classes).astype(np.float64)


def choose_labels(counts: np.ndarray, *, rule: str, epsilon: float, rng) -> np.ndarray:
    """GetMajorityLabels line 25: one label per non-empty leaf (rows of ``counts``)."""
    if counts.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    if epsilon == np.inf:
        # Non-private: the exact majority label, ties broken uniformly at random.
        return np.argmax(counts + 0.5 * rng.random(counts.shape), axis=1)
    if rule == "rosnam":
        out = report_noisy_max_one_sided(counts, epsilon=epsilon, rng=rng)
    elif rule == "smooth_2017":
        out = smooth_sensitivity_leaf_2017(counts, epsilon=epsilon, rng=rng)
    elif rule == "global_2017":
        u = (counts == counts.max(axis=1, keepdims=True)).astype(np.float64)
        out = exponential_mechanism(u, epsilon=epsilon, sensitivity=1.0, rng=rng)
    else:
        raise ValueError(f"leaf_rule must be one of {LEAF_RULES}, got {rule!r}")
    return np.atleast_1d(np.asarray(out, dtype=np.int64))


class _RandomForestBase(ClassifierMixin, BaseEstimator):
    """Shared fit/predict of the keyed random forests (ours, non-private)."""

    def _private(self) -> bool:
        return True

    def _fit_forest(self, X, y, *, epsilon: float, n_trees: int, disjoint: bool, rule: str):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite="allow-nan")
        n_trees = int(n_trees)
        if n_trees < 1:
            raise ValueError(f"n_trees must be >= 1, got {n_trees!r}")
        self.accountant_ = Accountant(epsilon=epsilon if np.isfinite(epsilon) else 1e300)
        y_enc = encode_labels(self, y, self.accountant_)
        C = self.classes_.size
        meta = resolve_metadata(X, self.feature_domain, self.categorical_features, self.n_categories)
        mark_metadata(meta, self.accountant_)
        if rule == "smooth_2017":
            self.accountant_.mark_not_dp(SMOOTH_2017_NOT_DP)
        self.depth_ = forest_depth(meta, self.max_depth)
        self.schema_ = TreeSchema(meta.lows, meta.highs, meta.categorical, meta.n_categories, self.depth_)
        # Structure (published: seeds, partition) and noise (leaf labels, the empty-leaf
        # secret) come from independent streams: nothing released reveals the noise.
        streams = estimator_streams(self.random_state, getattr(self, "noise_rng", NOT_PRIVATE))
        ss_struct, ss_part, ss_diag = streams.structure.spawn(3)
        *leaf_rngs, secret_rng = streams.noise_generators(n_trees + 1)
        self.seeds_ = self._tree_seeds(ss_struct, n_trees)
        self._empty_leaf_secret = draw_empty_leaf_secret(secret_rng)
        # The full trees as arrays, built when a routing call is big enough to pay for it
        # (a function of the public seeds and schema only): lookups instead of hashes.
        self.materialised_ = MaterialisedCache()
        n = X.shape[0]
        if disjoint:
            # keyed by each record's content, not its row: inserting a record anywhere
            # moves no other record to another tree (parallel composition)
            part = record_partition(record_ids(X, y), [1.0 / n_trees] * n_trees,
                                    np.random.default_rng(ss_part))
            eps_tree = epsilon
        else:
            part = None
            eps_tree = epsilon / n_trees
        self.tree_sizes_ = (
            np.bincount(part[part >= 0], minlength=n_trees) if disjoint else np.full(n_trees, n)
        ).astype(np.int64)
        keys_all, labels_all = [], []
        n_nonempty = np.zeros(n_trees)
        changed, changed_argmax, sens, n_leaf_total = 0.0, 0.0, [], 0
        scope = self.accountant_.parallel if disjoint else self.accountant_.sequential
        with scope("trees"):
            for t, leaf_keys, y_t in self._route_training(X, y_enc, part, n_trees):
                uk, counts = leaf_counts(leaf_keys, y_t, C)
                with self.accountant_.sequential(f"tree {t}"):
                    draw = partial(choose_labels, counts, rule=rule, epsilon=eps_tree,
                                   rng=leaf_rngs[t])
                    # The leaves of a tree partition its records: one parallel release
                    # (an infinite budget is the non-private argmax: nothing to charge).
                    labels = (self.accountant_.release(
                        draw, epsilon=eps_tree, what=f"tree {t} leaf labels ({rule})",
                        mechanism=rule) if np.isfinite(eps_tree) else draw())
                keys_all.append(uk)
                labels_all.append(labels)
                n_nonempty[t] = uk.size
                if uk.size:
                    top = counts.max(axis=1)
                    changed += float(np.sum(counts[np.arange(uk.size), labels] < top))
                    changed_argmax += float(np.sum(labels != np.argmax(counts, axis=1)))
                    second = np.sort(counts, axis=1)[:, -2] if C > 1 else np.zeros(uk.size)
                    if np.isfinite(eps_tree):
                        sens.append(np.exp(-(top - second) * eps_tree))
                    n_leaf_total += uk.size
        # Leaf table grouped by tree (each segment sorted by key) for leaf_index lookups.
        self.leaf_offsets_ = np.concatenate([[0], np.cumsum(n_nonempty)]).astype(np.int64)
        self.leaf_keys_ = np.concatenate(keys_all)
        self.leaf_labels_ = np.concatenate(labels_all)
        self.leaf_trees_ = np.repeat(np.arange(n_trees, dtype=np.int32), n_nonempty.astype(np.int64))
        self.n_trees_ = n_trees
        self.n_features_in_ = X.shape[1]
        self._diag = {
            "n_nonempty": n_nonempty, "seed": ss_diag,
            "changed_majority_fraction": changed / n_leaf_total if n_leaf_total else 0.0,
            "changed_argmax_fraction": changed_argmax / n_leaf_total if n_leaf_total else 0.0,
            "mean_smooth_sensitivity": float(np.mean(np.concatenate(sens))) if sens else float("nan"),
        }
        return self

    def training_partition(self, X, y) -> np.ndarray | None:
        """The fit's record-to-tree partition of the training records ``(X, y)`` (tree
        index per row, -1 unused), redrawn: structure randomness and the records' content
        only (the second child of the structure stream, keyed as ``fit`` keys it, by
        :func:`~dpexp.privacy.record_ids` of the raw labels). None when every tree used
        every record. Non-private diagnostics (ablations) read it; it is checked against
        the fitted tree sizes."""
        check_is_fitted(self, "tree_sizes_")
        if not self.disjoint:
            return None
        if self.random_state is None:
            raise ValueError("the partition can be redrawn only for an int random_state")
        ss_part = estimator_streams(self.random_state).structure.spawn(3)[1]
        part = record_partition(record_ids(np.asarray(X, dtype=np.float64), y),
                                [1.0 / self.n_trees_] * self.n_trees_, np.random.default_rng(ss_part))
        if not np.array_equal(np.bincount(part[part >= 0], minlength=self.n_trees_), self.tree_sizes_):
            raise ValueError("the redrawn partition does not match the fit (other training rows?)")
        return part

    @staticmethod
    def _tree_seeds(ss_struct: np.random.SeedSequence, n_trees: int) -> np.ndarray:
        """BuildTree: one 64-bit root key per tree; the structure is a function of it."""
        return np.random.default_rng(ss_struct).integers(
            0, 2**63, size=n_trees, dtype=np.int64, endpoint=False
        ).astype(np.uint64)

    @property
    def diagnostics_(self) -> dict[str, float]:
        """Non-private diagnostics (computed on first access, not part of fit):

        ``empty_leaf_fraction`` (Table 3; mean over trees of 1 - non-empty leaves / all
        leaves of the full tree), ``changed_majority_fraction`` (Fig. 8; share of
        non-empty leaves whose released label is not a most frequent label),
        ``changed_argmax_fraction`` (Fig. 8 as the paper's values read it: share of non-empty
        leaves whose released label is not the arg-max of the counts, ties going to the
        first class, so a tied leaf counts as changed unless it releases that class),
        ``mean_smooth_sensitivity`` (Fig. 5b; mean exp(-j eps_tree) over non-empty
        leaves), ``tree_depth``.
        """
        if not hasattr(self, "_diag"):
            raise AttributeError("diagnostics_ is available after fit")
        d = self._diag
        if "empty_leaf_fraction" not in d:
            rng = np.random.default_rng(d["seed"])
            total = np.array([count_leaves(self.schema_, s, rng) for s in self.seeds_])
            d["empty_leaf_fraction"] = float(np.mean(1.0 - d["n_nonempty"] / total))
        keys = ("empty_leaf_fraction", "changed_majority_fraction", "changed_argmax_fraction",
                "mean_smooth_sensitivity")
        return {**{k: float(d[k]) for k in keys}, "tree_depth": float(self.depth_)}

    def _route_training(self, X: np.ndarray, y: np.ndarray, part: np.ndarray | None, n_trees: int):
        """Yield ``(t, leaf keys, labels)`` of the records of tree ``t``, for t = 0, 1, ...

        Disjoint subsets: the records are grouped by tree and all routed in one compiled
        call, each through its own tree. All records in every tree: blocks of trees, each
        routing every record (``_ROUTE_BLOCK`` bounds the key matrix).
        """
        cache = getattr(self, "materialised_", None)
        walks = X.shape[0] * (1 if part is not None else n_trees)
        arrays = None if cache is None else cache.get(self.schema_, self.seeds_, walks)
        if part is not None:
            # Stable: the same order whatever the key's dtype; numpy radix-sorts 16-bit keys.
            small = part.astype(np.int16) if n_trees < 2**15 else part
            order = np.argsort(small, kind="stable")
            order = order[part[order] >= 0]  # records the partition left unused (if any)
            bounds = np.concatenate([[0], np.cumsum(self.tree_sizes_)])
            if arrays is not None:  # route in place, then group (no copy of X)
                keys = materialised_route(self.schema_, arrays, part, X)[order]
            else:
                keys = route(self.schema_, self.seeds_[part[order]], X[order])
            ys = y[order]
            for t in range(n_trees):
                yield t, keys[bounds[t] : bounds[t + 1]], ys[bounds[t] : bounds[t + 1]]
            return
        per = max(1, _ROUTE_BLOCK // max(X.shape[0], 1))
        for t0 in range(0, n_trees, per):
            if arrays is not None:
                grid = materialised_grid(self.schema_, arrays, X, arrays.leaf_keys, slice(t0, t0 + per))
            else:
                grid = route_forest(self.schema_, self.seeds_[t0 : t0 + per], X)
            for t in range(t0, t0 + grid.shape[0]):
                yield t, grid[t - t0], y

    def _tree_labels(self, X) -> np.ndarray:
        """Label given by every tree to every row: ``(n_trees, n_samples)`` class indices."""
        check_is_fitted(self, "leaf_keys_")
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite="allow-nan")
        cache = getattr(self, "materialised_", None)
        arrays = None if cache is None else cache.get(self.schema_, self.seeds_, self.seeds_.size * X.shape[0])
        if arrays is not None:  # the same labels by array descent
            return materialised_grid(self.schema_, arrays, X, cache.values("labels", self._dense_labels))
        # One compiled pass: route, look up the leaf's label; leaves no record reached get
        # a uniformly random label keyed by the fit's noise secret (Section 4.2.1).
        return forest_leaf_labels(self.schema_, self.seeds_, X, self.leaf_offsets_, self.leaf_keys_,
                                  self.leaf_labels_, self.classes_.size, self._empty_leaf_secret)

    def _dense_labels(self, arrays: MaterialisedForest) -> np.ndarray:
        """Every leaf's label, empty leaves' included (what a row reaching it is given)."""
        return dense_leaf_labels(arrays, self.leaf_offsets_, self.leaf_keys_, self.leaf_labels_,
                                 self.classes_.size, self._empty_leaf_secret)

    def predict_proba(self, X) -> np.ndarray:
        """Vote shares of the trees (Section 4.4 majority voting)."""
        labels = self._tree_labels(X)
        return vote_counts(labels, self.classes_.size) / labels.shape[0]

    def predict(self, X) -> np.ndarray:
        """Majority vote (ties go to the first class in ``classes_``)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def staged_predict(self, X):
        """Predictions of the first 1, 2, ..., n_trees trees (convergence curves)."""
        labels = self._tree_labels(X)
        C, n = self.classes_.size, labels.shape[1]
        votes = np.zeros((n, C))
        for t in range(labels.shape[0]):
            votes[np.arange(n), labels[t]] += 1
            yield self.classes_[np.argmax(votes, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.non_deterministic = False
        return tags


class FletcherForestClassifier(_RandomForestBase):
    """Differentially private random decision forest (Fletcher & Islam 2017 + 2021 addendum).

    Parameters
    ----------
    epsilon : total privacy budget (each tree uses all of it on its disjoint subset).
    n_trees : tau, number of trees (Section 4.4 recommends 100).
    max_depth : None/"theorem2" (Section 4.3, Table 4), "half_m", "m" or an int (Fig. 6).
    leaf_rule : "rosnam" (2021 addendum, default), "smooth_2017" (Theorem 1, NOT private),
        "global_2017" (Theorem 1's utility with global sensitivity 1, Fig. 4).
    disjoint : True (Section 4.2) or False (all data in every tree, epsilon / tau each).
    feature_domain, categorical_features, n_categories : public metadata.
    classes : the public label set (``classes_``, ``predict_proba``'s columns); None reads it
        from ``y`` (warned, not DP).
    random_state : seeds the public structure (``seeds_``, the record partition).
    noise_rng : the leaf labels' and the empty-leaf secret's noise: None (fresh OS entropy,
        never derived from ``random_state``), a ``numpy.random.SeedSequence`` (reproducible:
        ``dpexp.privacy.seeded_noise(seed)`` for experiments, not for a release) or a
        ``numpy.random.Generator`` / ``dpexp.privacy.secure_generator()``.

    Released (DP): predictions on any inputs, i.e. the label function of the labelled full
    trees, with the public structure (``seeds_``, ``depth_``, ``classes_``).
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        n_trees: int = 100,
        max_depth=None,
        leaf_rule: str = "rosnam",
        disjoint: bool = True,
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
        self.leaf_rule = leaf_rule
        self.disjoint = disjoint
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
        if self.leaf_rule not in LEAF_RULES:
            raise ValueError(f"leaf_rule must be one of {LEAF_RULES}, got {self.leaf_rule!r}")
        return self._fit_forest(
            X, y, epsilon=epsilon, n_trees=self.n_trees, disjoint=bool(self.disjoint),
            rule=self.leaf_rule,
        )


class FletcherNonPrivateForestClassifier(_RandomForestBase):
    """The non-private version (Section 2.4, Fig. 10): epsilon = infinity, all records in
    every tree, exact majority label in each leaf; same trees and depth otherwise."""

    def __init__(
        self,
        n_trees: int = 100,
        max_depth=None,
        feature_domain=None,
        categorical_features=None,
        n_categories=None,
        classes=None,
        random_state=None,
    ):
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.feature_domain = feature_domain
        self.categorical_features = categorical_features
        self.n_categories = n_categories
        self.classes = classes
        self.random_state = random_state

    def fit(self, X, y):
        return self._fit_forest(X, y, epsilon=np.inf, n_trees=self.n_trees, disjoint=False, rule="exact")
