"""DPBoost (clipped) (dpexp.papers.dpboost.honest): sensitivities, budget, every row kept,
public classes, errors, and the audit of its releases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpexp.audit.run import run_target
from dpexp.errors import BudgetExceededError
from dpexp.papers.dpboost import audit as dpboost_audit
from dpexp.papers.dpboost import honest
from dpexp.papers.dpboost.estimators import DPBoostClassifier
from dpexp.papers.dpboost.honest import (
    HonestDPBoostClassifier,
    HonestDPBoostRegressor,
    NoisySumCountLeaf,
    clipped_gradients,
    glc_clip,
    honest_leaf_sensitivity,
    honest_split_sensitivity,
    noisy_log_odds,
    split_budget,
)
from dpexp.privacy import Accountant
from dpexp.registry import get_algorithm

N_FEATURES = 3
PUBLIC = {
    "feature_domain": np.tile([0.0, 1.0], (N_FEATURES, 1)),
    "categorical_features": np.zeros(N_FEATURES, dtype=bool),
    "n_categories": np.zeros(N_FEATURES, dtype=np.int64),
}


def _imbalanced(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """~25 % positives, learnable from feature 0 (a noisy threshold rule)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, N_FEATURES))
    p = np.where(X[:, 0] > 0.7, 0.75, 0.03)
    return X, (rng.random(n) < p).astype(int)


def _clf(**kw) -> HonestDPBoostClassifier:
    kw.setdefault("random_state", 0)
    return HonestDPBoostClassifier(classes=[0, 1], **PUBLIC, **kw)


# ------------------------------------------------------------------ sensitivities


def _gain(g: np.ndarray, left: np.ndarray, h: float, lam: float) -> float:
    """Eq. (3) with the constant hessian: sum over sides of (sum g)^2 / (h n + lambda)."""
    out = 0.0
    for side in (left, ~left):
        out += g[side].sum() ** 2 / (h * side.sum() + lam)
    return out


def _leaf(g: np.ndarray, h: float, lam: float) -> float:
    return -g.sum() / (h * g.size + lam)


@pytest.mark.parametrize(("h", "lam"), [(1.0, 0.1), (0.25, 0.1), (0.25, 1.0), (0.5, 0.01)])
def test_gain_and_leaf_sensitivities_hold_by_brute_force(h, lam):
    """Adding one record with |g| <= g* to any small node moves the gain by at most
    3 g*^2 / h and the leaf by at most g*/(h + lambda) (Lemmas 1-2 with lambda/h)."""
    g_star = 1.0
    grid = np.array([-1.0, -0.4, 1.0]) * g_star
    worst_gain = worst_leaf = 0.0
    for n in range(0, 5):
        for g in itertools.product(grid, repeat=n):
            g = np.array(g, dtype=float)
            for g_new, side in itertools.product(grid, (True, False)):
                for cut in range(n + 1):
                    left = np.arange(n) < cut
                    g2 = np.append(g, g_new)
                    left2 = np.append(left, side)
                    worst_gain = max(worst_gain, abs(_gain(g2, left2, h, lam)
                                                     - _gain(g, left, h, lam)))
                worst_leaf = max(worst_leaf, abs(_leaf(np.append(g, g_new), h, lam)
                                                 - _leaf(g, h, lam)))
    assert worst_gain <= honest_split_sensitivity(g_star, h) + 1e-12
    assert worst_leaf <= honest_leaf_sensitivity(g_star, h, lam, None) + 1e-12
    # the bounds are not vacuous: the worst case comes within a factor 2 of them
    assert worst_leaf > 0.5 * honest_leaf_sensitivity(g_star, h, lam, None)


def test_sensitivity_formulas():
    assert honest_split_sensitivity(1.0, 0.25) == pytest.approx(12.0)
    assert honest_split_sensitivity(0.5, 1.0) == pytest.approx(0.75)
    assert honest_leaf_sensitivity(1.0, 0.25, 0.1, None) == pytest.approx(1 / 0.35)
    clip = glc_clip(1.0, 0.25, 0.2, 3)
    assert clip == pytest.approx(0.8**2 / 0.25)
    assert honest_leaf_sensitivity(1.0, 0.25, 0.1, clip) == pytest.approx(min(1 / 0.35, 2 * clip))


def test_gradients_are_clipped_not_filtered():
    F = np.array([-30.0, -1.0, 0.0, 2.0, 30.0])
    y = np.array([1.0, 1.0, -1.0, -1.0, -1.0])
    out = np.empty(5)
    g = clipped_gradients(F, y, "logistic", 0.3, out)
    assert np.all(np.abs(g) <= 0.3)
    assert g[0] == pytest.approx(-0.3) and g[4] == pytest.approx(0.3)
    sq = clipped_gradients(F, y, "square", 1.0, np.empty(5))
    assert sq.tolist() == [-1.0, -1.0, 1.0, 1.0, 1.0]


