"""Ablation procedure for the unexplained Fig. 11 JPW misses of Fletcher & Islam (2017), issue 21.

A procedure is ``f(ctx) -> dict[str, float]`` (see :mod:`dpexp.experiments.procedures`).
It fits the comparator as the paper's Section 5.2 describes it and scores it under a
reading of the paper that the shipped estimator does not follow, beside the shipped
reading, on the same fit, so the two differ only in the part under test.

* ``fletcher_jpw_vote``: JPW (Jagannathan et al. 2012; Section 5.2: 10 trees, depth
  ``min(m/2, log_b n - 1)``) predicting by a majority vote of its trees (each tree votes
  for the arg-max of its leaf's noisy counts), the rule the paper gives for its own forest
  (Section 4, "the user is free to use majority voting"), beside the shipped rule (the
  arg-max of the noisy counts summed over the trees). Both are post-processing of the same
  released noisy counts, so the vote is as private as the sum. A third rule on the same
  fit, the mean over the trees of each tree's leaf class distribution (noisy counts
  clipped at 0 and normalised), is how scikit-learn's forests form ``predict_proba``, the
  toolkit the paper's experiments used (Section 2.4); it tests the Fig. 12 AUC misses.
* ``fletcher_exact_leaf_scores``: the paper's own forest ("Ours", Section 4) scored by the
  mean over its trees of each tree's EXACT leaf class frequencies (the counts of the tree's
  own training records; uniform in an empty leaf), beside its released vote shares. The
  exact frequencies are not released by the algorithm and are NOT differentially private:
  the procedure tests whether the paper's Fig. 12 AUC / Fig. 13 F1 of "Ours" could have
  been computed from them (a predict_proba built on the training counts).
* ``fletcher_shared_structure``: the paper's forest with every tree given the SAME random
  structure (one root key for all trees) beside the shipped independent trees, on the same
  data split. Tests whether Figs. 5 and 6's alternative forests (not disjoint data, d = m/2,
  d = m), whose printed accuracies sit near one tree's, behave like a forest whose trees
  share one structure. Equally private (the structure is data-independent either way).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dpexp.experiments.metrics import Evaluation, auc, f1_minority

if TYPE_CHECKING:  # annotations only: the estimators load where a procedure runs
    from dpexp.papers.fletcher.comparators import JPWForestClassifier
    from dpexp.papers.fletcher.forest import FletcherForestClassifier

_META_KEYS = ("feature_domain", "categorical_features", "n_categories", "classes")


def _public_metadata(ctx) -> dict:
    """The dataset's public metadata the comparators take (absent keys left to the estimator)."""
    meta = ctx.dataset.public_metadata()
    return {k: meta[k] for k in _META_KEYS if meta.get(k) is not None}


def jpw_tree_counts(model: JPWForestClassifier, X) -> np.ndarray:
    """Noisy class counts of the leaf each row reaches in each tree: ``(n_trees, n, C)``
    (:meth:`JPWForestClassifier.tree_counts`, before its sum over the trees)."""
    return model.tree_counts(np.asarray(X, dtype=np.float64))


def majority_vote(tree_counts: np.ndarray) -> np.ndarray:
    """Class index with the most tree votes per row, each tree voting for its arg-max.

    Ties go to the lowest class index, as in the forest's own vote
    (:meth:`dpexp.papers.fletcher.forest._RandomForestBase.predict`).
    """
    T, n, C = tree_counts.shape
    labels = np.argmax(tree_counts, axis=2)  # (T, n)
    flat = labels.T.ravel() + np.repeat(np.arange(n) * C, T)
    votes = np.bincount(flat, minlength=n * C).reshape(n, C)
    return np.argmax(votes, axis=1)


@dataclass(frozen=True)
class PredictionRule:
    """A fitted forest's predictions under one prediction rule, shaped as the metrics read
    an estimator: the rule's class and its class scores as probabilities (JPW's tree vote:
    the vote shares; its tree mean: the mean leaf distribution; exact leaf frequencies)."""

    classes_: np.ndarray
    labels: np.ndarray  # the rule's class index per test row
    shares: np.ndarray  # (n, C) the rule's class scores

    def predict(self, X) -> np.ndarray:
        return self.classes_[self.labels]

    def predict_proba(self, X) -> np.ndarray:
        return self.shares


