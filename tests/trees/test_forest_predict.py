"""The banded forest prediction (:func:`dpexp.trees.predict.add_forest_dense`, behind
:func:`dpexp.boosting.gbdt.raw_predict`) against one tree at a time over all rows: the
same scores bit for bit, on the serial and the parallel kernel, with NaN (goes left),
float32 input, an initial score, single-leaf trees and a row count that is not a
multiple of the band."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.boosting import gbdt
from dpexp.trees import parallel as par
from dpexp.trees.tree import LEAF, NUMERIC, ArrayTree


def random_tree(rng: np.random.Generator, depth: int, n_features: int) -> ArrayTree:
    """A full numeric tree of ``depth`` levels (depth 0: one leaf), random splits/values."""
    n = 2 ** (depth + 1) - 1
    internal = np.arange(n) < 2 ** depth - 1
    child = np.where(internal, 2 * np.arange(n) + 1, -1).astype(np.int32)
    return ArrayTree(
        kind=np.where(internal, NUMERIC, LEAF).astype(np.int8),
        feature=np.where(internal, rng.integers(0, n_features, n), -1).astype(np.int32),
        threshold=np.where(internal, rng.normal(size=n), np.nan),
        child_start=child, n_children=np.where(internal, 2, 0).astype(np.int32),
        value=rng.normal(size=(n, 1)), depth=np.floor(np.log2(np.arange(n) + 1)).astype(np.int32),
    )


def one_tree_at_a_time(trees, lr, X, init):
    X = gbdt.prepare_predict_matrix(X)
    out = np.full(X.shape[0], float(init))
    for t in trees:
        out += lr * t.value[gbdt.apply_tree(t, X), 0]
    return out


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_banded_scores_equal_one_tree_at_a_time(monkeypatch, parallel, dtype):
    monkeypatch.setattr(par, "PARALLEL_MIN_WORK", 0 if parallel else 1 << 62)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1001, 9)).astype(dtype)
    X[::7, 3] = np.nan
    trees = [random_tree(rng, d, 9) for d in (3, 0, 6, 1, 4)]
    for t in trees:
        t.threshold[t.feature == 3] = 0.0  # rows exactly at a threshold go left
    got = gbdt.raw_predict(trees, 0.3, X, init=0.125)
    assert np.array_equal(got, one_tree_at_a_time(trees, 0.3, X, 0.125))


def test_no_trees_give_the_initial_score():
    X = np.zeros((5, 2))
    assert np.array_equal(gbdt.raw_predict([], 0.1, X, init=2.5), np.full(5, 2.5))
