"""The ablation options towards the authors' DPBoost code (issue 20): each option's effect,
and that every non-private one marks the fit not DP (``accountant_.is_dp`` False with its
reason) while the paper's defaults stay DP."""

from __future__ import annotations

import numpy as np
import pytest

import dpexp.papers.dpboost.steps as steps_mod
from dpexp.boosting.gbdt import NOT_DP_REASONS, apply_tree
from dpexp.papers.dpboost.estimators import DPBoostClassifier, DPBoostRegressor
from dpexp.papers.dpboost.formulas import mean_initial_score
from dpexp.papers.dpboost.steps import PrunedExponentialSplit
from dpexp.privacy.randomness import seeded_noise

DOMAIN = [[0.0, 1.0]] * 3


def _data(n: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = (X[:, 0] + 0.2 * rng.standard_normal(n) > 0.5).astype(int)
    return X, y


def _clf(**kw) -> DPBoostClassifier:
    base = dict(epsilon=5.0, mode="seq", n_trees=4, max_depth=3, learning_rate=0.3,
                feature_domain=DOMAIN, classes=[0, 1], random_state=0)
    return DPBoostClassifier(**{**base, **kw})


def test_defaults_are_the_papers_and_dp():
    X, y = _data()
    m = _clf().fit(X, y)
    assert m.accountant_.is_dp and m.accountant_.not_dp_reasons == []
    assert m.init_score_ == 0.0 and m.loss_ == "square"


def test_authors_objective_uses_exact_logistic_hessians(monkeypatch):
    seen = []
    real = steps_mod.grow_tree

    def spy(data, stats, rows, *args, **kwargs):
        seen.append(stats[rows].copy())
        return real(data, stats, rows, *args, **kwargs)

    monkeypatch.setattr(steps_mod, "grow_tree", spy)
    X, y = _data()
    m = _clf(objective="authors").fit(X, y)
    first = seen[0]
    # F = 0 at the first tree: g = -y/(1+e^0) = -y/2, h = p(1-p) = 1/4; last column counts
    assert first.shape[1] == 3
    np.testing.assert_allclose(np.abs(first[:, 0]), 0.5)
    np.testing.assert_allclose(first[:, 1], 0.25)
    np.testing.assert_allclose(first[:, 2], 1.0)
    assert not np.allclose(seen[-1][:, 1], 0.25)  # hessians follow the scores
    assert m.loss_ == "logistic"
    assert not m.accountant_.is_dp
    assert NOT_DP_REASONS["exact_hessian"] in m.accountant_.not_dp_reasons
    p = m.predict_proba(X)[:, 1]  # log-odds scores: the sigmoid, not (1 + F) / 2
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-m.decision_function(X))))


def test_authors_objective_for_regression_is_the_square_loss_and_stays_dp():
    rng = np.random.default_rng(1)
    X = rng.random((300, 3))
    y = X[:, 0] * 4.0
    kw = dict(epsilon=5.0, mode="seq", n_trees=3, max_depth=2, feature_domain=DOMAIN,
              label_domain=(0.0, 4.0), random_state=0)
    a = DPBoostRegressor(objective="authors", noise_rng=seeded_noise(0), **kw).fit(X, y)
    b = DPBoostRegressor(noise_rng=seeded_noise(0), **kw).fit(X, y)  # the same noise
    assert a.accountant_.is_dp
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_exact_growth_keeps_a_node_without_a_gain_over_its_parent_a_leaf():
    # constant labels: every split lowers G^2/(H+lambda) below the parent's, so no tree splits
    X, _ = _data()
    y = np.zeros(X.shape[0], dtype=int)
    m = _clf(exact_growth=True, gdf=False).fit(X, y)
    assert all(t.n_nodes == 1 for t in m.trees_)
    grown = _clf(gdf=False).fit(X, y)  # the paper's Algorithm 1 grows to the maximum depth
    assert all(t.n_nodes == 2 ** 4 - 1 for t in grown.trees_)
    assert NOT_DP_REASONS["exact_growth"] in m.accountant_.not_dp_reasons
    assert grown.accountant_.is_dp


@pytest.mark.parametrize("num_leaves", [2, 3, 5])
def test_exact_growth_caps_leaves_and_child_sizes(num_leaves):
    X, y = _data(800)
    m = _clf(exact_growth=True, gdf=False, num_leaves=num_leaves, min_child_samples=60,
             max_depth=4).fit(X, y)
    for t in m.trees_:
        leaves = np.flatnonzero(t.feature < 0)
        assert leaves.size <= num_leaves
        ids = apply_tree(t, np.ascontiguousarray(X))
        counts = np.bincount(ids, minlength=t.n_nodes)[leaves]
        if leaves.size > 1:  # mode "seq" with gdf=False: every tree sees every training row
            assert counts.min() >= 60