def vote_shares(tree_counts: np.ndarray) -> np.ndarray:
    """``(n, C)`` share of the trees whose leaf arg-max is each class (Section 4's vote)."""
    T, n, C = tree_counts.shape
    labels = np.argmax(tree_counts, axis=2)
    flat = labels.T.ravel() + np.repeat(np.arange(n) * C, T)
    return np.bincount(flat, minlength=n * C).reshape(n, C) / T


def tree_mean_distribution(tree_counts: np.ndarray) -> np.ndarray:
    """``(n, C)`` mean over the trees of each tree's leaf class distribution: its noisy
    counts clipped at 0 and normalised (uniform where a leaf's clipped counts are all 0)."""
    clipped = np.maximum(tree_counts, 0.0)
    total = clipped.sum(axis=2, keepdims=True)
    uniform = 1.0 / tree_counts.shape[2]
    dist = np.where(total > 0, clipped / np.where(total > 0, total, 1.0), uniform)
    return dist.mean(axis=0)


def _scores(estimator, ctx, y_test: np.ndarray, suffix: str) -> dict[str, float]:
    """F1 of the least frequent class (Fig. 13) and AUC (Fig. 12) of one prediction rule."""
    ev = Evaluation(estimator, ctx.X_test, y_test, np.asarray(ctx.y_train), classes=estimator.classes_)
    return {f"f1_minority{suffix}": f1_minority(ev), f"auc{suffix}": auc(ev)}


def fletcher_jpw_vote(ctx) -> dict[str, float]:
    """JPW (Section 5.2) scored by tree vote, by summed counts and by the tree mean on one fit.

    ``params``: ``n_trees`` (10), ``max_depth`` (None: JPW's formula). Returns
    ``accuracy`` (vote), ``accuracy_summed`` (the shipped ``jpw`` prediction), the F1 of
    the least frequent class and the AUC of both rules (``f1_minority`` / ``auc``: vote,
    with the vote shares as scores; ``..._summed``: the shipped ``predict_proba``, as in
    Figs. 12 and 13; ``..._tree_mean``: the mean of the trees' leaf distributions, with
    ``accuracy_tree_mean``) and ``depth``.
    """
    # lazy: the comparators load scikit-learn and numba; `dpexp list` and `plan` import this module only to read the procedures' flags
    from dpexp.papers.fletcher.comparators import JPWForestClassifier

    n_trees = int(ctx.params.get("n_trees", 10))
    max_depth = ctx.params.get("max_depth")
    model = JPWForestClassifier(
        epsilon=ctx.epsilon, n_trees=n_trees, max_depth=None if max_depth is None else int(max_depth),
        random_state=ctx.random_state, noise_rng=ctx.rng, **_public_metadata(ctx),
    )
    model.fit(ctx.X_train, ctx.y_train)
    y_test = np.asarray(ctx.y_test)
    counts = jpw_tree_counts(model, ctx.X_test)
    voted = PredictionRule(model.classes_, majority_vote(counts), vote_shares(counts))
    mean_dist = tree_mean_distribution(counts)
    tree_mean = PredictionRule(model.classes_, np.argmax(mean_dist, axis=1), mean_dist)
    summed = model.classes_[np.argmax(counts.sum(axis=0), axis=1)]
    binary = model.classes_.size == 2  # Figs. 12 and 13 are binary-only
    return {
        "accuracy": float(np.mean(voted.predict(ctx.X_test) == y_test)),
        "accuracy_summed": float(np.mean(summed == y_test)),
        "accuracy_tree_mean": float(np.mean(tree_mean.predict(ctx.X_test) == y_test)),
        **(_scores(voted, ctx, y_test, "") if binary else {}),
        **(_scores(model, ctx, y_test, "_summed") if binary else {}),
        **(_scores(tree_mean, ctx, y_test, "_tree_mean") if binary else {}),
        "depth": float(model.depth_),
    }


