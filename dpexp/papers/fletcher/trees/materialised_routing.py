"""Routing by array descent through a :class:`~.materialise.MaterialisedForest`.

The same leaves as the keyed walk of :mod:`~dpexp.papers.fletcher.trees.routing`, bit for
bit: :func:`materialised_grid` is :func:`~dpexp.papers.fletcher.trees.routing.route_forest`
(with the leaf keys as values) or
:func:`~dpexp.papers.fletcher.trees.routing.forest_leaf_labels` (with
:func:`dense_leaf_labels`), and :func:`materialised_route` is
:func:`~dpexp.papers.fletcher.trees.routing.route`.
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit, prange
from dpexp.papers.fletcher.trees.empty_leaves import empty_leaf_label_scalar
from dpexp.papers.fletcher.trees.keys import TreeSchema, kernel_args, kernel_array
from dpexp.papers.fletcher.trees.materialise import MaterialisedForest
from dpexp.papers.fletcher.trees.routing import PARALLEL_MIN_WALKS, WALK_CHUNK, find_leaf


@njit(cache=True, nogil=True)
def _dense_labels(
    leaf_keys: np.ndarray, leaf_trees: np.ndarray, offsets: np.ndarray, table: np.ndarray,
    labels: np.ndarray, n_classes: int, secret: np.ndarray, out: np.ndarray,
) -> None:
    for j in range(leaf_keys.shape[0]):
        t = np.int64(leaf_trees[j])
        i = find_leaf(table, offsets[t], offsets[t + 1], leaf_keys[j])
        out[j] = (labels[i] if i >= 0
                  else empty_leaf_label_scalar(secret, t, leaf_keys[j], n_classes))


def dense_leaf_labels(
    forest: MaterialisedForest, offsets: np.ndarray, table: np.ndarray, labels: np.ndarray,
    n_classes: int, secret: np.ndarray,
) -> np.ndarray:
    """The label of every leaf of ``forest``, in its leaf rows (Section 4.2.1).

    A leaf with a stored label (``table``/``labels`` as in :func:`forest_leaf_labels`)
    keeps it; an empty leaf gets :func:`empty_leaf_label` under ``secret``: exactly what
    :func:`forest_leaf_labels` gives a row reaching that leaf.
    """
    out = np.empty(forest.leaf_keys.size, dtype=np.int64)
    _dense_labels(forest.leaf_keys, forest.leaf_trees, kernel_array(offsets, np.int64),
                  kernel_array(table, np.uint64), kernel_array(labels, np.int64), int(n_classes),
                  kernel_array(secret, np.uint64), out)
    return out


@njit(cache=True, nogil=True)
def _descend(
    X: np.ndarray, start: int, root: int, feature: np.ndarray, threshold: np.ndarray,
    first: np.ndarray, cat: np.ndarray, ncat: np.ndarray, depth: int, cur: np.ndarray,
) -> None:
    """``cur[i]`` = leaf row reached by ``X[start + i]`` from node ``root``, for ``i < cur.size``.

    Level by level over the whole chunk: the rows' descents are independent, so the CPU
    overlaps their dependent loads. A row at a leaf stays there (``feature`` -1). The
    child number is ``routing._walk``'s, operation for operation.
    """
    n = cur.shape[0]
    for i in range(n):
        cur[i] = root
    for _ in range(depth):
        for i in range(n):
            node = cur[i]
            f = feature[node]
            if f >= 0:
                v = X[start + i, f]
                if cat[f]:
                    last = ncat[f] - 1
                    cur[i] = first[node] + (last if not (v > -1.0 and v < last + 1.0) else int(v))
                else:
                    # NaN compares False: left. Arithmetic on the comparison, not a branch:
                    # it is a coin flip per row, and mispredicting it cost half the time.
                    cur[i] = first[node] + np.int64(v > threshold[node])
    for i in range(n):
        cur[i] = first[cur[i]]


@njit(cache=True, nogil=True)
def _dense_task(
    c: int, per_tree: int, X: np.ndarray, roots: np.ndarray, feature: np.ndarray,
    threshold: np.ndarray, first: np.ndarray, cat: np.ndarray, ncat: np.ndarray, depth: int,
    leaf_values: np.ndarray, out: np.ndarray,
) -> None:
    """Work item ``c``: one chunk of rows through one tree, ``out[t, i]`` = its leaf's value."""
    n = X.shape[0]
    t, b = c // per_tree, c % per_tree
    start = b * WALK_CHUNK
    cur = np.empty(min(n, start + WALK_CHUNK) - start, dtype=np.int64)
    _descend(X, start, roots[t], feature, threshold, first, cat, ncat, depth, cur)
    for i in range(cur.shape[0]):
        out[t, start + i] = leaf_values[cur[i]]


