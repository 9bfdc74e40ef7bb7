"""The Fig. 11 JPW tree-vote ablation procedure (issue 21): dpexp.papers.fletcher.ablations."""

from __future__ import annotations

import numpy as np

from dpexp.experiments.metrics import Evaluation, f1_minority
from dpexp.experiments.procedures import CellContext, get_procedure
from dpexp.papers.fletcher.ablations import (
    jpw_tree_counts,
    majority_vote,
    tree_mean_distribution,
    vote_shares,
)
from dpexp.papers.fletcher.comparators import JPWForestClassifier


class _Data:
    def __init__(self, n_features: int):
        self.n_features = n_features

    def public_metadata(self):
        return {
            "classes": np.array([0, 1]),
            "feature_domain": np.array([[0.0, 1.0]] * self.n_features),
            "categorical_features": np.ones(self.n_features, bool),
            "n_categories": np.full(self.n_features, 2),
        }


def _binary_data(seed: int, n: int = 3000, m: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, m)).astype(float)
    y = X[:, 0].astype(int)  # feature 0 decides the label
    return X, y


def test_majority_vote_counts_trees_not_counts():
    # Tree 0 is very confident for class 1, trees 1 and 2 mildly for class 0:
    # summed counts pick 1, the vote picks 0.
    counts = np.array([[[0.0, 100.0]], [[2.0, 1.0]], [[3.0, 1.0]]])
    assert majority_vote(counts).tolist() == [0]
    assert int(np.argmax(counts.sum(axis=0), axis=1)[0]) == 1


def test_majority_vote_ties_go_to_the_lowest_class():
    counts = np.array([[[1.0, 0.0, 0.0]], [[0.0, 0.0, 1.0]]])
    assert majority_vote(counts).tolist() == [0]


def test_tree_counts_sum_to_jpw_summed_counts():
    X, y = _binary_data(0)
    meta = _Data(X.shape[1]).public_metadata()
    model = JPWForestClassifier(epsilon=1.0, n_trees=5, max_depth=2, random_state=3,
                                feature_domain=meta["feature_domain"],
                                categorical_features=meta["categorical_features"],
                                n_categories=meta["n_categories"], classes=meta["classes"])
    model.fit(X[:2500], y[:2500])
    per_tree = jpw_tree_counts(model, X[2500:])
    assert per_tree.shape == (5, 500, 2)
    np.testing.assert_allclose(per_tree.sum(axis=0), model._summed_counts(X[2500:]))


def test_procedure_scores_vote_and_sum_on_one_fit():
    X, y = _binary_data(1)
    ctx = CellContext(dataset=_Data(X.shape[1]), params={"max_depth": 3}, epsilon=1.0,
                      rng=np.random.default_rng(0), random_state=0,
                      X_train=X[:2500], y_train=y[:2500], X_test=X[2500:], y_test=y[2500:])
    out = get_procedure("fletcher_jpw_vote")(ctx)
    assert set(out) == {"accuracy", "accuracy_summed", "accuracy_tree_mean", "f1_minority",
                        "f1_minority_summed", "f1_minority_tree_mean", "auc", "auc_summed",
                        "auc_tree_mean", "depth"}
    assert out["depth"] == 3.0
    # With 2,500 records and epsilon = 1 the label feature's leaves dominate both rules.
    assert out["accuracy"] > 0.9
    assert out["accuracy_summed"] > 0.9


def test_vote_shares_are_the_trees_votes():
    counts = np.array([[[0.0, 100.0], [5.0, 1.0]], [[2.0, 1.0], [0.0, 3.0]], [[3.0, 1.0], [4.0, 0.0]]])
    shares = vote_shares(counts)
    np.testing.assert_allclose(shares, [[2 / 3, 1 / 3], [2 / 3, 1 / 3]])
    assert majority_vote(counts).tolist() == np.argmax(shares, axis=1).tolist()


def test_tree_mean_averages_each_trees_clipped_distribution():
    # Tree 1: row 0 (-2, 6) -> (0, 1); row 1 all-negative -> uniform. Tree 2: (1, 3), (2, 2).
    counts = np.array([[[-2.0, 6.0], [-1.0, -3.0]], [[1.0, 3.0], [2.0, 2.0]]])
    dist = tree_mean_distribution(counts)
    np.testing.assert_allclose(dist, [[0.125, 0.875], [0.5, 0.5]])
    np.testing.assert_allclose(dist.sum(axis=1), 1.0)


