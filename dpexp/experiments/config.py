"""How a run is configured (``dpexp run``'s options), read by every step of it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from dpexp.errors import DpexpError

BACKENDS = ("loky", "threading", "dask")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise DpexpError(f"shard {self.index}/{self.count} does not exist: K must be "
                             f"between 1 and N (e.g. 2/4)")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"K/N"`` -> :class:`Shard`; a :class:`DpexpError` with a one-line reason otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if match is None:
        raise DpexpError(f"{text!r} is not K/N (e.g. 2/4: the second of four shards)")
    return Shard(int(match.group(1)), int(match.group(2)))


@dataclass
class RunConfig:
    results_dir: Path
    scale: str = "smoke"
    seed: int = 0
    jobs: int = 1
    backend: str = "loky"
    scheduler: str | None = None
    force: bool = False
    #: Recompute the cells computed before this time (aware datetime), keep the later ones:
    #: a resumable --force, e.g. to time a whole campaign again with the current code.
    recompute_before: datetime | None = None
    progress: bool = True
    mirror: str | None = None
    #: Fail (instead of skipping with a note) when an algorithm's optional package is missing.
    require_optional: bool = False
    #: Cache each cell's full privacy ledger (one row per release) instead of the compact
    #: one (per scope and mechanism, :func:`dpexp.privacy.accountant.compact_ledger`).
    full_ledger: bool = False
    #: Compute only this shard's cells (``--shard K/N``, :mod:`dpexp.experiments.shard`)
    #: and write no union table; None: every cell.
    shard: Shard | None = None
