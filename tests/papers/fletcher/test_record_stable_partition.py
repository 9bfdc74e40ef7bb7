"""Fletcher & Islam (2017) forest: a record's tree depends on the record, not its row.

Definition 3 (parallel composition) charges one tree's epsilon only if adding a record
changes the data of one tree. The issue #38 audit inserted a canary at row 0 of a 2-tree
forest with a fixed ``random_state``: keyed by row index, every later record changed
tree (epsilon lower bound 5.43 at a claim of 1). Keyed by content, none does.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dpexp.papers.fletcher.forest import FletcherForestClassifier

N = 300
CANARY_X = np.array([3.0, -3.0, 3.0, -3.0])


def _fit(X: np.ndarray, y: np.ndarray) -> FletcherForestClassifier:
    return FletcherForestClassifier(
        epsilon=1.0, n_trees=2, max_depth=3, classes=[0, 1],
        feature_domain=np.tile([-4.0, 4.0], (4, 1)), random_state=0,
        noise_rng=np.random.default_rng(1),
    ).fit(X, y)


def _leaves(model: FletcherForestClassifier, t: int) -> tuple[np.ndarray, np.ndarray]:
    s = slice(model.leaf_offsets_[t], model.leaf_offsets_[t + 1])
    return model.leaf_keys_[s], model.leaf_labels_[s]


@pytest.mark.parametrize("at", [0, N // 2, N])
def test_a_canary_anywhere_changes_one_tree_only(at):
    X, y = make_classification(N, n_features=4, n_informative=4, n_redundant=0, random_state=0)
    X2, y2 = np.insert(X, at, CANARY_X, axis=0), np.insert(y, at, 1)
    a, b = _fit(X, y), _fit(X2, y2)
    part_a, part_b = a.training_partition(X, y), b.training_partition(X2, y2)
    assert np.array_equal(np.delete(part_b, at), part_a)  # no other record moved
    canary_tree = part_b[at]
    other = 1 - canary_tree
    assert a.tree_sizes_[other] == b.tree_sizes_[other]
    # the other tree saw the same records: the same leaves and (same noise) the same labels
    for u, v in zip(_leaves(a, other), _leaves(b, other), strict=True):
        np.testing.assert_array_equal(u, v)
