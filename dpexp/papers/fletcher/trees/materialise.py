"""Materialised trees: the full keyed trees of a forest written out as arrays.

Prediction routes every test row through every tree: 30 million walks for a 300,000-row
test fold of a 100-tree forest, each level of which re-derives its node's feature and
threshold from the key (three SplitMix64 hashes and a scan of the used features). Most
of the paper's trees are small (SynthF, Theorem-2 depth 8: 511 nodes; Table 4's
continuous data sets at most 8,191; continuous features only: ``2^(depth+1) - 1`` nodes a
tree), so each tree is written out once (on the first routing call big enough to pay for
it, :class:`MaterialisedCache`) as arrays -- per node its feature, threshold and first
child, per leaf its key -- with the arithmetic of the keyed walk (``routing._walk``) in
the same order (the same float64 thresholds, the same child numbers), and a row then
descends by array lookups (:mod:`~dpexp.papers.fletcher.trees.materialised_routing`):
the same trees, the same leaves. Trees with many discrete features are far too big for
that (Adult, Theorem-2 depth: ~2 million leaves per tree; Mushroom ~10^8, see
:func:`~dpexp.papers.fletcher.trees.leaf_count.count_leaves`), so materialising is
bounded by :data:`MAX_MATERIALISED_NODES` over the whole forest, and a forest above it
keeps the keyed walk. The materialised structure is a function of the public seeds and
schema only; the leaves' labels are filled in separately
(:func:`~dpexp.papers.fletcher.trees.materialised_routing.dense_leaf_labels`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpexp.jit import njit
from dpexp.papers.fletcher.trees.keys import (
    SALT_SPLIT,
    TreeSchema,
    count_available,
    kernel_args,
    kernel_array,
    key_uniform_scalar,
    pick_feature,
)
from dpexp.privacy.partition import mix64_scalar

#: Node budget of a materialised forest: 16 bytes a node (feature, threshold, first
#: child) plus a leaf's key and label, ~100 MB at the bound for binary trees.
MAX_MATERIALISED_NODES = 1 << 22


@dataclass(frozen=True)
class MaterialisedForest:
    """The full trees of a forest as flat arrays (nodes of tree ``t`` from ``roots[t]``).

    Node ``v`` is internal when ``feature[v] >= 0``: its child number ``c`` (0 = left,
    ``x <= threshold[v]``, or NaN; 1 = right; or the discrete code, as ``routing._walk``) is node
    ``first[v] + c``. A leaf has ``feature[v] == -1`` and ``first[v]`` is its row in
    ``leaf_keys`` (the key ``routing._walk`` returns for it) and in the leaf-label arrays.
    """

    roots: np.ndarray  # (T,) int64, root node of each tree
    feature: np.ndarray  # (n_nodes,) int32
    threshold: np.ndarray  # (n_nodes,) float64, continuous splits only
    first: np.ndarray  # (n_nodes,) int32, first child, or the leaf's row
    leaf_keys: np.ndarray  # (n_leaves,) uint64
    leaf_trees: np.ndarray  # (n_leaves,) int32, tree of each leaf
    depth: int

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.roots, self.feature, self.threshold, self.first,
                                      self.leaf_keys, self.leaf_trees))


@njit(cache=True, nogil=True)
def _tree_size(
    seed: np.uint64, cat: np.ndarray, ncat: np.ndarray, depth: int, child_mix: np.ndarray, budget: int,
) -> tuple:
    """``(nodes, leaves)`` of the full tree with root key ``seed``, or ``(-1, -1)`` once it
    has more than ``budget`` nodes.

    Depth first over the keys; a node's available features are its path's (only discrete
    features are ever used up, so ``used`` is all the state a count needs).
    """
    m = cat.shape[0]
    used = np.zeros((depth + 1, m), dtype=np.bool_)
    size = depth * child_mix.shape[0] + 1
    s_key = np.empty(size, dtype=np.uint64)
    s_level = np.empty(size, dtype=np.int64)
    s_feat = np.empty(size, dtype=np.int64)
    s_key[0], s_level[0], s_feat[0] = seed, 0, -1
    sp, nodes, leaves = 1, 0, 0
    while sp > 0:
        sp -= 1
        key, level, pf = s_key[sp], s_level[sp], s_feat[sp]
        nodes += 1
        if nodes > budget:
            return -1, -1
        if level == depth:
            leaves += 1
            continue
        if level > 0:
            used[level, :] = used[level - 1, :]
            if cat[pf]:
                used[level, pf] = True
        n_avail = count_available(used[level])
        if n_avail == 0:
            leaves += 1
            continue
        f = pick_feature(key, used[level], n_avail)
        for c in range(ncat[f] if cat[f] else 2):
            s_key[sp] = mix64_scalar(key ^ child_mix[c])
            s_level[sp] = level + 1
            s_feat[sp] = f
            sp += 1
    return nodes, leaves


@njit(cache=True, nogil=True)
def _fill_tree(
    seed: np.uint64, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray, ncat: np.ndarray,
    depth: int, child_mix: np.ndarray, tree: int, node0: int, leaf0: int, feature: np.ndarray,
    threshold: np.ndarray, first: np.ndarray, leaf_keys: np.ndarray, leaf_trees: np.ndarray,
) -> tuple:
    """Write the tree with root key ``seed`` from node ``node0`` and leaf row ``leaf0`` on.

    Depth first; row ``level`` of ``lo``/``hi``/``used`` is the state ``routing._walk`` holds on
    entering a node of that level (its parent's state with the parent's split applied), so
    every threshold is ``lo + u * (hi - lo)`` of exactly the same operands as in the walk.
    Returns ``(next free node, next free leaf row)``.
    """
    m = cat.shape[0]
    lo = np.empty((depth + 1, m))
    hi = np.empty((depth + 1, m))
    used = np.zeros((depth + 1, m), dtype=np.bool_)
    n_avail = np.empty(depth + 1, dtype=np.int64)
    lo[0, :] = lows
    hi[0, :] = highs
    n_avail[0] = m
    size = depth * child_mix.shape[0] + 1  # siblings pending on the path, at most
    s_key = np.empty(size, dtype=np.uint64)
    s_level = np.empty(size, dtype=np.int64)
    s_node = np.empty(size, dtype=np.int64)
    s_feat = np.empty(size, dtype=np.int64)
    s_child = np.empty(size, dtype=np.int64)
    s_t = np.empty(size)
    s_key[0], s_level[0], s_node[0], s_feat[0], s_child[0], s_t[0] = seed, 0, node0, -1, 0, 0.0
    sp, next_node, next_leaf = 1, node0 + 1, leaf0
    while sp > 0:
        sp -= 1
        key, level, node = s_key[sp], s_level[sp], s_node[sp]
        pf = s_feat[sp]
        if level > 0:
            n_avail[level] = n_avail[level - 1] - (1 if cat[pf] else 0)
        if level == depth or n_avail[level] == 0:  # a leaf (as the walk's loop ends)
            if next_leaf >= leaf_keys.shape[0]:
                return -1, -1  # more leaves than counted: refuse rather than overrun
            feature[node] = -1
            threshold[node] = 0.0
            first[node] = next_leaf
            leaf_keys[next_leaf] = key
            leaf_trees[next_leaf] = tree
            next_leaf += 1
            continue
        if level > 0:  # the parent's state, then the parent's split on this branch
            lo[level, :] = lo[level - 1, :]
            hi[level, :] = hi[level - 1, :]
            used[level, :] = used[level - 1, :]
            if cat[pf]:
                used[level, pf] = True
            elif s_child[sp] == 1:
                lo[level, pf] = s_t[sp]
            else:
                hi[level, pf] = s_t[sp]
        f = pick_feature(key, used[level], n_avail[level])
        if cat[f]:
            nch, t = ncat[f], 0.0
        else:
            a = lo[level, f]
            nch, t = 2, a + key_uniform_scalar(key, SALT_SPLIT) * (hi[level, f] - a)
        if next_node + nch > feature.shape[0]:
            return -1, -1
        feature[node] = f
        threshold[node] = t
        first[node] = next_node
        for c in range(nch):
            s_key[sp] = mix64_scalar(key ^ child_mix[c])
            s_level[sp] = level + 1
            s_node[sp] = next_node + c
            s_feat[sp] = f
            s_child[sp] = c
            s_t[sp] = t
            sp += 1
        next_node += nch
    return next_node, next_leaf


@njit(cache=True, nogil=True)
def _forest_size(
    seeds: np.ndarray, cat: np.ndarray, ncat: np.ndarray, depth: int, child_mix: np.ndarray,
    budget: int, tree_budget: int,
) -> tuple:
    """``(nodes, leaves)`` of the whole forest, or ``(-1, -1)`` as soon as it has more than
    ``budget`` nodes or one tree more than ``tree_budget`` (the trees of a forest have the
    same size distribution, so a refusal costs about one tree's budget, not the forest's).
    """
    nodes, leaves = 0, 0
    for t in range(seeds.shape[0]):
        n, k = _tree_size(seeds[t], cat, ncat, depth, child_mix, min(tree_budget, budget - nodes))
        if n < 0:
            return -1, -1
        nodes += n
        leaves += k
    return nodes, leaves


def materialise_forest(
    schema: TreeSchema, seeds: np.ndarray, max_nodes: int | None = None,
) -> MaterialisedForest | None:
    """The full trees ``seeds`` as arrays, or None when they have more than ``max_nodes``
    nodes (default :data:`MAX_MATERIALISED_NODES`) or one tree has more than twice its share.

    With continuous features only, every tree is the full binary tree of ``depth`` levels
    (a continuous feature is never used up), so its size needs no count.
    """
    lows, highs, cat, ncat, depth, child_mix = kernel_args(schema)
    seeds = kernel_array(np.asarray(seeds, dtype=np.uint64).ravel(), np.uint64)
    limit = MAX_MATERIALISED_NODES if max_nodes is None else int(max_nodes)
    limit = min(limit, MAX_MATERIALISED_NODES, 2**31 - 1)  # int32 node numbers
    if not cat.any():
        n_nodes, n_leaves = ((1 << (depth + 1)) - 1) * seeds.size, (1 << depth) * seeds.size
    else:
        tree_budget = max(1, 2 * limit // max(seeds.size, 1))
        n_nodes, n_leaves = _forest_size(seeds, cat, ncat, depth, child_mix, limit, tree_budget)
    if n_nodes < 0 or n_nodes > limit:
        return None
    feature = np.empty(n_nodes, dtype=np.int32)
    threshold = np.empty(n_nodes)
    first = np.empty(n_nodes, dtype=np.int32)
    leaf_keys = np.empty(n_leaves, dtype=np.uint64)
    leaf_trees = np.empty(n_leaves, dtype=np.int32)
    roots = np.empty(seeds.size, dtype=np.int64)
    node, leaf = 0, 0
    for t in range(seeds.size):
        roots[t] = node
        node, leaf = _fill_tree(seeds[t], lows, highs, cat, ncat, depth, child_mix, t, node, leaf,
                                feature, threshold, first, leaf_keys, leaf_trees)
        if node < 0:
            break
    if (node, leaf) != (n_nodes, n_leaves):
        raise AssertionError("materialised forest: the fill disagrees with the count")
    return MaterialisedForest(roots, feature, threshold, first, leaf_keys, leaf_trees, depth)


#: Materialise only when the routing asked for costs at least this many times the forest's
#: node count in keyed-walk levels (walks x depth). Measured: writing a node out costs
#: ~2.4 walk levels, counting one (discrete features) ~0.9, an array level ~0.1; so a
#: materialisation never makes a call slower, and a refusal (one tree counted) is cheap.
COST_RATIO = 4


class MaterialisedCache:
    """A fitted forest's :class:`MaterialisedForest`, built on the first routing call big
    enough to pay for it (``walks * depth >= COST_RATIO * nodes``), plus per-leaf value
    arrays (labels, counts) an estimator derives from it.

    A fitted attribute whose content appears lazily: ``predict`` leaves the estimator's
    ``__dict__`` unchanged (the same object). Pickles and copies drop the arrays (a function
    of the public seeds and schema and of the fitted leaves, rebuilt on demand), so a
    pickled estimator is no bigger than before.
    """

    def __init__(self) -> None:
        self._init()

    def _init(self) -> None:
        self.forest: MaterialisedForest | None = None
        self.leaf_values: dict[str, np.ndarray] = {}
        self._refused = 0  # largest node budget known to be too small

    def get(self, schema: TreeSchema, seeds: np.ndarray, walks: int) -> MaterialisedForest | None:
        """The materialised trees for a call of ``walks`` (tree, row) walks, or None: keep
        the keyed walk (the forest is too big for this call or for the global bound)."""
        if self.forest is None:
            budget = min(int(walks) * int(schema.depth) // COST_RATIO, MAX_MATERIALISED_NODES)
            if budget > self._refused:
                self.forest = materialise_forest(schema, seeds, budget)
                if self.forest is None:
                    self._refused = budget
        return self.forest

    def values(self, name: str, compute) -> np.ndarray:
        """Per-leaf array ``name`` of the current forest, ``compute(forest)`` on first use."""
        if name not in self.leaf_values:
            self.leaf_values[name] = compute(self.forest)
        return self.leaf_values[name]

    def __getstate__(self) -> dict:
        return {}

    def __setstate__(self, state: dict) -> None:
        self._init()

    def __repr__(self) -> str:
        f = self.forest
        return "MaterialisedCache(empty)" if f is None else (
            f"MaterialisedCache({f.feature.size} nodes, {f.leaf_keys.size} leaves, {f.nbytes} bytes)")
