"""The NP tree's kernels that split a depth's work across threads, and the split search's
two-pass form, against their serial or one-pass references: the same bits."""

from __future__ import annotations

import numpy as np
import pytest
from trees.stable_split import stable_split

from dpexp.trees import histograms as HG
from dpexp.trees import parallel as PAR
from dpexp.trees import partition as PT
from dpexp.trees import split_search as SS


def _nodes(rng, n, n_nodes):
    cuts = np.sort(rng.choice(np.arange(1, n), n_nodes - 1, replace=False))
    starts = np.concatenate([[0], cuts]).astype(np.int64)
    ends = np.concatenate([cuts, [n]]).astype(np.int64)
    return starts, ends


@pytest.mark.parametrize("n_nodes", [1, 2, 5, 16])
@pytest.mark.parametrize("n_groups", [1, 2, 3])
def test_in_place_partition_in_parallel_is_the_stable_partition(n_nodes, n_groups):
    rng = np.random.default_rng(10 * n_nodes + n_groups)
    n = 3000
    codes = np.asfortranarray(rng.integers(0, 12, (n, 5)).astype(np.uint8))
    order = rng.permutation(n).astype(np.int64)
    starts, ends = _nodes(rng, n, n_nodes)
    feats = rng.integers(0, 5, n_nodes).astype(np.int64)
    feats[rng.random(n_nodes) < 0.3] = -1  # closed leaves: kept as they are
    bins = rng.integers(0, 12, n_nodes).astype(np.int64)
    expect, expect_left = stable_split(codes, order, starts, ends, feats, bins)
    got = order.copy()
    n_left = PT._partition_in_place_par(codes, got, starts, ends, feats, bins, n_groups)
    np.testing.assert_array_equal(got, expect)
    np.testing.assert_array_equal(n_left, expect_left)
    # the dispatcher, forced either way, and the serial kernel agree
    for cut in ((n_groups + 1, 0), (1, 0), (2, 1 << 40)):
        again = order.copy()
        np.testing.assert_array_equal(
            PT.partition_in_place(codes, again, starts, ends, feats, bins, cut), expect_left)
        np.testing.assert_array_equal(again, expect)


def test_node_groups_deal_every_split_node_once_largest_first():
    starts = np.array([0, 10, 50, 51, 90], dtype=np.int64)
    ends = np.array([10, 50, 51, 90, 100], dtype=np.int64)
    feats = np.array([0, 1, 2, -1, 0], dtype=np.int64)
    members, first = PT.node_groups(starts, ends, feats, 2)
    groups = [sorted(members[first[g]:first[g + 1]]) for g in range(2)]
    # sizes 10, 40, 1, (leaf), 10: 40 alone; 10, 10 and 1 in the other group
    assert groups == [[1], [0, 2, 4]]
    assert sorted(members) == [0, 1, 2, 4]


def _one_pass_best(hist, n_valid, totals, lam, mcw, mcc):
    """The greedy search's one-pass loop in Python floats (IEEE doubles, the same
    operations in the same order): the bits the compiled search must give."""
    nb, d = hist.shape[:2]
    gains = np.full((nb, d), -np.inf)
    arg = np.full((nb, d), -1)
    for j in range(nb):
        gt, ht = float(totals[j, 0]), float(totals[j, 1])
        parent = gt * gt / (ht + lam)
        for f in range(d):
            gl = hl = 0.0
            best, at = -np.inf, -1
            for b in range(n_valid[f]):
                gl += float(hist[j, f, b, 0])
                hl += float(hist[j, f, b, 1])
                hr, gr = ht - hl, gt - gl
                gain = gl * gl / (hl + lam) + gr * gr / (hr + lam) - parent
                if not (hl < mcw or hr < mcw or hl < mcc or hr < mcc) and gain > best:
                    best, at = gain, b
            gains[j, f], arg[j, f] = best, at
    return gains, arg


