"""``gdf=False`` clips the gradients to [-g*, g*] (the sensitivities assume |g| <= g*)."""

from __future__ import annotations

import numpy as np

import dpexp.papers.dpboost.steps as steps_mod
from dpexp.papers.dpboost.estimators import DPBoostClassifier


def _max_gradient(monkeypatch, gdf: bool, g_star: float = 1.0) -> float:
    seen = []
    real = steps_mod.grow_tree

    def spy(data, stats, rows, *args, **kwargs):
        seen.append(float(np.abs(stats[rows, 0]).max()) if rows.size else 0.0)
        return real(data, stats, rows, *args, **kwargs)

    monkeypatch.setattr(steps_mod, "grow_tree", spy)
    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    y = (X[:, 0] > 0.5).astype(int)
    DPBoostClassifier(epsilon=1.0, mode="seq", n_trees=10, max_depth=2, learning_rate=0.9,
                      gdf=gdf, g_star=g_star, feature_domain=[[0.0, 1.0]] * 3, classes=[0, 1],
                      random_state=0).fit(X, y)
    return max(seen)


def test_gdf_off_clips_gradients_to_g_star(monkeypatch):
    assert _max_gradient(monkeypatch, gdf=False) <= 1.0
    # the first tree's square-loss gradients on +-1 labels are exactly 1: clipped to g*
    assert _max_gradient(monkeypatch, gdf=False, g_star=0.5) == 0.5


def test_gdf_on_filters_to_g_star(monkeypatch):
    assert _max_gradient(monkeypatch, gdf=True) <= 1.0
