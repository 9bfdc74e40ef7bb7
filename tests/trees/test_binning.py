"""Binning: public-domain grid by default, quantiles as an option, sparse == dense."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpexp.trees.binning import (
    BinMapper,
    categorical_thresholds,
    domain_thresholds,
    fit_bin_mapper,
    quantile_thresholds,
)


def test_domain_grid_is_data_independent():
    rng = np.random.default_rng(0)
    dom = np.array([[0.0, 1.0], [-5.0, 5.0]])
    a = fit_bin_mapper(rng.random((50, 2)), feature_domain=dom)
    b = fit_bin_mapper(rng.random((70, 2)) * 3, feature_domain=dom)
    for ta, tb in zip(a.thresholds, b.thresholds, strict=True):
        np.testing.assert_array_equal(ta, tb)
    assert a.strategy == "domain" and a.n_bins.tolist() == [255, 255]
    np.testing.assert_allclose(domain_thresholds(0, 1, 4), [0.25, 0.5, 0.75])


def test_codes_match_thresholds_and_categoricals():
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.uniform(-1, 1, 500), rng.integers(0, 4, 500)])
    m = fit_bin_mapper(
        X, feature_domain=[[-1, 1], [0, 3]], categorical_features=[False, True],
        n_categories=[0, 4], max_bins=16,
    )
    data = m.transform(X)
    assert data.codes.dtype == np.uint8 and m.n_bins.tolist() == [16, 4]
    for f in range(2):
        for b in range(m.n_bins[f] - 1):
            # candidate (f, b): code <= b  <=>  x <= threshold
            np.testing.assert_array_equal(data.codes[:, f] <= b, X[:, f] <= m.threshold(f, b))
    np.testing.assert_array_equal(data.codes[:, 1], X[:, 1])


def test_quantile_option_and_validation():
    X = np.array([[0.0], [0.0], [1.0], [1.0]])
    m = fit_bin_mapper(X, strategy="quantile")
    assert m.strategy == "quantile" and m.thresholds[0].tolist() == [0.5]
    with pytest.raises(ValueError, match="feature_domain"):
        fit_bin_mapper(X)
    with pytest.raises(ValueError, match="binning"):
        fit_bin_mapper(X, strategy="bogus")


def test_sparse_path_equals_dense():
    X = sp.random(300, 40, density=0.05, random_state=2, format="csr")
    m = fit_bin_mapper(X, feature_domain=np.tile([0.0, 1.0], (40, 1)), max_bins=32)
    dense = m.transform(X)
    sparse = m.transform(X, dense_limit_bytes=0)
    assert not dense.is_sparse and sparse.is_sparse
    rebuilt = np.tile(sparse.zero_bin, (300, 1))
    for f in range(40):
        lo, hi = sparse.indptr[f], sparse.indptr[f + 1]
        rebuilt[sparse.rows[lo:hi], f] = sparse.values[lo:hi]
    np.testing.assert_array_equal(rebuilt, dense.codes)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_grid_codes_equal_the_binary_search(dtype):
    """Features on an even grid take the guess-and-step kernel, the others a binary search:
    both give ``searchsorted(thresholds, x, side="left")`` exactly, at the thresholds
    themselves, one ulp either side, NaN (code 0) and the infinities."""
    rng = np.random.default_rng(1)
    n = 5000
    X = rng.standard_normal((n, 7)) * 3
    X[:, 3] = rng.integers(0, 5, n)
    thresholds = [domain_thresholds(-5, 5), domain_thresholds(-1e-3, 2e5), domain_thresholds(0, 1, 7),
                  categorical_thresholds(5), quantile_thresholds(X[:, 4]), np.empty(0), np.array([0.1])]
    X[:254, 0] = thresholds[0]
    X[254:508, 0] = np.nextafter(thresholds[0], np.inf)
    X[508:762, 0] = np.nextafter(thresholds[0], -np.inf)
    X[800:810] = np.nan
    X[810], X[811] = np.inf, -np.inf
    X = X.astype(dtype)
    mapper = BinMapper(thresholds, "domain")
    assert mapper._grids[0].tolist() == [0, 1, 2, 3, 6]  # the quantile feature is searched
    expected = np.column_stack([np.searchsorted(t, X[:, f], side="left") for f, t in enumerate(thresholds)])
    expected[np.isnan(X)] = 0
    np.testing.assert_array_equal(mapper.transform(X, chunk_rows=1024).codes, expected)
