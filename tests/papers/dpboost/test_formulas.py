"""DPBoost formulas: subset sizes, GLC, sensitivities, per-tree budgets (Li et al. 2020)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.boosting.gbdt import split_sensitivity
from dpexp.papers.dpboost.formulas import (
    dpboost_subset_proportions,
    gdf_mask,
    glc_threshold,
    leaf_sensitivity,
    n_ensembles,
    para_proportions,
    per_tree_budget,
)


@pytest.mark.parametrize("Te", [1, 20, 40, 50])
def test_subset_proportions_geometric_and_sum_to_one(Te):
    eta = 0.01
    p = dpboost_subset_proportions(Te, eta)
    assert p.sum() == pytest.approx(1.0)
    expected = eta * (1 - eta) ** np.arange(Te) / (1 - (1 - eta) ** Te)  # Algorithm 2 line 6
    np.testing.assert_allclose(p, expected)
    assert np.all(np.diff(p) < 0) if Te > 1 else True
    # |D| = 32561 (adult): first tree of a 50-tree ensemble gets ~ 824 expected rows
    if Te == 50:
        assert 32561 * p[0] == pytest.approx(32561 * 0.01 / (1 - 0.99**50))


def test_para_takes_half_of_unused():
    p = para_proportions(5)
    np.testing.assert_allclose(p, [0.5, 0.25, 0.125, 0.0625, 0.03125])
    unused = 1 - np.cumsum(p)
    np.testing.assert_allclose(p[1:], unused[:-1] / 2)


def test_glc_and_sensitivities():
    assert split_sensitivity(1.0) == 3.0
    assert glc_threshold(1.0, 0.01, 1) == 1.0
    assert glc_threshold(1.0, 0.01, 101) == pytest.approx(0.99**100)
    # Corollary 2: min(g*/(1+lambda), 2 g* (1-eta)^(t-1))
    assert leaf_sensitivity(1.0, 0.1, 0.01, 1, glc=True) == pytest.approx(1 / 1.1)
    assert leaf_sensitivity(1.0, 0.1, 0.01, 200, glc=True) == pytest.approx(2 * 0.99**199)
    assert leaf_sensitivity(1.0, 0.1, 0.01, 200, glc=False) == pytest.approx(1 / 1.1)


def test_budgets_per_mode():
    assert n_ensembles(5000, 50) == 100 and n_ensembles(51, 50) == 2
    assert per_tree_budget("dpboost", 500.0, 5000, 50) == pytest.approx(5.0)
    assert per_tree_budget("seq", 1.0, 50, 50) == pytest.approx(0.02)
    assert per_tree_budget("para", 1.0, 50, 50) == 1.0
    with pytest.raises(ValueError):
        per_tree_budget("bogus", 1.0, 1, 1)


def test_gdf_filters_above_threshold():
    g = np.array([-1.5, -1.0, 0.0, 0.99, 1.0, 1.01])
    np.testing.assert_array_equal(gdf_mask(g, 1.0), [False, True, True, True, True, False])
