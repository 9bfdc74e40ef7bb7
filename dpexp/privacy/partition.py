"""Record-stable partitions of the training records, for parallel composition.

Parallel composition (Li et al. 2020 Theorem 4; Fletcher & Islam 2017 Definition 3)
charges the maximum over disjoint parts only if adding or removing one record changes
the data of *one* part. So the part of a record must depend on that record and on secret
randomness only -- never on its row position, on ``n`` or on the other records:

* position blocks (``arange(n) // (n / T)``) move the block boundaries when ``n``
  changes (the ``forest_position_blocks`` audit fixture shows it);
* a keyed hash of the *row index* is no better: inserting one record at row 0 shifts the
  index, hence the part, of every later record (audited: a Fletcher forest of 2 trees
  gave an epsilon lower bound of 5.43 at a claim of 1, issue #38).

So a record's id is a 64-bit hash of its *content* (:func:`record_ids`: its feature values
as float64, with ``-0.0`` and every NaN payload canonicalised, and its label), and its part
comes from a uniform keyed by a secret 128-bit key drawn from ``rng`` (SplitMix64 of
(key, id), :func:`keyed_uniform`). For every fixed key a record's part is a function of
the record alone, so adding, removing or moving a record changes no other record's part,
and distinct records get independent parts. Identical records share a part; that is
fine for DP (the part is still a function of the record and the key, so a neighbouring
dataset still differs in the data of one part only), it only correlates the duplicates.

The partition functions take :class:`RecordIds` (from :func:`record_ids`), never a row
count: there is no default that keys by position.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpexp.jit import njit
from dpexp.privacy.randomness import Rng, check_rng

__all__ = [
    "GOLDEN",
    "RecordIds",
    "keyed_uniform",
    "mix64",
    "mix64_scalar",
    "record_ids",
    "record_partition",
    "record_partition_batch",
]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
#: 2^64 / golden ratio, SplitMix64's increment (odd: multiplying by it is a bijection).
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# The one NaN every NaN payload (signalling, negative, ...) is hashed as: float64 quiet NaN.
_NAN_BITS = np.uint64(0x7FF8000000000000)
# Words hashed after the features when a record has no label (y=None).
_NO_LABEL = np.uint64(0x6E6F206C6162656C)  # "no label"
# Rows converted to dense at a time for sparse input (bounded memory, no per-row loop).
_CHUNK_VALUES = 1 << 22


def mix64(x: np.ndarray) -> np.ndarray:
    """The SplitMix64 finaliser on uint64 arrays (a bijection with full avalanche)."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * _M1
        x = x ^ (x >> np.uint64(27))
        x = x * _M2
        return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True)
