"""Materialised trees (``materialise_forest``) route exactly like the keyed walk.

The arrays are a cache of the trees that the keyed walk (``trees.routing._walk``) defines
from the seeds (Fletcher & Islam 2017, Algorithm 2): every leaf key, stored label and
empty-leaf label must be the same bit for bit, on awkward inputs (NaN, out-of-range and
fractional discrete codes, huge values), for continuous, discrete and mixed schemas,
serial and parallel kernels; a forest above the node bound must keep the keyed walk.
"""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from dpexp.papers.fletcher.forest import (
    FletcherForestClassifier,
    FletcherNonPrivateForestClassifier,
)
from dpexp.papers.fletcher.trees import (
    MaterialisedCache,
    TreeSchema,
    child_keys,
    choose_feature,
    count_leaves,
    dense_leaf_labels,
    draw_empty_leaf_secret,
    forest_leaf_labels,
    key_uniform,
    materialise,
    materialise_forest,
    materialised_grid,
    materialised_route,
    route,
    route_forest,
    vote_counts,
)
from dpexp.papers.fletcher.trees.keys import SALT_SPLIT
from dpexp.papers.fletcher.trees.routing import PARALLEL_MIN_WALKS
from dpexp.privacy.randomness import seeded_noise


def awkward_rows(rng: np.random.Generator, schema: TreeSchema, n: int) -> np.ndarray:
    """Rows in and around the domain; discrete codes negative, fractional, too large; NaN."""
    cat, k = schema.categorical, schema.n_categories
    span = schema.highs - schema.lows
    X = np.where(cat, rng.integers(-2, np.maximum(k, 1) + 3, (n, cat.size)) + rng.choice([0.0, 0.5, -0.5, 0.99], (n, cat.size)),
                 schema.lows + span * rng.uniform(-0.2, 1.2, (n, cat.size)))
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(X.shape) < 0.01] = 1e300
    X[rng.random(X.shape) < 0.01] = -1e300
    return X


def random_schema(rng: np.random.Generator, kind: str) -> TreeSchema:
    m = int(rng.integers(1, 9))
    cat = {"continuous": np.zeros(m, bool), "discrete": np.ones(m, bool), "mixed": rng.random(m) < 0.5}[kind]
    k = np.where(cat, rng.integers(1, 6, m), 0)
    lows = rng.normal(size=m)
    return TreeSchema(lows, lows + rng.random(m) * 3 + 0.1, cat, k, int(rng.integers(0, 9)))


@pytest.mark.parametrize("kind", ["continuous", "discrete", "mixed"])
def test_materialised_routing_equals_keyed_walk(kind):
    rng = np.random.default_rng({"continuous": 1, "discrete": 2, "mixed": 3}[kind])
    for _ in range(12):
        schema = random_schema(rng, kind)
        seeds = rng.integers(0, 2**64, 6, dtype=np.uint64)
        forest = materialise_forest(schema, seeds, max_nodes=1 << 20)
        assert forest is not None
        X = awkward_rows(rng, schema, 700)
        np.testing.assert_array_equal(materialised_grid(schema, forest, X, forest.leaf_keys),
                                      route_forest(schema, seeds, X))
        trees_of_rows = rng.integers(-1, seeds.size, X.shape[0])
        keys = materialised_route(schema, forest, trees_of_rows, X)
        routed = trees_of_rows >= 0
        np.testing.assert_array_equal(keys[routed], route(schema, seeds[trees_of_rows[routed]], X[routed]))
        assert (keys[~routed] == 0).all()
        # A block of trees, as the all-records-in-every-tree fit routes them.
        np.testing.assert_array_equal(materialised_grid(schema, forest, X, forest.leaf_keys, slice(2, 5)),
                                      route_forest(schema, seeds[2:5], X))


def check_node(schema, forest, node, key, lo, hi, used, level):
    """Node ``node`` against the numpy spec of Algorithm 2 (``choose_feature``,
    ``key_uniform``, ``child_keys``): feature, threshold bit for bit, children, leaf keys."""
    avail = ~(used & schema.categorical)
    if level == schema.depth or not avail.any():
        assert forest.feature[node] == -1
        assert forest.leaf_keys[forest.first[node]] == key
        return 1
    f = int(choose_feature(np.array([key]), avail[None, :], used.size)[0])
    assert forest.feature[node] == f
    k = np.array([key])
    if schema.categorical[f]:
        branches = [(lo, hi, used | (np.arange(used.size) == f))] * int(schema.n_categories[f])
    else:
        t = lo[f] + key_uniform(k, SALT_SPLIT)[0] * (hi[f] - lo[f])
        assert forest.threshold[node].tobytes() == np.float64(t).tobytes()
        branches = [(lo, np.where(np.arange(lo.size) == f, t, hi), used),
                    (np.where(np.arange(lo.size) == f, t, lo), hi, used)]
    return sum(check_node(schema, forest, forest.first[node] + c, child_keys(k, np.array([c]))[0], *b, level + 1)
               for c, b in enumerate(branches))