@pytest.mark.parametrize("mcw,mcc", [(1e-3, 0.0), (0.5, 4.0), (0.0, 0.0)])
def test_two_pass_split_search_gives_the_one_pass_bits(mcw, mcc):
    rng = np.random.default_rng(7)
    nb, d, n_bins = 5, 6, 40
    hist = np.zeros((nb, d, n_bins, 2))
    filled = rng.random((nb, d, n_bins)) < 0.6  # empty bins: exact zeros, as in a tree
    hist[..., 0] = rng.normal(size=(nb, d, n_bins)) * filled
    hist[..., 1] = rng.uniform(0.05, 0.25, (nb, d, n_bins)) * filled
    hist[1, 2] = 0.0  # a feature whose node is empty: every gain is rejected or equal
    n_valid = np.array([39, 1, 0, 17, 39, 5], dtype=np.int64)
    totals = np.ascontiguousarray(hist[:, 0].sum(axis=1))
    lam = 0.1
    gains, arg = _one_pass_best(hist, n_valid, totals, lam, mcw, mcc)
    best_gain = np.empty((nb, d))
    best_bin = np.empty((nb, d), dtype=np.int64)
    for j in range(nb):
        SS._best_block_totals(hist[j], n_valid, totals[j, 0], totals[j, 1], lam, mcw, mcc, 0,
                              d, best_gain[j], best_bin[j])
    assert best_gain.tobytes() == gains.tobytes()
    np.testing.assert_array_equal(best_bin, arg)
    rule = SS.SplitRule(lam, mcw, mcc, -np.inf)
    for kernel in (SS.best_splits_ser, SS.best_splits_par):
        feat, bins, top = kernel(hist, n_valid, np.zeros((0, 0, 0)), totals, rule, 4)
        for j in range(nb):
            f = int(np.argmax(gains[j])) if np.isfinite(gains[j]).any() else -1
            assert feat[j] == f and (f < 0 or bins[j] == arg[j, f])



@pytest.mark.parametrize("split_columns", [0, 3, 4])
def test_small_nodes_cut_by_columns_give_the_serial_histograms(monkeypatch, split_columns):
    rng = np.random.default_rng(split_columns)
    codes = np.asfortranarray(rng.integers(0, 30, (1500, 9)).astype(np.uint8))
    stats = rng.normal(size=(1500, 2))
    order = np.sort(rng.choice(1500, 1200, replace=False)).astype(np.int64)
    # nodes of very different sizes (one empty), as a depth's are
    starts, ends = np.array([0, 40, 40, 900]), np.array([40, 40, 900, 1200])
    monkeypatch.setattr(HG, "SMALL_NODE_COLUMNS", split_columns)
    got = {}
    for min_work in (0, 1 << 60):  # the parallel build, then the serial one
        monkeypatch.setattr(PAR, "HIST_PARALLEL_MIN_WORK", min_work)
        got[min_work] = HG.build_hist_dense(codes, stats, order, starts, ends, 30)
    assert got[0].tobytes() == got[1 << 60].tobytes()
    expect = np.zeros_like(got[0])
    for j, (s, e) in enumerate(zip(starts, ends, strict=True)):
        for f in range(9):
            np.add.at(expect[j, f], codes[order[s:e], f], stats[order[s:e]])
    np.testing.assert_allclose(got[0], expect, atol=1e-9)


def test_lpt_groups_balance_and_cover_every_item_once():
    cost = np.array([5, 0, 9, 2, 2, 7, 1], dtype=np.int64)
    members, first = PAR.lpt_groups(cost, 3)
    groups = [list(members[first[g]:first[g + 1]]) for g in range(3)]
    # 9 | 7 | 5, then 2 -> the 5's group (7), 2 -> the first of the two at 7, 1 -> the
    # one left at 7; each group in item order
    assert groups == [[2], [4, 5], [0, 3, 6]]
    assert sorted(members) == [0, 2, 3, 4, 5, 6]  # cost 0: left out
