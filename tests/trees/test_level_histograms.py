"""The one-pass build of a level's histograms in row order (dpexp.trees.level_histograms)
gives the node-by-node column-task build's histograms bit for bit, and falls back when a
node's rows are not ascending."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.papers.dpboost.estimators import NPGBDTRegressor
from dpexp.trees import histograms as HG
from dpexp.trees import level_histograms as LH
from dpexp.trees.hist_layout import feature_block


def _level(n_rows, n_nodes, seed, *, subset=1.0):
    """Ascending row runs of ``n_nodes`` nodes interleaved over the table (a stable
    partition of a sorted subset by a random node label), as a tree's level holds them."""
    rng = np.random.default_rng(seed)
    rows = np.flatnonzero(rng.random(n_rows) < subset)
    node = rng.integers(0, n_nodes, size=rows.size)
    order = rows[np.argsort(node, kind="stable")]
    counts = np.bincount(node, minlength=n_nodes)
    ends = np.cumsum(counts)
    return order, ends - counts, ends


def _table(n_rows, n_features, n_bins, seed):
    rng = np.random.default_rng(seed)
    codes = np.asfortranarray(rng.integers(0, n_bins, size=(n_rows, n_features), dtype=np.uint8))
    stats = np.column_stack([rng.normal(size=n_rows), rng.random(n_rows) + 0.5])
    return codes, stats


def _classic(codes, stats, order, starts, ends, out, slots, unit_last, monkeypatch):
    monkeypatch.setattr(HG, "MERGED_MIN_CODES", 1 << 62)
    HG.dense_hist_into(codes, stats, order, starts, ends, out, slots, unit_last=unit_last)


@pytest.mark.parametrize("n_features", [33, 40, 41, 43])
@pytest.mark.parametrize("n_nodes", [2, 5, 16])
@pytest.mark.parametrize("unit_last", [False, True])
def test_merged_build_equals_node_by_node(n_features, n_nodes, unit_last, monkeypatch):
    codes, stats = _table(6000, n_features, 37, seed=n_features + n_nodes)
    if unit_last:
        stats[:, 1] = 1.0
    order, starts, ends = _level(6000, n_nodes, seed=n_nodes, subset=0.7)
    slots = np.arange(n_nodes)[::-1] + 3  # slots need not be the node positions
    shape = (n_nodes + 3, n_features, 37, 2)
    want = np.full(shape, 7.0)
    _classic(codes, stats, order, starts, ends, want, slots, unit_last, monkeypatch)
    got = np.full(shape, 7.0)
    assert LH.merged_hist_into(codes, stats, order, starts, ends, got, slots,
                               np.arange(n_features), unit_last=unit_last,
                               fblock=feature_block(n_features), n_rows=order.size)
    np.testing.assert_array_equal(got, want)  # bit for bit, untouched slots too
    assert np.all(got[:3] == 7.0)


def test_merged_build_serial_and_parallel_agree(monkeypatch):
    codes, stats = _table(5000, 48, 255, seed=1)
    order, starts, ends = _level(5000, 8, seed=2)
    out = {}
    for threshold in (1 << 62, 0):  # never / always parallel
        monkeypatch.setattr(LH.par, "HIST_PARALLEL_MIN_WORK", threshold)
        h = np.zeros((8, 48, 255, 2))
        assert LH.merged_hist_into(codes, stats, order, starts, ends, h, np.arange(8),
                                   np.arange(48), unit_last=False, fblock=6,
                                   n_rows=order.size)
        out[threshold] = h
    np.testing.assert_array_equal(out[0], out[1 << 62])


def test_empty_nodes_get_zero_histograms():
    codes, stats = _table(3000, 40, 16, seed=3)
    order, starts, ends = _level(3000, 4, seed=4)
    starts = np.concatenate([starts, [ends[-1]]])  # a fifth node without rows
    ends = np.concatenate([ends, [ends[-1]]])
    h = np.full((5, 40, 16, 2), 3.0)
    assert LH.merged_hist_into(codes, stats, order, starts, ends, h, np.arange(5),
                               np.arange(40), unit_last=False, fblock=8, n_rows=order.size)
    assert np.all(h[4] == 0.0)
    np.testing.assert_allclose(h[:4].sum(axis=(0, 2)), np.tile(stats.sum(axis=0), (40, 1)))


def test_unsorted_run_falls_back_and_leaves_no_marks(monkeypatch):
    codes, stats = _table(4000, 40, 16, seed=5)
    order, starts, ends = _level(4000, 3, seed=6)
    s, e = starts[1], ends[1]
    order[s:e] = order[s:e][::-1]  # node 1's run descends
    h = np.full((3, 40, 16, 2), 5.0)
    assert not LH.merged_hist_into(codes, stats, order, starts, ends, h, np.arange(3),
                                   np.arange(40), unit_last=False, fblock=8,
                                   n_rows=order.size)
    assert np.all(h == 5.0)  # nothing written
    mark = np.full(4000, -1, dtype=np.int32)
    rows = np.empty(4001, dtype=np.int64)
    slot = np.empty(4001, dtype=np.int32)
    assert LH._merge_nodes(order, starts, ends, np.arange(3), mark, rows, slot) == -1
    assert np.all(mark == -1)
    # the public build then takes the node-by-node path and is still right
    monkeypatch.setattr(HG, "MERGED_MIN_CODES", 0)
    got = np.zeros((3, 40, 16, 2))
    HG.dense_hist_into(codes, stats, order, starts, ends, got, np.arange(3))
    want = HG.reference_histograms(codes, stats, order, starts, ends, 16)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_dense_hist_into_takes_the_merged_path_only_where_it_applies(monkeypatch):
    calls = []
    real = HG.merged_hist_into

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(HG, "merged_hist_into", spy)
    monkeypatch.setattr(HG, "MERGED_MIN_CODES", 0)
    codes, stats = _table(2000, 40, 16, seed=7)
    order, starts, ends = _level(2000, 4, seed=8)
    out = np.zeros((4, 40, 16, 2))
    HG.dense_hist_into(codes, stats, order, starts, ends, out, np.arange(4))
    assert len(calls) == 1
    # one node, few columns (row-chunk tasks sum in chunks), or three statistics: not merged
    HG.dense_hist_into(codes, stats, order, starts[:1], ends[:1], out, np.arange(1))
    HG.dense_hist_into(np.asfortranarray(codes[:, :8]), stats, order, starts, ends,
                       out[:, :8], np.arange(4))
    stats3 = np.column_stack([stats, stats[:, :1]])
    HG.dense_hist_into(codes, stats3, order, starts, ends, np.zeros((4, 40, 16, 3)),
                       np.arange(4))
    assert len(calls) == 1


def test_grown_trees_do_not_change(monkeypatch):
    """A whole NP fit on a table large enough for the merged path equals the fit with it
    switched off, tree for tree."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(3000, 40))
    y = np.tanh(X[:, 0] + X[:, 1] * X[:, 2]) + 0.1 * rng.normal(size=3000)
    kw = dict(n_trees=4, max_depth=5, learning_rate=0.3, min_samples_leaf=1,
              feature_domain=np.tile([-5.0, 5.0], (40, 1)), label_domain=(-2.0, 2.0))
    monkeypatch.setattr(HG, "MERGED_MIN_CODES", 0)
    merged = NPGBDTRegressor(**kw).fit(X, y).predict(X)
    monkeypatch.setattr(HG, "MERGED_MIN_CODES", 1 << 62)
    classic = NPGBDTRegressor(**kw).fit(X, y).predict(X)
    np.testing.assert_array_equal(merged, classic)
