"""Budget accounting of the Gaussian BDT (Peinemann's slides "DP-Proof")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpexp.datasets.weather import weather_temperature
from dpexp.papers.gaussian_bdt.estimators import (
    GaussianBDTClassifier,
    GaussianBDTRegressor,
    leaf_sigma,
    release_budgets,
    slides_sigma,
)

META = {"feature_domain": np.array([[-3.0, 3.0]] * 4)}


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, 4)), -3, 3)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


# ------------------------------------------------------------------------- Gaussian BDT


@pytest.mark.parametrize(("eps", "delta"), [(0.1, 1e-5), (0.9, 1e-6), (1.5, 1e-5)])
def test_slides_sigma_formula(eps, delta):
    expected = math.sqrt(2 * math.log(1.25 / delta)) * 2.0 / eps
    if eps < 1:
        s = slides_sigma(epsilon=eps, delta=delta, sensitivity=2.0)
        assert s > expected
        assert s == pytest.approx(expected, rel=1e-15)
        assert leaf_sigma(epsilon=eps, delta=delta, sensitivity=2.0) == (s, False)
    else:
        with pytest.raises(ValueError):
            slides_sigma(epsilon=eps, delta=delta, sensitivity=2.0)
        s, analytic = leaf_sigma(epsilon=eps, delta=delta, sensitivity=2.0)
        assert analytic and 0 < s < expected


def test_gaussian_bdt_spends_exactly_eps_and_delta():
    data = weather_temperature(1500, seed=3)
    for eps in (0.5, 4.0, 80.0):  # 80 -> per-release eps 4 >= 1 -> analytic
        m = GaussianBDTRegressor(epsilon=eps, delta=1e-5, n_trees=10, max_depth=3,
                                 random_state=0, **data.public_metadata()).fit(data.X, data.y)
        acc = m.accountant_
        assert acc.epsilon_spent == pytest.approx(eps, rel=1e-12)
        assert acc.delta_spent == pytest.approx(1e-5, rel=1e-12)
        assert acc.epsilon_spent <= eps * (1 + 1e-9)
        assert m.diagnostics_["analytic_calibration"] == float(eps / 20 >= 1)
        eps_r, delta_r = release_budgets(eps, 1e-5, 10)
        assert all(e["epsilon"] == eps_r and e["delta"] == delta_r for e in acc.ledger())
        # 2 releases per leaf, 8 leaves per tree, 10 trees: one entry per query and tree
        assert len(acc.ledger()) == 2 * 10
        assert all(e.get("releases") == 8 and e["mechanism"] == "gaussian" for e in acc.ledger())


def test_gaussian_bdt_random_splits_use_no_data():
    data = weather_temperature(800, seed=1)
    a = GaussianBDTRegressor(epsilon=1.0, n_trees=2, max_depth=3, random_state=7,
                             **data.public_metadata()).fit(data.X, data.y)
    other = weather_temperature(800, seed=2)
    b = GaussianBDTRegressor(epsilon=1.0, n_trees=2, max_depth=3, random_state=7,
                             **other.public_metadata()).fit(other.X, other.y)
    for ta, tb in zip(a.trees_, b.trees_, strict=True):
        np.testing.assert_array_equal(ta.feature, tb.feature)
        np.testing.assert_array_equal(ta.threshold, tb.threshold)


def test_gaussian_bdt_learns_temperature_at_large_budget():
    tr, te = weather_temperature(6000, seed=0), weather_temperature(3000, seed=1)
    m = GaussianBDTRegressor(epsilon=50.0, n_trees=10, max_depth=4, random_state=0,
                             **tr.public_metadata()).fit(tr.X, tr.y)
    rmse = np.sqrt(np.mean((m.predict(te.X) - te.y) ** 2))
    baseline = np.sqrt(np.mean((te.y - tr.y.mean()) ** 2))
    assert rmse < 0.5 * baseline


def test_weather_generator_is_seeded_and_in_domain():
    a, b = weather_temperature(500, seed=4), weather_temperature(500, seed=4)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert a.feature_names == ["sun_last_hour", "rain_last_hour", "temp_now"]
    assert set(np.unique(a.X[:, :2])) <= {0.0, 1.0}
    assert np.all(a.feature_domain[:, 0] <= a.X)
    assert np.all(a.feature_domain[:, 1] >= a.X)
    assert np.all((a.y >= a.label_domain[0]) & (a.y <= a.label_domain[1]))
    # sun warms, rain cools (the slides' features matter)
    d = a.y - a.X[:, 2]
    assert d[a.X[:, 0] == 1].mean() > d[a.X[:, 0] == 0].mean()
    assert d[a.X[:, 1] == 1].mean() < d[a.X[:, 1] == 0].mean()


def test_gaussian_bdt_classifier_accounting():
    X, y = _data()
    m = GaussianBDTClassifier(epsilon=2.0, delta=1e-6, n_trees=4, max_depth=2, random_state=0,
                              **META).fit(X, y)
    assert m.accountant_.epsilon_spent == pytest.approx(2.0, rel=1e-12)
    assert m.accountant_.delta_spent == pytest.approx(1e-6, rel=1e-12)
    assert set(np.unique(m.predict(X))) <= {0, 1}


def test_scores_equal_the_last_staged_scores_bit_for_bit():
    """``_decision`` (every tree over bands of rows) is the last of ``_staged_decision`` (one
    tree at a time): the same additions in the same order per row."""
    X, y = _data(900, seed=3)
    model = GaussianBDTClassifier(epsilon=2.0, delta=1e-5, n_trees=15, max_depth=3,
                                  random_state=0, classes=[0, 1], **META).fit(X, y)
    *_, last = model._staged_decision(X)
    assert np.array_equal(model._decision(X), last)
