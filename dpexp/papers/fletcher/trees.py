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
fixed, fully specified random function of its seed, identical to materialising it. A
sample is routed in O(depth) hash evaluations by compiled (numba) kernels that walk all
samples through all trees in one call; the numpy helpers below (``child_keys``,
``key_uniform``, ``_choose_feature``) are the specification the kernels reproduce bit for
bit (``tests/fletcher/test_routing_kernels.py``). The leaf a sample reaches is named by
its key. Keys are public (they follow from the published seeds), so nothing a leaf
releases may be a function of its key alone: the noise of empty leaves is keyed by a
secret from the noise stream (see "empty leaves" below).

Forests whose full trees are small (continuous features: ``2^(depth+1) - 1`` nodes a tree)
are also written out as arrays once a routing call is big enough to pay for it (see
"materialised trees" below): the same trees, the same leaves, found by array lookups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

# One SplitMix64 for the package (the record partition's): ``_mix`` on arrays, ``_mix1``
# on one uint64 inside the compiled kernels (bit-identical).
from dpexp.privacy.partition import GOLDEN as _GOLDEN
from dpexp.privacy.partition import mix64 as _mix
from dpexp.privacy.partition import mix64_scalar as _mix1
from dpexp.privacy.samplers import (
    discrete_laplace_kernel,
    discrete_laplace_rows,
    discrete_laplace_scale,
)

_SALT_FEATURE = np.uint64(0x5851F42D4C957F2D)
_SALT_SPLIT = np.uint64(0x14057B7EF767814F)


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


# ------------------------------------------------------------------- empty leaves
#
# A leaf no training record reached releases pure noise (Section 4.2.1: a uniformly random
# label; JPW: Laplace noise on all-zero counts). That noise must come from the noise
# stream, never from the leaf key: keys follow from the published ``seeds_`` (SplitMix64
# is invertible, so thresholds reveal them too), and a label that is a function of the key
# is certain under a dataset where the leaf is empty and not under its neighbour with one
# record in it (audited epsilon lower bound 4.84 at a claim of 1). The full trees have
# millions of leaves, so their noise cannot be drawn one by one at fit time; instead each
# fit draws a 128-bit secret from the noise stream and an empty leaf's noise is
# a stream of words SipHash-2-4 (a keyed pseudorandom function, Aumasson & Bernstein
# 2012) of (secret, tree, leaf key, counter), read by the same exact integer samplers as
# the non-empty leaves (dpexp.privacy.samplers): an exactly uniform label by rejection, and
# JPW's counts as discrete Laplace integers by the shared kernel, so empty and non-empty
# leaves release the same set of values with the same law. They are pseudorandom and
# independent of everything released, computed in O(1) per prediction inside the
# compiled routing, and the same on every call. The secret is not part of the release
# (see docs/estimators/fletcher.md).

_SIP_C0 = np.uint64(0x736F6D6570736575)  # "somepseudorandomlygeneratedbytes", the IV
_SIP_C1 = np.uint64(0x646F72616E646F6D)
_SIP_C2 = np.uint64(0x6C7967656E657261)
_SIP_C3 = np.uint64(0x7465646279746573)
_SIP_LEN16 = np.uint64(16 << 56)  # last block of a 16-byte message: its length byte
_LABEL_STREAM = np.uint64(0xFFFFFFFF)  # stream id of an empty leaf's label


@njit(cache=True, nogil=True, inline="always")
def _rotl(x: np.uint64, b: int) -> np.uint64:
    return (x << np.uint64(b)) | (x >> np.uint64(64 - b))


@njit(cache=True, nogil=True)
def _sip_rounds(v0: np.uint64, v1: np.uint64, v2: np.uint64, v3: np.uint64, n: int) -> tuple:
    for _ in range(n):
        v0 = v0 + v1
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = v2 + v3
        v3 = _rotl(v3, 16) ^ v2
        v0 = v0 + v3
        v3 = _rotl(v3, 21) ^ v0
        v2 = v2 + v1
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


