"""The compiled helpers of DPBoost's schedule and tree step (issue 43 speed) give what the
numpy expressions they replaced give, element for element: the rows of every part of an
ensemble's partition, the rows a later tree reads, and the square loss's gradients with
GDF."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.papers.dpboost.formulas import gdf_mask, gradients
from dpexp.papers.dpboost.steps import rows_after_part, rows_by_part, square_gdf_rows


@pytest.mark.parametrize("seed", range(6))
def test_rows_by_part_is_the_stable_sort_of_the_parts(seed):
    rng = np.random.default_rng(seed)
    n, n_parts = int(rng.integers(0, 4000)), int(rng.integers(1, 60))
    n_here = int(rng.integers(1, n_parts + 1))  # the last ensemble may hold fewer trees
    parts = rng.integers(-1, n_parts, n).astype(np.int64)  # -1: a record no tree reads
    order = np.argsort(parts, kind="stable")
    bounds = np.searchsorted(parts[order], np.arange(n_here + 1))
    rows, starts = rows_by_part(parts, n_here)
    for k in range(n_here):
        expected = order[bounds[k]:bounds[k + 1]]
        assert np.array_equal(rows[starts[k]:starts[k + 1]], expected)
        assert np.array_equal(expected, np.flatnonzero(parts == k))


@pytest.mark.parametrize("seed", range(6))
def test_rows_after_part_keeps_the_later_parts_in_order(seed):
    rng = np.random.default_rng(seed)
    parts = rng.integers(-1, 30, int(rng.integers(0, 3000))).astype(np.int64)
    later = np.flatnonzero(parts > 0)
    for k in range(1, 30):
        shrunk = rows_after_part(later, parts, k)
        assert np.array_equal(shrunk, later[parts[later] > k])
        assert np.array_equal(shrunk, np.flatnonzero(parts > k))
        later = shrunk


@pytest.mark.parametrize("seed", range(6))
def test_square_gdf_rows_matches_gradients_and_the_filter(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    scores = rng.normal(0, 1, n)
    scores[rng.random(n) < 0.05] = -0.0
    target = rng.choice([-1.0, 1.0], n)
    rows = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
    g_star = float(rng.choice([0.5, 1.0, 1.5]))
    stats = np.zeros((n, 2))
    expected_stats = stats.copy()
    g = gradients(scores[rows], target[rows], "square")
    expected_stats[rows, 0] = g
    keep = square_gdf_rows(rows, scores, target, g_star, stats)
    assert np.array_equal(keep, rows[gdf_mask(g, g_star)])
    assert np.array_equal(stats.view(np.uint64), expected_stats.view(np.uint64))