def test_nodes_match_the_spec_of_algorithm_2():
    rng = np.random.default_rng(7)
    for kind in ("continuous", "discrete", "mixed", "mixed"):
        schema = random_schema(rng, kind)
        seeds = rng.integers(0, 2**64, 3, dtype=np.uint64)
        forest = materialise_forest(schema, seeds)
        m = schema.n_features
        leaves = sum(check_node(schema, forest, forest.roots[t], seeds[t], schema.lows.astype(float),
                                schema.highs.astype(float), np.zeros(m, bool), 0) for t in range(3))
        assert leaves == forest.leaf_keys.size


def test_leaves_are_the_full_trees_leaves():
    """Node and leaf counts are those of the full trees (exact enumeration in count_leaves)."""
    schema = TreeSchema(np.zeros(4), np.ones(4), np.array([True, False, True, False]), np.array([3, 0, 4, 0]), 5)
    seeds = np.array([7, 8, 9], dtype=np.uint64)
    forest = materialise_forest(schema, seeds)
    per_tree = np.bincount(forest.leaf_trees, minlength=3)
    expected = [count_leaves(schema, s, np.random.default_rng(0)) for s in seeds]
    np.testing.assert_array_equal(per_tree, expected)
    # Every leaf key is distinct within its tree, and the trees' nodes do not overlap.
    for t in range(3):
        assert np.unique(forest.leaf_keys[forest.leaf_trees == t]).size == per_tree[t]
    assert forest.feature.size == (forest.feature >= 0).sum() + forest.leaf_keys.size
    binary = TreeSchema(np.zeros(3), np.ones(3), np.zeros(3, bool), np.zeros(3, int), 6)
    full = materialise_forest(binary, seeds)
    assert full.feature.size == 3 * 127 and full.leaf_keys.size == 3 * 64


def test_parallel_and_serial_kernels_agree_across_the_threshold():
    rng = np.random.default_rng(4)
    schema = random_schema(rng, "mixed")
    seeds = rng.integers(0, 2**64, 3, dtype=np.uint64)
    forest = materialise_forest(schema, seeds)
    n = PARALLEL_MIN_WALKS // seeds.size + 50  # parallel kernel; 40 rows: serial
    X = awkward_rows(rng, schema, n)
    big = materialised_grid(schema, forest, X, forest.leaf_keys)
    np.testing.assert_array_equal(big, route_forest(schema, seeds, X))
    np.testing.assert_array_equal(materialised_grid(schema, forest, X[:40], forest.leaf_keys), big[:, :40])


def test_dense_labels_equal_the_keyed_lookup():
    rng = np.random.default_rng(5)
    schema = random_schema(rng, "mixed")
    seeds = rng.integers(0, 2**64, 4, dtype=np.uint64)
    X = awkward_rows(rng, schema, 500)
    # A leaf table of some reached leaves per tree (the rest empty), random labels.
    reached = route_forest(schema, seeds, X[:60])
    keys = [np.unique(r)[::2] for r in reached]
    offsets = np.concatenate([[0], np.cumsum([k.size for k in keys])])
    table = np.concatenate(keys)
    labels = rng.integers(0, 3, table.size)
    secret = draw_empty_leaf_secret(np.random.default_rng(6))
    forest = materialise_forest(schema, seeds)
    dense = dense_leaf_labels(forest, offsets, table, labels, 3, secret)
    np.testing.assert_array_equal(materialised_grid(schema, forest, X, dense),
                                  forest_leaf_labels(schema, seeds, X, offsets, table, labels, 3, secret))


def mixed_data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = np.c_[rng.integers(0, 4, n), rng.normal(size=n), rng.integers(0, 3, n), rng.random(n)]
    y = ((X[:, 1] > 0) ^ (X[:, 0] > 1)).astype(int)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(n) < 0.05, 0] = 7.5  # a discrete code outside the declared domain
    return X, y


META = dict(feature_domain=[[0, 3], [-3, 3], [0, 2], [0, 1]], categorical_features=[True, False, True, False],
            n_categories=[4, 0, 3, 0], classes=[0, 1])


def keyed_labels(est, X) -> np.ndarray:
    """The estimator's labels through the keyed walk (the reference)."""
    return forest_leaf_labels(est.schema_, est.seeds_, X, est.leaf_offsets_, est.leaf_keys_, est.leaf_labels_,
                              est.classes_.size, est._empty_leaf_secret)