def mix64_scalar(x: np.uint64) -> np.uint64:
    """:func:`mix64` of one uint64, for compiled (numba) kernels; bit-identical."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


@dataclass(frozen=True)
class RecordIds:
    """64-bit content ids of records, one per row, from :func:`record_ids`.

    A distinct type so that a row count or ``arange(n)`` cannot be passed where the
    partition needs ids that follow the records. Indexing (``ids[rows]``) keeps each
    record's id, so a partition of a subset agrees with the partition of the whole.
    """

    values: np.ndarray

    def __post_init__(self) -> None:
        v = self.values
        if not isinstance(v, np.ndarray) or v.dtype != np.uint64 or v.ndim != 1:
            raise TypeError("RecordIds holds a 1-D uint64 array; build it with record_ids(X, y)")

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __getitem__(self, rows: Any) -> RecordIds:
        return RecordIds(np.atleast_1d(self.values[rows]))


#: Rows hashed together by :func:`_hash_rows`: their chains are independent, so the
#: compiled loop runs them side by side in vector lanes instead of one serial chain per
#: row (latency-bound: 16 ms for adult's 26,048 x 123, 3.5 ms at 32 lanes); 32 rows of
#: words of a 123-feature table (31 KiB) stay in the L1 cache.
_ROW_LANES = 32


@njit(cache=True, nogil=True)
def _hash_rows(X: np.ndarray, labels: np.ndarray, out: np.ndarray) -> None:
    """``out[i]`` = hash of the canonical words of row ``X[i]`` then ``labels[i]``.

    A chain of SplitMix64 rounds per row: each round is a bijection of the running state
    and of the new word, seeded by the row length so rows of different widths differ.
    A block of :data:`_ROW_LANES` rows is first turned into its canonical words (each
    value widened to float64 -- exact for float32 and the integers the callers pass --
    then viewed as uint64), one column of the block per row, then its chains advance one
    feature at a time together; each chain is the same as alone. ``X`` of any float
    dtype is read as it is: no float64 copy of the table (a float32 table's copy cost
    more than the hash itself, issue 43).
    """
    n, d = X.shape
    seed = mix64_scalar(np.uint64(d + 1) * GOLDEN)
    chains = np.empty(_ROW_LANES, dtype=np.uint64)
    values = np.empty((d, _ROW_LANES), dtype=np.float64)
    words = values.view(np.uint64)
    for start in range(0, n, _ROW_LANES):
        m = min(_ROW_LANES, n - start)
        # canonical words without a branch per value (a table of one-hot zeros and ones
        # mispredicted half of them): -0.0 + 0.0 is +0.0 and x + 0.0 is x for every other
        # x; then every NaN (payloads, signs) becomes one word
        for k in range(m):
            for j in range(d):
                values[j, k] = np.float64(X[start + k, j]) + 0.0
        for j in range(d):
            for k in range(m):
                v = values[j, k]
                words[j, k] = words[j, k] if v == v else _NAN_BITS
        for k in range(m):
            chains[k] = seed
        for j in range(d):
            for k in range(m):
                chains[k] = mix64_scalar(chains[k] ^ words[j, k]) + GOLDEN
        for k in range(m):
            out[start + k] = mix64_scalar(chains[k] ^ labels[start + k])


def _float_words(values: np.ndarray) -> np.ndarray:
    """Canonical uint64 words of float values: ``-0.0`` -> ``0.0``, every NaN -> one NaN."""
    a = np.array(values, dtype=np.float64).ravel()
    nan = np.isnan(a)
    a[a == 0.0] = 0.0
    words = a.view(np.uint64)
    words[nan] = _NAN_BITS
    return words


def _object_word(value: Any) -> np.uint64:
    """The word of one non-numeric label: a 64-bit BLAKE2b of its text (UTF-8)."""
    if isinstance(value, int | float | np.number) and not isinstance(value, bool | np.bool_):
        return _float_words(np.asarray([value]))[0]
    raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
    return np.frombuffer(hashlib.blake2b(raw, digest_size=8).digest(), dtype="<u8")[0]


def _label_words(y: Any, n: int) -> np.ndarray:
    """One uint64 word per label (float64 bits if numeric, else a hash of its text)."""
    if y is None:
        return np.full(n, _NO_LABEL, dtype=np.uint64)
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must have one label per record ({n}), got shape {y.shape}")
    if y.dtype.kind in "biuf":
        return _float_words(y)
    # distinct labels are few: hash each once, then map back (no Python loop per row)
    uniq, inverse = np.unique(y, return_inverse=True)
    table = np.array([_object_word(v) for v in uniq], dtype=np.uint64)
    return table[inverse.ravel()]


def _dense_chunks(X: Any) -> Iterator[np.ndarray]:
    """C-contiguous float row blocks of ``X`` (dense or scipy sparse): float32 and float64
    tables as they are (the hash widens each value), anything else as float64."""
    if not sp.issparse(X):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (records x features), got shape {X.shape}")
        dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
        yield np.ascontiguousarray(X, dtype=dtype)
        return
    X = sp.csr_matrix(X)
    step = max(1, _CHUNK_VALUES // max(1, X.shape[1]))
    for start in range(0, X.shape[0], step):
        yield np.ascontiguousarray(X[start:start + step].toarray(), dtype=np.float64)


def record_ids(X: Any, y: Any = None) -> RecordIds:
    """The 64-bit content id of every record ``(X[i], y[i])``.

    The hash of the record's canonical words: every feature value as float64 (``-0.0``
    as ``0.0``, every NaN payload as one NaN; sparse rows as their dense values), then the
    label (numeric labels as float64, others by their text). It depends on the record
    only -- not on its row or on the other records -- so the partitions keyed by it are
    record-stable (parallel composition, Li et al. 2020 Theorem 4; Fletcher & Islam 2017
    Definition 3). ``y=None``: records without a separate label.
    """
    blocks = list(_dense_chunks(X))
    n = sum(b.shape[0] for b in blocks)
    labels = _label_words(y, n)
    out = np.empty(n, dtype=np.uint64)
    start = 0
    for block in blocks:
        stop = start + block.shape[0]
        _hash_rows(block, labels[start:stop], out[start:stop])
        start = stop
    return RecordIds(out)


def _check_ids(ids: Any) -> np.ndarray:
    if not isinstance(ids, RecordIds):
        raise TypeError(
            "the partition needs the records' content ids, record_ids(X, y), got "
            f"{type(ids).__name__}: keying by row position or count is not record-stable"
        )
    return ids.values


def keyed_uniform(ids: RecordIds, key: np.ndarray) -> np.ndarray:
    """Uniforms in [0, 1), one per record, from two rounds of SplitMix64 keyed by ``key``.

    ``key`` has shape ``(..., 2)`` uint64 (one secret key per batch row); the result
    broadcasts to ``(..., len(ids))``. A record's uniform depends only on (key, record).
    """
    values = _check_ids(ids)
    with np.errstate(over="ignore"):
        h = mix64(values * GOLDEN ^ key[..., 0:1])
        h = mix64(h + key[..., 1:2])
    return (h >> np.uint64(11)).astype(np.float64) / float(2**53)


def _proportions(proportions: Any) -> np.ndarray:
    """Validate; a trailing remainder (sum < 1) becomes the 'unused' part (-1)."""
    if isinstance(proportions, int | np.integer) and not isinstance(proportions, bool):
        if proportions < 1:
            raise ValueError(f"proportions must be >= 1 parts, got {proportions!r}")
        return np.full(int(proportions), 1.0 / int(proportions))
    try:
        p = np.asarray(proportions, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"proportions must be numbers, got {proportions!r}") from None
    if p.size == 0:
        raise ValueError("proportions must not be empty")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"proportions must be finite and >= 0, got {proportions!r}")
    total = float(p.sum())
    if total <= 0 or total > 1 + 1e-9:
        raise ValueError(f"proportions must sum to a value in (0, 1], got {total!r}")
    return p


def _draw_key(rng: Rng, shape: tuple[int, ...]) -> np.ndarray:
    """Secret 128-bit keys (two uint64 words each) from ``rng``."""
    raw = rng.bytes(16 * int(np.prod(shape, dtype=np.int64)))
    return np.frombuffer(raw, dtype=np.uint64).reshape(*shape, 2)


def _assign(u: np.ndarray, p: np.ndarray) -> np.ndarray:
    edges = np.cumsum(p)
    parts = np.searchsorted(edges, u, side="right")
    return np.where(parts >= p.size, -1, parts).astype(np.int64)


#: :func:`_keyed_parts` counts the edges below a uniform when there are at most this many
#: parts, else it searches them.
_COUNT_EDGES_MAX = 64


@njit(cache=True, nogil=True)
def _keyed_parts(values: np.ndarray, key0: np.uint64, key1: np.uint64, edges: np.ndarray,
                 out: np.ndarray) -> None:
    """``_assign(keyed_uniform(ids, key), p)`` for one key (``edges = cumsum(p)``), bit
    for bit, in one compiled pass instead of a dozen array temporaries (issue 43)."""
    n_edges = edges.shape[0]
    scale = 1.0 / 9007199254740992.0  # 2**-53, exact
    for i in range(values.shape[0]):
        h = mix64_scalar((values[i] * GOLDEN) ^ key0)
        h = mix64_scalar(h + key1)
        u = np.float64(h >> np.uint64(11)) * scale
        # np.searchsorted(edges, u, side="right"), the first edge > u, is the number of
        # edges <= u (they never decrease): few edges are counted without a branch per
        # edge (4x faster than the search for an ensemble's 50), many searched
        if n_edges <= _COUNT_EDGES_MAX:
            below = 0
            for j in range(n_edges):
                below += edges[j] <= u
        else:
            below = 0
            hi = n_edges
            while below < hi:
                mid = (below + hi) >> 1
                if edges[mid] > u:
                    hi = mid
                else:
                    below = mid + 1
        out[i] = below if below < n_edges else -1


def record_partition(ids: RecordIds, proportions: Any, rng: Rng) -> np.ndarray:
    """Part of each record (``-1`` = used by no part), each record drawn independently.

    ``ids``: :func:`record_ids` of the records (``ids[rows]`` for a subset: the same
    records keep the same parts). ``proportions``: the paper's target share of each
    part, e.g. ``[1/T] * T`` for T disjoint trees (or just ``T``); if they sum to less
    than 1 the remainder is left unused (``-1``), e.g. a DPBoost ensemble that samples a
    fraction of the data. ``rng`` draws the secret key (structure randomness).
    """
    values = _check_ids(ids)
    p = _proportions(proportions)
    key = _draw_key(check_rng(rng), ())
    parts = np.empty(values.shape[0], dtype=np.int64)
    _keyed_parts(values, key[0], key[1], np.cumsum(p), parts)
    return parts


def record_partition_batch(
    ids: RecordIds, proportions: Any, rng: Rng, size: int
) -> np.ndarray:
    """``size`` independent partitions (one key each), shape ``(size, len(ids))`` (audits)."""
    _check_ids(ids)
    p = _proportions(proportions)
    key = _draw_key(check_rng(rng), (int(size),))
    return _assign(keyed_uniform(ids, key), p)
