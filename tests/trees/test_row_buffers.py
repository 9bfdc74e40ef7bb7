"""The large-table paths of the grower: double-buffered partitions that move the gathered
statistics with their rows, chunked (parallel) partitions and row-chunk histogram tasks
with partial sums. Each must give bit-for-bit the trees of the small-table path."""

from __future__ import annotations

import numpy as np
import pytest
from trees.stable_split import stable_split

from dpexp.trees import grower as G
from dpexp.trees import histograms as HG
from dpexp.trees import parallel as PAR
from dpexp.trees import partition as PT
from dpexp.trees import row_stores as RS
from dpexp.trees.binning import fit_bin_mapper
from dpexp.trees.policies import GreedySplit, NewtonLeaf


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("chunk", [7, 64, 1 << 15])
def test_partition_rows_is_the_stable_partition_with_statistics(monkeypatch, parallel, chunk):
    rng = np.random.default_rng(chunk)
    n = 600
    codes = np.asfortranarray(rng.integers(0, 9, (n, 4)).astype(np.uint8))
    order = np.sort(rng.choice(5 * n, n, replace=False)) % n
    order = np.unique(order).astype(np.int64)
    m = order.size
    stats = rng.normal(size=(2, m))
    # three nodes, one of them closed (feature -1), and positions outside any node
    starts, ends = np.array([3, 120, 300]), np.array([120, 300, m - 5])
    feats, bins = np.array([1, -1, 3]), np.array([4, -1, 2])
    monkeypatch.setattr(PAR, "PARTITION_PARALLEL_MIN_ROWS", 0 if parallel else 1 << 60)
    monkeypatch.setattr(PAR, "PARTITION_CHUNK_ROWS", chunk)
    out = np.full_like(order, -7)
    out_stats = np.full_like(stats, np.nan)
    n_left = PT.partition_rows(codes, order, starts, ends, feats, bins, out, ordered=stats,
                              out_ordered=out_stats)
    expect, expect_left = stable_split(codes, order, starts, ends, feats, bins)
    np.testing.assert_array_equal(n_left, expect_left)
    inside = np.zeros(m, bool)
    for s, e in zip(starts, ends, strict=True):
        inside[s:e] = True
    np.testing.assert_array_equal(out[inside], expect[inside])
    assert (out[~inside] == -7).all()  # positions outside the nodes are not written
    # every statistic travelled with its row
    pos = {r: p for p, r in enumerate(order)}
    src = np.array([pos[r] for r in out[inside]])
    np.testing.assert_array_equal(out_stats[:, inside], stats[:, src])
    # the in-place one-pass partition agrees
    again = order.copy()
    np.testing.assert_array_equal(
        PT.partition_dense(codes, again, starts, ends, feats, bins), expect_left)
    np.testing.assert_array_equal(again[inside], expect[inside])


def _mixed_table(rng, n):
    cont = rng.normal(size=(n, 4))
    hot = np.zeros((n, 6))
    hot[np.arange(n), rng.integers(0, 6, n)] = 1.0
    X = np.hstack([cont, hot])
    y = np.where(cont[:, 0] + hot[:, 2] - 0.5 * cont[:, 1] + rng.normal(size=n) > 0, 1.0, -1.0)
    domain = np.vstack([np.tile([-4.0, 4.0], (4, 1)), np.tile([0.0, 1.0], (6, 1))])
    binary = np.arange(10) >= 4
    m = fit_bin_mapper(X, feature_domain=domain, categorical_features=binary,
                       n_categories=np.where(binary, 2, 0), max_bins=32)
    return m.transform(X), y, m


def _tree(data, y, m, rows):
    stats = np.column_stack([-y + 0.25 * np.sin(np.arange(y.size)), np.ones_like(y)])
    return G.grow_tree(data, stats, rows, m, max_depth=5, split_policy=GreedySplit(0.1),
                       leaf_policy=NewtonLeaf(0.1), rng=np.random.default_rng(0))


