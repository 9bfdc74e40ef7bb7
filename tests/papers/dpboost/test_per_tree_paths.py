"""The per-tree shortcuts of DPBoost's fit (issue 43) give the plain computation's values
bit for bit: the record ids hashed a block of rows at a time (no float64 copy of the whole
table), and a tree's gradients, GDF or clipping and exact hessians computed on its own
rows instead of on every row (Li et al. 2020 Section 3.1), and the rows of Algorithm 2's
slots found with one sort per ensemble."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from dpexp.papers.dpboost import steps
from dpexp.papers.dpboost.formulas import (
    dpboost_subset_proportions,
    exact_hessians,
    gdf_mask,
    gradients,
)
from dpexp.papers.dpboost.steps import DPBoostTreeStep, chunked_record_ids
from dpexp.privacy import Accountant, record_ids, record_partition


@pytest.mark.parametrize("block_values", [1, 7, 40, 1 << 22])
def test_chunked_record_ids_equal_whole_table_ids(monkeypatch, block_values):
    monkeypatch.setattr(steps, "RECORD_ID_BLOCK_VALUES", block_values)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(53, 6)).astype(np.float32)
    X[4] = X[9]  # a duplicate record: one id
    X[5, 2], X[6, 1] = np.nan, -0.0
    y = rng.choice([-1.0, 1.0], 53)
    y[4] = y[9]
    whole = record_ids(X, y).values
    got = chunked_record_ids(X, y).values
    assert got.dtype == np.uint64 and np.array_equal(got, whole)
    assert got[4] == got[9]
    labels = np.array(["a", "b", "c"])[rng.integers(0, 3, 53)]
    assert np.array_equal(chunked_record_ids(X, labels).values, record_ids(X, labels).values)
    sparse = sp.csr_matrix(np.where(np.abs(X) > 1, X, 0))
    assert np.array_equal(chunked_record_ids(sparse, y).values, record_ids(sparse, y).values)


def _step(target, loss, gdf, exact_hessian, k_stats) -> DPBoostTreeStep:
    stats = np.zeros((target.size, k_stats))
    stats[:, -1] = 1.0
    return DPBoostTreeStep(
        SimpleNamespace(target=target), loss, 0.1, 0.1, 1.0, 3, 1.0, gdf, True, True,
        exact_hessian, None, [], stats, 0.0)


def _reference(scores, target, loss, gdf, exact_hessian, rows, k_stats):
    """The computation on every row, then the slot's rows (the code before issue 43)."""
    stats = np.zeros((target.size, k_stats))
    stats[:, -1] = 1.0
    gradients(scores, target, loss, out=stats[:, 0])
    if exact_hessian:
        exact_hessians(scores, loss, out=stats[:, 1])
    if gdf:
        keep = rows[gdf_mask(stats[rows, 0], 1.0)]
    else:
        keep = rows
        np.clip(stats[:, 0], -1.0, 1.0, out=stats[:, 0])
    return keep, stats


@pytest.mark.parametrize("loss", ["square", "logistic"])
@pytest.mark.parametrize("gdf", [True, False])
@pytest.mark.parametrize("exact_hessian", [False, True])
@pytest.mark.parametrize("share", ["part", "all"])
def test_slot_statistics_equal_every_row_computation(loss, gdf, exact_hessian, share):
    rng = np.random.default_rng(7)
    n = 400
    target = rng.choice([-1.0, 1.0], n)
    scores = rng.normal(scale=1.5, size=n)  # |g| > g* = 1 for many rows: GDF drops them
    rows = np.sort(rng.choice(n, 90, replace=False)) if share == "part" else np.arange(n)
    k_stats = 3 if exact_hessian else 2
    step = _step(target, loss, gdf, exact_hessian, k_stats)
    keep = step._slot_statistics(rows, scores)
    ref_keep, ref_stats = _reference(scores, target, loss, gdf, exact_hessian, rows, k_stats)
    assert np.array_equal(keep, ref_keep)
    if gdf and loss == "square":  # logistic gradients have |g| < 1: none dropped
        assert 0 < keep.size < rows.size  # the filter dropped some rows, not all
    # the statistics a tree reads (its kept rows), every bit
    assert np.array_equal(step.stats[keep].view(np.int64), ref_stats[keep].view(np.int64))


@pytest.mark.parametrize(("n_trees", "per_ensemble", "learning_rate"),
                         [(50, 50, 0.01), (7, 3, 0.3), (12, 5, 0.5), (1, 1, 0.1)])
def test_ensemble_slots_rows_are_the_parts(n_trees, per_ensemble, learning_rate):
    """Each slot's rows are its part of the ensemble's partition and, in the last
    ensemble, the rows it leaves to later trees are the later parts (ascending, as
    np.flatnonzero gives them), whatever the shortcut that finds them."""
    rng = np.random.default_rng(11)
    X, y = rng.normal(size=(3000, 4)), rng.choice([-1.0, 1.0], 3000)
    ids = record_ids(X, y)
    slots = list(steps.ensemble_slots(Accountant(epsilon=1.0), ids, n_trees, per_ensemble,
                                      learning_rate, np.random.SeedSequence(5),
                                      trim_last=True))
    assert len(slots) == n_trees
    props = dpboost_subset_proportions(per_ensemble, learning_rate)
    seeds = np.random.SeedSequence(5).spawn(len({s.round for s in slots}))
    for slot in slots:
        parts = record_partition(ids, props, np.random.default_rng(seeds[slot.round]))
        te = slot.position - 1
        assert np.array_equal(slot.rows, np.flatnonzero(parts == te))
        if slot.round == len(seeds) - 1:
            assert np.array_equal(slot.read_later, np.flatnonzero(parts > te))
        else:
            assert slot.read_later is None
    assert sum(s.rows.size for s in slots if s.round == 0) > 0