@pytest.mark.parametrize("make", [
    lambda: FletcherForestClassifier(n_trees=30, random_state=0, **META),
    lambda: FletcherForestClassifier(n_trees=30, max_depth=3, leaf_rule="smooth_2017", random_state=1, **META),
    lambda: FletcherForestClassifier(n_trees=20, disjoint=False, random_state=2, **META),
    lambda: FletcherNonPrivateForestClassifier(n_trees=10, max_depth=6, random_state=3, **META),
])
def test_estimator_uses_the_arrays_and_predicts_the_same(make):
    X, y = mixed_data(3000, 0)
    Xt, _ = mixed_data(2000, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make().fit(X, y)
    labels = est._tree_labels(Xt)
    assert est.materialised_.forest is not None  # 20+ trees x 2,000 rows: worth materialising
    np.testing.assert_array_equal(labels, keyed_labels(est, Xt))
    votes = np.stack([(labels == c).sum(axis=0) for c in range(2)], axis=1)
    np.testing.assert_array_equal(est.predict_proba(Xt), votes / labels.shape[0])


def test_above_the_bound_the_keyed_walk_is_used(monkeypatch):
    X, y = mixed_data(3000, 0)
    Xt, _ = mixed_data(2000, 1)
    # the refit must draw the same noise: seeded explicitly (the default is fresh entropy)
    est = FletcherForestClassifier(n_trees=30, random_state=0, noise_rng=seeded_noise(0), **META).fit(X, y)
    expected = est.predict_proba(Xt)
    forest = est.materialised_.forest
    assert forest is not None
    # Exactly at the bound it is materialised; one node fewer and it is not.
    assert materialise_forest(est.schema_, est.seeds_, max_nodes=forest.feature.size) is not None
    assert materialise_forest(est.schema_, est.seeds_, max_nodes=forest.feature.size - 1) is None
    monkeypatch.setattr(materialise, "MAX_MATERIALISED_NODES", forest.feature.size - 1)
    refit = FletcherForestClassifier(n_trees=30, random_state=0, noise_rng=seeded_noise(0), **META).fit(X, y)
    np.testing.assert_array_equal(refit.predict_proba(Xt), expected)
    assert refit.materialised_.forest is None
    # A deep all-discrete forest (Mushroom-like) is refused after counting one tree's share.
    wide = TreeSchema(np.zeros(12), np.ones(12), np.ones(12, bool), np.full(12, 9), 11)
    assert materialise_forest(wide, np.arange(100, dtype=np.uint64)) is None


def test_small_calls_keep_the_keyed_walk_and_refusals_are_remembered():
    X, y = mixed_data(3000, 0)
    est = FletcherForestClassifier(n_trees=30, random_state=0, **META).fit(X[:40], y[:40])
    cache = est.materialised_
    assert cache.forest is None  # 40 training walks: not worth the trees' nodes
    p = est.predict_proba(X[:3])
    assert cache.forest is None and cache._refused > 0
    np.testing.assert_array_equal(p, vote_counts(keyed_labels(est, X[:3]), 2) / 30)
    est.predict_proba(X)
    assert cache.forest is not None


def test_pickle_copy_and_clone():
    X, y = mixed_data(3000, 0)
    Xt, _ = mixed_data(500, 1)
    # clone keeps the seeded noise_rng, so the refit draws the same noise
    est = FletcherForestClassifier(n_trees=25, random_state=0, noise_rng=seeded_noise(0), **META).fit(X, y)
    p = est.predict_proba(Xt)
    assert est.materialised_.forest is not None
    blob = pickle.dumps(est)
    assert len(blob) < len(pickle.dumps(est.materialised_.forest))  # the arrays are not pickled
    again = pickle.loads(blob)
    assert again.materialised_.forest is None
    np.testing.assert_array_equal(again.predict_proba(Xt), p)
    np.testing.assert_array_equal(copy.deepcopy(est).predict_proba(Xt), p)
    fresh = clone(est)
    assert not hasattr(fresh, "materialised_")
    np.testing.assert_array_equal(fresh.fit(X, y).predict_proba(Xt), p)
    assert "nodes" in repr(est.materialised_) and repr(MaterialisedCache()) == "MaterialisedCache(empty)"


def test_vote_counts():
    labels = np.array([[0, 2, 1], [2, 2, 0]])
    np.testing.assert_array_equal(vote_counts(labels, 3), [[1, 0, 1], [0, 0, 2], [1, 1, 0]])
    with pytest.raises(ValueError):
        vote_counts(np.array([[3]]), 3)
