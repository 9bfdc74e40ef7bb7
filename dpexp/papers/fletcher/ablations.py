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
  released noisy counts, so the vote is as private as the sum.
"""

from __future__ import annotations

import numpy as np

from dpexp.papers.fletcher.comparators import JPWForestClassifier

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


def fletcher_jpw_vote(ctx) -> dict[str, float]:
    """JPW (Section 5.2) scored by tree vote and by summed counts on one fit.

    ``params``: ``n_trees`` (10), ``max_depth`` (None: JPW's formula). Returns
    ``accuracy`` (vote), ``accuracy_summed`` (the shipped ``jpw`` prediction) and ``depth``.
    """
    n_trees = int(ctx.params.get("n_trees", 10))
    max_depth = ctx.params.get("max_depth")
    model = JPWForestClassifier(
        epsilon=ctx.epsilon, n_trees=n_trees, max_depth=None if max_depth is None else int(max_depth),
        random_state=ctx.random_state, noise_rng=ctx.rng, **_public_metadata(ctx),
    )
    model.fit(ctx.X_train, ctx.y_train)
    y_test = np.asarray(ctx.y_test)
    counts = jpw_tree_counts(model, ctx.X_test)
    voted = model.classes_[majority_vote(counts)]
    summed = model.classes_[np.argmax(counts.sum(axis=0), axis=1)]
    return {
        "accuracy": float(np.mean(voted == y_test)),
        "accuracy_summed": float(np.mean(summed == y_test)),
        "depth": float(model.depth_),
    }


PROCEDURES = {
    "fletcher_jpw_vote": fletcher_jpw_vote,
}