@njit(cache=True, nogil=True, parallel=True)
def _dense_grid(
    X: np.ndarray, roots: np.ndarray, feature: np.ndarray, threshold: np.ndarray, first: np.ndarray,
    cat: np.ndarray, ncat: np.ndarray, depth: int, leaf_values: np.ndarray, out: np.ndarray,
) -> None:
    per_tree = (X.shape[0] + WALK_CHUNK - 1) // WALK_CHUNK
    for c in prange(roots.shape[0] * per_tree):
        _dense_task(c, per_tree, X, roots, feature, threshold, first, cat, ncat, depth, leaf_values, out)


@njit(cache=True, nogil=True)
def _dense_grid_serial(
    X: np.ndarray, roots: np.ndarray, feature: np.ndarray, threshold: np.ndarray, first: np.ndarray,
    cat: np.ndarray, ncat: np.ndarray, depth: int, leaf_values: np.ndarray, out: np.ndarray,
) -> None:
    """Serial twin of :func:`_dense_grid` (same work items, same results)."""
    per_tree = (X.shape[0] + WALK_CHUNK - 1) // WALK_CHUNK
    for c in range(roots.shape[0] * per_tree):
        _dense_task(c, per_tree, X, roots, feature, threshold, first, cat, ncat, depth, leaf_values, out)


def _dense_args(schema: TreeSchema, forest: MaterialisedForest) -> tuple:
    _, _, cat, ncat, depth, _ = kernel_args(schema)
    return (kernel_array(forest.roots, np.int64), kernel_array(forest.feature, np.int32),
            kernel_array(forest.threshold, np.float64), kernel_array(forest.first, np.int32),
            cat, ncat, depth)


def materialised_grid(
    schema: TreeSchema, forest: MaterialisedForest, X: np.ndarray, leaf_values: np.ndarray,
    trees: slice = slice(None),
) -> np.ndarray:
    """``leaf_values[leaf of X[i] in tree t]`` as ``(n_trees, n_samples)``, by array descent.

    With ``leaf_values`` = :func:`dense_leaf_labels` this is :func:`forest_leaf_labels`;
    with ``forest.leaf_keys`` it is :func:`route_forest` (same values, bit for bit).
    ``trees`` selects a block of trees (rows of the result).
    """
    X = kernel_array(X, np.float64)
    leaf_values = np.require(leaf_values, requirements=("C", "W"))
    roots, *rest = _dense_args(schema, forest)
    roots = kernel_array(roots[trees], np.int64)
    out = np.empty((roots.size, X.shape[0]), dtype=leaf_values.dtype)
    kernel = _dense_grid if out.size >= PARALLEL_MIN_WALKS else _dense_grid_serial
    kernel(X, roots, *rest, leaf_values, out)
    return out


@njit(cache=True, nogil=True)
def _dense_rows(
    X: np.ndarray, trees: np.ndarray, roots: np.ndarray, feature: np.ndarray, threshold: np.ndarray,
    first: np.ndarray, cat: np.ndarray, ncat: np.ndarray, depth: int, leaf_keys: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[i]`` = key of the leaf of ``X[i]`` in tree ``trees[i]`` (0 when ``trees[i] < 0``).

    Row by row (consecutive rows may belong to different trees); the child numbers are
    those of :func:`_descend`.
    """
    for i in range(X.shape[0]):
        if trees[i] < 0:
            out[i] = 0
            continue
        node = roots[trees[i]]
        f = feature[node]
        while f >= 0:
            v = X[i, f]
            if cat[f]:
                last = ncat[f] - 1
                node = first[node] + (last if not (v > -1.0 and v < last + 1.0) else int(v))
            else:
                node = first[node] + np.int64(v > threshold[node])
            f = feature[node]
        out[i] = leaf_keys[first[node]]


def materialised_route(
    schema: TreeSchema, forest: MaterialisedForest, trees: np.ndarray, X: np.ndarray,
) -> np.ndarray:
    """Leaf key of each row ``X[i]`` in tree number ``trees[i]``: :func:`route` with
    ``seeds = seeds_[trees]``, by array descent. A row with ``trees[i] < 0`` (a record the
    partition left out) is not routed: its key is 0."""
    X = kernel_array(X, np.float64)
    trees = kernel_array(np.asarray(trees, dtype=np.int64).reshape(X.shape[0]), np.int64)
    out = np.empty(X.shape[0], dtype=np.uint64)
    _dense_rows(X, trees, *_dense_args(schema, forest), forest.leaf_keys, out)
    return out
