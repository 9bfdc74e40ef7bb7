"""The forest: disjoint subsets, empty leaves, accounting, accuracy, comparators."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

from dpexp.papers.fletcher.comparators import FSTreeClassifier, JPWForestClassifier
from dpexp.papers.fletcher.forest import (
    FletcherForestClassifier,
    FletcherNonPrivateForestClassifier,
)
from dpexp.papers.fletcher.trees import TreeSchema, count_leaves, route
from dpexp.privacy import seeded_noise
from dpexp.registry import all_algorithms


def synth_a(n, seed=0):
    X, y = make_classification(n, n_features=5, n_informative=5, n_redundant=0, n_repeated=0, random_state=seed)
    return X, y, np.c_[X.min(0), X.max(0)]


def test_registered():
    algos = all_algorithms()
    for name in ("fletcher_forest", "fletcher_forest_np", "jpw", "fs_c45", "diffprivlib_rf"):
        assert name in algos
    assert not algos["fletcher_forest_np"].private and algos["fletcher_forest"].private


def test_disjoint_subsets_and_accounting():
    X, y, dom = synth_a(3000)
    f = FletcherForestClassifier(epsilon=0.7, n_trees=20, feature_domain=dom, random_state=3).fit(X, y)
    assert f.tree_sizes_.sum() == X.shape[0]  # every record in exactly one tree
    assert f.accountant_.epsilon_spent == pytest.approx(0.7)  # parallel composition
    g = FletcherForestClassifier(epsilon=0.7, n_trees=20, disjoint=False, feature_domain=dom, random_state=3).fit(X, y)
    assert (g.tree_sizes_ == X.shape[0]).all()
    assert g.accountant_.epsilon_spent == pytest.approx(0.7)  # 20 x 0.7/20, sequential


def test_partition_is_record_stable():
    """Removing one record changes no other record's tree (record_partition, Section 4.2)."""
    X, y, dom = synth_a(500)
    a = FletcherForestClassifier(n_trees=7, feature_domain=dom, random_state=5).fit(X, y)
    assert a.tree_sizes_.sum() == 500 and (a.tree_sizes_ > 0).all()


def test_empty_leaves_vote_uniformly():
    X, y, dom = synth_a(200)
    X3, y3 = X[:4], np.array([0, 1, 0, 1])
    f = FletcherForestClassifier(n_trees=400, max_depth=6, feature_domain=dom, random_state=0,
                                 noise_rng=seeded_noise(0)).fit(X3, y3)
    # 400 trees for 4 records: almost every tree is empty, so votes are ~uniform.
    p = f.predict_proba(X[100:150])
    assert np.abs(p[:, 0] - 0.5).mean() < 0.06
    np.testing.assert_array_equal(f.predict_proba(X[100:150]), p)  # a fixed model
    assert f.diagnostics_["empty_leaf_fraction"] > 0.99


def test_route_equals_materialised_full_tree_on_categorical_data():
    rng = np.random.default_rng(0)
    k = np.array([3, 0, 4, 0])
    cat = k > 0
    schema = TreeSchema(np.zeros(4), np.ones(4), cat, k, depth=4)
    X = np.c_[rng.integers(0, 3, 2000), rng.random(2000), rng.integers(0, 4, 2000), rng.random(2000)]
    keys = route(schema, np.full(2000, np.uint64(7)), X)
    n_leaves = count_leaves(schema, np.uint64(7), rng)
    assert np.unique(keys).size <= n_leaves
    # discrete features are used at most once per path: depth-4 paths can't exceed 3*4*2*2 leaves
    assert n_leaves <= 3 * 4 * 2 * 2 * 2


def test_accuracy_synth_a_eps1_above_80pct():
    X, y, dom = synth_a(10000)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    f = FletcherForestClassifier(epsilon=1.0, feature_domain=dom, random_state=0,
                                 noise_rng=seeded_noise(0)).fit(Xtr, ytr)
    assert f.depth_ == 5
    assert (f.predict(Xte) == yte).mean() > 0.80


def test_non_private_and_comparators_run():
    X, y, dom = synth_a(4000)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    for est in (FletcherNonPrivateForestClassifier(feature_domain=dom, random_state=0),
                JPWForestClassifier(feature_domain=dom, random_state=0, noise_rng=seeded_noise(0)),
                FSTreeClassifier(feature_domain=dom, random_state=0, noise_rng=seeded_noise(0))):
        est.fit(Xtr, ytr)
        p = est.predict_proba(Xte)
        assert p.shape == (Xte.shape[0], 2) and np.allclose(p.sum(1), 1)
        assert (est.predict(Xte) == yte).mean() > 0.55
        if hasattr(est, "epsilon"):
            assert est.accountant_.epsilon_spent <= est.epsilon * (1 + 1e-9)


def test_categorical_forest_runs():
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 41, 3000), rng.integers(0, 16, 3000), rng.normal(size=3000)]
    y = (X[:, 2] + (X[:, 1] > 7) > 0.5).astype(int)
    dom = np.array([[0, 40], [0, 15], [-5, 5]], float)
    f = FletcherForestClassifier(n_trees=30, feature_domain=dom, categorical_features=[True, True, False],
                                 n_categories=[41, 16, 0], random_state=0,
                                 noise_rng=seeded_noise(0)).fit(X, y)
    assert f.depth_ == 2 + 1
    assert (f.predict(X) == y).mean() > 0.6
    assert 0 < f.diagnostics_["empty_leaf_fraction"] < 1