@pytest.mark.parametrize("subset", [False, True])
def test_large_table_paths_grow_the_same_tree(monkeypatch, subset):
    rng = np.random.default_rng(3)
    data, y, m = _mixed_table(rng, 5000)
    assert data.sparse_codes() is not None and data.sparse_codes().n_bundles > 0
    rows = np.sort(rng.choice(5000, 3100, replace=False)) if subset else np.arange(5000)
    given = rows.copy()

    small = _tree(data, y, m, rows)  # in-place partitions, statistics gathered per build
    monkeypatch.setattr(RS, "MOVE_STATS_MIN_ROWS", 0)
    monkeypatch.setattr(PAR, "PARTITION_PARALLEL_MIN_ROWS", 0)
    monkeypatch.setattr(PAR, "PARTITION_CHUNK_ROWS", 301)
    monkeypatch.setattr(PAR, "HIST_PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(PAR, "LEVEL_PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(HG, "HIST_CHUNK_ROWS", 97)  # several partial sums per node
    large = _tree(data, y, m, rows)
    np.testing.assert_array_equal(rows, given)  # the caller's rows are never written
    for field in ("feature", "threshold", "child_start", "value"):
        a, b = getattr(small.tree, field), getattr(large.tree, field)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=field)
    np.testing.assert_array_equal(small.tree.feature, large.tree.feature)
    np.testing.assert_array_equal(small.bins, large.bins)
    for seg in ("leaf_start", "leaf_end", "leaf_node"):
        np.testing.assert_array_equal(getattr(small, seg), getattr(large, seg))
    for i in range(small.leaf_start.size):
        s, e = small.leaf_start[i], small.leaf_end[i]
        np.testing.assert_array_equal(small.order[s:e], large.order[s:e])
    # partial sums change the order of additions only: the serial and parallel kernels
    # still agree bit for bit on that plan
    monkeypatch.setattr(PAR, "HIST_PARALLEL_MIN_WORK", 1 << 60)
    monkeypatch.setattr(PAR, "PARTITION_PARALLEL_MIN_ROWS", 1 << 60)
    monkeypatch.setattr(PAR, "LEVEL_PARALLEL_MIN_WORK", 1 << 60)
    serial = _tree(data, y, m, rows)
    np.testing.assert_array_equal(serial.tree.value, large.tree.value)
    np.testing.assert_array_equal(serial.tree.feature, large.tree.feature)


@pytest.mark.parametrize("max_row_columns", [0, 32])
@pytest.mark.parametrize("chunk", [50, 8192])
def test_histogram_task_plans_are_exact(monkeypatch, max_row_columns, chunk):
    rng = np.random.default_rng(chunk + max_row_columns)
    codes = np.asfortranarray(rng.integers(0, 30, (1500, 9)).astype(np.uint8))
    stats = rng.normal(size=(1500, 2))
    order = np.sort(rng.choice(1500, 1200, replace=False)).astype(np.int64)
    starts, ends = np.array([0, 500, 500, 900]), np.array([500, 500, 900, 1200])
    monkeypatch.setattr(HG, "ROW_TASK_MAX_COLUMNS", max_row_columns)
    monkeypatch.setattr(HG, "HIST_CHUNK_ROWS", chunk)
    got = {}
    for min_work in (0, 1 << 60):
        monkeypatch.setattr(PAR, "HIST_PARALLEL_MIN_WORK", min_work)
        got[min_work] = HG.build_hist_dense(codes, stats, order, starts, ends, 30)
    np.testing.assert_array_equal(got[0], got[1 << 60])
    expect = np.zeros_like(got[0])
    for j, (s, e) in enumerate(zip(starts, ends, strict=True)):
        for f in range(9):
            np.add.at(expect[j, f], codes[order[s:e], f], stats[order[s:e]])
    np.testing.assert_allclose(got[0], expect, atol=1e-9)


def _force_large_table_path(monkeypatch):
    """Moved statistics, parallel chunked partitions and partial histogram sums on a
    table a few thousand rows long."""
    monkeypatch.setattr(RS, "MOVE_STATS_MIN_ROWS", 0)
    monkeypatch.setattr(PAR, "PARTITION_PARALLEL_MIN_ROWS", 0)
    monkeypatch.setattr(PAR, "PARTITION_CHUNK_ROWS", 301)
    monkeypatch.setattr(HG, "HIST_CHUNK_ROWS", 97)


