"""Binning: public-domain grid by default, quantiles as an option, sparse == dense."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpexp.trees.binning import domain_thresholds, fit_bin_mapper


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
