"""Formulas of InPrivate Digging (Zhao et al. 2018): Eq. (6), (8), (13)-(14), Theorem 7,
the Delta = 4 gain sensitivity, the halving rule and the down-sampling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpexp.papers.inprivate.formulas import (
    budget_split,
    classification_residuals,
    downsample_thresholds,
    newton_denominator,
    newton_leaf,
    round_shares,
    sensitivities,
    square_error_gain,
)
from dpexp.papers.inprivate.protocol import (
    ProtocolConfig,
    grow_inprivate_tree,
)
from dpexp.trees.binning import fit_bin_mapper


def test_residuals_eq6_are_negative_gradient():
    y = np.array([1.0, -1.0, 1.0, -1.0])
    F = np.array([0.3, 0.3, -2.0, 1.5])
    loss = lambda f: np.log1p(np.exp(-2 * y * f))  # noqa: E731 - Eq. (5)
    h = 1e-6
    grad = (loss(F + h) - loss(F - h)) / (2 * h)
    np.testing.assert_allclose(classification_residuals(y, F), -grad, rtol=1e-6)


def test_newton_leaf_eq8_direct():
    r = np.array([0.5, -0.2, 0.9, 0.1])
    direct = r.sum() / np.sum(np.abs(r) * (2 - np.abs(r)))
    assert newton_leaf(r) == pytest.approx(direct)


def _cfg(task: str, **kw) -> ProtocolConfig:
    base = dict(task=task, private=False, epsilon=float("inf"), depth=3, internal_fraction=0.5,
                residual_clip=1.0, learning_rate=1.0, n_participants=1, n_rounds=1,
                quality_control=False, advance_threshold=None, quality_fraction=0.1,
                quality_tolerance=0.0, binning="domain", max_bins=8, leaf_denominator_floor=None)
    base.update(kw)
    return ProtocolConfig(**base)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_exact_leaves_match_direct_computation(task):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(300, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=300) > 0.5, 1.0, -1.0)
    F = rng.normal(scale=0.5, size=300)
    if task == "classification":
        r = np.clip(classification_residuals(y, F), -1, 1)
    else:
        r = np.clip(y * 0.5 - F, -1, 1)
    mapper = fit_bin_mapper(X, feature_domain=np.array([[0.0, 1.0]] * 3), max_bins=8)
    tree = grow_inprivate_tree(_cfg(task, mapper=mapper), X, r, rng, None, "t")
    leaf_of = tree.apply(X)
    for leaf in np.unique(leaf_of):
        rl = r[leaf_of == leaf]
        expected = newton_leaf(rl) if task == "classification" else rl.mean()  # Eq. 8 / Eq. 14
        assert tree.value[leaf, 0] == pytest.approx(expected)


def test_theorem7_budget_adds_up():
    b = budget_split(1.0, depth=10, internal_fraction=0.4, quality_fraction=0.1)
    assert b.per_level * 9 + b.per_leaf_query * 2 + b.quality == pytest.approx(1.0)
    assert budget_split(2.0, depth=1, internal_fraction=0.5).per_leaf_query == pytest.approx(1.0)


def test_paper_sensitivities_at_clip_one():
    s = sensitivities("classification", 1.0)
    assert (s.split, s.leaf_numerator, s.leaf_denominator) == (4.0, 1.0, 1.0)
    assert sensitivities("regression", 1.0).leaf_denominator == 1.0
    assert newton_denominator(np.array([1.0]))[0] == 1.0  # max of |r|(2-|r|) on [-1, 1]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(-1, 1), min_size=1, max_size=30),
    st.lists(st.booleans(), min_size=30, max_size=30),
    st.floats(-1, 1),
    st.booleans(),
)
def test_gain_sensitivity_at_most_four(res, left, extra, extra_left):
    """Adding one record with residual in [-1, 1] moves gain = E - E_L - E_R by <= 4."""
    r = np.array(res)
    m = np.array(left[: r.size])

    def gain(r, m):
        return float(square_error_gain(r[m].sum(), m.sum(), r.sum(), r.size))

    g0 = gain(r, m)
    g1 = gain(np.append(r, extra), np.append(m, extra_left))
    assert abs(g1 - g0) <= 4.0 + 1e-9


def test_round_shares_halving():
    np.testing.assert_allclose(round_shares(3, "half"), [0.5, 0.25, 0.125])
    np.testing.assert_allclose(round_shares(3, "rest"), [0.5, 0.25, 0.25])
    assert round_shares(1, "rest").tolist() == [1.0]


def test_downsample_averages_every_three_sorted_values():
    col = np.array([9.0, 1, 2, 3, 4, 5, 6, 7, 8])
    np.testing.assert_allclose(downsample_thresholds(col), [2.0, 5.0, 8.0])
    assert downsample_thresholds(np.arange(3000.0), max_bins=32).size == 31


def test_gain_with_an_empty_side_is_zero_and_broadcasts():
    """The masked division of ``square_error_gain``: an empty child contributes 0 (no
    division by zero), and (nodes, candidates) arrays broadcast against (nodes, 1) totals."""
    s_left = np.array([[0.0, 1.0, 3.0], [0.0, -2.0, 0.5]])
    n_left = np.array([[0.0, 1.0, 5.0], [0.0, 2.0, 1.0]])
    s_tot, n_tot = np.array([[3.0], [-1.0]]), np.array([[5.0], [4.0]])
    g = square_error_gain(s_left, n_left, s_tot, n_tot)
    assert g.shape == (2, 3)
    np.testing.assert_allclose(g[:, 0], 0.0)  # empty left: the split changes nothing
    np.testing.assert_allclose(g[:, 2][0], 0.0)  # empty right
    # node 0, candidate 1: 1/1 + 2^2/4 - 3^2/5
    assert g[0, 1] == pytest.approx(1.0 + 1.0 - 1.8)
    assert np.all(np.isfinite(g))
