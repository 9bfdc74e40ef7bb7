"""Record-stable partitions of the training records, for parallel composition.

Parallel composition (Li et al. 2020 Theorem 4; Fletcher & Islam 2017 Definition 3)
charges the maximum over disjoint parts only if adding or removing one record changes
the data of *one* part. So the part of a record must not depend on the other records:
splitting by position blocks (``arange(n) // (n / T)``) moves the block boundaries when
``n`` changes, so one extra record changes the data of several parts and the privacy
cost is a sum, not a max (the ``forest_position_blocks`` audit fixture shows it).

:func:`record_partition` gives every record an independent draw from the target
proportions. The draw is a keyed hash of the record's id (its original row index by
default): one random 128-bit key per call, from ``rng``, then a uniform per record from
``mix(key, id)``. A record's part therefore depends only on (key, id), never on ``n`` or on
the other records, so removing one record (keeping the ids of the others) changes no other
record's part, and the parts are i.i.d. across records as the DP argument needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpexp.privacy.randomness import Rng, check_rng

__all__ = ["record_partition", "record_partition_batch", "keyed_uniform"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(x: np.ndarray) -> np.ndarray:
    """The SplitMix64 finaliser (a bijection of uint64 with full avalanche)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def keyed_uniform(ids: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Uniforms in [0, 1), one per id, from two rounds of SplitMix64 keyed by ``key``.

    ``key`` has shape ``(..., 2)`` uint64 (one key per batch row); ``ids`` is uint64 of
    shape ``(n,)``; the result broadcasts to ``(..., n)``.
    """
    with np.errstate(over="ignore"):
        k0 = key[..., 0:1]
        k1 = key[..., 1:2]
        h = _mix64(ids * _GOLDEN ^ k0)
        h = _mix64(h + k1)
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


def _record_ids(n_records: Any, record_ids: Any) -> np.ndarray:
    if isinstance(n_records, bool) or not isinstance(n_records, int | np.integer) or n_records < 0:
        raise ValueError(f"n_records must be a non-negative integer, got {n_records!r}")
    if record_ids is None:
        return np.arange(int(n_records), dtype=np.uint64)
    ids = np.asarray(record_ids)
    if ids.shape != (int(n_records),) or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"record_ids must be {n_records} integers, got shape {ids.shape}")
    if np.any(ids < 0):
        raise ValueError("record_ids must be >= 0")
    return ids.astype(np.uint64)


def _draw_key(rng: Rng, shape: tuple[int, ...]) -> np.ndarray:
    raw = rng.bytes(16 * int(np.prod(shape, dtype=np.int64)))
    return np.frombuffer(raw, dtype=np.uint64).reshape(*shape, 2)


def _assign(u: np.ndarray, p: np.ndarray) -> np.ndarray:
    edges = np.cumsum(p)
    parts = np.searchsorted(edges, u, side="right")
    return np.where(parts >= p.size, -1, parts).astype(np.int64)


def record_partition(
    n_records: int, proportions: Any, rng: Rng, *, record_ids: Any = None
) -> np.ndarray:
    """Part id of each record (``-1`` = used by no part), each record drawn independently.

    ``proportions``: the paper's target share of each part, e.g. ``[1/T] * T`` for T
    disjoint trees (or just ``T``); if they sum to less than 1 the remainder is left
    unused (``-1``), e.g. a DPBoost ensemble that samples a fraction of the data.
    ``record_ids``: stable non-negative integer ids of the records (default: row
    positions ``0..n-1``). Give the original ids when working on a subset, so that
    removing a record leaves every other record's part unchanged.
    """
    p = _proportions(proportions)
    ids = _record_ids(n_records, record_ids)
    rng = check_rng(rng)
    key = _draw_key(rng, ())
    return _assign(keyed_uniform(ids, key), p)


def record_partition_batch(
    n_records: int, proportions: Any, rng: Rng, size: int, *, record_ids: Any = None
) -> np.ndarray:
    """``size`` independent partitions at once, shape ``(size, n_records)`` (for audits)."""
    p = _proportions(proportions)
    ids = _record_ids(n_records, record_ids)
    rng = check_rng(rng)
    key = _draw_key(rng, (int(size),))
    return _assign(keyed_uniform(ids, key), p)
