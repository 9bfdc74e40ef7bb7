"""How a run is configured (``dpexp run``'s options), read by every step of it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

BACKENDS = ("loky", "threading", "dask")


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
