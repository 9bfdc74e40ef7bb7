"""Committed rows that the current code would compute differently ("stale").

A result row's numbers depend on the code that computed them. When a change of the code
changes numbers on purpose (a new sampler, another partition), the committed rows of the
affected algorithms are no longer what ``dpexp run`` computes today: they stay in the
committed tables (and are still adopted as finished cells, so a campaign is not silently
re-run), but every output that shows them says they are stale, with the change and the
command that recomputes them. The campaign that recomputes them is one ``make
reproduce-all RUN_ARGS="--recompute-before SINCE"`` (README, "The committed reproduction").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd

from dpexp.registry import all_algorithms

__all__ = ["NUMBER_CHANGES", "NumbersChange", "row_is_stale", "stale_rows", "stale_summary"]

#: ``algorithm`` of procedure rows (their numbers come from the papers' private algorithms).
_PROCEDURE_PREFIX = "procedure:"


@dataclass(frozen=True)
class NumbersChange:
    """A code change that changes the numbers of every private algorithm's release.

    ``since``: ISO 8601 UTC time of the change; rows with an earlier ``timestamp`` (or
    none) were computed by the code before it. ``unchanged``: private algorithms whose
    numbers the change leaves alone (an external library's own sampler)."""

    since: str
    reason: str
    #: The change in a few words, for the report's headline ("the exact samplers ...").
    what: str = ""
    unchanged: frozenset[str] = frozenset()
    #: The change reaches non-private algorithms too (their seeds changed).
    every_algorithm: bool = False

    @property
    def since_time(self) -> datetime:
        return datetime.fromisoformat(self.since).astimezone(UTC)

    def affects(self, algorithm: str) -> bool:
        """Whether rows of ``algorithm`` computed before :attr:`since` may differ today."""
        if algorithm.startswith(_PROCEDURE_PREFIX):
            return True
        info = all_algorithms().get(algorithm)
        if info is None or algorithm in self.unchanged:
            return False
        return info.private or self.every_algorithm


#: The changes, oldest first. Issue 38 replaced every textbook float sampler by exact
#: discrete ones (counts as discrete-Laplace integers, real values on a public grid) and
#: keyed record partitions by the record instead of its row position. Issue 39 keyed a
#: cell's seeds by what determines its numbers, not by the experiment and label asking.
NUMBER_CHANGES: tuple[NumbersChange, ...] = (
    NumbersChange(
        since="2026-11-27T11:30:00+00:00",
        reason=("computed before the exact discrete samplers and record-keyed partitions "
                "(issue 38); the paper-scale re-run is pending"),
        what=("this code's exact discrete samplers and record-keyed partitions (issue 38), "
              "which change every private algorithm's numbers"),
        unchanged=frozenset({"diffprivlib_rf", "dpboost_original"}),
    ),
    NumbersChange(
        since="2026-11-27T13:30:00+00:00",
        reason=("computed before cells were content-addressed: a cell's seeds derived from "
                "its experiment and label too (issue 39); the paper-scale re-run is pending"),
        what=("content-addressed cells (issue 39), whose seeds no longer depend on the "
              "experiment and label that asked, which changes every algorithm's numbers"),
        unchanged=frozenset({"dpboost_original"}),
        every_algorithm=True,
    ),
)


def _row_times(frame: pd.DataFrame) -> pd.Series:
    """Each row's ``timestamp`` as UTC (NaT where there is none: counts as before)."""
    if "timestamp" not in frame.columns:
        return pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns, UTC]")
    # each distinct stamp parsed once (a cell's rows share one; parsing is per value)
    codes, distinct = pd.factorize(frame["timestamp"])
    if not len(distinct):
        return pd.to_datetime(frame["timestamp"], utc=True, errors="coerce", format="ISO8601")
    parsed = pd.to_datetime(pd.Series(distinct), utc=True, errors="coerce", format="ISO8601")
    # code -1 (no stamp) takes NaT
    return pd.Series(parsed.array.take(codes, allow_fill=True), index=frame.index)


def stale_rows(frame: pd.DataFrame, changes: tuple[NumbersChange, ...] = NUMBER_CHANGES
               ) -> pd.Series:
    """Boolean mask of the rows some change in ``changes`` made stale."""
    mask = pd.Series(False, index=frame.index)
    if frame.empty or "algorithm" not in frame.columns:
        return mask
    times = _row_times(frame)
    algorithms = frame["algorithm"].astype(str)
    for change in changes:
        hit = {a: change.affects(a) for a in algorithms.unique()}
        before = times.isna() | (times < pd.Timestamp(change.since_time))
        mask |= algorithms.map(hit).astype(bool) & before
    return mask


def stale_summary(frame: pd.DataFrame, mask: pd.Series | None = None) -> str:
    """One line for a report section: how many rows are stale and why ("" when none);
    ``mask`` is :func:`stale_rows` of ``frame`` when the caller has it."""
    mask = stale_rows(frame) if mask is None else mask
    if not mask.any():
        return ""
    n, total = int(mask.sum()), len(frame)
    latest = NUMBER_CHANGES[-1]
    return (f"{n:,} of {total:,} rows stale: {latest.reason} "
            f"(`make reproduce-all RUN_ARGS=\"--recompute-before {latest.since}\"` "
            "recomputes them)")


def row_is_stale(row: dict, changes: tuple[NumbersChange, ...] = NUMBER_CHANGES) -> bool:
    """Whether one result row (a mapping with ``algorithm`` and ``timestamp``) was computed
    before a change in ``changes`` that affects its algorithm (:func:`stale_rows`, one row)."""
    algorithm = str(row.get("algorithm", ""))
    stamp = pd.to_datetime(row.get("timestamp"), utc=True, errors="coerce", format="ISO8601")
    for change in changes:
        if change.affects(algorithm) and (pd.isna(stamp) or stamp < pd.Timestamp(change.since_time)):
            return True
    return False