@njit(cache=True, nogil=True)
def siphash24_words(k0: np.uint64, k1: np.uint64, m0: np.uint64, m1: np.uint64) -> np.uint64:
    """SipHash-2-4 of the 16-byte message ``m0 || m1`` (little-endian words) under key (k0, k1)."""
    v0, v1, v2, v3 = k0 ^ _SIP_C0, k1 ^ _SIP_C1, k0 ^ _SIP_C2, k1 ^ _SIP_C3
    for m in (m0, m1, _SIP_LEN16):
        v3 ^= m
        v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    v2 ^= np.uint64(0xFF)
    v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


#: Word ``j`` of a leaf's noise stream is SipHash(secret; key, tree << 32 | j): counts read
#: j = 0, 1, ... upwards, the label reads j = 0xFFFFFFFF, 0xFFFFFFFE, ... downwards; the two
#: never meet below 2**31 words a leaf (a leaf's C counts need about 10 C).
_COUNTER_LIMIT = 1 << 31


@njit(cache=True, nogil=True)
def _leaf_word(secret: np.ndarray, tree: int, key: np.uint64, j: np.uint64) -> np.uint64:
    """Word ``j`` of the noise stream of leaf ``key`` of tree ``tree`` under the fit's secret."""
    return siphash24_words(secret[0], secret[1], key, (np.uint64(tree) << np.uint64(32)) | j)


@njit(cache=True, nogil=True)
def _secret_label(secret: np.ndarray, tree: int, key: np.uint64, n_classes: int) -> int:
    """Exactly uniform label in [0, n_classes) from the leaf's label words (Lemire 2019,
    "Fast random integer generation in an interval"): the label is the high word of
    w * C, rejected when its low word is below 2**64 mod C. Each label then has exactly
    floor(2**64 / C) accepted words. C < 2**31 keeps the 32-bit halves' products in uint64.
    """
    m = np.uint64(n_classes)
    r = (np.uint64(0) - m) % m  # 2**64 mod C
    lo_mask = np.uint64(0xFFFFFFFF)
    for j in range(_COUNTER_LIMIT):
        w = _leaf_word(secret, tree, key, _LABEL_STREAM - np.uint64(j))
        lo = (w & lo_mask) * m  # < 2**63
        mid = (w >> np.uint64(32)) * m + (lo >> np.uint64(32))  # < 2**63 + 2**31
        low_word = (mid << np.uint64(32)) | (lo & lo_mask)  # (w * C) mod 2**64
        if low_word >= r:
            return int(mid >> np.uint64(32))  # floor(w * C / 2**64)
    raise ValueError("empty-leaf label stream exhausted")  # probability < (C/2**64)**(2**31)


def draw_empty_leaf_secret(rng) -> np.ndarray:
    """The fit's 128-bit secret, from a *noise* generator (Generator or SecureGenerator)."""
    return np.frombuffer(rng.bytes(16), dtype=np.uint64).copy()


@njit(cache=True, nogil=True)
def _empty_labels(secret, trees, keys, n_classes, out):
    for i in range(keys.shape[0]):
        out[i] = _secret_label(secret, trees[i], keys[i], n_classes)


@njit(cache=True, nogil=True)
def _leaf_word_block(secret: np.ndarray, trees: np.ndarray, keys: np.ndarray, first: int,
                     n: int) -> np.ndarray:
    """``out[i, j]``: word ``first + j`` of the count stream of leaf ``keys[i]`` of tree
    ``trees[i]``."""
    if first + n > _COUNTER_LIMIT:
        raise ValueError("empty-leaf noise stream exhausted")  # ~10 C words are needed
    out = np.empty((keys.shape[0], n), dtype=np.uint64)
    for i in range(keys.shape[0]):
        for j in range(n):
            out[i, j] = _leaf_word(secret, trees[i], keys[i], np.uint64(first + j))
    return out


#: Empty leaves whose words are generated at once (bounds the word block's memory).
_EMPTY_BATCH = 1 << 14


