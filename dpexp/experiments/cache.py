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
import hashlib
import json
import os
import tempfile
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpexp.errors import CorruptCellWarning
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
    data, _ = load_cell_file(source, cell)
    if data is None or (not_before is not None and computed_before(data, not_before)):
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


def write_text_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` atomically unless the file holds it already; whether it
    wrote. A report rewrites some 180 tables and pages, on a fresh clone or an unchanged
    campaign all identical to the files there: comparing costs a read, writing an fsync
    and a rename each (issue 43)."""
    data = text.encode()
    try:
        if Path(path).stat().st_size == len(data) and Path(path).read_bytes() == data:
            return False
    except OSError:  # absent or unreadable: written
        pass
    atomic_write_bytes(path, data)
    return True


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


def _canonical(payload: dict[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)


def payload_checksum(payload: dict[str, Any]) -> str:
    """sha256 of the payload's canonical JSON without its ``checksum`` (as read back: the
    JSON of what is written, so writing and reading agree to the bit)."""
    body = json.loads(_canonical({k: v for k, v in payload.items() if k != "checksum"}))
    return hashlib.sha256(_canonical(body).encode()).hexdigest()


def write_cell(results_dir: Path, cell: Cell, payload: dict[str, Any]) -> Path:
    """Write the ledger (if any), then the cell file with its checksum: a cell on disk has
    its ledger, and a cell file edited afterwards is never served (:func:`cell_problem`)."""
    payload = dict(payload)
    ledger = payload.pop("ledger", None)
    if ledger is not None:
        atomic_write_text(ledger_path(results_dir, cell),
                          json.dumps({"key": cell.key, "ledger": ledger}, default=str))
    body = {"key": cell.key, **payload}
    body["checksum"] = payload_checksum(body)
    path = cell_path(results_dir, cell)
    atomic_write_text(path, _canonical(body))
    return path


def read_ledger(results_dir: Path, cell: Cell) -> list[dict] | None:
    try:
        data = json.loads(ledger_path(results_dir, cell).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data.get("ledger") if isinstance(data, dict) and data.get("key") == cell.key else None


def cell_problem(data: Any, cell: Cell | None = None) -> str:
    """Why ``data`` (a cell file's JSON) is not a finished cell to serve; "" when it is.

    A cell is served only whole and as written: its checksum matches its content, it has
    result rows, and (given ``cell``) it is that cell with every metric it asks."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if "checksum" not in data:
        return "no checksum (not written by dpexp's cache)"
    if data["checksum"] != payload_checksum(data):
        return "checksum mismatch (changed after it was written)"
    rows = data.get("rows")
    if not isinstance(rows, list) or not rows or not all(
            isinstance(r, dict) and "metric" in r and "value" in r for r in rows):
        return "no result rows"
    if not isinstance(data.get("cell"), dict) or not isinstance(data.get("key"), str):
        return "no cell record"
    if cell is not None:
        if data["key"] != cell.key:
            return "another cell's key"
        missing = sorted(set(cell.metrics) - {r["metric"] for r in rows}) if cell.algorithm else []
        if missing:
            return f"lacks metric(s) {', '.join(missing)}"
    return ""


def load_cell_file(path: Path, cell: Cell | None = None) -> tuple[dict[str, Any] | None, str]:
    """``(payload, "")`` for a finished cell, ``(None, why)`` otherwise (missing: why "")."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None, ""
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"unreadable ({type(exc).__name__})"
    why = cell_problem(data, cell)
    return (None, why) if why else (data, "")


def quarantine(results_dir: Path, path: Path) -> Path:
    """Move a corrupt cell file (and its ledger) under ``RESULTS/cache/quarantine/``, where
    it is kept for inspection and never read again; returns its new path."""
    root = Path(results_dir) / "cache"
    target = root / "quarantine" / path.relative_to(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, target)
    ledger = path.parent / "ledgers" / path.name
    if ledger.exists():
        os.replace(ledger, target.parent / f"{path.stem}.ledger.json")
    return target


def read_cell(results_dir: Path, cell: Cell, *, move_aside: bool = False) -> dict[str, Any] | None:
    """The cached payload of ``cell``, or None when it is missing or not a finished cell
    (then recomputed). With ``move_aside`` (a run), a corrupt file is quarantined with a
    :class:`~dpexp.errors.CorruptCellWarning` naming it."""
    path = cell_path(results_dir, cell)
    data, why = load_cell_file(path, cell)
    if why and why != "another cell's key":  # a digest collision is not corruption
        where = path
        if move_aside:
            where = quarantine(results_dir, path)
        warnings.warn(CorruptCellWarning(
            f"cached cell {path}: {why}; "
            + (f"moved to {where} and recomputed" if move_aside else "skipped")), stacklevel=2)
    return data


def has_cell(results_dir: Path, cell: Cell) -> bool:
    """Whether ``cell`` is cached as a finished cell (quietly: the run reports the others)."""
    return load_cell_file(cell_path(results_dir, cell), cell)[0] is not None


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
