"""Array-based decision trees, shared by every algorithm in the project.

A tree is a set of flat arrays indexed by node id (node 0 is the root):

* ``kind[i]``: ``LEAF``, ``NUMERIC`` (binary split: go to ``child_start[i]`` when
  ``x[feature[i]] <= threshold[i]``, else to ``child_start[i] + 1``) or ``CATEGORICAL``
  (multiway split over integer codes ``0 .. n_children[i]-1``: go to
  ``child_start[i] + code``; codes outside that range go to the last child).
* ``value[i, :]``: the leaf output (one column for regression/boosting, one column per
  class for label counts or votes). Internal nodes may hold values too; they are unused
  by prediction.

Prediction walks all samples down the tree one level at a time with vectorised numpy
(no Python loop per sample or per node), so its cost is ``O(depth)`` array operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

LEAF, NUMERIC, CATEGORICAL = 0, 1, 2


@dataclass
class ArrayTree:
    """A fitted tree as flat arrays; see the module docstring for the layout."""

    kind: np.ndarray  # int8 (n_nodes,)
    feature: np.ndarray  # int32 (n_nodes,), -1 at leaves
    threshold: np.ndarray  # float64 (n_nodes,), NaN where unused
    child_start: np.ndarray  # int32 (n_nodes,), -1 at leaves
    n_children: np.ndarray  # int32 (n_nodes,), 0 at leaves
    value: np.ndarray  # float64 (n_nodes, n_outputs)
    depth: np.ndarray  # int32 (n_nodes,)

    @property
    def n_nodes(self) -> int:
        return int(self.kind.shape[0])

    @property
    def max_depth(self) -> int:
        return int(self.depth.max()) if self.n_nodes else 0

    @property
    def leaves(self) -> np.ndarray:
        return np.flatnonzero(self.kind == LEAF)

    def apply(self, X) -> np.ndarray:
        """Leaf index reached by each row of ``X`` (dense array or scipy sparse matrix)."""
        n = X.shape[0]
        node = np.zeros(n, dtype=np.int64)
        if self.n_nodes == 0:
            raise ValueError("empty tree")
        if sp.issparse(X):
            X = X.tocsc()
        rows = np.arange(n)
        for _ in range(self.max_depth):
            k = self.kind[node]
            active = k != LEAF
            if not active.any():
                break
            idx = rows[active]
            nd = node[active]
            f = self.feature[nd]
            x = _gather(X, idx, f)
            is_num = self.kind[nd] == NUMERIC
            step = np.where(is_num, (x > self.threshold[nd]).astype(np.int64), 0)
            if not is_num.all():
                code = np.nan_to_num(x, nan=-1.0).astype(np.int64)
                last = self.n_children[nd] - 1
                code = np.where((code < 0) | (code > last), last, code)
                step = np.where(is_num, step, code)
            node[active] = self.child_start[nd] + step
        return node

    def predict_value(self, X) -> np.ndarray:
        """Leaf values ``(n_samples, n_outputs)`` for the rows of ``X``."""
        return self.value[self.apply(X)]


def _gather(X, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``X[rows[i], cols[i]]`` for dense arrays and CSC matrices, as float64."""
    if isinstance(X, np.ndarray):
        return X[rows, cols].astype(np.float64, copy=False)
    # Sparse CSC: one vectorised pass per distinct feature; depth-level calls only.
    out = np.zeros(rows.shape[0], dtype=np.float64)
    for f in np.unique(cols):
        sel = np.flatnonzero(cols == f)
        col = X[:, int(f)]
        out[sel] = col[rows[sel]].toarray().ravel()
    return out


@dataclass
class TreeBuilder:
    """Grows an :class:`ArrayTree` node by node (used by growers, not by users)."""

    n_outputs: int = 1
    kind: list[int] = field(default_factory=list)
    feature: list[int] = field(default_factory=list)
    threshold: list[float] = field(default_factory=list)
    child_start: list[int] = field(default_factory=list)
    n_children: list[int] = field(default_factory=list)
    value: list[np.ndarray] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)

    def add_node(self, depth: int) -> int:
        """Append a leaf at ``depth`` and return its id."""
        self.kind.append(LEAF)
        self.feature.append(-1)
        self.threshold.append(np.nan)
        self.child_start.append(-1)
        self.n_children.append(0)
        self.value.append(np.zeros(self.n_outputs))
        self.depth.append(depth)
        return len(self.kind) - 1

    def split_numeric(self, node: int, feature: int, threshold: float) -> tuple[int, int]:
        """Turn leaf ``node`` into ``x[feature] <= threshold``; return (left, right) ids."""
        left = self.add_node(self.depth[node] + 1)
        right = self.add_node(self.depth[node] + 1)
        assert right == left + 1
        self.kind[node], self.feature[node], self.threshold[node] = NUMERIC, feature, threshold
        self.child_start[node], self.n_children[node] = left, 2
        return left, right

    def split_categorical(self, node: int, feature: int, n_values: int) -> list[int]:
        """Turn leaf ``node`` into a multiway split on codes ``0..n_values-1``."""
        if n_values < 1:
            raise ValueError("a categorical split needs at least one value")
        children = [self.add_node(self.depth[node] + 1) for _ in range(n_values)]
        self.kind[node], self.feature[node] = CATEGORICAL, feature
        self.child_start[node], self.n_children[node] = children[0], n_values
        return children

    def set_value(self, node: int, value) -> None:
        self.value[node] = np.asarray(value, dtype=np.float64).reshape(self.n_outputs)

    def build(self) -> ArrayTree:
        return ArrayTree(
            kind=np.asarray(self.kind, dtype=np.int8),
            feature=np.asarray(self.feature, dtype=np.int32),
            threshold=np.asarray(self.threshold, dtype=np.float64),
            child_start=np.asarray(self.child_start, dtype=np.int32),
            n_children=np.asarray(self.n_children, dtype=np.int32),
            value=np.vstack(self.value) if self.value else np.zeros((0, self.n_outputs)),
            depth=np.asarray(self.depth, dtype=np.int32),
        )