def test_summed_scores_are_the_shipped_jpw_metrics():
    """The ``_summed`` F1 is what fletcher-fig13's JPW column computes on the same fit."""
    rng = np.random.default_rng(5)
    X = rng.integers(0, 2, size=(3000, 4)).astype(float)
    y = ((X[:, 0] + (rng.random(3000) < 0.15)) % 2).astype(int)
    ctx = CellContext(dataset=_Data(4), params={"max_depth": 2}, epsilon=1.0,
                      rng=np.random.default_rng(1), random_state=2,
                      X_train=X[:2500], y_train=y[:2500], X_test=X[2500:], y_test=y[2500:])
    out = get_procedure("fletcher_jpw_vote")(ctx)
    meta = _Data(4).public_metadata()
    model = JPWForestClassifier(epsilon=1.0, n_trees=10, max_depth=2, random_state=2,
                                noise_rng=np.random.default_rng(1), **meta).fit(X[:2500], y[:2500])
    ev = Evaluation(model, X[2500:], y[2500:], y[:2500], classes=model.classes_)
    assert out["f1_minority_summed"] == f1_minority(ev)
    assert 0.5 < out["f1_minority"] <= 1 and 0.5 < out["auc"] <= 1


def test_exact_leaf_scores_read_each_trees_own_records():
    """The exact-frequency scores (not DP) use each tree's own disjoint records: with one
    tree of depth 0 every test row gets the training class shares."""
    from dpexp.papers.fletcher.ablations import exact_leaf_frequencies
    from dpexp.papers.fletcher.forest import FletcherForestClassifier

    rng = np.random.default_rng(3)
    X = rng.random((400, 2))
    y = (rng.random(400) < 0.25).astype(int)
    meta = _Data(2).public_metadata()
    model = FletcherForestClassifier(epsilon=1.0, n_trees=1, max_depth=0, random_state=0, **meta).fit(X, y)
    freq = exact_leaf_frequencies(model, X, y, X[:5])
    np.testing.assert_allclose(freq, np.tile([1 - y.mean(), y.mean()], (5, 1)))
    # disjoint subsets: 4 trees of depth 0, each tree's leaf holds its own quarter
    model = FletcherForestClassifier(epsilon=1.0, n_trees=4, max_depth=0, random_state=1, **meta).fit(X, y)
    freq = exact_leaf_frequencies(model, X, y, X[:3])
    assert np.allclose(freq.sum(axis=1), 1.0) and np.allclose(freq, freq[0])
    ctx = CellContext(dataset=_Data(2), params={"n_trees": 4}, epsilon=1.0, rng=np.random.default_rng(0),
                      random_state=0, X_train=X[:300], y_train=y[:300], X_test=X[300:], y_test=y[300:])
    out = get_procedure("fletcher_exact_leaf_scores")(ctx)
    assert {"accuracy", "accuracy_exact", "auc", "auc_exact", "f1_minority", "f1_minority_exact"} == set(out)


def test_shared_structure_forest_gives_every_tree_the_first_trees_structure():
    from dpexp.papers.fletcher.forest import FletcherForestClassifier
    from dpexp.papers.fletcher.shared_structure import SharedStructureForest

    rng = np.random.default_rng(4)
    X = rng.random((600, 3))
    y = (X[:, 0] > 0.5).astype(int)
    meta = _Data(3).public_metadata()
    shared = SharedStructureForest(epsilon=1.0, n_trees=5, random_state=7, **meta).fit(X, y)
    independent = FletcherForestClassifier(epsilon=1.0, n_trees=5, random_state=7, **meta).fit(X, y)
    assert np.unique(shared.seeds_).size == 1 and shared.seeds_[0] == independent.seeds_[0]
    assert np.unique(independent.seeds_).size == 5
    ctx = CellContext(dataset=_Data(3), params={"n_trees": 5}, epsilon=1.0, rng=np.random.default_rng(0),
                      random_state=0, X_train=X[:500], y_train=y[:500], X_test=X[500:], y_test=y[500:])
    out = get_procedure("fletcher_shared_structure")(ctx)
    assert set(out) == {"accuracy", "accuracy_shared"} and all(0 <= v <= 1 for v in out.values())
