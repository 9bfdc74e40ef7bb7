"""A cached cell against the committed row of the same key: which numbers stand.

The committed tables are the project's results; the cache is a working copy. Most of the
time the two agree (the cache adopted the table, or the table was written from the
cache). When a cached cell's values differ from the committed ones of the same key, the
cached numbers are used only when this code computed them:

* the cell carries this code revision (``git_revision`` of its rows), or
* the committed rows are stale (:mod:`dpexp.experiments.stale`: computed before a change
  that changed the numbers on purpose) and the cached ones are not -- a recomputation the
  project asked for.

Otherwise the committed values stand, and the reader gets one warning line naming how many
cells differ, one of them, and how to recompute them with this code. A cache copied from
another checkout, a cell written by an older dpexp, a hand-edited value with a recomputed
checksum: none of them replaces a committed number silently.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpexp.errors import CellConflictWarning
from dpexp.experiments.stale import row_is_stale

__all__ = ["Reconciled", "reconcile", "same_values", "warn_conflicts"]


def _value_key(value: Any) -> Any:
    """A value comparable exactly (NaN equal to NaN; ints and floats by their float)."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        f = float(value)
        return "nan" if math.isnan(f) else f
    return value


def _step_key(value: Any) -> Any:
    """Steps compare as numbers when they are (a table reads 5 back as 5.0)."""
    return _value_key(value) if value is not None else None


def _numbers(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a cell released: its metric rows' (kind, metric, step, value), sorted."""
    out = [(str(r.get("metric_kind")), str(r.get("metric")), _step_key(r.get("step")),
            _value_key(r.get("value"))) for r in rows]
    return sorted(out, key=repr)


def same_values(cached: list[dict[str, Any]], committed: list[dict[str, Any]]) -> bool:
    """Whether two copies of a cell released the same numbers, to the last bit (timings,
    timestamps and provenance may differ)."""
    return _numbers(cached) == _numbers(committed)


def _revision(rows: list[dict[str, Any]]) -> str:
    revisions = {str(r.get("git_revision")) for r in rows if r.get("git_revision")}
    return revisions.pop() if len(revisions) == 1 else ""


@dataclass(frozen=True)
class Reconciled:
    """The payloads to read (one per key) and the cached payloads left unused."""

    payloads: list[dict[str, Any]]
    conflicts: tuple[dict[str, Any], ...]


def reconcile(
    cached: list[dict[str, Any]], committed: list[dict[str, Any]],
    revision: Callable[[], str],
) -> Reconciled:
    """One payload per key from the cache's and the committed table's payloads.

    A cached cell wins when the table lacks its key, when its numbers equal the table's, or
    when this code computed it (``revision()``, asked only when a cell differs, is this
    checkout's revision; or the committed rows are stale and the cached ones are not).
    Else the committed payload is kept and the key listed in ``conflicts``.
    """
    by_key = {p["key"]: p for p in committed}
    out: list[dict[str, Any]] = []
    conflicts: list[dict[str, Any]] = []
    current: str | None = None
    for payload in cached:
        theirs = by_key.pop(payload.get("key"), None)
        if theirs is None or same_values(payload["rows"], theirs["rows"]):
            out.append(payload)
            continue
        if current is None:
            current = revision()
        mine = payload["rows"]
        ours_now = bool(current) and current != "unknown" and _revision(mine) == current
        recomputed = (any(row_is_stale(r) for r in theirs["rows"])
                      and not any(row_is_stale(r) for r in mine))
        if ours_now or recomputed:
            out.append(payload)
        else:
            out.append(theirs)
            conflicts.append(payload)
    out.extend(by_key.values())
    return Reconciled(payloads=out, conflicts=tuple(conflicts))


def warn_conflicts(conflicts: tuple[dict[str, Any], ...], experiment: str, scale: str) -> None:
    """One warning line for the cached cells whose numbers were not used."""
    if not conflicts:
        return
    first = conflicts[0]
    cell = first.get("cell") or {}
    key = str(first.get("key"))[:12]
    named = ", ".join(f"{k}={cell[k]}" for k in ("dataset", "algorithm", "epsilon", "fold")
                      if k in cell)
    more = f" and {len(conflicts) - 1} more" if len(conflicts) > 1 else ""
    warnings.warn(CellConflictWarning(
        f"{experiment} ({scale}): cached cell {key} ({named}){more} differ from "
        "the committed table and were not computed by this code revision: the committed "
        f"values stand (`dpexp run {experiment} --scale {scale} --force` recomputes them "
        "with this code)"), stacklevel=3)
