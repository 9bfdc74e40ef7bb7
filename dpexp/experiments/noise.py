"""The ``noise`` column: how a result row's privacy noise was drawn.

The runner fits every private estimator with ``noise_rng=seeded_noise(random_state)``
(:func:`dpexp.privacy.randomness.seeded_noise`): reproducible from the run seed, so a
research result, not a release (a published model must draw fresh noise, the estimators'
default). Committed tables written before the column existed lack it; it is a function of
the row's algorithm and epsilon, so it is derived when they are read, like ``p_*``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import Any

from dpexp.privacy.randomness import SEEDED_NOISE
from dpexp.registry import all_algorithms

__all__ = ["NO_NOISE", "PEER_NOISE", "SEEDED_NOISE", "noise_source", "row_noise", "with_noise"]

#: A row without privacy noise: a non-private algorithm, or no budget (epsilon = inf).
NO_NOISE = "none (no privacy noise)"
#: A peer column (``bench/peers``): another code drew the noise, with its own seeding.
PEER_NOISE = "drawn by the peer's own code (not dpexp's seeding)"


@functools.lru_cache(maxsize=512)
def noise_source(algorithm: str, finite_epsilon: bool) -> str:
    """The ``noise`` value of a row of ``algorithm`` (``procedure:NAME`` for a procedure)."""
    if not finite_epsilon:
        return NO_NOISE
    if algorithm.startswith("procedure:"):
        return SEEDED_NOISE  # a procedure's randomness comes from the cell's SeedSequence
    info = all_algorithms().get(algorithm)
    if info is None:
        return PEER_NOISE
    return SEEDED_NOISE if info.private else NO_NOISE


def _epsilon_is_finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def row_noise(row: dict[str, Any]) -> str:
    """The row's ``noise`` if it has one, else the one its algorithm and epsilon imply."""
    given = row.get("noise")
    if isinstance(given, str) and given:
        return given
    return noise_source(str(row.get("algorithm", "")), _epsilon_is_finite(row.get("epsilon")))


def with_noise(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with the ``noise`` column filled where it is missing (rows are copied)."""
    return [r if isinstance(r.get("noise"), str) and r["noise"] else {**r, "noise": row_noise(r)}
            for r in rows]
