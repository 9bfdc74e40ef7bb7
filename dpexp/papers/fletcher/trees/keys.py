"""Keyed trees: the public schema of BuildTree and the hashes of every node's random choices.

Every node of a tree is identified by a 64-bit key (``key(child c) = mix(key(parent), c)``,
root = the tree's seed) and all of its random choices are SplitMix64 hashes of that key
(the one SplitMix64 of the package, :func:`~dpexp.privacy.partition.mix64` on arrays and
:func:`~dpexp.privacy.partition.mix64_scalar` on one uint64 inside compiled kernels,
bit-identical). The tree is thus a fixed, fully specified random function of its seed.

The numpy functions here (:func:`child_keys`, :func:`key_uniform`, :func:`choose_feature`)
are the specification; the compiled helpers (:func:`key_uniform_scalar`,
:func:`pick_feature`) evaluate exactly the same hashes and float formulas (no fastmath)
node by node for the routing, counting and materialising kernels, bit for bit
(``tests/papers/fletcher/test_routing_kernels.py``). numba's ``cache=True`` checks only
the caller's own file: after changing a compiled helper here, delete the cached kernels
(``__pycache__/*.nbi``, ``*.nbc``) of the modules that call it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpexp.jit import njit
from dpexp.privacy.partition import GOLDEN, mix64, mix64_scalar

#: Salts of a node's two uniforms: its feature (line 4 of Algorithm 2) and its split point.
SALT_FEATURE = np.uint64(0x5851F42D4C957F2D)
SALT_SPLIT = np.uint64(0x14057B7EF767814F)


def child_keys(keys: np.ndarray, child: np.ndarray) -> np.ndarray:
    """Key of child number ``child`` of each node ``keys`` (both arrays, broadcast)."""
    with np.errstate(over="ignore"):
        c = (np.asarray(child).astype(np.uint64) + np.uint64(1)) * GOLDEN
        return mix64(keys ^ mix64(c))


def key_uniform(keys: np.ndarray, salt: np.uint64) -> np.ndarray:
    """A uniform in [0, 1) per key, one independent stream per ``salt``."""
    with np.errstate(over="ignore"):
        h = mix64(mix64(keys + salt) ^ salt)
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / float(2**53))


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


def choose_feature(keys: np.ndarray, avail: np.ndarray | None, m: int) -> np.ndarray:
    """Uniform choice among the available features of each node (line 4 of Algorithm 2)."""
    u = key_uniform(keys, SALT_FEATURE)
    if avail is None:
        return np.minimum((u * m).astype(np.int64), m - 1)
    cum = np.cumsum(avail, axis=1, dtype=np.int16 if m < 32000 else np.int64)
    n_avail = cum[:, -1]
    rank = np.minimum((u * n_avail).astype(cum.dtype), n_avail - 1)
    return np.argmax(cum > rank[:, None], axis=1)


_U11 = np.uint64(11)
_INV53 = 1.0 / float(2**53)


@njit(cache=True, nogil=True)
def key_uniform_scalar(key: np.uint64, salt: np.uint64) -> float:
    """One key's :func:`key_uniform` (the same hashes, the same float formula)."""
    h = mix64_scalar(mix64_scalar(key + salt) ^ salt)
    return float(h >> _U11) * _INV53


@njit(cache=True, nogil=True)
def pick_feature(key: np.uint64, used: np.ndarray, n_avail: int) -> int:
    """The rank-th feature not used yet, rank = floor(u * n_avail) (as ``choose_feature``)."""
    rank = min(int(key_uniform_scalar(key, SALT_FEATURE) * n_avail), n_avail - 1)
    for j in range(used.shape[0]):
        if not used[j]:
            if rank == 0:
                return j
            rank -= 1
    return -1


@njit(cache=True, nogil=True)
def count_available(used: np.ndarray) -> int:
    """Number of features not used yet on the path (``used`` False)."""
    n = 0
    for j in range(used.shape[0]):
        n += not used[j]
    return n


def kernel_array(a, dtype) -> np.ndarray:
    """C-contiguous and writable: numba compiles a separate variant for read-only arrays
    (memmaps, unpickled attributes); a rare small copy is cheaper than that compile."""
    return np.require(a, dtype=dtype, requirements=("C", "W"))


def kernel_args(schema: TreeSchema) -> tuple:
    """The schema as the kernels take it: ``(lows, highs, categorical, n_categories, depth,
    child_mix)``, with ``child_mix[c]`` = ``mix64((c + 1) * GOLDEN)``, the key-independent
    half of :func:`child_keys` for every child number a node can have."""
    n_children = max(2, int(np.max(schema.n_categories, initial=0)))
    with np.errstate(over="ignore"):
        child_mix = mix64((np.arange(n_children, dtype=np.uint64) + np.uint64(1)) * GOLDEN)
    return (
        kernel_array(schema.lows, np.float64),
        kernel_array(schema.highs, np.float64),
        kernel_array(schema.categorical, np.bool_),
        kernel_array(schema.n_categories, np.int64),
        int(schema.depth),
        child_mix,
    )
