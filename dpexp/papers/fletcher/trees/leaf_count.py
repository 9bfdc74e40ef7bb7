"""Number of leaves of a full keyed tree (Table 3's empty-leaf fraction).

A discrete split has one child per value, so the full trees can be huge (about 1.9
million leaves a tree on Adult, Theorem-2 depth 9; ~10^8 on Mushroom): the count is exact
while a level is small and Knuth's unbiased estimate below that.
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit
from dpexp.papers.fletcher.trees.keys import TreeSchema, count_available, kernel_args, pick_feature
from dpexp.privacy.partition import mix64_scalar


@njit(cache=True, nogil=True)
def _exact_levels(
    seed: np.uint64, cat: np.ndarray, ncat: np.ndarray, depth: int, child_mix: np.ndarray, cap: int,
) -> tuple:
    """Level-wise enumeration of the nodes of one tree while a level has <= ``cap`` nodes.

    Returns ``(leaves, level, keys, used)``: leaves found above ``level``, and the live
    nodes at ``level`` (keys, used discrete features), where enumeration stopped: either
    ``level == depth`` (all remaining nodes are leaves) or the next level exceeds ``cap``.
    """
    m = cat.shape[0]
    keys = np.empty(1, dtype=np.uint64)
    keys[0] = seed
    used = np.zeros((1, m), dtype=np.bool_)
    n = 1
    leaves = 0.0
    level = 0
    while level < depth:
        # Drop the nodes with no feature left (leaves above the depth limit), in place.
        n_live = 0
        for i in range(n):
            if count_available(used[i]) > 0:
                keys[n_live] = keys[i]
                for j in range(m):
                    used[n_live, j] = used[i, j]
                n_live += 1
        leaves += n - n_live
        n = n_live
        if n == 0:
            break
        feats = np.empty(n, dtype=np.int64)
        total = 0
        for i in range(n):
            f = pick_feature(keys[i], used[i], count_available(used[i]))
            feats[i] = f
            total += ncat[f] if cat[f] else 2
        if total > cap:
            break
        new_keys = np.empty(total, dtype=np.uint64)
        new_used = np.empty((total, m), dtype=np.bool_)
        k = 0
        for i in range(n):
            f = feats[i]
            for c in range(ncat[f] if cat[f] else 2):
                new_keys[k] = mix64_scalar(keys[i] ^ child_mix[c])
                for j in range(m):
                    new_used[k, j] = used[i, j]
                if cat[f]:
                    new_used[k, f] = True
                k += 1
        keys, used, n = new_keys, new_used, total
        level += 1
    return leaves, level, keys[:n].copy(), used[:n].copy()


@njit(cache=True, nogil=True)
def _knuth_level(
    keys: np.ndarray, used: np.ndarray, weight: np.ndarray, alive: np.ndarray, r: np.ndarray,
    cat: np.ndarray, ncat: np.ndarray, child_mix: np.ndarray,
) -> int:
    """One level of the random walks: each live walk ``i`` (in index order, consuming
    ``r`` in that order) picks its node's feature, a uniformly random child among ``b``,
    and multiplies its weight by ``b``. Returns the number of walks still alive."""
    j = 0
    n_alive = 0
    for i in range(keys.shape[0]):
        if not alive[i]:
            continue
        f = pick_feature(keys[i], used[i], count_available(used[i]))
        b = ncat[f] if cat[f] else 2
        c = min(int(r[j] * b), b - 1)
        j += 1
        weight[i] *= b
        if cat[f]:
            used[i, f] = True
        keys[i] = mix64_scalar(keys[i] ^ child_mix[c])
        alive[i] = count_available(used[i]) > 0
        n_alive += alive[i]
    return n_alive


def count_leaves(
    schema: TreeSchema, seed: np.uint64, rng: np.random.Generator, *, cap: int = 1 << 14,
    walks: int = 2048,
) -> float:
    """Number of leaves of the full tree with root key ``seed`` (for Table 3).

    Exact (level-wise enumeration of the node keys) while a level has at most ``cap``
    nodes; beyond that, Knuth's unbiased estimator (mean over random root-to-leaf walks
    of the product of branching factors) for the remaining subtrees. With only
    continuous features the tree is a full binary tree: 2^depth exactly. ``rng`` is
    drawn from exactly as the level-wise numpy formulation did (start nodes, then one
    uniform per live walk per level), so estimates are reproducible across versions.
    """
    cat = schema.categorical
    if not cat.any():
        return float(2**schema.depth)
    _, _, cat_a, ncat_a, depth, child_mix = kernel_args(schema)
    # Continuous features never become "used", so marking only discrete ones is enough.
    leaves, level, keys, used = _exact_levels(np.uint64(seed), cat_a, ncat_a, depth, child_mix, int(cap))
    if level == depth or keys.size == 0:
        return float(leaves) + float(keys.size)
    start = rng.integers(0, keys.size, size=walks)
    k, u = keys[start], used[start].copy()
    weight = np.full(walks, float(keys.size))
    alive = np.ones(walks, dtype=bool)  # every start node has a feature left
    n_alive = walks
    for _ in range(depth - level):
        if n_alive == 0:
            break
        n_alive = _knuth_level(k, u, weight, alive, rng.random(n_alive), cat_a, ncat_a, child_mix)
    return float(leaves) + float(weight.mean())
