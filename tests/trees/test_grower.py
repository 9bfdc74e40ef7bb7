"""The level-wise histogram grower: histograms, subtraction trick, greedy splits, predict."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import dpexp.trees.grower as grower
from dpexp.privacy import seeded_noise
from dpexp.registry import make_estimator
from dpexp.trees.binning import fit_bin_mapper
from dpexp.trees.grower import SplitContext, grow_tree
from dpexp.trees.histograms import build_hist_dense, build_hist_sparse, reference_histograms
from dpexp.trees.policies import GreedySplit, NewtonLeaf
from dpexp.trees.tree import LEAF


def _data(n=400, d=6, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    if sparse:
        X[rng.random((n, d)) < 0.6] = 0.0
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0.8, 1.0, -1.0)
    return X, y


def test_histograms_match_bruteforce_dense_and_sparse():
    X, y = _data(sparse=True)
    m = fit_bin_mapper(X, feature_domain=np.tile([0.0, 1.0], (6, 1)), max_bins=20)
    stats = np.column_stack([y, np.ones_like(y), y**2])
    order = np.arange(400, dtype=np.int64)
    starts, ends = np.array([0, 150]), np.array([150, 400])
    dense = m.transform(X)
    sparse = m.transform(sp.csr_matrix(X), dense_limit_bytes=0)
    h1 = build_hist_dense(dense.codes, stats, order, starts, ends, 20, 4)
    h2 = build_hist_sparse(sparse.indptr, sparse.rows, sparse.values, sparse.zero_bin, stats,
                           order, starts, ends, 400, 20)
    expect = reference_histograms(dense.codes, stats, order, starts, ends, 20)
    np.testing.assert_allclose(h1, expect, atol=1e-9)
    np.testing.assert_allclose(h2, expect, atol=1e-9)


def _grow(data, y, m, depth=4, rows=None):
    stats = np.column_stack([-y, np.ones_like(y)])
    rows = np.arange(len(y)) if rows is None else rows
    return grow_tree(data, stats, rows, m, max_depth=depth, split_policy=GreedySplit(0.1),
                     leaf_policy=NewtonLeaf(0.1), rng=np.random.default_rng(0))


def test_greedy_root_split_is_bruteforce_best_and_paths_agree():
    X, y = _data(sparse=True)
    m = fit_bin_mapper(X, feature_domain=np.tile([0.0, 1.0], (6, 1)), max_bins=16)
    g = -y
    best, arg = -np.inf, None
    for f in range(6):
        for b in range(15):
            left = X[:, f] <= m.threshold(f, b)
            if left.all() or not left.any():
                continue
            gain = g[left].sum() ** 2 / (left.sum() + 0.1) + g[~left].sum() ** 2 / ((~left).sum() + 0.1)
            if gain > best + 1e-12:
                best, arg = gain, (f, m.threshold(f, b))
    dense_tree = _grow(m.transform(X), y, m).tree
    sparse_tree = _grow(m.transform(sp.csr_matrix(X), dense_limit_bytes=0), y, m).tree
    assert (dense_tree.feature[0], dense_tree.threshold[0]) == arg
    np.testing.assert_array_equal(dense_tree.feature, sparse_tree.feature)
    np.testing.assert_allclose(dense_tree.value, sparse_tree.value)


def test_prediction_paths_agree_and_leaf_values_are_eq4():
    X, y = _data(n=600, seed=3)
    m = fit_bin_mapper(X, feature_domain=np.tile([0.0, 1.0], (6, 1)))
    data = m.transform(X)
    rows = np.arange(0, 600, 2)
    grown = _grow(data, y, m, depth=5, rows=rows)
    tree = grown.tree
    leaf_np = tree.apply(X)
    np.testing.assert_array_equal(leaf_np, grown.apply_binned(data))
    assert (tree.kind[leaf_np] == LEAF).all()
    for leaf in np.unique(leaf_np[rows]):
        members = rows[leaf_np[rows] == leaf]
        np.testing.assert_allclose(tree.value[leaf, 0], y[members].sum() / (len(members) + 0.1))


def test_policy_sees_all_open_nodes_per_depth_and_empty_rows():
    X, y = _data(n=100)
    m = fit_bin_mapper(X, feature_domain=np.tile([0.0, 1.0], (6, 1)), max_bins=8)
    seen = []

    def always_first(ctx: SplitContext):
        seen.append((ctx.depth, ctx.n_nodes, ctx.hist.shape))
        return np.zeros(ctx.n_nodes, dtype=np.int64), np.full(ctx.n_nodes, 3)

    stats = np.column_stack([y, np.ones_like(y)])
    grown = grow_tree(m.transform(X), stats, np.array([], dtype=np.int64), m, max_depth=3,
                      split_policy=always_first, leaf_policy=lambda c: np.zeros(c.n_leaves),
                      rng=np.random.default_rng(0))
    assert [s[:2] for s in seen] == [(0, 1), (1, 2), (2, 4)]
    assert seen[0][2] == (1, 6, 8, 2)
    assert (grown.tree.kind == LEAF).sum() == 8


def test_compact_rows_grow_the_same_trees_and_scores(monkeypatch):
    """A tree on a small share of a large table is grown on a compact copy of its rows:
    the same histograms in the same order, so the same trees, private draws, leaf
    segments and boosting scores as in place, for DPBoost (subsets), PARA and SEQ."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, 12))  # continuous: no sparse feature, so compactable
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=4000) > 0).astype(int)
    public = {"feature_domain": [[-5.0, 5.0]] * 12, "classes": [0, 1]}

    def fit(name, compact):
        monkeypatch.setattr(grower, "COMPACT_MIN_BYTES", 0 if compact else 1 << 62)
        est = make_estimator(name, "classification", {"n_trees": 8, "max_depth": 4},
                             epsilon=4.0, random_state=0, public=public,
                             noise_rng=seeded_noise(0))
        return est.fit(X, y)

    for name in ("dpboost", "para", "seq", "dpboost_honest"):
        a, b = fit(name, True), fit(name, False)
        np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X), err_msg=name)
    # the compact path did run: a DPBoost tree sees about 1/8 of the rows or fewer
    seen = []
    real = grower._grow_compact
    monkeypatch.setattr(grower, "_grow_compact", lambda *a, **k: seen.append(1) or real(*a, **k))
    fit("dpboost", True)
    assert seen