def exact_leaf_frequencies(model: FletcherForestClassifier, X_train, y_enc: np.ndarray, X) -> np.ndarray:
    """``(n, C)`` mean over the trees of the exact class frequencies of the leaf each row of
    ``X`` reaches, from each tree's own training records (uniform where none). NOT DP."""
    # lazy: the forest's routing is compiled (numba); `dpexp list` and `plan` import this module only to read the procedures' flags
    from dpexp.papers.fletcher.forest import leaf_counts
    from dpexp.papers.fletcher.trees import route_forest

    X_train = np.asarray(X_train, dtype=np.float64)
    C, T = model.classes_.size, model.n_trees_
    test_keys = route_forest(model.schema_, model.seeds_, np.asarray(X, dtype=np.float64))
    total = np.zeros((test_keys.shape[1], C))
    part = model.training_partition(X_train, model.classes_[y_enc])  # keyed by the raw labels
    for t, keys, y_t in model._route_training(X_train, y_enc, part, T):
        uk, counts = leaf_counts(keys, y_t, C)
        if uk.size == 0:  # a tree without records: every leaf empty
            total += 1.0 / C
            continue
        idx = np.minimum(np.searchsorted(uk, test_keys[t]), uk.size - 1)
        hit = uk[idx] == test_keys[t]
        total[hit] += (counts / counts.sum(axis=1, keepdims=True))[idx[hit]]
        total[~hit] += 1.0 / C
    return total / T


def fletcher_exact_leaf_scores(ctx) -> dict[str, float]:
    """Ours (Section 4) scored by its released vote and by its trees' exact leaf frequencies.

    ``params``: ``leaf_rule`` (``smooth_2017``), ``n_trees`` (100). Returns ``accuracy``,
    ``auc`` and ``f1_minority`` of the vote (the shipped forest, Figs. 11-13) and
    ``accuracy_exact``, ``auc_exact``, ``f1_minority_exact`` of the arg-max / scores of the
    exact leaf frequencies (not DP; binary tasks only for AUC and F1).
    """
    # lazy: the forest loads scikit-learn and numba; `dpexp list` and `plan` import this module only to read the procedures' flags
    from dpexp.papers.fletcher.forest import FletcherForestClassifier

    model = FletcherForestClassifier(
        epsilon=ctx.epsilon, n_trees=int(ctx.params.get("n_trees", 100)),
        leaf_rule=ctx.params.get("leaf_rule", "smooth_2017"), random_state=ctx.random_state,
        noise_rng=ctx.rng, **_public_metadata(ctx),
    )
    model.fit(ctx.X_train, ctx.y_train)
    y_test = np.asarray(ctx.y_test)
    y_enc = np.searchsorted(model.classes_, np.asarray(ctx.y_train))
    freq = exact_leaf_frequencies(model, ctx.X_train, y_enc, ctx.X_test)
    exact = PredictionRule(model.classes_, np.argmax(freq, axis=1), freq)
    binary = model.classes_.size == 2
    return {
        "accuracy": float(np.mean(model.predict(ctx.X_test) == y_test)),
        "accuracy_exact": float(np.mean(exact.predict(ctx.X_test) == y_test)),
        **(_scores(model, ctx, y_test, "") if binary else {}),
        **(_scores(exact, ctx, y_test, "_exact") if binary else {}),
    }


def fletcher_shared_structure(ctx) -> dict[str, float]:
    """Accuracy of the forest with independent trees (``accuracy``, the shipped forest) and
    with one structure shared by all trees (``accuracy_shared``), same split and budget.

    ``params``: ``leaf_rule`` (``smooth_2017``), ``n_trees`` (100), ``disjoint`` (True),
    ``max_depth`` (None: Theorem 2; ``m`` / ``half_m`` as the forest takes them).
    """
    # lazy: the forests load scikit-learn and numba; `dpexp list` and `plan` import this module only to read the procedures' flags
    from dpexp.papers.fletcher.forest import FletcherForestClassifier
    from dpexp.papers.fletcher.shared_structure import SharedStructureForest

    kwargs = dict(
        epsilon=ctx.epsilon, n_trees=int(ctx.params.get("n_trees", 100)),
        leaf_rule=ctx.params.get("leaf_rule", "smooth_2017"), disjoint=bool(ctx.params.get("disjoint", True)),
        max_depth=ctx.params.get("max_depth"), random_state=ctx.random_state, **_public_metadata(ctx),
    )
    y_test = np.asarray(ctx.y_test)
    noise = ctx.rng.spawn(2)
    out = {}
    for key, cls, rng in (("accuracy", FletcherForestClassifier, noise[0]),
                          ("accuracy_shared", SharedStructureForest, noise[1])):
        model = cls(noise_rng=rng, **kwargs).fit(ctx.X_train, ctx.y_train)
        out[key] = float(np.mean(model.predict(ctx.X_test) == y_test))
    return out


PROCEDURES = {
    "fletcher_jpw_vote": fletcher_jpw_vote,
    "fletcher_exact_leaf_scores": fletcher_exact_leaf_scores,
    "fletcher_shared_structure": fletcher_shared_structure,
}