def _empty_discrete_laplace(secret, trees, keys, t, s, out, chunk: int | None = None) -> None:
    """``out[i]``: the C discrete Laplace counts of empty leaf i, by the shared resumable
    kernels of :mod:`dpexp.privacy.samplers` (compiled there, so numba's per-file cache
    always runs their current code) on the leaf's word stream; a stream that runs out
    (rare: ~10 C words are needed, 12 C + 32 are drawn) continues its counter. The
    counts do not depend on ``chunk`` (words drawn at a time; tests set it small)."""
    n_classes = out.shape[1]
    chunk = chunk or 12 * n_classes + 32
    for lo in range(0, keys.shape[0], _EMPTY_BATCH):
        sl = slice(lo, lo + _EMPTY_BATCH)
        words = _leaf_word_block(secret, trees[sl], keys[sl], 0, chunk)
        done = np.empty(words.shape[0], dtype=np.int64)
        pos = np.empty(words.shape[0], dtype=np.int64)
        block = out[sl]
        discrete_laplace_rows(words, block, t, s, done, pos)
        for r in np.flatnonzero(done < n_classes):
            row, i, drawn = words[r, pos[r]:], lo + r, chunk
            d = int(done[r])
            while d < n_classes:
                more = _leaf_word_block(secret, trees[i:i + 1], keys[i:i + 1], drawn, chunk)[0]
                drawn += chunk
                row = np.concatenate([row, more])
                d, p = discrete_laplace_kernel(row, block[r], d, t, s)
                row = row[p:]


def empty_leaf_label(secret: np.ndarray, trees: np.ndarray, keys: np.ndarray, n_classes: int) -> np.ndarray:
    """The uniformly random label (Section 4.2.1) of empty leaf ``keys[i]`` of tree ``trees[i]``."""
    keys = _arr(np.asarray(keys, dtype=np.uint64).ravel(), np.uint64)
    trees = _arr(np.broadcast_to(np.asarray(trees, dtype=np.int64), keys.shape), np.int64)
    out = np.empty(keys.size, dtype=np.int64)
    _empty_labels(_arr(secret, np.uint64), trees, keys, int(n_classes), out)
    return out


def empty_leaf_laplace(
    secret: np.ndarray, trees: np.ndarray, keys: np.ndarray, n_classes: int, epsilon: float,
    sensitivity: int = 1,
) -> np.ndarray:
    """The noisy all-zero counts of empty leaves (JPW): ``(len(keys), n_classes)`` int64.

    Discrete Laplace of scale ``discrete_laplace_scale(epsilon, sensitivity)`` by the
    same kernel (CKS 2020, Algorithm 2) and the same scale as
    :func:`~dpexp.privacy.mechanisms.discrete_laplace_mechanism` on the non-empty
    leaves, so empty and non-empty leaves release integers with the same law; the words
    come from the leaf's SipHash stream under the fit's secret instead of the noise rng.
    """
    t, s = discrete_laplace_scale(epsilon=epsilon, sensitivity=sensitivity)
    keys = _arr(np.asarray(keys, dtype=np.uint64).ravel(), np.uint64)
    trees = _arr(np.broadcast_to(np.asarray(trees, dtype=np.int64), keys.shape), np.int64)
    out = np.empty((keys.size, int(n_classes)), dtype=np.int64)
    _empty_discrete_laplace(_arr(secret, np.uint64), trees, keys, np.uint64(t), np.uint64(s), out)
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


# Compiled routing. The kernels below evaluate, node by node, exactly the hashes of
# ``child_keys``/``key_uniform``/``_choose_feature`` above (same SplitMix64 steps, same
# float formulas, no fastmath), so a tree stays the same function of its seed; the
# numpy helpers remain the specification used by ``count_leaves`` and the tests.

_U11 = np.uint64(11)
_INV53 = 1.0 / float(2**53)
_WALK_CHUNK = 512  # walks per parallel work item: amortises the scratch arrays
# Below this many (tree, sample) walks the serial twins run: waking numba's thread pool
# costs milliseconds on a busy 2-core machine (8.7 ms for 2 walks, measured), far more
# than the walks themselves (an audit fits thousands of tiny models).
_PARALLEL_MIN_WALKS = 1 << 16


@njit(cache=True, nogil=True)
def _uniform1(key: np.uint64, salt: np.uint64) -> float:
    h = _mix1(_mix1(key + salt) ^ salt)
    return float(h >> _U11) * _INV53


