"""Greedy split search (:func:`dpexp.trees.split_search.best_splits`) against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpexp.trees import split_search as SS

LAM = 0.1


def _histograms(seed: int, n_nodes: int, n_features: int, n_bins: int):
    """Integer-valued (g, h) histograms whose features all sum to the same node totals
    (as rows binned by every feature do), so every sum below is exact."""
    rng = np.random.default_rng(seed)
    n_valid = rng.integers(0, n_bins, n_features)
    hist = np.zeros((n_nodes, n_features, n_bins, 2))
    for j in range(n_nodes):
        g = rng.integers(-20, 21, 40).astype(float)
        h = rng.integers(0, 4, 40).astype(float)
        for f in range(n_features):
            b = rng.integers(0, n_valid[f] + 1, 40)  # rows' bins of feature f
            np.add.at(hist[j, f, :, 0], b, g)
            np.add.at(hist[j, f, :, 1], b, h)
    totals = hist[:, 0].sum(axis=1)
    return hist, n_valid, totals


def _brute_force(hist, n_valid, totals, mcw, mcc):
    """Best improvement of Eq. (3) per node by enumerating every candidate."""
    best = []
    for j in range(hist.shape[0]):
        gt, ht = totals[j]
        parent = gt * gt / (ht + LAM)
        cands = []
        for f in range(hist.shape[1]):
            gl = np.cumsum(hist[j, f, :, 0])
            hl = np.cumsum(hist[j, f, :, 1])
            for b in range(n_valid[f]):
                hr = ht - hl[b]
                if min(hl[b], hr) < max(mcw, mcc):
                    continue
                gr = gt - gl[b]
                cands.append((gl[b] ** 2 / (hl[b] + LAM) + gr**2 / (hr + LAM) - parent, f, b))
        best.append(max(cands, key=lambda c: (c[0], -c[1], -c[2])) if cands else None)
    return best


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_nodes=st.integers(1, 5), n_features=st.integers(1, 9),
       n_bins=st.integers(1, 12), mcc=st.sampled_from([0.0, 1.0, 5.0]))
def test_best_splits_is_the_best_candidate(seed, n_nodes, n_features, n_bins, mcc):
    hist, n_valid, totals = _histograms(seed, n_nodes, n_features, n_bins)
    expected = _brute_force(hist, n_valid, totals, 1e-3, mcc)
    no_counts = np.zeros((0, 0, 0))
    for tot in (None, totals):
        for kernel in (SS.best_splits_ser, SS.best_splits_par):
            args = (hist, n_valid, no_counts, SS._NO_TOTALS if tot is None else tot,
                    SS.SplitRule(LAM, 1e-3, mcc, -np.inf), 3)
            feat, bins, gains = kernel(*args)
            for j, exp in enumerate(expected):
                if exp is None:
                    assert feat[j] == -1 and bins[j] == -1 and gains[j] == -np.inf
                    continue
                assert gains[j] == pytest.approx(exp[0], rel=1e-12, abs=1e-9)
                # the chosen candidate's own gain is the best one (ties: any of them)
                f, b = feat[j], bins[j]
                assert 0 <= b < n_valid[f]


def test_serial_and_parallel_pick_the_same_split():
    hist, n_valid, totals = _histograms(3, 7, 30, 20)
    hist[:, :, :, 0] += np.random.default_rng(1).normal(size=hist.shape[:3]) * 1e-3
    no_counts = np.zeros((0, 0, 0))
    for tot in (SS._NO_TOTALS, totals):
        rule = SS.SplitRule(LAM, 1e-3, 1.0, -np.inf)
        ser = SS.best_splits_ser(hist, n_valid, no_counts, tot, rule, 4)
        par = SS.best_splits_par(hist, n_valid, no_counts, tot, rule, 4)
        for a, b in zip(ser, par, strict=True):
            np.testing.assert_array_equal(a, b)


def test_node_totals_change_nothing_when_features_agree():
    hist, n_valid, totals = _histograms(5, 4, 12, 9)
    own = SS.best_splits(hist, LAM, n_valid, 1e-3, 1.0, np.zeros((0, 0, 0)))
    given_totals = SS.best_splits(hist, LAM, n_valid, 1e-3, 1.0, np.zeros((0, 0, 0)), totals)
    for a, b in zip(own, given_totals, strict=True):
        np.testing.assert_array_equal(a, b)


def test_count_histogram_limits_children():
    # two rows of hessian 0.5 each: a hessian-only rule would allow the split, but one
    # row per child is below min_child_count = 2
    hist = np.zeros((1, 1, 2, 2))
    hist[0, 0, 0] = [1.0, 0.5]
    hist[0, 0, 1] = [-1.0, 0.5]
    counts = np.array([[[1.0, 1.0]]])
    feat, _, _ = SS.best_splits(hist, LAM, np.array([1]), 1e-3, 2.0, counts)
    assert feat[0] == -1
    feat, bins, gain = SS.best_splits(hist, LAM, np.array([1]), 1e-3, 1.0, counts)
    assert (feat[0], bins[0]) == (0, 0) and gain[0] > 0


def test_totals_must_match_nodes():
    hist, n_valid, totals = _histograms(0, 3, 2, 4)
    with pytest.raises(ValueError, match="totals"):
        SS.best_splits(hist, LAM, n_valid, 1e-3, 1.0, np.zeros((0, 0, 0)), totals[:2])


def test_min_gain_makes_leaves_of_nodes_that_do_not_improve_enough():
    hist, n_valid, totals = _histograms(7, 6, 5, 8)
    feat, bins, gains = SS.best_splits(hist, LAM, n_valid, 1e-3, 1.0, np.zeros((0, 0, 0)),
                                      totals)
    cut = float(np.median(gains[np.isfinite(gains)]))
    f2, b2, g2 = SS.best_splits(hist, LAM, n_valid, 1e-3, 1.0, np.zeros((0, 0, 0)), totals,
                               min_gain=cut)
    np.testing.assert_array_equal(g2, gains)  # the improvements are still reported
    keep = gains > cut
    assert keep.any() and (~keep).any()
    np.testing.assert_array_equal(f2, np.where(keep, feat, -1))
    np.testing.assert_array_equal(b2, np.where(keep, bins, -1))


def _first_best_by_numpy(hist, n_valid, totals, rule):
    """The grower's search written plainly: every bin's gain from running sums in bin
    order (np.cumsum adds in order), the first best bin of each feature, then the first
    best feature (strict ``>``)."""
    lam, mcw, mcc = rule.reg_lambda, rule.min_child_weight, rule.min_child_count
    nb, d = hist.shape[:2]
    feat = np.full(nb, -1)
    bins = np.full(nb, -1)
    gains = np.full(nb, -np.inf)
    for j in range(nb):
        gt, ht = totals[j]
        parent = gt * gt / (ht + lam)
        for f in range(d):
            nv = n_valid[f]
            gl = np.cumsum(hist[j, f, :nv, 0])
            hl = np.cumsum(hist[j, f, :nv, 1])
            hr, gr = ht - hl, gt - gl
            g = gl * gl / (hl + lam) + gr * gr / (hr + lam) - parent
            bad = (hl < mcw) | (hr < mcw) | (hl < mcc) | (hr < mcc)
            g = np.where(bad, -np.inf, g)
            if nv and g.max() > gains[j]:
                gains[j], feat[j], bins[j] = g.max(), f, int(np.argmax(g))
    return feat, bins, gains


@pytest.mark.parametrize("share", [0.02, 0.1, 0.3, 0.6, 1.0])
@pytest.mark.parametrize("mcw, mcc", [(1e-3, 1.0), (0.0, 0.0)])
def test_wide_features_with_empty_bins_give_the_plain_search_bits(share, mcw, mcc):
    """Features of 255 bins where only a ``share`` of the bins hold rows (the search
    then runs over the bins in use only): the same split, gain bit for bit, as the
    plain search over every bin -- with empty bins holding -0.0 gradients or a rounding
    residue without rows, and (``mcw = mcc = 0``) an empty bin 0 that may win."""
    rng = np.random.default_rng(int(share * 100) + int(mcc))
    nb, d, n_bins = 6, 5, 255
    hist = np.zeros((nb, d, n_bins, 2))
    used = rng.random((nb, d, n_bins)) < share
    hist[..., 1] = np.where(used, rng.integers(1, 6, used.shape), 0.0)
    hist[..., 0] = np.where(used, rng.normal(size=used.shape), 0.0)
    empty = np.argwhere(~used)
    if len(empty):
        for j, f, b in empty[rng.choice(len(empty), min(40, len(empty)), replace=False)]:
            hist[j, f, b, 0] = rng.choice([-0.0, 1e-17, -3e-18])
    hist[:, :, 0] = 0.0  # bin 0 empty everywhere
    totals = np.ascontiguousarray(hist[:, 0].sum(axis=1))
    n_valid = np.array([254, 254, 200, 20, 3])
    rule = SS.SplitRule(LAM, mcw, mcc, -np.inf)
    expected = _first_best_by_numpy(hist, n_valid, totals, rule)
    for kernel in (SS.best_splits_ser, SS.best_splits_par):
        got = kernel(hist, n_valid, np.zeros((0, 0, 0)), totals, rule, 2)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
