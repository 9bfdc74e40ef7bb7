"""Committed results: a paper-scale campaign that outlives one machine.

The per-cell cache (``results/cache/``) is not committed; the tidy table of every finished
cell is: ``results/EXP/results-paper.csv.gz`` (compressed, written deterministically so an
unchanged campaign gives unchanged bytes). A run, a render or a report on a fresh clone
takes the committed rows as finished cells instead of recomputing them: for every cell of
the spec's grid whose row key (:attr:`dpexp.experiments.cells.Cell.view_key`: experiment,
scale, label and the cell columns) the table holds, the table's rows *are* the cell. A campaign is therefore committed as it goes (commit the
table after each finished experiment) and resumed anywhere.

The table also holds cells outside the grid: override runs (``dpexp run --epsilons ...``)
and peer columns (``bench/peers``: another code's results under a label of its own).
:func:`committed_payloads` returns them too, with a cell record rebuilt from the row, so a
fresh clone renders and reports them as the machine that computed them did; they are never
adopted as grid cells (:func:`adopt_committed` matches the grid's keys only).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpexp.experiments import cache
from dpexp.experiments.cells import (
    Cell,
    content_fields,
    content_key,
    expand,
    expand_points,
    format_epsilon,
    n_folds_of,
)
from dpexp.experiments.row_keys import row_key
from dpexp.experiments.spec import ExperimentSpec

if TYPE_CHECKING:
    import pandas as pd

    from dpexp.experiments.table_rows import CellRows

__all__ = [
    "VIEW_PREFIX", "SharedReads", "adopt_committed", "cached_view_prefixes", "committed_digests", "committed_payloads", "grid_view_digests",
    "index_path",
    "keep_committed_rows", "key_digest", "read_index", "row_key", "table_index", "table_path",
    "write_table", "write_table_text",
]

#: Scales whose union table is compressed (and meant to be committed).
COMPRESSED_SCALES = ("paper",)


def table_path(results_dir: Path, experiment: str, scale: str) -> Path:
    """``results/EXP/results-SCALE.csv`` (``.csv.gz`` at paper scale: it is committed)."""
    suffix = ".csv.gz" if scale in COMPRESSED_SCALES else ".csv"
    return Path(results_dir) / experiment / f"results-{scale}{suffix}"


def write_table(frame: pd.DataFrame, results_dir: Path, experiment: str, scale: str) -> Path:
    """Write the union table; rows in a stable order, gzip without a timestamp."""
    out = table_path(results_dir, experiment, scale)
    order = [c for c in ("dataset", "label", "params", "epsilon", "seed", "repeat", "fold",
                         "metric", "step") if c in frame.columns]
    if len(frame) and order:
        frame = frame.sort_values(order, kind="stable", na_position="first")
    write_table_text(out, frame.to_csv(index=False))
    return out


def write_table_text(out: Path, text: str) -> None:
    """Write a table's CSV text atomically; gzip without a timestamp for ``.gz`` (the same
    text always gives the same bytes). A ``.gz`` table (committed) gets its index beside it
    (:func:`table_index`), written after the table."""
    if out.suffix != ".gz":
        cache.atomic_write_text(out, text)
        return
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as gz:
        gz.write(text.encode())
    data = buf.getvalue()
    cache.atomic_write_bytes(out, data)
    write_index(out, data)


def index_path(table: Path) -> Path:
    """``results/EXP/results-SCALE.index.json`` beside ``results-SCALE.csv.gz``."""
    name = table.name.removesuffix(".gz").removesuffix(".csv")
    return table.with_name(f"{name}.index.json")


def key_digest(key: str) -> str:
    """The digest of a key (:attr:`Cell.digest` of a cell key: the cache's file name;
    :attr:`Cell.view_digest` of a row key: the committed index's entries)."""
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def table_index(data: bytes, name: str) -> dict[str, Any]:
    """The index of a committed table's bytes: their sha256, the row count, the seeds and
    the digest of every row key the table holds (sorted), so ``dpexp list`` counts cells
    without reading the table (it uses the index only while the sha256 matches)."""
    groups = _read_rows(io.BytesIO(data), compression="gzip" if name.endswith(".gz") else None,
                        name=name)
    rows = sum(len(r) for r in groups.values())
    seeds = sorted({int(r.first("seed")) for r in groups.values()})
    return {"table": name, "sha256": hashlib.sha256(data).hexdigest(), "rows": rows,
            "cells": len(groups), "seeds": seeds, "digests": sorted(map(key_digest, groups))}


def write_index(table: Path, data: bytes | None = None) -> Path:
    """Write the index of ``table`` (its bytes ``data``, read when not given); the same
    table always gives the same index bytes. A table without the cell columns gets none."""
    data = table.read_bytes() if data is None else data
    out = index_path(table)
    try:
        index = table_index(data, table.name)
    except ValueError:  # not a dpexp results table (no cell columns): nothing to index
        out.unlink(missing_ok=True)
        return out
    cache.atomic_write_text(out, json.dumps(index, indent=0, sort_keys=True) + "\n")
    return out


def read_index(table: Path) -> dict[str, Any] | None:
    """The index of ``table`` if it describes the table's current bytes, else None (absent,
    unreadable or stale: the caller reads the table)."""
    try:
        index = json.loads(index_path(table).read_text())
        if index.get("sha256") != hashlib.sha256(table.read_bytes()).hexdigest():
            return None
        return index if isinstance(index.get("digests"), list) else None
    except (OSError, ValueError, AttributeError):
        return None


def committed_digests(spec: ExperimentSpec, scale: str, results_dir: Path,
                      grids: dict[int, set[str]] | None = None) -> set[str]:
    """Row-key digests (:attr:`Cell.view_digest`) of the cells :func:`committed_payloads`
    (every seed) returns: the table's
    cells (a ``cells_from`` spec: those of its grid), from the index when it matches the
    table, else from the table itself. ``grids`` (seed -> the view digests of
    ``expand(spec, scale, seed)``) are grids the caller digested already."""
    path = table_path(results_dir, spec.cells_id, scale)
    if not path.exists():
        return set()
    index = read_index(path)
    if index is None:
        return {key_digest(row_key(p["rows"][0])) for p in committed_payloads(spec, scale, results_dir)}
    digests = set(index["digests"])
    if spec.cells_from:
        grids = grids or {}
        digests &= {d for seed in {int(s) for s in index["seeds"]}
                    for d in (grids[seed] if seed in grids else grid_view_digests(spec, scale, seed))}
    return digests


def grid_view_digests(spec: ExperimentSpec, scale: str, seed: int = 0) -> set[str]:
    """:attr:`Cell.view_digest` of every cell of ``expand(spec, scale, seed)``, from its
    grid points (no cell is made)."""
    n_folds = n_folds_of(spec)
    return {d for p in expand_points(spec, scale, seed)
            for d in p.view_digests(spec.cv.repeats, n_folds)}


#: How many hex digits of a cell's view digest its cache file name carries
#: (:func:`dpexp.experiments.cache.cell_file_name`).
VIEW_PREFIX = 12


def cached_view_prefixes(spec: ExperimentSpec, scale: str, results_dir: Path) -> set[str]:
    """The first :data:`VIEW_PREFIX` hex digits of the row-key digests
    (:attr:`Cell.view_digest`) of the cache's cells of ``spec`` (every seed; a
    ``cells_from`` spec: those of its grid), read from the cell files' names: counting a
    campaign's 30,000 cells must not parse 30,000 files (``dpexp list``). A corrupt file
    counts here until a run, ``render`` or ``report`` reads it and sets it aside."""
    names = [p.stem.split("-") for p in cache.cell_files(results_dir, spec.cells_id, scale)]
    names = [n for n in names if len(n) == 2]
    if spec.cells_from:
        seeds = {int(p.parent.name.removeprefix("seed-"))
                 for p in cache.cell_files(results_dir, spec.cells_id, scale)}
        grid = {c.digest for seed in sorted(seeds) for c in expand(spec, scale, seed)}
        names = [n for n in names if n[0] in grid]
    return {view for _, view in names}


def _read_rows(path: Path | io.BytesIO, compression: str | None = "infer",
               name: str | None = None) -> dict[str, CellRows]:
    """The table's rows grouped by cell key (:func:`dpexp.experiments.table_rows.read_cell_rows`)."""
    # counting cells from the indexes (`dpexp list`) reads no table
    # lazy: reading a table needs pandas (~0.3 s), which `dpexp list` never imports
    from dpexp.experiments.table_rows import read_cell_rows

    return read_cell_rows(path, compression, name)


def _cell_record(row: dict[str, Any]) -> dict[str, Any]:
    """The cell record (as :meth:`Cell.to_dict`, without what the row lacks: the dataset's
    parameters, display name and fold count) of a committed row outside the spec's grid."""
    algorithm = str(row["algorithm"])
    procedure = algorithm.removeprefix("procedure:") if algorithm.startswith("procedure:") else None
    dataset = str(row["dataset"])
    version = row.get("data_version")
    return {
        "experiment": row["experiment"], "scale": row["scale"], "dataset": dataset,
        # a dataset key with parameters is "name[k=v,...]" (DatasetRef.key)
        "dataset_name": dataset.split("[", 1)[0], "label": row["label"],
        "algorithm": None if procedure else algorithm, "procedure": procedure,
        "params": json.loads(row["params"]), "epsilon": format_epsilon(float(row["epsilon"])),
        "fold": int(row["fold"]), "repeat": int(row["repeat"]), "seed": int(row["seed"]),
        "data_version": version if isinstance(version, str) else "",
    }


def _content_key(row: dict[str, Any], spec: ExperimentSpec, scale: str) -> str:
    """The cache identity (:attr:`Cell.key`) of a committed row outside the grid: an
    override run or a peer column runs the spec's CV scheme and rows at ``scale``."""
    content = content_fields(
        dataset=str(row["dataset"]), max_rows=spec.max_rows(scale), cv=spec.cv,
        fold=row["fold"], repeat=row["repeat"], algorithm=str(row["algorithm"]),
        params=json.loads(row["params"]), epsilon=row["epsilon"], seed=row["seed"])
    version = row.get("data_version")
    return content_key(content, version if isinstance(version, str) else "")


@dataclass(frozen=True)
class SharedReads:
    """Committed tables that several specs of one caller read (a report: an artefact
    showing another's cells, ``cells_from``, reads that experiment's table too), each
    read once and let go after its last reader. Made per call and passed down (no
    module-level cache: a table rewritten between two reports is read afresh).

    ``uses`` counts the readers of each experiment's table (its ``cells_id``); a table
    with one reader is not kept at all.
    """

    uses: dict[str, int]
    _held: dict[Path, dict[str, CellRows]] = field(default_factory=dict, repr=False)
    _left: dict[Path, int] = field(default_factory=dict, repr=False)

    def groups(self, path: Path, experiment: str) -> dict[str, CellRows]:
        """The rows of ``path`` (the table of ``experiment``) grouped by cell key."""
        if self.uses.get(experiment, 0) < 2:
            return _read_rows(path)
        if path not in self._held:
            self._held[path] = _read_rows(path)
            self._left[path] = self.uses[experiment]
        groups = self._held[path]
        self._left[path] -= 1
        if self._left[path] <= 0:
            del self._held[path], self._left[path]
        return groups


def committed_payloads(
    spec: ExperimentSpec, scale: str, results_dir: Path, seeds: Iterable[int] | None = None,
    *, grid_only: bool = False, shared: SharedReads | None = None,
    grids: dict[int, list[Cell]] | None = None,
) -> list[dict[str, Any]]:
    """Cache payloads (``key``, ``cell``, ``rows``, ``committed``, ``grid``) of the cells
    the committed table holds, for ``seeds`` (default: every seed in the table).

    First the spec's grid cells (``grid: True``, the cell record from the spec), then,
    unless ``grid_only``, the table's other cells (``grid: False``): override runs and peer
    columns, the cell record rebuilt from the row (:func:`_cell_record`). A spec showing
    another's cells (``cells_from``) reads that experiment's table, its own grid only.
    ``shared`` reads a table several specs read once (the rows are then shared: read only).
    ``grids`` (seed -> ``expand(spec, scale, seed)``) holds the grids expanded here, and
    gives those a caller expanded already: one expansion (and one key a cell) per call.
    """
    path = table_path(results_dir, spec.cells_id, scale)
    grid_only = grid_only or bool(spec.cells_from)
    if not path.exists():
        return []
    groups = shared.groups(path, spec.cells_id) if shared is not None else _read_rows(path)
    if not groups:
        return []
    if seeds is None:
        # every row of a cell has the cell's seed (it is part of the key)
        seeds = sorted({int(rows.first("seed")) for rows in groups.values()})
    seeds = [int(s) for s in seeds]
    at = spec.at_scale(scale)
    out, grid_keys = [], set()
    for seed in seeds:
        if grids is None:
            cells = expand(spec, scale, seed)
        elif seed in grids:
            cells = grids[seed]
        else:
            cells = grids[seed] = expand(spec, scale, seed)
        for cell in cells:
            view_key = cell.view_key  # canonical JSON, made once a cell
            grid_keys.add(view_key)
            rows = groups.get(view_key)
            if rows is not None:
                out.append({"key": cell.key, "cell": cell.to_dict(), "rows": rows,
                            "committed": True, "grid": True})
    if grid_only:
        return out
    wanted = set(seeds)
    for key, rows in groups.items():
        # every row of a cell has the cell's seed (it is part of the key)
        if key not in grid_keys and int(rows.first("seed")) in wanted:
            out.append({"key": _content_key(rows[0], at, scale), "cell": _cell_record(rows[0]), "rows": rows,
                        "committed": True, "grid": False})
    return out


def adopt_committed(spec: ExperimentSpec, scale: str, results_dir: Path,
                    cells: list[Cell]) -> int:
    """Write the committed rows of ``cells`` not cached yet into the cache; how many."""
    # a corrupt cell file is moved aside (named in a warning) and its committed rows taken
    wanted = {c.key: c for c in cells if cache.read_cell(results_dir, c, move_aside=True) is None}
    if not wanted:
        return 0
    seeds = sorted({c.seed for c in wanted.values()})
    adopted = 0
    for payload in committed_payloads(spec, scale, results_dir, seeds, grid_only=True):
        cell = wanted.get(payload["key"])
        if cell is not None:
            cache.write_cell(results_dir, cell, {"cell": payload["cell"], "rows": list(payload["rows"]),
                                                 "committed": True})
            adopted += 1
    return adopted


def keep_committed_rows(frame: pd.DataFrame, results_dir: Path, experiment: str,
                        scale: str) -> pd.DataFrame:
    """``frame`` (rows from the cache) plus the table's rows of cells the cache lacks.

    Rewriting the table from a partial cache (a fresh clone that ran one dataset) must not
    drop the committed cells it did not touch (other datasets, seeds, override runs).
    """
    path = table_path(results_dir, experiment, scale)
    if not path.exists():
        return frame
    have = {row_key(r) for r in frame.to_dict("records")} if len(frame) else set()
    extra = [row for key, rows in _read_rows(path).items() if key not in have for row in rows]
    if not extra:
        return frame
    # lazy: pandas only where a table is read or written (see _read_rows)
    import pandas as pd

    return pd.concat([frame, pd.DataFrame.from_records(extra, columns=frame.columns)],
                     ignore_index=True)