@njit(cache=True, nogil=True)
def _walk(
    x: np.ndarray, key: np.uint64, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray,
    ncat: np.ndarray, depth: int, child_mix: np.ndarray, lo: np.ndarray, hi: np.ndarray,
    used: np.ndarray,
) -> np.uint64:
    """Leaf key of one sample ``x`` in the tree with root ``key`` (one root-to-leaf path).

    ``child_mix[c]`` = ``_mix((c + 1) * GOLDEN)``, the key-independent half of
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
        # Line 4: the rank-th available feature, rank = floor(u * n_avail) (as _choose_feature).
        rank = min(int(_uniform1(key, _SALT_FEATURE) * n_avail), n_avail - 1)
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
            t = a + _uniform1(key, _SALT_SPLIT) * (hi[f] - a)
            if v > t:  # NaN compares False: a missing value goes left
                child = 1
                lo[f] = t
            else:
                child = 0
                hi[f] = t
        key = _mix1(key ^ child_mix[child])
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
    for i in range(b * _WALK_CHUNK, min(n, (b + 1) * _WALK_CHUNK)):
        out[t, i] = _walk(X[i], seeds[t], lows, highs, cat, ncat, depth, child_mix, lo, hi, used)


@njit(cache=True, nogil=True, parallel=True)
def _route_grid(
    X: np.ndarray, seeds: np.ndarray, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray,
    ncat: np.ndarray, depth: int, child_mix: np.ndarray, out: np.ndarray,
) -> None:
    """``out[t, i]`` = leaf of ``X[i]`` in tree ``seeds[t]`` (every sample through every tree)."""
    per_tree = (X.shape[0] + _WALK_CHUNK - 1) // _WALK_CHUNK
    for c in prange(seeds.shape[0] * per_tree):
        _route_task(c, per_tree, X, seeds, lows, highs, cat, ncat, depth, child_mix, out)


@njit(cache=True, nogil=True)
def _route_grid_serial(
    X: np.ndarray, seeds: np.ndarray, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray,
    ncat: np.ndarray, depth: int, child_mix: np.ndarray, out: np.ndarray,
) -> None:
    """Serial twin of :func:`_route_grid` (same work items, same results)."""
    per_tree = (X.shape[0] + _WALK_CHUNK - 1) // _WALK_CHUNK
    for c in range(seeds.shape[0] * per_tree):
        _route_task(c, per_tree, X, seeds, lows, highs, cat, ncat, depth, child_mix, out)


def _arr(a, dtype) -> np.ndarray:
    """C-contiguous and writable: numba compiles a separate variant for read-only arrays
    (memmaps, unpickled attributes); a rare small copy is cheaper than that compile."""
    return np.require(a, dtype=dtype, requirements=("C", "W"))


def _kernel_args(schema: TreeSchema) -> tuple:
    n_children = max(2, int(np.max(schema.n_categories, initial=0)))
    with np.errstate(over="ignore"):
        child_mix = _mix((np.arange(n_children, dtype=np.uint64) + np.uint64(1)) * _GOLDEN)
    return (
        _arr(schema.lows, np.float64),
        _arr(schema.highs, np.float64),
        _arr(schema.categorical, np.bool_),
        _arr(schema.n_categories, np.int64),
        int(schema.depth),
        child_mix,
    )


def route(schema: TreeSchema, seeds: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Key of the leaf reached by each row ``X[i]`` in the tree whose root key is ``seeds[i]``.

    Rows of different trees can be mixed freely (disjoint subsets: each record in its own
    tree). One compiled pass over the rows; see :func:`route_forest` for every row
    through every tree.
    """
    X = _arr(X, np.float64)
    n = X.shape[0]
    seeds = _arr(np.asarray(seeds, dtype=np.uint64).reshape(n), np.uint64)
    out = np.empty(n, dtype=np.uint64)
    _route_rows(X, seeds, *_kernel_args(schema), out)
    return out


