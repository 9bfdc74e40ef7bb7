"""Data-independent random decision trees of Fletcher & Islam (2017), Algorithm 2.

``BuildTree`` (Algorithm 2, lines 1-19) draws the whole tree structure without looking at
the data: each node picks a feature uniformly at random among the continuous features and
the discrete features not yet used on its root-to-leaf path (line 12: a discrete feature
is tested once per path); a continuous feature splits at a uniformly random point of the
node's current *public* domain, which then narrows for the children (lines 6-10); a
discrete feature with ``k`` values gets ``k`` children (lines 13-15). Growth stops at the
depth of Theorem 2 (:func:`theorem2_depth`), or earlier on a path that has no feature
left (only discrete features, all used).

Why keyed ("seed-addressed") trees instead of materialised :class:`~dpexp.trees.ArrayTree`
arrays: the full trees are far too big to store. A discrete split has one child per
value, so the expected number of leaves of one tree is about 1.9 million on Adult (depth
9, 8 discrete features with up to 41 values) and 33 million on Mushroom (depth 11), for
100 trees. Storing only the nodes that training records reach would make the stored
structure depend on the data (it would reveal which regions are empty). So every node is
identified by a 64-bit key (``key(child c) = mix(key(parent), c)``, root = the tree's
seed) and all of its random choices are SplitMix64 hashes of that key. The tree is thus a
fixed, fully specified random function of its seed, identical to materialising it, and a
sample is routed with O(depth) vectorised array operations over all samples (and all
trees at once). The leaf a sample reaches is named by its key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SALT_FEATURE = np.uint64(0x5851F42D4C957F2D)
_SALT_SPLIT = np.uint64(0x14057B7EF767814F)
_SALT_LABEL = np.uint64(0x2545F4914F6CDD1D)
_SALT_EXTRA = np.uint64(0x9FB21C651E98DF25)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (bijective on uint64, full avalanche)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def child_keys(keys: np.ndarray, child: np.ndarray) -> np.ndarray:
    """Key of child number ``child`` of each node ``keys`` (both arrays, broadcast)."""
    with np.errstate(over="ignore"):
        c = (np.asarray(child).astype(np.uint64) + np.uint64(1)) * _GOLDEN
        return _mix(keys ^ _mix(c))


def key_uniform(keys: np.ndarray, salt: np.uint64) -> np.ndarray:
    """A uniform in [0, 1) per key, one independent stream per ``salt``."""
    with np.errstate(over="ignore"):
        h = _mix(_mix(keys + salt) ^ salt)
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / float(2**53))


def empty_leaf_label(keys: np.ndarray, n_classes: int) -> np.ndarray:
    """The uniformly random label of an empty leaf (Section 4.2.1): a function of its key."""
    lab = np.floor(key_uniform(keys, _SALT_LABEL) * n_classes).astype(np.int64)
    return np.minimum(lab, n_classes - 1)


def empty_leaf_laplace(keys: np.ndarray, n_classes: int, scale: float) -> np.ndarray:
    """Laplace(scale) noise, one per class, for the counts of an empty leaf (JPW)."""
    out = np.empty((keys.shape[0], n_classes))
    for c in range(n_classes):
        salt = np.uint64((int(_SALT_EXTRA) + c * int(_GOLDEN)) % 2**64)
        u = key_uniform(keys, salt) - 0.5
        out[:, c] = -scale * np.sign(u) * np.log1p(-2.0 * np.abs(u))
    return out


# ----------------------------------------------------------------------------- depth


def expected_untested(s: int, d: int) -> float:
    """Theorem 2, Eq. 15: E[X | d] = s ((s - 1) / s)^d continuous features never tested."""
    if s <= 0:
        return 0.0
    return s * ((s - 1) / s) ** d


def theorem2_depth(n_continuous: int, n_discrete: int) -> int:
    """Tree depth of Section 4.3 (Theorem 2, Eq. 16, plus r/2 for discrete features).

    Convention that reproduces Table 4 exactly (all 14 datasets, see
    ``tests/fletcher/test_depth.py``): with ``d*`` the smallest ``d`` for which
    ``E[X | d] = s((s-1)/s)^d <= s/2`` (fewer than half the ``s`` continuous features left
    untested, Eq. 16), the depth is ``d* + 1`` when ``s > 0`` (0 when ``s = 0``), plus
    ``floor(r / 2)`` for the ``r`` discrete features. The "+1" is an off-by-one of a loop
    that evaluates ``E[X | d]`` and then increments ``d`` before testing the condition
    (equivalently: depth counted in node levels including the leaf level); the literal
    reading (depth ``d*``) gives 4, 7, 11, 14, 3, 11, 4 (+r/2) instead of Table 4's 5, 8,
    12, 15, 4, 12, 9. Equivalent on Table 4: "smallest d with E[X | d] < (s - 1) / 2".
    """
    s, r = int(n_continuous), int(n_discrete)
    if s < 0 or r < 0:
        raise ValueError("feature counts must be >= 0")
    depth = 0
    if s > 0:
        expected = float(s)
        while expected > s / 2:
            expected = expected_untested(s, depth)
            depth += 1
    return depth + r // 2


def jpw_depth(n_features: int, n_records: int, mean_domain_size: float) -> int:
    """JPW depth min(m/2, log_b(n) - 1) (Jagannathan et al. 2012; Fletcher & Islam §5.2)."""
    b = max(float(mean_domain_size), 2.0)
    d = min(n_features / 2.0, math.log(max(n_records, 1), b) - 1.0)
    return max(1, int(math.floor(d)))


# ------------------------------------------------------------------------------ trees


@dataclass(frozen=True)
class TreeSchema:
    """The public inputs of BuildTree: feature domains, which features are discrete, depth."""

    lows: np.ndarray  # (m,) public lower bounds (continuous features)
    highs: np.ndarray  # (m,) public upper bounds
    categorical: np.ndarray  # (m,) bool
    n_categories: np.ndarray  # (m,) int, number of values of each discrete feature
    depth: int

    @property
    def n_features(self) -> int:
        return int(self.lows.shape[0])


def _choose_feature(keys: np.ndarray, avail: np.ndarray | None, m: int) -> np.ndarray:
    """Uniform choice among the available features of each node (line 4 of Algorithm 2)."""
    u = key_uniform(keys, _SALT_FEATURE)
    if avail is None:
        return np.minimum((u * m).astype(np.int64), m - 1)
    cum = np.cumsum(avail, axis=1, dtype=np.int16 if m < 32000 else np.int64)
    n_avail = cum[:, -1]
    rank = np.minimum((u * n_avail).astype(cum.dtype), n_avail - 1)
    return np.argmax(cum > rank[:, None], axis=1)


def route(schema: TreeSchema, seeds: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Key of the leaf reached by each row ``X[i]`` in the tree whose root key is ``seeds[i]``.

    Fully vectorised over rows: one pass of array operations per tree level. Rows of
    different trees can be mixed freely (that is how all trees are evaluated at once).
    """
    X = np.asarray(X, dtype=np.float64)
    n, m = X.shape
    keys = np.array(seeds, dtype=np.uint64, copy=True).reshape(n)
    cat = schema.categorical
    has_cat = bool(cat.any())
    # Bounds are tracked for the continuous features only (column cpos[f] of lo/hi).
    cont = np.flatnonzero(~cat)
    cpos = np.zeros(m, dtype=np.int64)
    cpos[cont] = np.arange(cont.size)
    lo = np.broadcast_to(schema.lows[cont], (n, cont.size)).copy()
    hi = np.broadcast_to(schema.highs[cont], (n, cont.size)).copy()
    used = np.zeros((n, m), dtype=bool) if has_cat else None
    idx = np.arange(n)
    for _ in range(schema.depth):
        if has_cat:
            avail = ~((used if idx.size == n else used[idx]) & cat)
            alive = avail.any(axis=1)
            if not alive.all():
                idx, avail = idx[alive], avail[alive]
            if idx.size == 0:
                break
            f = _choose_feature(keys[idx], avail, m)
        else:
            f = _choose_feature(keys[idx], None, m)
        x = X[idx, f]
        child = np.zeros(idx.size, dtype=np.int64)
        num = ~cat[f] if has_cat else np.ones(idx.size, dtype=bool)
        if num.any():
            ni, nf = (idx, f) if num.all() else (idx[num], f[num])
            nf = cpos[nf]
            a, b = lo[ni, nf], hi[ni, nf]
            t = a + key_uniform(keys[ni], _SALT_SPLIT) * (b - a)
            right = (x if num.all() else x[num]) > t
            child[num] = right
            lo[ni[right], nf[right]] = t[right]
            hi[ni[~right], nf[~right]] = t[~right]
        if has_cat and (~num).any():
            ci, cf = idx[~num], f[~num]
            last = schema.n_categories[cf] - 1
            code = np.nan_to_num(x[~num], nan=-1.0).astype(np.int64)
            child[~num] = np.where((code < 0) | (code > last), last, code)
            used[ci, cf] = True
        keys[idx] = child_keys(keys[idx], child)
    return keys