def test_pruned_split_gives_zero_probability_to_small_children():
    # one node, one feature, 4 bins holding 1, 50, 50, 1 rows: only the middle cut leaves
    # both children >= 20 rows (and it separates g = -1 from g = +1: positive gain)
    from dpexp.privacy import Accountant
    from dpexp.trees.grower import SplitContext

    g = np.array([-1.0, -50.0, 50.0, 1.0])
    n = np.array([1.0, 50.0, 50.0, 1.0])
    hist = np.stack([g, n], axis=-1)[None, None, :, :]
    ctx = SplitContext(depth=0, max_depth=1, hist=hist, totals=hist.sum(axis=2)[:, 0],
                       n_candidates=np.array([3]), n_rows=np.array([102]),
                       node_ids=np.array([0]), rng=np.random.default_rng(0),
                       accountant=Accountant(epsilon=1.0), label="t")
    policy = PrunedExponentialSplit(0.1, 1e-6, 3.0, min_child_samples=20, num_leaves=None)
    # a tiny epsilon makes the kept candidates near uniform: the pruned ones never appear
    picks = {int(policy(ctx)[1][0]) for _ in range(200)}
    assert picks == {1}


def test_mean_init_score_is_the_exact_label_mean_and_not_dp():
    X, y = _data()
    pm1 = np.where(y == 1, 1.0, -1.0)
    sq = _clf(init_score="mean").fit(X, y)
    assert sq.init_score_ == pytest.approx(pm1.mean())
    lg = _clf(init_score="mean", loss="logistic").fit(X, y)
    p = y.mean()
    assert lg.init_score_ == pytest.approx(np.log(p / (1 - p)))
    assert mean_initial_score(pm1, "logistic") == pytest.approx(np.log(p / (1 - p)))
    for m in (sq, lg):
        assert NOT_DP_REASONS["mean_init"] in m.accountant_.not_dp_reasons
    # the score starts at the mean: with no trees' contribution it is the prediction
    zero_trees = _clf(init_score="mean", n_trees=1, max_depth=0, epsilon=1e6).fit(X, y)
    F = zero_trees.decision_function(X)
    assert np.allclose(F - F[0], 0.0)  # one leaf: a constant shift of the initial score
    assert abs(F[0] - pm1.mean()) < 0.3 * 1.0  # lr 0.3 times a leaf in [-1, 1] (+ tiny noise)


def test_authors_init_score_is_zero_for_classification_and_the_mean_for_regression():
    # the authors' run_exp.py: boost_from_average False (classification), LightGBM's
    # default label mean (regression)
    X, y = _data()
    clf = _clf(init_score="authors").fit(X, y)
    assert clf.init_score_ == 0.0 and clf.accountant_.is_dp
    rng = np.random.default_rng(1)
    Xr = rng.random((300, 3))
    yr = Xr[:, 0] * 4.0
    reg = DPBoostRegressor(epsilon=5.0, mode="seq", n_trees=2, max_depth=2, feature_domain=DOMAIN,
                           label_domain=(0.0, 4.0), random_state=0, init_score="authors").fit(Xr, yr)
    assert reg.init_score_ == pytest.approx(np.mean(yr / 2.0 - 1.0))  # scaled to [-1, 1]
    assert NOT_DP_REASONS["mean_init"] in reg.accountant_.not_dp_reasons


def test_split_budget_divisor_spends_a_quarter_on_splits_and_stays_dp():
    X, y = _data()
    half = _clf(epsilon=2.0).fit(X, y)
    quarter = _clf(epsilon=2.0, split_budget_divisor=4).fit(X, y)
    assert half.accountant_.epsilon_spent == pytest.approx(2.0)
    # leaves epsilon_t / 2, splits epsilon_t / 4 summed over the depths: 3/4 of epsilon
    assert quarter.accountant_.epsilon_spent == pytest.approx(1.5)
    assert quarter.accountant_.is_dp


@pytest.mark.parametrize("bad", [
    {"objective": "lightgbm"}, {"init_score": "median"}, {"split_budget_divisor": 1},
    {"split_budget_divisor": "four"}, {"num_leaves": 0}, {"min_child_samples": -1},
])
def test_bad_option_values_are_refused(bad):
    X, y = _data(100)
    with pytest.raises(ValueError, match=next(iter(bad))):
        _clf(**bad).fit(X, y)
