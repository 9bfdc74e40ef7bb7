"""The runner's untimed warm-up fit (``dpexp.experiments.runner._warm_up``): the cell's
own parameters on at most WARMUP_ROWS rows, with at most WARMUP_MAX_TREES trees (whole
ensembles, at least two), once per worker and (algorithm, task, dataset)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dpexp.experiments import execute as runner


@pytest.mark.parametrize(("n_trees", "per", "want"), [
    (50, None, 50), (100, 50, 100), (5000, 50, 100), (5000, 30, 120), (1000, 40, 120),
    (5000, None, 100), (150, 100, 150), (5000, 200, 400), ("auto", None, "auto"),
])
def test_warm_up_trees(n_trees, per, want):
    assert runner.warm_up_trees(n_trees, per) == want


def test_warm_up_fits_once_with_few_trees(monkeypatch):
    seen = []

    class Fake:
        def fit(self, X, y):
            seen.append((X.shape[0], self.params["n_trees"]))

    def make_estimator(name, task, params, **kw):
        est = Fake()
        est.params = params
        return est

    monkeypatch.setattr(runner, "make_estimator", make_estimator)
    monkeypatch.setattr(runner, "_WARMED", set())
    dataset = SimpleNamespace(task="classification", public_metadata=dict)
    cell = SimpleNamespace(algorithm="dpboost", dataset=SimpleNamespace(key="d"), epsilon=1.0,
                           params={"n_trees": 5000, "trees_per_ensemble": 50})
    X, y = np.zeros((300, 2)), np.zeros(300)
    data = runner._Split(dataset=dataset, X_train=X, y_train=y)
    runner._warm_up(cell, data, 0, 300)
    runner._warm_up(cell, data, 0, 300)  # the same worker, algorithm and dataset: no second fit
    assert seen == [(300, 100)]
    assert cell.params["n_trees"] == 5000  # the cell itself keeps its trees
