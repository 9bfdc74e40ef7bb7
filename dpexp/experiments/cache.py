"""On-disk cache of finished cells: one JSON file per cell, written atomically.

Layout: ``RESULTS/cache/EXP/SCALE/seed-S/<digest>-<view>.json`` (the cell's rows; the
digest of its content key, :attr:`~dpexp.experiments.cells.Cell.key`, so a cell another
experiment or series already computed is found by its file name and copied, never
recomputed; then of where it is shown, :attr:`~dpexp.experiments.cells.Cell.view_key`), and its
privacy ledger beside it in ``seed-S/ledgers/`` under the same name, written first so that the
cell file is the commit marker. Keeping ledgers out of the cell files keeps reading
thousands of cells (``dpexp results``/``render``) fast: a forest's ledger can be far
larger than its rows.

A cell file is written to a temporary name in the same directory, flushed and fsynced,
then renamed over its final name (``os.replace`` is atomic on POSIX), so a run killed at
any moment (even with SIGKILL) leaves either the complete file or none: resuming skips
every finished cell and recomputes only the missing ones.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpexp.experiments.cells import Cell


def cache_dir(results_dir: Path, experiment: str, scale: str) -> Path:
    return Path(results_dir) / "cache" / experiment / scale


def seed_dir(results_dir: Path, experiment: str, scale: str, seed: int) -> Path:
    return cache_dir(results_dir, experiment, scale) / f"seed-{int(seed)}"


def cell_file_name(cell: Cell) -> str:
    """``<content digest>-<view digest>.json``: found by its content across experiments
    (:func:`shared_cells`), and one file per series even when two series of one experiment
    run the same cell (a smoke scale can make their parameters equal)."""
    return f"{cell.digest}-{cell.view_digest[:12]}.json"


def cell_path(results_dir: Path, cell: Cell) -> Path:
    return seed_dir(results_dir, cell.experiment, cell.scale, cell.seed) / cell_file_name(cell)


def ledger_path(results_dir: Path, cell: Cell) -> Path:
    return seed_dir(results_dir, cell.experiment, cell.scale, cell.seed) / "ledgers" / cell_file_name(cell)


def cell_files(results_dir: Path, experiment: str, scale: str) -> list[Path]:
    """Every cached cell file of ``experiment`` at ``scale`` (all seeds, every override)."""
    return sorted(cache_dir(results_dir, experiment, scale).glob("seed-*/*.json"))


def shared_cells(results_dir: Path) -> dict[str, Path]:
    """Digest -> a cached cell file, over every experiment, scale and seed: the cache read
    by content (:attr:`Cell.digest` derives from what determines a cell's numbers only)."""
    out: dict[str, Path] = {}
    for path in sorted((Path(results_dir) / "cache").glob("*/*/seed-*/*.json")):
        out.setdefault(path.stem.split("-")[0], path)
    return out


def adopt_shared(results_dir: Path, cell: Cell, source: Path, not_before: datetime | None = None) -> bool:
    """Cache ``cell`` as the copy of ``source``, another experiment's cell with the same key
    (so the same numbers): its rows under this cell's experiment, scale and label. False,
    and nothing written, when ``source`` is not that cell, was computed before
    ``not_before``, or lacks a metric ``cell`` asks (a spec asking more is computed anew)."""
    try:
        data = json.loads(source.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    if not isinstance(data, dict) or data.get("key") != cell.key or not data.get("rows"):
        return False
    if not_before is not None and computed_before(data, not_before):
        return False
    if cell.algorithm and not set(cell.metrics) <= {r.get("metric") for r in data["rows"]}:
        return False
    view = {"experiment": cell.experiment, "scale": cell.scale, "label": cell.label}
    ledger_file = source.parent / "ledgers" / source.name
    try:
        ledger = json.loads(ledger_file.read_text()).get("ledger")
    except (OSError, json.JSONDecodeError, AttributeError):
        ledger = None
    rest = {k: v for k, v in data.items() if k not in ("key", "cell", "rows")}
    write_cell(results_dir, cell, {**rest, "cell": cell.to_dict(), "ledger": ledger,
                                   "rows": [{**r, **view} for r in data["rows"]],
                                   "shared_from": str(source.relative_to(results_dir))})
    return True


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file, fsync, rename)."""
    atomic_write_bytes(path, text.encode())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same directory,
    flushed and fsynced, then renamed over ``path`` (``os.replace`` is atomic on POSIX)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_cell(results_dir: Path, cell: Cell, payload: dict[str, Any]) -> Path:
    """Write the ledger (if any), then the cell file: a cell on disk has its ledger."""
    payload = dict(payload)
    ledger = payload.pop("ledger", None)
    if ledger is not None:
        atomic_write_text(ledger_path(results_dir, cell),
                          json.dumps({"key": cell.key, "ledger": ledger}, default=str))
    path = cell_path(results_dir, cell)
    atomic_write_text(path, json.dumps({"key": cell.key, **payload}, default=str))
    return path


def read_ledger(results_dir: Path, cell: Cell) -> list[dict] | None:
    try:
        data = json.loads(ledger_path(results_dir, cell).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return data.get("ledger") if data.get("key") == cell.key else None


def read_cell(results_dir: Path, cell: Cell) -> dict[str, Any] | None:
    """The cached payload of ``cell``, or None if missing (or unreadable: then recomputed)."""
    path = cell_path(results_dir, cell)
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if data.get("key") != cell.key:  # hash collision or a different cell: recompute
        return None
    return data


def has_cell(results_dir: Path, cell: Cell) -> bool:
    return read_cell(results_dir, cell) is not None


def computed_before(payload: dict[str, Any], when: datetime) -> bool:
    """Whether a cached cell was computed before ``when`` (an aware datetime): its rows'
    earliest ``timestamp`` (ISO 8601, UTC; a row without one counts as before)."""
    stamps = [r.get("timestamp") for r in payload.get("rows") or []]
    if not stamps:
        return True
    try:
        first = min(datetime.fromisoformat(str(s)) for s in stamps)
    except (TypeError, ValueError):
        return True
    if first.tzinfo is None:
        first = first.replace(tzinfo=UTC)
    return first < when


def cached_experiments(results_dir: Path) -> dict[str, list[str]]:
    """experiment -> scales with at least one cached cell."""
    root = Path(results_dir) / "cache"
    out: dict[str, list[str]] = {}
    if not root.exists():
        return out
    for exp in sorted(p for p in root.iterdir() if p.is_dir()):
        scales = [s.name for s in sorted(exp.iterdir()) if s.is_dir() and any(s.glob("seed-*/*.json"))]
        if scales:
            out[exp.name] = scales
    return out