def count_leaves(
    schema: TreeSchema, seed: np.uint64, rng: np.random.Generator, *, cap: int = 1 << 14,
    walks: int = 2048,
) -> float:
    """Number of leaves of the full tree with root key ``seed`` (for Table 3).

    Exact (level-wise enumeration of the node keys) while a level has at most ``cap``
    nodes; beyond that, Knuth's unbiased estimator (mean over random root-to-leaf walks
    of the product of branching factors) for the remaining subtrees. With only
    continuous features the tree is a full binary tree: 2^depth exactly.
    """
    cat = schema.categorical
    if not cat.any():
        return float(2**schema.depth)
    m = schema.n_features
    keys = np.array([seed], dtype=np.uint64)
    used = np.zeros((1, m), dtype=bool)
    leaves = 0.0
    for level in range(schema.depth):
        avail = ~(used & cat)
        alive = avail.any(axis=1)
        leaves += float((~alive).sum())
        keys, used, avail = keys[alive], used[alive], avail[alive]
        if keys.size == 0:
            return leaves
        f = _choose_feature(keys, avail, m)
        b = np.where(cat[f], schema.n_categories[f], 2)
        if int(b.sum()) > cap:
            return leaves + _knuth_estimate(schema, keys, used, schema.depth - level, rng, walks)
        pos = np.repeat(np.arange(keys.size), b)
        child = np.arange(pos.size) - np.repeat(np.cumsum(b) - b, b)
        new_used = used[pos]
        is_cat = cat[f][pos]
        new_used[np.flatnonzero(is_cat), f[pos][is_cat]] = True
        keys, used = child_keys(keys[pos], child), new_used
    return leaves + float(keys.size)


def _knuth_estimate(schema, keys, used, levels, rng, walks) -> float:
    cat, m = schema.categorical, schema.n_features
    start = rng.integers(0, keys.size, size=walks)
    k, u = keys[start], used[start].copy()
    weight = np.full(walks, float(keys.size))
    idx = np.arange(walks)
    for _ in range(levels):
        avail = ~(u[idx] & cat)
        alive = avail.any(axis=1)
        idx, avail = idx[alive], avail[alive]
        if idx.size == 0:
            break
        f = _choose_feature(k[idx], avail, m)
        b = np.where(cat[f], schema.n_categories[f], 2)
        c = np.minimum((rng.random(idx.size) * b).astype(np.int64), b - 1)
        weight[idx] *= b
        cf = cat[f]
        u[idx[cf], f[cf]] = True
        k[idx] = child_keys(k[idx], c)
    return float(weight.mean())
