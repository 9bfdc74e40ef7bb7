"""Seeds for reproducible cells.

Every result cell draws its randomness from a ``numpy.random.SeedSequence`` derived from
(the run's seed, the cell's key). The key is hashed with SHA-256, so the stream of a cell
does not depend on which worker runs it, in what order, or on how many other cells exist:
results are identical for any ``--jobs`` and any backend.
"""

from __future__ import annotations

import hashlib

import numpy as np


def key_words(key: str) -> list[int]:
    """Turn a text key into 32-bit words of entropy (SHA-256 of its UTF-8 bytes)."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, len(digest), 4)]


def seed_sequence(seed: int, key: str) -> np.random.SeedSequence:
    """The SeedSequence of ``key`` under the run seed ``seed``."""
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence([int(seed), *key_words(key)])


def seed_int(ss: np.random.SeedSequence) -> int:
    """A 32-bit integer drawn from ``ss``, for estimators' ``random_state`` arguments."""
    return int(ss.generate_state(1, dtype=np.uint32)[0])
