"""Reading a committed table is vectorised (issue 43) and gives exactly the rows a plain
per-row reading gives: the same cells in the same order, the same row dicts (keys in the
same order, Python values, None for a missing optional value, ``noise`` derived where
the table lacks it), rows of one cell whose params are spelt two ways under one key."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from dpexp.experiments import committed
from dpexp.experiments.catalog import resolve
from dpexp.experiments.committed import SharedReads, committed_payloads, row_key, write_table
from dpexp.experiments.noise import row_noise
from dpexp.paths import project_root

RESULTS = project_root() / "results"


def _plain(path: Path) -> dict[str, list[dict]]:
    """The reference: one dict per row, one key per row."""
    frame = pd.read_csv(path, dtype={"data_version": object}, low_memory=False)
    for col in ("not_dp_reason", "domain_source", "noise", "label", "git_revision",
                "dpexp_version", "data_version"):
        if col in frame.columns:
            frame[col] = frame[col].astype(object).fillna("")
    out: dict[str, list[dict]] = {}
    for rec in frame.to_dict("records"):
        row = {k: (None if isinstance(v, float) and math.isnan(v) else
                   v.item() if hasattr(v, "item") else v)
               for k, v in rec.items() if not str(k).startswith("p_")}
        row["value"] = float(rec["value"])
        row["noise"] = row_noise(row)
        out.setdefault(row_key(rec), []).append(row)
    return out


def _same(a: dict[str, list[dict]], b: dict[str, list[dict]]) -> None:
    assert list(a) == list(b)
    for key in a:
        assert len(a[key]) == len(b[key])
        for x, y in zip(a[key], b[key], strict=True):
            assert list(x) == list(y)
            for col in x:
                assert type(x[col]) is type(y[col]), (col, x[col], y[col])
                assert x[col] == y[col] or (x[col] != x[col] and y[col] != y[col]), col


def _tricky_table(tmp_path: Path) -> Path:
    """A few cells of dpboost-fig2's table: no noise column, a missing step and timing, one
    cell's params re-spelt with spaces, rows of two cells interleaved."""
    frame = pd.read_csv(committed.table_path(RESULTS, "dpboost-fig2", "paper"),
                        dtype={"data_version": object}, low_memory=False)
    part = frame.head(60).drop(columns=["noise"], errors="ignore").copy()
    part.loc[part.index[3], "fit_seconds"] = math.nan
    part.loc[part.index[5], "timestamp"] = math.nan
    first = part["params"].iloc[0]
    spelt = json.dumps(json.loads(first), sort_keys=True)  # ", " and ": ": the same params
    same_cell = part.index[(part["params"] == first)][1::2]
    part.loc[same_cell, "params"] = spelt
    part = pd.concat([part.iloc[::2], part.iloc[1::2]])  # interleave cells
    out = tmp_path / "t.csv"
    part.to_csv(out, index=False)
    return out


def test_vectorised_reading_equals_a_row_by_row_reading(tmp_path):
    path = _tricky_table(tmp_path)
    got = committed._read_rows(path)
    _same(_plain(path), got)
    assert all(len({row_key(r) for r in rows}) == 1 for rows in got.values())


@pytest.mark.parametrize("experiment", ["dpboost-fig2", "inprivate-fig7"])
def test_a_committed_table_reads_as_row_by_row(experiment):
    path = committed.table_path(RESULTS, experiment, "paper")
    _same(_plain(path), committed._read_rows(path))


def test_the_index_counts_the_same_cells(tmp_path):
    frame = pd.read_csv(_tricky_table(tmp_path), dtype={"data_version": object}, low_memory=False)
    out = write_table(frame, tmp_path, "dpboost-fig2", "paper")
    index = committed.read_index(out)
    plain = _plain(out)
    assert index is not None and index["cells"] == len(plain)
    assert index["rows"] == sum(len(r) for r in plain.values())


def test_a_table_two_specs_read_is_read_once_and_let_go(monkeypatch):
    """fletcher-fig13 shows fletcher-fig11's cells: a report reads that table once for both."""
    reads = []
    real = committed._read_rows
    monkeypatch.setattr(committed, "_read_rows", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    shared = SharedReads(uses={"fletcher-fig11": 2, "dpboost-fig2": 1})
    own = committed_payloads(resolve("fletcher-fig11"), "paper", RESULTS, shared=shared)
    shown = committed_payloads(resolve("fletcher-fig13"), "paper", RESULTS, shared=shared)
    assert len(reads) == 1 and own and shown
    assert shown == committed_payloads(resolve("fletcher-fig13"), "paper", RESULTS)
    assert not shared._held  # let go after its last reader
    committed_payloads(resolve("dpboost-fig2"), "paper", RESULTS, shared=shared)
    assert len(reads) == 3 and not shared._held  # one reader: never held