# ------------------------------------------------------------------ budget


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_spends_exactly_its_budget_with_the_initial_score_recorded(eps):
    X, y = _imbalanced(600)
    est = _clf(epsilon=eps, n_trees=6, trees_per_ensemble=3, max_depth=3).fit(X, y)
    acc = est.accountant_
    assert acc.epsilon_spent == pytest.approx(eps, rel=1e-9)
    assert acc.is_dp
    init = [e for e in acc.ledger() if e["what"].startswith("initial score")]
    assert len(init) == 1 and init[0]["releases"] == 2 and init[0]["sensitivity"] == 1.0
    assert init[0]["epsilon"] == pytest.approx(0.05 * eps)
    sums = [e for e in acc.ledger() if e["what"].endswith("leaf gradient sums")]
    counts = [e for e in acc.ledger() if e["what"].endswith("leaf counts")]
    assert len(sums) == len(counts) == 6
    eps_t = split_budget(eps, 0.05, 6, 3)[1]
    assert all(e["sensitivity"] == 1.0 for e in sums + counts)  # g* = 1, one row
    assert sums[0]["epsilon"] + counts[0]["epsilon"] == pytest.approx(eps_t / 2)
    assert counts[0]["epsilon"] == pytest.approx(0.3 * eps_t / 2)


def test_an_overspend_fails_before_release(monkeypatch):
    X, y = _imbalanced(300)

    def too_much(epsilon, init_fraction, n_trees, trees_per_ensemble):
        eps0, eps_t = split_budget(epsilon, init_fraction, n_trees, trees_per_ensemble)
        return eps0, 1.5 * eps_t

    monkeypatch.setattr(honest, "split_budget", too_much)
    with pytest.raises(BudgetExceededError):
        _clf(epsilon=1.0, n_trees=4, trees_per_ensemble=2, max_depth=2).fit(X, y)


def test_leaf_policy_refuses_to_spend_past_the_budget():
    from dpexp.trees.grower import LeafContext

    acc = Accountant(epsilon=0.5)
    ctx = LeafContext(totals=np.array([[1.0, 3.0]]), n_rows=np.array([3]),
                      depth=np.array([1]), node_ids=np.array([1]),
                      rng=np.random.default_rng(0), accountant=acc, label="t")
    with pytest.raises(BudgetExceededError):
        NoisySumCountLeaf(0.1, 0.25, 1.0, 0.4, 0.2, 4.0)(ctx)


def test_noisy_log_odds_is_close_for_large_counts_and_clipped():
    y = np.array([-1.0] * 7500 + [1.0] * 2500)
    acc = Accountant(epsilon=1.0)
    got = noisy_log_odds(y, 1.0, np.random.default_rng(0), acc, bound=4.0)
    assert got == pytest.approx(math.log(2500 / 7500), abs=0.01)
    assert acc.epsilon_spent == pytest.approx(1.0)
    only_neg = noisy_log_odds(-np.ones(10**6), 1.0, np.random.default_rng(1),
                              Accountant(epsilon=1.0), bound=4.0)
    assert only_neg == -4.0  # post-processing: counts floored at 1, log-odds clipped


def test_init_fraction_zero_spends_nothing_on_the_initial_score():
    X, y = _imbalanced(300)
    est = _clf(epsilon=1.0, n_trees=2, trees_per_ensemble=2, max_depth=2,
               init_fraction=0.0).fit(X, y)
    assert est.init_score_ == 0.0
    assert not any(e["what"].startswith("initial score") for e in est.accountant_.ledger())
    assert est.accountant_.epsilon_spent == pytest.approx(1.0)


# ------------------------------------------------------------------ behaviour


def test_keeps_every_row_and_beats_the_majority_where_dpboost_collapses():
    """Imbalanced data at epsilon = 1: DPBoost's GDF drops misclassified rows and stays
    at the majority rate; the clipped variant learns the rule."""
    X, y = _imbalanced(20_000, seed=1)
    Xt, yt = _imbalanced(10_000, seed=2)
    majority = float(np.mean(yt))
    honest_err = np.mean([np.mean(_clf(epsilon=1.0, random_state=s).fit(X, y).predict(Xt) != yt)
                          for s in range(3)])
    dpb = DPBoostClassifier(epsilon=1.0, classes=[0, 1], random_state=0, **PUBLIC).fit(X, y)
    assert dpb.diagnostics_["n_filtered"] > 0
    assert honest_err < majority - 0.05, (honest_err, majority)