@pytest.mark.parametrize("large", [False, True])
def test_unit_hessians_counted_grow_the_same_tree(monkeypatch, large):
    """``unit_last=True`` (hessians of 1 counted, not stored or moved) grows bit for bit
    the tree of reading them, on the small- and the large-table path."""
    rng = np.random.default_rng(8)
    data, y, m = _mixed_table(rng, 4000)
    rows = np.sort(rng.choice(4000, 2900, replace=False))
    if large:
        _force_large_table_path(monkeypatch)
    stats = np.column_stack([-y + 0.25 * np.cos(np.arange(y.size)), np.ones_like(y)])
    grown = [G.grow_tree(data, stats, rows, m, max_depth=5, split_policy=GreedySplit(0.1),
                         leaf_policy=NewtonLeaf(0.1), rng=np.random.default_rng(0),
                         unit_last=unit)
             for unit in (False, True)]
    read, counted = grown
    for field in ("feature", "threshold", "child_start", "value"):
        np.testing.assert_array_equal(getattr(read.tree, field), getattr(counted.tree, field))
    for seg in ("leaf_start", "leaf_end", "leaf_node"):
        np.testing.assert_array_equal(getattr(read, seg), getattr(counted, seg))
    np.testing.assert_array_equal(read.order, counted.order)


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("depth", [1, 3, 5])
def test_scores_updated_without_the_last_partition(monkeypatch, large, depth):
    """``scores=`` (unit hessians, dense data) scores the last depth's rows where they lie:
    the same tree and bit for bit the scores of partitioning and adding leaf segments."""
    rng = np.random.default_rng(depth)
    data, y, m = _mixed_table(rng, 3000)
    rows = np.sort(rng.choice(3000, 2400, replace=False))
    if large:
        _force_large_table_path(monkeypatch)
    stats = np.column_stack([-y + 0.3 * np.sin(np.arange(y.size)), np.ones_like(y)])
    kw = dict(max_depth=depth, split_policy=GreedySplit(0.1, min_samples_leaf=40),
              leaf_policy=NewtonLeaf(0.1))
    ref = G.grow_tree(data, stats, rows, m, rng=np.random.default_rng(0), unit_last=True, **kw)
    before = rng.normal(size=3000)
    expect = before.copy()
    got = before.copy()
    ref.add_to_scores(expect, 0.05, grown_rows_only=True)
    fused = G.grow_tree(data, stats, rows, m, rng=np.random.default_rng(0), unit_last=True,
                        scores=got, score_scale=0.05, **kw)
    np.testing.assert_array_equal(got, expect)
    for field in ("feature", "threshold", "child_start", "value"):
        np.testing.assert_array_equal(getattr(ref.tree, field), getattr(fused.tree, field))
    assert (ref.tree.feature[ref.tree.depth == depth - 1] >= 0).any()  # last depth splits
    assert fused.order is None
    with pytest.raises(ValueError, match="leaf segments"):
        fused.add_to_scores(got, 1.0, grown_rows_only=True)
    # rows outside the tree's rows keep their scores
    outside = np.setdiff1d(np.arange(3000), rows)
    np.testing.assert_array_equal(got[outside], before[outside])
    assert not np.array_equal(got[rows], before[rows])


@pytest.mark.parametrize("large", [False, True])
def test_histogram_buffers_keep_unused_bins_zero(monkeypatch, large):
    """The zeroed histogram buffers a fit's trees share are never written past a
    feature's bins (the grower relies on it instead of clearing them), and reusing them
    changes no tree."""
    rng = np.random.default_rng(11)
    data, y, m = _mixed_table(rng, 3000)
    if large:
        _force_large_table_path(monkeypatch)
    ws = G.GrowWorkspace()
    kw = dict(max_depth=5, split_policy=GreedySplit(0.1), leaf_policy=NewtonLeaf(0.1),
              unit_last=True)
    n_bins = m.n_bins
    assert n_bins.min() < n_bins.max()  # binary and many-bin features side by side
    for t in range(3):
        rows = np.sort(rng.choice(3000, 2000, replace=False))
        stats = np.column_stack([rng.normal(size=3000), np.ones(3000)])
        shared = G.grow_tree(data, stats, rows, m, rng=np.random.default_rng(t),
                             workspace=ws, **kw)
        fresh = G.grow_tree(data, stats, rows, m, rng=np.random.default_rng(t), **kw)
        np.testing.assert_array_equal(shared.tree.value, fresh.tree.value)
        np.testing.assert_array_equal(shared.tree.feature, fresh.tree.feature)
        bufs = [b for k, b in ws._flat.items() if isinstance(k, tuple) and k[0].startswith("hist")]
        assert len(bufs) == 2
        for buf in bufs:
            h = buf[: buf.size // (m.n_features * m.max_bins * 2) * m.n_features * m.max_bins
                    * 2].reshape(-1, m.n_features, m.max_bins, 2)
            for f in range(m.n_features):
                assert not h[:, f, n_bins[f]:].any()
            assert h[:, :, 0].any()  # the buffers were used


