"""What finished cells took, read from the cache through an index of their timings.

``dpexp plan`` reads the measured seconds of every cached cell (its estimates and the
longest-first schedule). Parsing and checking the checksum of every cell file cost 5 of
the 9 s of ``dpexp plan --all`` on a machine with 25,000 cached cells (issue 43), each
time although the files had not changed. So each experiment's cache folder keeps
``times-index.json``: per cell file, its size and modification time (ns) and the timing
fields read from it. A plan parses only the files whose size or time differ from the
index (new, recomputed or edited files: an edit changes the time), drops entries whose
file is gone, and rewrites the index atomically when anything changed. A file that is
not a finished cell is never indexed, so it is checked (and warned about) each time. As
git does with its index, a file modified within ``RACY_SECONDS`` of the plan is not
indexed yet: a file system's clock ticks coarsely, and a rewrite of the same size within
one tick would keep its stamp.

The index holds timings only: results are always read from the cell files themselves.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpexp.errors import CorruptCellWarning
from dpexp.experiments import cache
from dpexp.experiments.cells import canonical_json
from dpexp.experiments.committed import row_key

__all__ = ["INDEX_NAME", "CellTime", "cached_times", "measured"]

#: The index file in each ``cache/<experiment>/<scale>/`` folder.
INDEX_NAME = "times-index.json"
#: The index's format (another format is ignored and rebuilt).
INDEX_FORMAT = 1
#: A cell file modified less than this long before the plan is parsed, not indexed.
RACY_SECONDS = 2.0


@dataclass(frozen=True)
class CellTime:
    """One finished cell: its key, what it ran (``setting``: dataset key, algorithm,
    canonical params JSON) and its measured seconds (``wall``: the cell's wall time; else
    its fit time; None when it has neither)."""

    experiment: str
    key: str
    label: str
    setting: tuple[str, str, str]
    seconds: float | None
    wall: bool
    #: ``cached`` (a cell file) or ``committed`` (a row of the committed table)
    source: str

    @property
    def group(self) -> tuple[str, str]:
        """The plan's group: (dataset key, label)."""
        return self.setting[0], self.label


def _finite(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def measured(wall: Any, fit: Any) -> tuple[float | None, bool]:
    """(seconds, whether they are the wall time): the wall time, else the fit time."""
    seconds = _finite(wall)
    return (seconds, True) if seconds is not None else (_finite(fit), False)


def _from_payload(experiment: str, payload: dict[str, Any]) -> CellTime | None:
    """The timing of one cell file's payload; None when it is not a runner's cell file
    (the runner recomputes it)."""
    if "key" not in payload:
        return None
    c, first = payload["cell"], (payload["rows"][0] if payload["rows"] else {})
    wall = payload.get("wall_seconds")
    seconds, is_wall = measured(first.get("wall_seconds") if wall is None else wall,
                                first.get("fit_seconds"))
    algorithm = c.get("algorithm") or f"procedure:{c.get('procedure')}"
    setting = (str(c.get("dataset")), algorithm, canonical_json(c.get("params") or {}))
    key = row_key(first) if first else payload["key"]  # the row key, as the committed table's
    return CellTime(experiment, key, str(c.get("label")), setting, seconds, is_wall, "cached")


def _stamp(entry: os.DirEntry) -> tuple[int, int]:
    st = entry.stat()
    return st.st_size, st.st_mtime_ns


def _cell_files(folder: Path) -> dict[str, tuple[Path, tuple[int, int]]]:
    """``seed-*/<name>.json`` relative name -> (path, (size, mtime ns)), one scan per folder."""
    out: dict[str, tuple[Path, tuple[int, int]]] = {}
    try:
        seeds = [e for e in os.scandir(folder) if e.name.startswith("seed-") and e.is_dir()]
    except FileNotFoundError:
        return out
    for seed in seeds:
        for entry in os.scandir(seed.path):
            if entry.name.endswith(".json") and entry.is_file():
                out[f"{seed.name}/{entry.name}"] = (Path(entry.path), _stamp(entry))
    return out


def _load_index(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT:
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _entry(stamp: tuple[int, int], time: CellTime) -> list[Any]:
    """An index entry: [size, mtime ns, key, label, setting, seconds, wall]."""
    return [*stamp, time.key, time.label, list(time.setting), time.seconds, time.wall]


def _indexed(experiment: str, entry: Any, stamp: tuple[int, int]) -> CellTime | None:
    """The index's timing for a file with ``stamp``, or None when stale or malformed."""
    try:
        size, mtime, key, label, setting, seconds, wall = entry
        if (size, mtime) != stamp:
            return None
        dataset, algorithm, params = setting
        time = CellTime(experiment, key, label, (dataset, algorithm, params), seconds, wall,
                        "cached")
    except (TypeError, ValueError):
        return None
    fields = (key, label, dataset, algorithm, params)
    if not all(isinstance(f, str) for f in fields) or not isinstance(wall, bool):
        return None
    return time if seconds is None or isinstance(seconds, float | int) else None


def cached_times(results_dir: Path, experiment: str, scale: str) -> list[CellTime]:
    """The timings of ``experiment``'s cell files at ``scale`` (every seed and override),
    in file-name order, as parsing each file gives them (:mod:`module docstring <.>`)."""
    folder = cache.cache_dir(results_dir, experiment, scale)
    files = _cell_files(folder)
    index_path = folder / INDEX_NAME
    old = _load_index(index_path) if files else {}
    new: dict[str, Any] = {}
    out, bad = [], []
    settled = time.time_ns() - int(RACY_SECONDS * 1e9)
    for name in sorted(files):
        path, stamp = files[name]
        entry = old.get(name)
        found = _indexed(experiment, entry, stamp)
        if found is None:
            data, why = cache.load_cell_file(path)
            if data is None:
                if why:
                    bad.append((path, why))
                continue
            found = _from_payload(experiment, data)
            if found is None:
                continue
            entry = _entry(stamp, found)
        if stamp[1] < settled:
            new[name] = entry
        out.append(found)
    if bad:  # one line, however many, as dpexp.experiments.results.read_cells says it
        path, why = bad[0]
        more = f" (and {len(bad) - 1} more of {experiment}, {scale})" if len(bad) > 1 else ""
        warnings.warn(CorruptCellWarning(f"cached cell {path}: {why}{more}; skipped "
                                         "(`dpexp run` recomputes it)"), stacklevel=2)
    if new != old and folder.is_dir():
        # a read-only cache is still read; the next plan parses it again
        with contextlib.suppress(OSError):
            cache.atomic_write_text(index_path, json.dumps(
                {"format": INDEX_FORMAT, "files": new}, separators=(",", ":")))
    return out
