"""``dpexp list`` counts committed cells from the index beside each committed table
(issue 43): the table is not read while the index's sha256 matches its bytes, a stale or
missing index falls back to the table with the same counts, and ``write_table`` keeps the
index current. No timings here (bench/HISTORY.md has them)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments import committed
from dpexp.experiments.catalog import resolve
from dpexp.experiments.committed import (
    committed_digests,
    committed_payloads,
    index_path,
    key_digest,
    read_index,
    row_key,
    table_path,
    write_table,
)
from dpexp.paths import project_root

RESULTS = project_root() / "results"


def _no_table_reads(monkeypatch):
    """Fail on reading a table whose index matches it. An unindexed table is read, as
    it should be: a smoke table (``results-smoke.csv``, never indexed) that a local
    smoke run left in the results directory."""
    read_rows = committed._read_rows

    def refuse(path, *args, **kwargs):
        if isinstance(path, (str, Path)) and read_index(Path(path)) is not None:
            raise AssertionError(f"{path} was read although its index matches")
        return read_rows(path, *args, **kwargs)

    monkeypatch.setattr(committed, "_read_rows", refuse)


def test_every_committed_table_has_a_current_index():
    tables = sorted(RESULTS.glob("*/results-paper.csv.gz"))
    assert tables
    stale = [str(t) for t in tables if read_index(t) is None]
    assert not stale, f"rewrite with committed.write_index: {stale}"


def test_list_uses_the_indexes_and_reads_no_committed_table(monkeypatch):
    _no_table_reads(monkeypatch)
    res = CliRunner().invoke(app, ["list", "--json", "--results-dir", str(RESULTS)])
    assert res.exit_code == 0, res.output
    rows = {r["id"]: r for r in json.loads(res.output) if "cells" in r}
    assert rows["dpboost-fig2"]["cells"]["paper"]["done"] > 0


@pytest.mark.parametrize("experiment", ["dpboost-fig2", "fletcher-fig13"])  # fig13: cells_from
def test_index_gives_the_tables_cells(experiment):
    spec = resolve(experiment)
    from_table = {key_digest(row_key(p["rows"][0])) for p in committed_payloads(spec, "paper", RESULTS)}
    assert committed_digests(spec, "paper", RESULTS) == from_table


def _small_table(results: Path) -> Path:
    """A copy of a few cells of dpboost-fig2's committed table under ``results``."""
    frame = pd.read_csv(table_path(RESULTS, "dpboost-fig2", "paper"),
                        dtype={"data_version": object}, low_memory=False)
    seeds = sorted(frame["seed"].unique())[:1]
    part = frame[frame["seed"].isin(seeds)].head(200)
    return write_table(part, results, "dpboost-fig2", "paper")


def test_write_table_writes_a_deterministic_index(tmp_path):
    path = _small_table(tmp_path)
    first = index_path(path).read_bytes()
    index = read_index(path)
    assert index is not None and index["table"] == path.name and index["cells"] == len(index["digests"])
    committed.write_index(path)
    assert index_path(path).read_bytes() == first


def test_a_stale_index_falls_back_to_the_table(tmp_path, monkeypatch):
    path = _small_table(tmp_path)
    spec = resolve("dpboost-fig2")
    expected = committed_digests(spec, "paper", tmp_path)
    ipath = index_path(path)
    stale = json.loads(ipath.read_text())
    stale["sha256"] = "0" * 64
    stale["digests"] = stale["digests"][:1]  # a stale index would give a wrong count
    ipath.write_text(json.dumps(stale))
    assert read_index(path) is None
    reads = []
    real = committed._read_rows
    monkeypatch.setattr(committed, "_read_rows", lambda *a, **k: reads.append(a) or real(*a, **k))
    assert committed_digests(spec, "paper", tmp_path) == expected
    assert reads  # the table itself was read
    ipath.unlink()  # no index at all: the table too
    assert committed_digests(spec, "paper", tmp_path) == expected