@pytest.mark.parametrize("unit_last", [False, True])
def test_row_stores_agree_bit_for_bit(unit_last):
    """The in-place and moved-statistics storages: the same partition, the same
    histograms (the grower may use either; the choice must never show)."""
    rng = np.random.default_rng(5)
    X = rng.random((900, 5))
    m = fit_bin_mapper(X, feature_domain=np.tile([0.0, 1.0], (5, 1)), max_bins=16)
    data = m.transform(X)
    stats = np.column_stack([rng.normal(size=900), np.ones(900) if unit_last
                             else rng.random(900)])
    rows = np.sort(rng.choice(900, 700, replace=False))
    given = rows.copy()
    stores = [RS.InPlaceRows(data, stats, rows.copy(), RS.GrowWorkspace(), unit_last),
              RS.MovedStatsRows(data, stats, rows, RS.GrowWorkspace(), unit_last)]
    starts, ends = np.array([0, 300]), np.array([300, 700])
    feats, bins = np.array([2, -1]), np.array([7, -1])
    results = []
    for store in stores:
        n_left = store.partition(starts, ends, feats, bins, with_stats=True)
        c_starts = np.array([0, n_left[0], 300])
        c_ends = np.array([n_left[0], 300, 700])
        hist = np.zeros((3, 5, 16, 2))
        store.build(c_starts, c_ends, hist, np.arange(3), 700)
        results.append((n_left, np.array(store.order), hist))
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(rows, given)  # the caller's rows were never written
    expect = HG.reference_histograms(data.codes, stats, results[0][1], c_starts, c_ends, 16)
    np.testing.assert_allclose(results[0][2], expect, atol=1e-9)


@pytest.mark.parametrize("depth", [1, 4])
def test_compact_rows_give_the_same_tree_segments_and_scores(monkeypatch, depth):
    """A small share of a large table grows on a compact copy of its rows: the same tree,
    leaf segments in row ids, and fused scores bit for bit (``scores=`` and without).
    Tables with sparse features are not compacted (their default bins are the table's)."""
    rng = np.random.default_rng(10 + depth)
    X = rng.normal(size=(4000, 6))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=4000) > 0, 1.0, -1.0)
    m = fit_bin_mapper(X, feature_domain=np.tile([-4.0, 4.0], (6, 1)), max_bins=64)
    data = m.transform(X)
    rows = rng.choice(4000, 400, replace=False)  # unsorted, 1/10 of the table
    stats = np.column_stack([-y + 0.3 * np.sin(np.arange(y.size)), np.ones_like(y)])
    kw = dict(max_depth=depth, split_policy=GreedySplit(0.1, min_samples_leaf=10),
              leaf_policy=NewtonLeaf(0.1), unit_last=True)
    before = rng.normal(size=4000)
    out = {}
    for compact in (False, True):
        monkeypatch.setattr(G, "COMPACT_MIN_BYTES", 0 if compact else 1 << 62)
        assert G.worth_compacting(data, rows) == compact
        plain = G.grow_tree(data, stats, rows, m, rng=np.random.default_rng(0), **kw)
        scored = before.copy()
        G.grow_tree(data, stats, rows, m, rng=np.random.default_rng(0), scores=scored,
                    score_scale=0.05, **kw)
        segment_scores = before.copy()
        plain.add_to_scores(segment_scores, 0.05, grown_rows_only=True)
        out[compact] = (plain, scored, segment_scores)
    (a, a_scored, a_seg), (b, b_scored, b_seg) = out[False], out[True]
    for field in ("feature", "threshold", "child_start", "value"):
        np.testing.assert_array_equal(getattr(a.tree, field), getattr(b.tree, field))
    np.testing.assert_array_equal(a.order, b.order)
    np.testing.assert_array_equal(a_scored, b_scored)
    np.testing.assert_array_equal(a_seg, b_seg)
    assert not np.array_equal(b_scored, before)
    monkeypatch.setattr(G, "COMPACT_MIN_BYTES", 0)
    assert not G.worth_compacting(_mixed_table(rng, 4000)[0], rows)
