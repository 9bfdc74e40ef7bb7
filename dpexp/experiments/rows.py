"""A finished cell as result rows: the one place rows of the results schema
(:data:`dpexp.experiments.schema.RESULT_COLUMNS`) are made, for the runner and for the
peer scripts of ``bench/peers`` alike, and written to the cache."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpexp.experiments import cache
from dpexp.experiments.cells import Cell, canonical_json
from dpexp.experiments.schema import DIAGNOSTIC, METRIC, RESULT_COLUMNS


@dataclass(frozen=True)
class CellOutcome:
    """What a fit or procedure produced, before it becomes result rows."""

    values: dict[str, Any]
    fit_seconds: float
    epsilon_spent: float = float("nan")
    delta_spent: float = float("nan")
    private: bool = False
    not_dp_reason: str = ""
    diagnostics: frozenset[str] = frozenset()
    ledger: list[dict] | None = None
    #: How the noise was drawn (the ``noise`` column, :mod:`dpexp.experiments.noise`).
    noise: str = ""
    #: The row's ``domain_source`` when the fit changed it (a paid domain); None: the dataset's.
    domain_source: str | None = None


def metric_values(values: dict[str, Any]) -> Iterator[tuple[str, int | None, float]]:
    for metric, v in values.items():
        if isinstance(v, dict):
            for step, x in v.items():
                yield metric, int(step), float(x)
        else:
            yield metric, None, float(v)


def result_rows(cell: Cell, out: CellOutcome, *, n_train: int | None, n_test: int | None,
                domain_source: str, provenance: dict[str, str], wall_seconds: float) -> list[dict]:
    """One row per (metric, step) of ``out``, with every column of ``RESULT_COLUMNS``."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    rows = [
        {
            "experiment": cell.experiment, "scale": cell.scale, "dataset": cell.dataset.key,
            "algorithm": cell.algorithm or f"procedure:{cell.procedure}",
            "label": cell.label, "params": canonical_json(cell.params),
            "epsilon": cell.epsilon, "epsilon_spent": out.epsilon_spent,
            "delta_spent": out.delta_spent, "private": out.private,
            "not_dp_reason": out.not_dp_reason, "domain_source": domain_source, "noise": out.noise,
            "data_version": cell.data_version, "fold": cell.fold, "repeat": cell.repeat,
            "seed": cell.seed, "metric": metric,
            "metric_kind": DIAGNOSTIC if metric in out.diagnostics else METRIC,
            "step": step, "value": value, "fit_seconds": out.fit_seconds,
            "wall_seconds": wall_seconds, "n_train": n_train, "n_test": n_test, **provenance,
            "timestamp": stamp,
        }
        for metric, step, value in metric_values(out.values)
    ]
    missing = set(RESULT_COLUMNS) - set(rows[0]) if rows else set()
    if missing:
        raise ValueError(f"result rows lack columns {sorted(missing)} (provenance incomplete)")
    return rows


def write_cell_rows(results_dir: Path, cell: Cell, rows: list[dict], *,
                    ledger: list[dict] | None, wall_seconds: float) -> dict[str, Any]:
    """Cache the cell's rows (and ledger) atomically; returns the payload written."""
    payload = {"cell": cell.to_dict(), "rows": rows, "ledger": ledger, "wall_seconds": wall_seconds}
    cache.write_cell(results_dir, cell, payload)
    return payload
