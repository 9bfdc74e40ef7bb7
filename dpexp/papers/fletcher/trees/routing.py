"""Compiled routing: the leaf each sample reaches in the keyed trees (Algorithm 2), the
stored leaf tables it is looked up in, and the trees' votes (Section 4.4).

A sample is routed in O(depth) hash evaluations by compiled (numba) kernels that walk all
samples through all trees in one call. The kernels evaluate, node by node, exactly the
hashes of :func:`~dpexp.papers.fletcher.trees.keys.child_keys` /
:func:`~dpexp.papers.fletcher.trees.keys.key_uniform` /
:func:`~dpexp.papers.fletcher.trees.keys.choose_feature` (same SplitMix64 steps, same float
formulas, no fastmath), so a tree stays the same function of its seed; the numpy helpers
remain the specification used by the tests. The leaf a sample reaches is named by its
key. Keys are public (they follow from the published seeds), so nothing a leaf releases
may be a function of its key alone: an empty leaf's label comes from
:mod:`~dpexp.papers.fletcher.trees.empty_leaves`, keyed by the fit's noise secret.
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit, prange
from dpexp.papers.fletcher.trees.empty_leaves import empty_leaf_label_scalar
from dpexp.papers.fletcher.trees.keys import (
    SALT_FEATURE,
    SALT_SPLIT,
    TreeSchema,
    kernel_args,
    kernel_array,
    key_uniform_scalar,
)
from dpexp.privacy.partition import mix64_scalar

WALK_CHUNK = 512  # walks per parallel work item: amortises the scratch arrays
# Below this many (tree, sample) walks the serial twins run: waking numba's thread pool
# costs milliseconds on a busy 2-core machine (8.7 ms for 2 walks, measured), far more
# than the walks themselves (an audit fits thousands of tiny models).
PARALLEL_MIN_WALKS = 1 << 16


@njit(cache=True, nogil=True)
def _walk(
    x: np.ndarray, key: np.uint64, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray,
    ncat: np.ndarray, depth: int, child_mix: np.ndarray, lo: np.ndarray, hi: np.ndarray,
    used: np.ndarray,
) -> np.uint64:
    """Leaf key of one sample ``x`` in the tree with root ``key`` (one root-to-leaf path).

    ``child_mix[c]`` = ``mix64((c + 1) * GOLDEN)``, the key-independent half of
    ``child_keys`` (precomputed: it takes a hash off every level's dependency chain).
    ``lo``/``hi``/``used`` are caller-owned scratch of length m (reset here), so a chunk
    of walks shares one allocation.
    """
    m = x.shape[0]
    for j in range(m):
        lo[j] = lows[j]
        hi[j] = highs[j]
        used[j] = False
    n_avail = m
    for _ in range(depth):
        if n_avail == 0:  # only discrete features, all used on this path: a leaf
            break
        # Line 4: the rank-th available feature, rank = floor(u * n_avail) (as choose_feature).
        rank = min(int(key_uniform_scalar(key, SALT_FEATURE) * n_avail), n_avail - 1)
        f = -1
        for j in range(m):
            if not used[j]:
                if rank == 0:
                    f = j
                    break
                rank -= 1
        v = x[f]
        if cat[f]:
            last = ncat[f] - 1
            # numpy's nan_to_num(-1) + truncating cast, without casting out-of-range floats
            # (undefined in LLVM): NaN, codes < 0 and codes > last all take the last child.
            child = last if not (v > -1.0 and v < last + 1.0) else int(v)
            used[f] = True
            n_avail -= 1
        else:
            a = lo[f]
            t = a + key_uniform_scalar(key, SALT_SPLIT) * (hi[f] - a)
            if v > t:  # NaN compares False: a missing value goes left
                child = 1
                lo[f] = t
            else:
                child = 0
                hi[f] = t
        key = mix64_scalar(key ^ child_mix[child])
    return key


@njit(cache=True, nogil=True)
def _route_rows(
    X: np.ndarray, seeds: np.ndarray, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray,
    ncat: np.ndarray, depth: int, child_mix: np.ndarray, out: np.ndarray,
) -> None:
    """``out[i]`` = leaf of ``X[i]`` in tree ``seeds[i]``.

    Serial: its caller routes each training record once (disjoint subsets), tens of
    milliseconds at most, so a parallel variant would cost more compile time than it saves.
    """
    m = X.shape[1]
    lo, hi, used = np.empty(m), np.empty(m), np.empty(m, dtype=np.bool_)
    for i in range(X.shape[0]):
        out[i] = _walk(X[i], seeds[i], lows, highs, cat, ncat, depth, child_mix, lo, hi, used)


@njit(cache=True, nogil=True)
def _route_task(
    c: int, per_tree: int, X: np.ndarray, seeds: np.ndarray, lows: np.ndarray, highs: np.ndarray,
    cat: np.ndarray, ncat: np.ndarray, depth: int, child_mix: np.ndarray, out: np.ndarray,
) -> None:
    """Work item ``c`` of :func:`_route_grid`: one chunk of samples through one tree."""
    n, m = X.shape
    t, b = c // per_tree, c % per_tree
    lo, hi, used = np.empty(m), np.empty(m), np.empty(m, dtype=np.bool_)
    for i in range(b * WALK_CHUNK, min(n, (b + 1) * WALK_CHUNK)):
        out[t, i] = _walk(X[i], seeds[t], lows, highs, cat, ncat, depth, child_mix, lo, hi, used)


@njit(cache=True, nogil=True, parallel=True)
def _route_grid(
    X: np.ndarray, seeds: np.ndarray, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray,
    ncat: np.ndarray, depth: int, child_mix: np.ndarray, out: np.ndarray,
) -> None:
    """``out[t, i]`` = leaf of ``X[i]`` in tree ``seeds[t]`` (every sample through every tree)."""
    per_tree = (X.shape[0] + WALK_CHUNK - 1) // WALK_CHUNK
    for c in prange(seeds.shape[0] * per_tree):
        _route_task(c, per_tree, X, seeds, lows, highs, cat, ncat, depth, child_mix, out)


@njit(cache=True, nogil=True)
def _route_grid_serial(
    X: np.ndarray, seeds: np.ndarray, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray,
    ncat: np.ndarray, depth: int, child_mix: np.ndarray, out: np.ndarray,
) -> None:
    """Serial twin of :func:`_route_grid` (same work items, same results)."""
    per_tree = (X.shape[0] + WALK_CHUNK - 1) // WALK_CHUNK
    for c in range(seeds.shape[0] * per_tree):
        _route_task(c, per_tree, X, seeds, lows, highs, cat, ncat, depth, child_mix, out)


def route(schema: TreeSchema, seeds: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Key of the leaf reached by each row ``X[i]`` in the tree whose root key is ``seeds[i]``.

    Rows of different trees can be mixed freely (disjoint subsets: each record in its own
    tree). One compiled pass over the rows; see :func:`route_forest` for every row
    through every tree.
    """
    X = kernel_array(X, np.float64)
    n = X.shape[0]
    seeds = kernel_array(np.asarray(seeds, dtype=np.uint64).reshape(n), np.uint64)
    out = np.empty(n, dtype=np.uint64)
    _route_rows(X, seeds, *kernel_args(schema), out)
    return out


def route_forest(schema: TreeSchema, seeds: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Leaf keys ``(n_trees, n_samples)`` of every row of ``X`` in every tree ``seeds[t]``.

    Same result as ``route(schema, np.repeat(seeds, n), np.tile(X, (T, 1)))`` without
    materialising the tiled copy of ``X``.
    """
    X = kernel_array(X, np.float64)
    seeds = kernel_array(np.asarray(seeds, dtype=np.uint64).ravel(), np.uint64)
    out = np.empty((seeds.size, X.shape[0]), dtype=np.uint64)
    kernel = _route_grid if out.size >= PARALLEL_MIN_WALKS else _route_grid_serial
    kernel(X, seeds, *kernel_args(schema), out)
    return out


# ------------------------------------------------------------------------ leaf tables


@njit(cache=True, nogil=True)
def find_leaf(table: np.ndarray, first: int, end: int, k: np.uint64) -> int:
    """Index of ``k`` in the sorted ``table[first:end]``, or -1."""
    lo, hi = first, end
    while lo < hi:  # lower bound
        mid = (lo + hi) >> 1
        if table[mid] < k:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < end and table[lo] == k else -1


@njit(cache=True, nogil=True)
def _leaf_index(keys: np.ndarray, offsets: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    for t in range(keys.shape[0]):
        for i in range(keys.shape[1]):
            out[t, i] = find_leaf(table, offsets[t], offsets[t + 1], keys[t, i])


@njit(cache=True, nogil=True)
def _labels_task(
    c: int, per_tree: int, X: np.ndarray, seeds: np.ndarray, lows: np.ndarray, highs: np.ndarray,
    cat: np.ndarray, ncat: np.ndarray, depth: int, child_mix: np.ndarray, offsets: np.ndarray,
    table: np.ndarray, labels: np.ndarray, n_classes: int, secret: np.ndarray, out: np.ndarray,
) -> None:
    """Work item ``c`` of :func:`_forest_labels`: one chunk of samples through one tree."""
    n, m = X.shape
    t, b = c // per_tree, c % per_tree
    lo, hi, used = np.empty(m), np.empty(m), np.empty(m, dtype=np.bool_)
    for i in range(b * WALK_CHUNK, min(n, (b + 1) * WALK_CHUNK)):
        k = _walk(X[i], seeds[t], lows, highs, cat, ncat, depth, child_mix, lo, hi, used)
        j = find_leaf(table, offsets[t], offsets[t + 1], k)
        if j >= 0:
            out[t, i] = labels[j]
        else:  # an empty leaf: as empty_leaf_label, keyed by the fit's secret
            out[t, i] = empty_leaf_label_scalar(secret, t, k, n_classes)


@njit(cache=True, nogil=True, parallel=True)
def _forest_labels(
    X: np.ndarray, seeds: np.ndarray, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray,
    ncat: np.ndarray, depth: int, child_mix: np.ndarray, offsets: np.ndarray, table: np.ndarray,
    labels: np.ndarray, n_classes: int, secret: np.ndarray, out: np.ndarray,
) -> None:
    per_tree = (X.shape[0] + WALK_CHUNK - 1) // WALK_CHUNK
    for c in prange(seeds.shape[0] * per_tree):
        _labels_task(c, per_tree, X, seeds, lows, highs, cat, ncat, depth, child_mix, offsets, table,
                     labels, n_classes, secret, out)


@njit(cache=True, nogil=True)
def _forest_labels_serial(
    X: np.ndarray, seeds: np.ndarray, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray,
    ncat: np.ndarray, depth: int, child_mix: np.ndarray, offsets: np.ndarray, table: np.ndarray,
    labels: np.ndarray, n_classes: int, secret: np.ndarray, out: np.ndarray,
) -> None:
    """Serial twin of :func:`_forest_labels` (same work items, same results)."""
    per_tree = (X.shape[0] + WALK_CHUNK - 1) // WALK_CHUNK
    for c in range(seeds.shape[0] * per_tree):
        _labels_task(c, per_tree, X, seeds, lows, highs, cat, ncat, depth, child_mix, offsets, table,
                     labels, n_classes, secret, out)


def forest_leaf_labels(
    schema: TreeSchema, seeds: np.ndarray, X: np.ndarray, offsets: np.ndarray,
    table: np.ndarray, labels: np.ndarray, n_classes: int, secret: np.ndarray,
) -> np.ndarray:
    """Label ``(n_trees, n_samples)`` given by tree ``t`` to row ``i``, in one compiled pass.

    Equals ``route_forest`` + ``leaf_index`` into the stored labels, with
    :func:`empty_leaf_label` under ``secret`` (the fit's noise-stream secret) for the
    leaves no record reached (Section 4.2.1); fusing the three avoids materialising the
    key and index matrices.
    """
    X = kernel_array(X, np.float64)
    seeds = kernel_array(np.asarray(seeds, dtype=np.uint64).ravel(), np.uint64)
    out = np.empty((seeds.size, X.shape[0]), dtype=np.int64)
    kernel = _forest_labels if out.size >= PARALLEL_MIN_WALKS else _forest_labels_serial
    kernel(X, seeds, *kernel_args(schema), kernel_array(offsets, np.int64),
           kernel_array(table, np.uint64), kernel_array(labels, np.int64), int(n_classes),
           kernel_array(secret, np.uint64), out)
    return out


def leaf_index(keys: np.ndarray, offsets: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Row of ``table`` holding leaf ``keys[t, i]`` of tree ``t``, or -1 (an empty leaf).

    ``table[offsets[t]:offsets[t + 1]]`` are tree ``t``'s stored leaf keys, sorted; the
    search stays inside that segment, so equal keys of two trees never mix.
    """
    keys = kernel_array(keys, np.uint64)
    out = np.empty(keys.shape, dtype=np.int64)
    _leaf_index(keys, kernel_array(offsets, np.int64), kernel_array(table, np.uint64), out)
    return out


# ------------------------------------------------------------------------------ votes


@njit(cache=True, nogil=True)
def _votes(labels: np.ndarray, out: np.ndarray) -> None:
    C = out.shape[1]
    for t in range(labels.shape[0]):
        for i in range(labels.shape[1]):
            c = labels[t, i]
            if c < 0 or c >= C:
                raise ValueError("a tree label is not a class index")
            out[i, c] += 1


def vote_counts(labels: np.ndarray, n_classes: int) -> np.ndarray:
    """``(n_samples, n_classes)`` number of trees voting for each class (Section 4.4).

    ``labels`` is ``(n_trees, n_samples)`` class indices in ``[0, n_classes)``.
    """
    out = np.zeros((labels.shape[1], int(n_classes)), dtype=np.int64)
    _votes(kernel_array(labels, np.int64), out)
    return out

