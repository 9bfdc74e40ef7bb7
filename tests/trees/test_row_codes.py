"""Row-major histogram codes (:class:`dpexp.trees.row_codes.RowCodes`) and the compiled
per-depth bookkeeping (:func:`dpexp.trees.levels.level_children`): the same
histograms and trees as the column kernels and the step-by-step bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpexp.trees import grower as G
from dpexp.trees import histograms as HG
from dpexp.trees import levels as LV
from dpexp.trees import parallel as PAR
from dpexp.trees import partition as PT
from dpexp.trees import row_codes as RC
from dpexp.trees.binning import fit_bin_mapper
from dpexp.trees.hist_layout import dense_layout
from dpexp.trees.policies import GreedySplit, NewtonLeaf
from dpexp.trees.row_codes import row_major_codes
from dpexp.trees.sparse_features import sparse_feature_codes


def _codes(rng, n, n_cont=3, cont_bins=40, n_onehot=12):
    cont = rng.integers(0, cont_bins, size=(n, n_cont))
    hot = np.zeros((n, n_onehot), dtype=np.int64)
    if n_onehot:
        hot[np.arange(n), rng.integers(0, n_onehot, n)] = 1
    return np.asfortranarray(np.hstack([cont, hot]).astype(np.uint8))


def test_row_codes_hold_every_column_at_its_offset():
    rng = np.random.default_rng(0)
    codes = _codes(rng, 500)
    sc = sparse_feature_codes(codes)
    rc = row_major_codes(codes, sc)
    assert rc.codes.dtype == np.uint8 and rc.codes.flags.c_contiguous
    cols = [codes[:, f] for f in sc.dense_features]
    cols += [sc.bundle_codes[:, c] for c in range(sc.n_bundles)]
    assert rc.n_columns == len(cols)
    for c, col in enumerate(cols):
        np.testing.assert_array_equal(rc.codes[:, c] - rc.offset[c], col)
        assert rc.offset[c + 1] - rc.offset[c] == col.max() + 1
    # no sparse features: every feature is a column
    plain = np.asfortranarray(rng.integers(0, 9, size=(50, 4)).astype(np.uint8))
    np.testing.assert_array_equal(row_major_codes(plain).codes - row_major_codes(plain).offset[:4],
                                  plain)


def test_row_codes_only_for_narrow_tables_with_few_bins():
    rng = np.random.default_rng(1)
    assert row_major_codes(_codes(rng, 300, n_cont=8, cont_bins=200)) is None  # > 256 bins
    wide = np.asfortranarray(rng.integers(0, 2, size=(300, 40)).astype(np.uint8))
    assert row_major_codes(wide, max_columns=32) is None  # > 32 columns, none sparse
    assert row_major_codes(wide[:0]) is None
    assert row_major_codes(_codes(rng, 300), max_columns=1) is None


@pytest.mark.parametrize("k_stats,unit", [(1, False), (2, False), (2, True), (3, False),
                                          (3, True)])
@pytest.mark.parametrize("chunk", [8192, 61])
@pytest.mark.parametrize("with_bundles", [True, False])
def test_row_kernel_equals_column_kernel_bit_for_bit(monkeypatch, k_stats, unit, chunk,
                                                     with_bundles):
    rng = np.random.default_rng(k_stats * 10 + chunk + with_bundles)
    codes = _codes(rng, 2000, n_onehot=12 if with_bundles else 0)
    sc = sparse_feature_codes(codes)
    rc = row_major_codes(codes, sc)
    assert rc is not None and (sc is not None) == with_bundles
    stats = rng.normal(size=(2000, k_stats))
    if unit:
        stats[:, -1] = 1.0
    order = np.sort(rng.choice(2000, 1500, replace=False)).astype(np.int64)
    starts, ends = np.array([0, 400, 400, 1100]), np.array([400, 400, 1100, 1500])
    monkeypatch.setattr(HG, "HIST_CHUNK_ROWS", chunk)  # partial sums per node or not
    got = {}
    for min_work in (0, 1 << 60):
        monkeypatch.setattr(PAR, "HIST_PARALLEL_MIN_WORK", min_work)
        for rows in (None, rc):
            got[min_work, rows is None] = HG.build_hist_dense(
                codes, stats, order, starts, ends, 40, sparse_codes=sc, unit_last=unit,
                row_codes=rows)
    ref = got[1 << 60, True]  # serial, column kernels
    for key, h in got.items():
        np.testing.assert_array_equal(h, ref, err_msg=str(key))
    expect = np.zeros_like(ref)
    for j, (s, e) in enumerate(zip(starts, ends, strict=True)):
        for f in range(codes.shape[1]):
            np.add.at(expect[j, f], codes[order[s:e], f], stats[order[s:e]])
    np.testing.assert_allclose(ref, expect, atol=1e-9)


def test_row_codes_must_fit_the_table():
    rng = np.random.default_rng(2)
    codes = _codes(rng, 100)
    other = row_major_codes(_codes(rng, 100, n_onehot=0))
    with pytest.raises(ValueError, match="do not fit"):
        dense_layout(codes, sparse_feature_codes(codes), other)


def _table(rng, n):
    cont = rng.normal(size=(n, 3))
    hot = np.zeros((n, 5))
    hot[np.arange(n), rng.integers(0, 5, n)] = 1.0
    X = np.hstack([cont, hot])
    domain = np.vstack([np.tile([-4.0, 4.0], (3, 1)), np.tile([0.0, 1.0], (5, 1))])
    binary = np.arange(8) >= 3
    m = fit_bin_mapper(X, feature_domain=domain, categorical_features=binary,
                       n_categories=np.where(binary, 2, 0), max_bins=32)
    y = np.where(cont[:, 0] + hot[:, 1] + rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y, m


@pytest.mark.parametrize("scores", [False, True])
def test_trees_the_same_with_and_without_row_codes(monkeypatch, scores):
    rng = np.random.default_rng(3)
    X, y, m = _table(rng, 3000)
    rows = np.sort(rng.choice(3000, 2500, replace=False))
    stats = np.column_stack([-y + 0.1 * np.cos(np.arange(3000)), np.ones(3000)])
    kw = dict(max_depth=5, split_policy=GreedySplit(0.1), leaf_policy=NewtonLeaf(0.1),
              unit_last=True)
    out = []
    for max_columns in (32, 0):
        monkeypatch.setattr(RC, "ROW_CODES_MAX_COLUMNS", max_columns)
        data = m.transform(X)
        assert (data.row_codes() is not None) == (max_columns > 0)
        F = np.zeros(3000) if scores else None
        t = G.grow_tree(data, stats, rows, m, rng=np.random.default_rng(0), scores=F,
                        score_scale=0.5, **kw)
        out.append((t, F))
    (a, fa), (b, fb) = out
    for field in ("feature", "threshold", "child_start", "value"):
        np.testing.assert_array_equal(getattr(a.tree, field), getattr(b.tree, field))
    if scores:
        np.testing.assert_array_equal(fa, fb)
    assert (a.tree.feature >= 0).sum() > 10


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(1, 9), counts=st.booleans())
def test_level_children_matches_step_by_step_bookkeeping(seed, n_nodes, counts):
    rng = np.random.default_rng(seed)
    d, n_bins = 3, 6
    hist = rng.integers(0, 5, size=(n_nodes, d, n_bins, 2)).astype(float)
    hist[..., 0] = rng.normal(size=(n_nodes, d, n_bins))
    hist[:, 1:, :, 1] = hist[:, :1, :, 1]  # every feature counts the node's rows once
    totals = hist[:, 0].sum(axis=1)
    sizes = totals[:, 1].astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    ends = starts + sizes
    feat = np.where(rng.random(n_nodes) < 0.7, rng.integers(0, d, n_nodes), -1)
    bins = np.where(feat >= 0, rng.integers(0, n_bins - 1, n_nodes), -1)
    left_rows = np.array([hist[j, feat[j], : bins[j] + 1, 1].sum() if feat[j] >= 0 else sizes[j]
                          for j in range(n_nodes)]).astype(np.int64)
    n_left = np.zeros(0, dtype=np.int64) if counts else left_rows
    js, closed, cs, ce, ct, small, big, small_rows = LV.level_children(
        hist, totals, feat, bins, starts, ends, n_left)
    np.testing.assert_array_equal(js, np.flatnonzero(feat >= 0))
    np.testing.assert_array_equal(closed, np.flatnonzero(feat < 0))
    np.testing.assert_array_equal(ct, LV.child_totals(hist, totals, js, feat[js], bins[js]))
    mid = starts[js] + left_rows[js]
    np.testing.assert_array_equal(cs, np.column_stack([starts[js], mid]).ravel())
    np.testing.assert_array_equal(ce, np.column_stack([mid, ends[js]]).ravel())
    child_sizes = (ce - cs).reshape(-1, 2)
    np.testing.assert_array_equal(small, 2 * np.arange(js.size) + np.argmin(child_sizes, axis=1))
    np.testing.assert_array_equal(big, small ^ 1)
    assert small_rows == int((ce - cs)[small].sum())


def test_sparse_partition_keeps_leaf_nodes_in_place():
    rng = np.random.default_rng(4)
    dense = rng.integers(0, 4, size=(60, 2))
    csc = sp.csc_matrix(dense)
    order = np.arange(60, dtype=np.int64)
    n_left = PT.partition_sparse(csc.indptr.astype(np.int64), csc.indices.astype(np.int32),
                                csc.data.astype(np.uint8), np.zeros(2, dtype=np.uint8), order,
                                np.array([0, 30]), np.array([30, 60]), np.array([-1, 1]),
                                np.array([-1, 1]), 60)
    np.testing.assert_array_equal(order[:30], np.arange(30))  # the leaf: untouched
    seg = np.arange(30, 60)
    left = dense[seg, 1] <= 1
    np.testing.assert_array_equal(order[30:], np.concatenate([seg[left], seg[~left]]))
    assert n_left.tolist() == [30, int(left.sum())]
