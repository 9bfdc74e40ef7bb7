"""The serial kernels rewritten for speed agree with their reference versions."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.trees import histograms as HG
from dpexp.trees import levels as LV
from dpexp.trees import partition as PT
from dpexp.trees import predict as PR


@pytest.mark.parametrize("n_rows", [0, 1, 3, 4, 1003])
def test_interleaved_tree_walk_matches_parallel(n_rows):
    rng = np.random.default_rng(n_rows)
    codes = rng.integers(0, 255, (n_rows, 8)).astype(np.uint8)
    # incomplete tree: node 2 is a leaf at depth 1, node 3 splits again
    feat = np.array([0, 1, -1, 3, -1, -1, -1])
    bins = np.array([100, 50, -1, 20, -1, -1, -1])
    child = np.array([1, 3, -1, 5, -1, -1, -1])
    value = rng.normal(size=7)
    ser = np.zeros(n_rows)
    par = np.zeros(n_rows)
    PR._add_tree_ser(codes, feat, bins, child, value, 0.5, ser)
    PR._add_tree_par(codes, feat, bins, child, value, 0.5, par)
    np.testing.assert_array_equal(ser, par)
    leaf = PR.apply_binned_dense(codes, feat, bins, child, n_rows)
    np.testing.assert_array_equal(ser, 0.5 * value[leaf])


@pytest.mark.parametrize("kernel", [LV._subtract_ser, LV._subtract_par])
def test_subtract_with_parent_index(kernel):
    rng = np.random.default_rng(0)
    parent = rng.normal(size=(3, 5, 7, 2))
    out = rng.normal(size=(6, 5, 7, 2))
    small = np.array([0, 3, 4])
    big = small ^ 1
    pidx = np.array([2, 0, 1])
    expected = out.copy()
    for i in range(3):
        expected[big[i]] = parent[pidx[i]] - expected[small[i]]
    bounded = out.copy()
    kernel(parent, pidx, out, small, big, np.full(5, 7))
    np.testing.assert_array_equal(out, expected)
    # bins at or past n_bins[f] are left as they were
    n_bins = np.array([7, 2, 0, 5, 1])
    before = bounded.copy()
    kernel(parent, pidx, bounded, small, big, n_bins)
    for f in range(5):
        np.testing.assert_array_equal(bounded[:, f, : n_bins[f]], expected[:, f, : n_bins[f]])
        np.testing.assert_array_equal(bounded[:, f, n_bins[f]:], before[:, f, n_bins[f]:])


def test_child_totals_and_node_totals_match_numpy():
    rng = np.random.default_rng(1)
    hist = rng.normal(size=(4, 3, 9, 2))
    totals = rng.normal(size=(4, 2))
    js = np.array([0, 2, 3])
    feats = np.array([1, 0, 2])
    bins = np.array([0, 8, 4])
    left = np.cumsum(hist[js, feats], axis=1)[np.arange(3), bins]
    expected = np.stack([left, totals[js] - left], axis=1).reshape(-1, 2)
    np.testing.assert_array_equal(LV.child_totals(hist, totals, js, feats, bins), expected)
    stats = rng.normal(size=(50, 2))
    order = rng.permutation(50)
    np.testing.assert_allclose(HG.node_totals(stats, order, 5, 40), stats[order[5:40]].sum(0))
    assert PT.is_sorted(np.arange(5)) and not PT.is_sorted(np.array([0, 2, 1]))
    assert PT.is_sorted(np.zeros(0, dtype=np.int64))


def test_branch_free_partition_is_stable():
    rng = np.random.default_rng(2)
    codes = np.asfortranarray(rng.integers(0, 10, (200, 3)).astype(np.uint8))
    order = np.sort(rng.choice(1000, 200, replace=False)) % 200
    order = np.unique(order)
    ref = order.copy()
    starts = np.array([0, order.size // 2])
    ends = np.array([order.size // 2, order.size])
    n_left = PT.partition_dense(codes, order, starts, ends, np.array([1, 2]), np.array([4, 6]))
    for j, (f, b) in enumerate([(1, 4), (2, 6)]):
        seg = ref[starts[j]:ends[j]]
        go_left = codes[seg, f] <= b
        np.testing.assert_array_equal(order[starts[j]:ends[j]],
                                      np.concatenate([seg[go_left], seg[~go_left]]))
        assert n_left[j] == go_left.sum()