def route_forest(schema: TreeSchema, seeds: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Leaf keys ``(n_trees, n_samples)`` of every row of ``X`` in every tree ``seeds[t]``.

    Same result as ``route(schema, np.repeat(seeds, n), np.tile(X, (T, 1)))`` without
    materialising the tiled copy of ``X``.
    """
    X = _arr(X, np.float64)
    seeds = _arr(np.asarray(seeds, dtype=np.uint64).ravel(), np.uint64)
    out = np.empty((seeds.size, X.shape[0]), dtype=np.uint64)
    kernel = _route_grid if out.size >= _PARALLEL_MIN_WALKS else _route_grid_serial
    kernel(X, seeds, *_kernel_args(schema), out)
    return out


@njit(cache=True, nogil=True)
def _pick_feature(key: np.uint64, used: np.ndarray, n_avail: int) -> int:
    """The rank-th feature not used yet, rank = floor(u * n_avail) (as ``_choose_feature``)."""
    rank = min(int(_uniform1(key, _SALT_FEATURE) * n_avail), n_avail - 1)
    for j in range(used.shape[0]):
        if not used[j]:
            if rank == 0:
                return j
            rank -= 1
    return -1


@njit(cache=True, nogil=True)
def _n_avail(used: np.ndarray) -> int:
    n = 0
    for j in range(used.shape[0]):
        n += not used[j]
    return n


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
            if _n_avail(used[i]) > 0:
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
            f = _pick_feature(keys[i], used[i], _n_avail(used[i]))
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
                new_keys[k] = _mix1(keys[i] ^ child_mix[c])
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
        f = _pick_feature(keys[i], used[i], _n_avail(used[i]))
        b = ncat[f] if cat[f] else 2
        c = min(int(r[j] * b), b - 1)
        j += 1
        weight[i] *= b
        if cat[f]:
            used[i, f] = True
        keys[i] = _mix1(keys[i] ^ child_mix[c])
        alive[i] = _n_avail(used[i]) > 0
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
    _, _, cat_a, ncat_a, depth, child_mix = _kernel_args(schema)
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


# ------------------------------------------------------------------------ leaf tables


@njit(cache=True, nogil=True)
def _find(table: np.ndarray, first: int, end: int, k: np.uint64) -> int:
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
            out[t, i] = _find(table, offsets[t], offsets[t + 1], keys[t, i])


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
    for i in range(b * _WALK_CHUNK, min(n, (b + 1) * _WALK_CHUNK)):
        k = _walk(X[i], seeds[t], lows, highs, cat, ncat, depth, child_mix, lo, hi, used)
        j = _find(table, offsets[t], offsets[t + 1], k)
        if j >= 0:
            out[t, i] = labels[j]
        else:  # an empty leaf: as empty_leaf_label, keyed by the fit's secret
            out[t, i] = _secret_label(secret, t, k, n_classes)


@njit(cache=True, nogil=True, parallel=True)
def _forest_labels(
    X: np.ndarray, seeds: np.ndarray, lows: np.ndarray, highs: np.ndarray, cat: np.ndarray,
    ncat: np.ndarray, depth: int, child_mix: np.ndarray, offsets: np.ndarray, table: np.ndarray,
    labels: np.ndarray, n_classes: int, secret: np.ndarray, out: np.ndarray,
) -> None:
    per_tree = (X.shape[0] + _WALK_CHUNK - 1) // _WALK_CHUNK
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
    per_tree = (X.shape[0] + _WALK_CHUNK - 1) // _WALK_CHUNK
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
    X = _arr(X, np.float64)
    seeds = _arr(np.asarray(seeds, dtype=np.uint64).ravel(), np.uint64)
    out = np.empty((seeds.size, X.shape[0]), dtype=np.int64)
    kernel = _forest_labels if out.size >= _PARALLEL_MIN_WALKS else _forest_labels_serial
    kernel(X, seeds, *_kernel_args(schema), _arr(offsets, np.int64), _arr(table, np.uint64),
           _arr(labels, np.int64), int(n_classes), _arr(secret, np.uint64), out)
    return out


def leaf_index(keys: np.ndarray, offsets: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Row of ``table`` holding leaf ``keys[t, i]`` of tree ``t``, or -1 (an empty leaf).

    ``table[offsets[t]:offsets[t + 1]]`` are tree ``t``'s stored leaf keys, sorted; the
    search stays inside that segment, so equal keys of two trees never mix.
    """
    keys = _arr(keys, np.uint64)
    out = np.empty(keys.shape, dtype=np.int64)
    _leaf_index(keys, _arr(offsets, np.int64), _arr(table, np.uint64), out)
    return out


# ------------------------------------------------------------------ materialised trees
#
# Prediction routes every test row through every tree: 30 million walks for a 300,000-row
# test fold of a 100-tree forest, each level of which re-derives its node's feature and
# threshold from the key (three SplitMix64 hashes and a scan of the used features). Most
# of the paper's trees are small (SynthF, Theorem-2 depth 8: 511 nodes; Table 4's
# continuous data sets at most 8,191), so each tree is written out once (on the first
# routing call big enough to pay for it, :class:`MaterialisedCache`) as arrays -- per
# node its feature, threshold and first child, per leaf its key -- with the
# arithmetic of ``_walk`` in the same order (the same float64 thresholds, the same child
# numbers), and a row then descends by array lookups. Trees with many discrete features
# are far too big for that (Adult, Theorem-2 depth: ~2 million leaves per tree; Mushroom
# ~10^8, see ``count_leaves``), so materialising is bounded by ``MAX_MATERIALISED_NODES``
# over the whole forest, and a forest above it keeps the keyed walk. The materialised
# structure is a function of the public seeds and schema only; the leaves' labels are
# filled in separately (:func:`dense_leaf_labels`).

#: Node budget of a materialised forest: 16 bytes a node (feature, threshold, first
#: child) plus a leaf's key and label, ~100 MB at the bound for binary trees.
MAX_MATERIALISED_NODES = 1 << 22


@dataclass(frozen=True)
class MaterialisedForest:
    """The full trees of a forest as flat arrays (nodes of tree ``t`` from ``roots[t]``).

    Node ``v`` is internal when ``feature[v] >= 0``: its child number ``c`` (0 = left,
    ``x <= threshold[v]``, or NaN; 1 = right; or the discrete code, as ``_walk``) is node
    ``first[v] + c``. A leaf has ``feature[v] == -1`` and ``first[v]`` is its row in
    ``leaf_keys`` (the key ``_walk`` returns for it) and in the leaf-label arrays.
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
        n_avail = _n_avail(used[level])
        if n_avail == 0:
            leaves += 1
            continue
        f = _pick_feature(key, used[level], n_avail)
        for c in range(ncat[f] if cat[f] else 2):
            s_key[sp] = _mix1(key ^ child_mix[c])
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

    Depth first; row ``level`` of ``lo``/``hi``/``used`` is the state ``_walk`` holds on
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
        f = _pick_feature(key, used[level], n_avail[level])
        if cat[f]:
            nch, t = ncat[f], 0.0
        else:
            a = lo[level, f]
            nch, t = 2, a + _uniform1(key, _SALT_SPLIT) * (hi[level, f] - a)
        if next_node + nch > feature.shape[0]:
            return -1, -1
        feature[node] = f
        threshold[node] = t
        first[node] = next_node
        for c in range(nch):
            s_key[sp] = _mix1(key ^ child_mix[c])
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
    lows, highs, cat, ncat, depth, child_mix = _kernel_args(schema)
    seeds = _arr(np.asarray(seeds, dtype=np.uint64).ravel(), np.uint64)
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


@njit(cache=True, nogil=True)
def _dense_labels(
    leaf_keys: np.ndarray, leaf_trees: np.ndarray, offsets: np.ndarray, table: np.ndarray,
    labels: np.ndarray, n_classes: int, secret: np.ndarray, out: np.ndarray,
) -> None:
    for j in range(leaf_keys.shape[0]):
        t = np.int64(leaf_trees[j])
        i = _find(table, offsets[t], offsets[t + 1], leaf_keys[j])
        out[j] = labels[i] if i >= 0 else _secret_label(secret, t, leaf_keys[j], n_classes)


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
    _dense_labels(forest.leaf_keys, forest.leaf_trees, _arr(offsets, np.int64), _arr(table, np.uint64),
                  _arr(labels, np.int64), int(n_classes), _arr(secret, np.uint64), out)
    return out


@njit(cache=True, nogil=True)
def _descend(
    X: np.ndarray, start: int, root: int, feature: np.ndarray, threshold: np.ndarray,
    first: np.ndarray, cat: np.ndarray, ncat: np.ndarray, depth: int, cur: np.ndarray,
) -> None:
    """``cur[i]`` = leaf row reached by ``X[start + i]`` from node ``root``, for ``i < cur.size``.

    Level by level over the whole chunk: the rows' descents are independent, so the CPU
    overlaps their dependent loads. A row at a leaf stays there (``feature`` -1). The
    child number is ``_walk``'s, operation for operation.
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
    start = b * _WALK_CHUNK
    cur = np.empty(min(n, start + _WALK_CHUNK) - start, dtype=np.int64)
    _descend(X, start, roots[t], feature, threshold, first, cat, ncat, depth, cur)
    for i in range(cur.shape[0]):
        out[t, start + i] = leaf_values[cur[i]]


@njit(cache=True, nogil=True, parallel=True)
def _dense_grid(
    X: np.ndarray, roots: np.ndarray, feature: np.ndarray, threshold: np.ndarray, first: np.ndarray,
    cat: np.ndarray, ncat: np.ndarray, depth: int, leaf_values: np.ndarray, out: np.ndarray,
) -> None:
    per_tree = (X.shape[0] + _WALK_CHUNK - 1) // _WALK_CHUNK
    for c in prange(roots.shape[0] * per_tree):
        _dense_task(c, per_tree, X, roots, feature, threshold, first, cat, ncat, depth, leaf_values, out)


@njit(cache=True, nogil=True)
def _dense_grid_serial(
    X: np.ndarray, roots: np.ndarray, feature: np.ndarray, threshold: np.ndarray, first: np.ndarray,
    cat: np.ndarray, ncat: np.ndarray, depth: int, leaf_values: np.ndarray, out: np.ndarray,
) -> None:
    """Serial twin of :func:`_dense_grid` (same work items, same results)."""
    per_tree = (X.shape[0] + _WALK_CHUNK - 1) // _WALK_CHUNK
    for c in range(roots.shape[0] * per_tree):
        _dense_task(c, per_tree, X, roots, feature, threshold, first, cat, ncat, depth, leaf_values, out)


def _dense_args(schema: TreeSchema, forest: MaterialisedForest) -> tuple:
    _, _, cat, ncat, depth, _ = _kernel_args(schema)
    return (_arr(forest.roots, np.int64), _arr(forest.feature, np.int32), _arr(forest.threshold, np.float64),
            _arr(forest.first, np.int32), cat, ncat, depth)


def materialised_grid(
    schema: TreeSchema, forest: MaterialisedForest, X: np.ndarray, leaf_values: np.ndarray,
    trees: slice = slice(None),
) -> np.ndarray:
    """``leaf_values[leaf of X[i] in tree t]`` as ``(n_trees, n_samples)``, by array descent.

    With ``leaf_values`` = :func:`dense_leaf_labels` this is :func:`forest_leaf_labels`;
    with ``forest.leaf_keys`` it is :func:`route_forest` (same values, bit for bit).
    ``trees`` selects a block of trees (rows of the result).
    """
    X = _arr(X, np.float64)
    leaf_values = np.require(leaf_values, requirements=("C", "W"))
    roots, *rest = _dense_args(schema, forest)
    roots = _arr(roots[trees], np.int64)
    out = np.empty((roots.size, X.shape[0]), dtype=leaf_values.dtype)
    kernel = _dense_grid if out.size >= _PARALLEL_MIN_WALKS else _dense_grid_serial
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
    X = _arr(X, np.float64)
    trees = _arr(np.asarray(trees, dtype=np.int64).reshape(X.shape[0]), np.int64)
    out = np.empty(X.shape[0], dtype=np.uint64)
    _dense_rows(X, trees, *_dense_args(schema, forest), forest.leaf_keys, out)
    return out


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
    _votes(_arr(labels, np.int64), out)
    return out


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
