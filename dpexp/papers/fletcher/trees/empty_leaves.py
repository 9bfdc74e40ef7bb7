"""Empty leaves' noise, keyed by a secret of the fit's noise stream (Section 4.2.1; JPW).

A leaf no training record reached releases pure noise (Section 4.2.1: a uniformly random
label; JPW: Laplace noise on all-zero counts). That noise must come from the noise
stream, never from the leaf key: keys follow from the published ``seeds_`` (SplitMix64
is invertible, so thresholds reveal them too), and a label that is a function of the key
is certain under a dataset where the leaf is empty and not under its neighbour with one
record in it (audited epsilon lower bound 4.84 at a claim of 1). The full trees have
millions of leaves, so their noise cannot be drawn one by one at fit time; instead each
fit draws a 128-bit secret from the noise stream and an empty leaf's noise is
a stream of words SipHash-2-4 (a keyed pseudorandom function, Aumasson & Bernstein
2012) of (secret, tree, leaf key, counter), read by the same exact integer samplers as
the non-empty leaves (dpexp.privacy.samplers): an exactly uniform label by rejection, and
JPW's counts as discrete Laplace integers by the shared kernel, so empty and non-empty
leaves release the same set of values with the same law. They are pseudorandom and
independent of everything released, computed in O(1) per prediction inside the
compiled routing (:func:`empty_leaf_label_scalar`), and the same on every call. The
secret is not part of the release (see docs/estimators/fletcher.md).
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit
from dpexp.papers.fletcher.trees.keys import kernel_array
from dpexp.privacy.calibration import discrete_laplace_scale
from dpexp.privacy.sampler_kernels import discrete_laplace_kernel, discrete_laplace_rows

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
def empty_leaf_label_scalar(secret: np.ndarray, tree: int, key: np.uint64, n_classes: int) -> int:
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
        out[i] = empty_leaf_label_scalar(secret, trees[i], keys[i], n_classes)


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
    kernels of :mod:`dpexp.privacy.sampler_kernels` (compiled there, so numba's per-file cache
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
    keys = kernel_array(np.asarray(keys, dtype=np.uint64).ravel(), np.uint64)
    trees = kernel_array(np.broadcast_to(np.asarray(trees, dtype=np.int64), keys.shape), np.int64)
    out = np.empty(keys.size, dtype=np.int64)
    _empty_labels(kernel_array(secret, np.uint64), trees, keys, int(n_classes), out)
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
    keys = kernel_array(np.asarray(keys, dtype=np.uint64).ravel(), np.uint64)
    trees = kernel_array(np.broadcast_to(np.asarray(trees, dtype=np.int64), keys.shape), np.int64)
    out = np.empty((keys.size, int(n_classes)), dtype=np.int64)
    _empty_discrete_laplace(kernel_array(secret, np.uint64), trees, keys, np.uint64(t),
                            np.uint64(s), out)
    return out

