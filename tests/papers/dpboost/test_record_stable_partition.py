"""DPBoost (Li et al. 2020): the record partitions of PARA, of DPBoost's ensembles and of
the honest variant are keyed by each record's content, not its row, so a canary inserted
at row 0, in the middle or at the end moves no other record (Theorem 4, parallel
composition over the trees of an ensemble)."""

from __future__ import annotations

import numpy as np
import pytest

import dpexp.papers.dpboost.steps as dpboost_steps
from dpexp.papers.dpboost.estimators import DPBoostClassifier
from dpexp.papers.dpboost.honest import HonestDPBoostClassifier
from dpexp.privacy import record_partition

META = {
    "feature_domain": np.tile([0.0, 1.0], (2, 1)),
    "categorical_features": np.zeros(2, dtype=bool),
    "n_categories": np.zeros(2, dtype=np.int64),
}
N = 120


def _data() -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(0).random((N, 2))
    return X, (X[:, 0] > 0.5).astype(int)


def _partitions(monkeypatch, module, make, X, y) -> list[np.ndarray]:
    """Every partition ``fit`` draws (a spy on the module's record_partition)."""
    seen: list[np.ndarray] = []
    def spy(*args, **kwargs):
        out = record_partition(*args, **kwargs)
        seen.append(out.copy())
        return out

    monkeypatch.setattr(module, "record_partition", spy)
    make().fit(X, y)
    return seen


CASES = {
    "para": (dpboost_steps, lambda: DPBoostClassifier(mode="para", n_trees=4, max_depth=2, classes=[0, 1],
                                                random_state=3, **META)),
    "dpboost": (dpboost_steps, lambda: DPBoostClassifier(mode="dpboost", n_trees=6, trees_per_ensemble=3,
                                                   max_depth=2, classes=[0, 1], random_state=3,
                                                   **META)),
    "honest": (dpboost_steps, lambda: HonestDPBoostClassifier(n_trees=6, trees_per_ensemble=3, max_depth=2,
                                                       classes=[0, 1], random_state=3, **META)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("at", [0, N // 2, N])
def test_a_canary_anywhere_moves_no_other_record(monkeypatch, case, at):
    module, make = CASES[case]
    X, y = _data()
    before = _partitions(monkeypatch, module, make, X, y)
    after = _partitions(monkeypatch, module, make, np.insert(X, at, [0.9, 0.1], axis=0),
                        np.insert(y, at, 1))
    assert len(before) == len(after) >= 1
    for p, q in zip(before, after, strict=True):
        np.testing.assert_array_equal(np.delete(q, at), p)
