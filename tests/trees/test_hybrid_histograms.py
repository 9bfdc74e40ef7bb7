"""Dense + sparse-feature histogram kernels (exclusive bundles, row-sparse lists): exact
sums, and bit-identical whatever the threads or the task split."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.trees import histograms as HG
from dpexp.trees import parallel as PAR
from dpexp.trees.sparse_features import sparse_feature_codes


def _mixed_codes(rng, n=3000, n_cont=5, n_onehot=12, n_words=0):
    """Continuous columns (many bins), one-hot binary columns (exclusive) and optionally
    co-occurring binary "word" columns; column-major."""
    cont = rng.integers(0, 40, size=(n, n_cont))
    hot = np.zeros((n, n_onehot), dtype=np.int64)
    if n_onehot:
        hot[np.arange(n), rng.integers(0, n_onehot, n)] = 1
    words = (rng.random((n, n_words)) < 0.2).astype(np.int64)
    return np.asfortranarray(np.hstack([cont, hot, words]).astype(np.uint8))


def test_one_hot_columns_become_exclusive_bundles():
    codes = _mixed_codes(np.random.default_rng(0), n_onehot=30)
    sc = sparse_feature_codes(codes)
    assert sc.dense_features.tolist() == [0, 1, 2, 3, 4]
    assert sorted(sc.sparse_features.tolist()) == list(range(5, 35))
    assert sc.n_bundles == 1 and sc.indptr is None
    assert sc.bundle_values.tolist() == [31]  # "all at default" plus one value per column
    # every row's bundle value names exactly its hot column
    hot = np.argmax(codes[:, 5:35], axis=1) + 5
    v = sc.bundle_codes[:, 0]
    assert (sc.bundle_feature[0][v] == hot).all() and (sc.bundle_code[0][v] == 1).all()


def test_co_occurring_columns_fall_back_to_row_sparse_lists():
    codes = _mixed_codes(np.random.default_rng(1), n_onehot=0, n_words=60)
    sc = sparse_feature_codes(codes)
    assert sc.n_bundles == 0 and sc.indptr is not None
    assert sc.sparse_features.size == 60


@pytest.mark.parametrize("k_stats", [2, 3])
@pytest.mark.parametrize("n_words", [0, 40])
def test_histograms_exact_and_identical_serial_parallel(monkeypatch, k_stats, n_words):
    rng = np.random.default_rng(k_stats + n_words)
    codes = _mixed_codes(rng, n_words=n_words)
    sc = sparse_feature_codes(codes)
    assert (sc.n_bundles > 0) == (n_words == 0)
    stats = rng.normal(size=(codes.shape[0], k_stats))
    order = np.sort(rng.choice(codes.shape[0], 2500, replace=False)).astype(np.int64)
    starts, ends = np.array([0, 700, 700, 1900]), np.array([700, 700, 1900, 2500])
    expect = HG.reference_histograms(codes, stats, order, starts, ends, 40)

    results = []
    for min_work, chunk in ((1 << 60, 8192), (0, 8192), (0, 97), (1 << 60, 97)):
        monkeypatch.setattr(PAR, "HIST_PARALLEL_MIN_WORK", min_work)
        monkeypatch.setattr(HG, "SPARSE_CHUNK_ROWS", chunk)
        for sparse in (sc, None):
            got = HG.build_hist_dense(codes, stats, order, starts, ends, 40, sparse_codes=sparse)
            np.testing.assert_allclose(got, expect, atol=1e-9)
            results.append((chunk, sparse is None, got))
    # the thread count never changes a bit; only the chunking of row-sparse lists does
    for chunk, plain, got in results:
        for c, p, other in results:
            if p == plain and (c == chunk or sc.n_bundles or plain):
                np.testing.assert_array_equal(got, other)
    monkeypatch.setattr(PAR, "HIST_PARALLEL_MIN_WORK", 0)
    a = HG.build_hist_dense(codes, stats, order, starts, ends, 40, fblock=4, sparse_codes=sc)
    b = HG.build_hist_dense(codes, stats, order, starts, ends, 40, fblock=64, sparse_codes=sc)
    np.testing.assert_array_equal(a, b)


def test_dense_only_data_has_no_sparse_features():
    rng = np.random.default_rng(0)
    codes = np.asfortranarray(rng.integers(0, 200, size=(500, 7)).astype(np.uint8))
    assert sparse_feature_codes(codes) is None


@pytest.mark.parametrize("k_stats", [1, 2, 3])
@pytest.mark.parametrize("n_words", [0, 40])
def test_unit_last_statistic_is_counted_bit_for_bit(monkeypatch, k_stats, n_words):
    """A last statistic of 1 for every row (unit hessians) counted instead of read gives
    exactly the histograms of reading it, on every kernel path."""
    rng = np.random.default_rng(10 + k_stats + n_words)
    codes = _mixed_codes(rng, n_words=n_words)
    sc = sparse_feature_codes(codes)
    stats = rng.normal(size=(codes.shape[0], k_stats))
    stats[:, -1] = 1.0
    order = np.sort(rng.choice(codes.shape[0], 2600, replace=False)).astype(np.int64)
    starts, ends = np.array([0, 900, 900, 2000]), np.array([900, 900, 2000, 2600])
    for min_work, chunk in ((1 << 60, 8192), (0, 97)):
        monkeypatch.setattr(PAR, "HIST_PARALLEL_MIN_WORK", min_work)
        monkeypatch.setattr(HG, "HIST_CHUNK_ROWS", chunk)
        monkeypatch.setattr(HG, "SPARSE_CHUNK_ROWS", chunk)
        for sparse in (sc, None):
            read = HG.build_hist_dense(codes, stats, order, starts, ends, 40, sparse_codes=sparse)
            counted = HG.build_hist_dense(codes, stats, order, starts, ends, 40,
                                         sparse_codes=sparse, unit_last=True)
            np.testing.assert_array_equal(counted, read)
    with pytest.raises(ValueError, match="statistics"):
        HG.dense_hist_into(codes, stats, order, starts, ends,
                          np.empty((4, codes.shape[1], 40, k_stats + 1)), np.arange(4))


def test_reference_histograms_on_a_hand_computed_example():
    """The oracle itself: two nodes, one feature with codes 0/1/2, two statistics."""
    codes = np.array([[0], [2], [2], [1], [0]], dtype=np.uint8)
    stats = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0], [5.0, 50.0]])
    order = np.array([4, 1, 0, 2, 3])
    got = HG.reference_histograms(codes, stats, order, [0, 2], [2, 5], 3)
    expected = np.zeros((2, 1, 3, 2))
    expected[0, 0, 0] = [5.0, 50.0]  # row 4
    expected[0, 0, 2] = [2.0, 20.0]  # row 1
    expected[1, 0, 0] = [1.0, 10.0]  # row 0
    expected[1, 0, 2] = [3.0, 30.0]  # row 2
    expected[1, 0, 1] = [4.0, 40.0]  # row 3
    np.testing.assert_array_equal(got, expected)