def test_declared_classes_and_predict_proba():
    X, y = _imbalanced(400)
    est = _clf(epsilon=2.0, n_trees=4, trees_per_ensemble=4, max_depth=2).fit(X, np.zeros_like(y))
    assert est.classes_.tolist() == [0, 1]
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(est.predict(X), est.classes_[(proba[:, 1] > 0.5).astype(int)])
    np.testing.assert_allclose(est.decision_function(X),
                               list(est.staged_decision_function(X))[-1])


def test_regressor_predicts_on_the_label_scale_from_a_noisy_mean():
    rng = np.random.default_rng(0)
    X = rng.random((3000, N_FEATURES))
    y = 5.0 + 20.0 * X[:, 0]
    est = HonestDPBoostRegressor(epsilon=4.0, label_domain=(0.0, 40.0), random_state=0,
                                 **PUBLIC).fit(X, y)
    # scaled labels 2 y / 40 - 1 = (5 + 20 x) / 20 - 1, mean -0.25; the noisy mean is close
    assert est.init_score_ == pytest.approx(-0.25, abs=0.05)
    rmse = float(np.sqrt(np.mean((est.predict(X) - y) ** 2)))
    assert rmse < float(np.std(y))  # better than the constant mean
    assert est.accountant_.epsilon_spent == pytest.approx(4.0)


@pytest.mark.parametrize(("param", "value"), [
    ("leaf", "exact"), ("hessian", 0.0), ("g_star", -1.0), ("init_fraction", 1.0),
    ("count_fraction", 1.0), ("init_clip", 0.0), ("trees_per_ensemble", 0),
])
def test_bad_parameters_give_a_clear_error(param, value):
    X, y = _imbalanced(100)
    with pytest.raises(ValueError, match=param):
        _clf(epsilon=1.0, n_trees=2, **{param: value}).fit(X, y)


def test_registered_with_its_manifest():
    info = get_algorithm("dpboost_honest")
    assert info.private and info.not_dp is None
    assert info.estimator_class("classification") is HonestDPBoostClassifier
    assert info.estimator_class("regression") is HonestDPBoostRegressor


# ------------------------------------------------------------------ audit


def _target(name: str, broken: bool = False):
    targets = dpboost_audit.BROKEN_AUDIT_TARGETS if broken else dpboost_audit.AUDIT_TARGETS
    return next(t for t in targets if t.name == name)


def test_audit_targets_cover_dpboost_honest():
    names = {t.name for t in dpboost_audit.AUDIT_TARGETS if t.algorithm == "dpboost_honest"}
    assert {"dpboost_honest_canary", "dpboost_honest_canary_score", "dpboost_honest_ensembles_score",
            "dpboost_honest_regressor_canary"} <= names


def test_audit_flags_classes_read_from_y():
    result = run_target(_target("dpboost_honest_classes_from_y", broken=True), samples=200)
    assert not result.passed, result.summary_line()


class _UnderNoisedLeaf(NoisySumCountLeaf):
    """BROKEN (test only): draws its noise with 30x the epsilon it spends."""

    def __call__(self, ctx):
        spent = Accountant(epsilon=math.inf)
        quiet = NoisySumCountLeaf(self.reg_lambda, self.hessian, self.g_star,
                                  30 * self.eps_sum, 30 * self.eps_count, self.clip)
        out = quiet(type(ctx)(**{**ctx.__dict__, "accountant": spent}))
        ctx.accountant.release(lambda: None, epsilon=self.eps_sum + self.eps_count,
                               releases=max(ctx.n_leaves, 1), what=f"{ctx.label} leaves (claimed)")
        return out


class _BrokenHonest(HonestDPBoostClassifier):
    def _leaf_policy(self, eps_leaf, t_glc):
        leaf = super()._leaf_policy(eps_leaf, t_glc)
        return _UnderNoisedLeaf(**leaf.__dict__)


def test_canary_score_audit_catches_under_noised_leaves():
    """The real-valued canary audit has the power to see leaves whose noise is 30x too
    small (the ledger still reads epsilon). Depth 0 (one leaf per tree) and no initial
    score, so the canary's effect is not hidden behind a random split or the initial
    score's own noise at 300 draws."""
    target = _target("dpboost_honest_canary_score")

    def maker(cls):
        def make(noise):
            return cls(trees_per_ensemble=2, classes=[0, 1], random_state=0, noise_rng=noise,
                       n_trees=2, max_depth=0, learning_rate=0.3, init_fraction=0.0,
                       **dpboost_audit.tiny_public_metadata())
        return make

    from dataclasses import replace

    def audit(cls):
        release = dpboost_audit.score_release(maker(cls), dpboost_audit.CANARY_POINT)
        return run_target(replace(target, release=release), samples=150)

    assert not audit(_BrokenHonest).passed
    assert audit(HonestDPBoostClassifier).passed
