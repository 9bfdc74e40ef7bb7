"""`dpexp run --recompute-before TIME`: a --force that resumes (cells computed since TIME
are kept), e.g. to time a whole campaign again with the current code."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import yaml
from conftest import rewrite_cached_cell, tiny_spec
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments.cache import computed_before

TINY = tiny_spec(
    "tiny-retime", algorithms=[{"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 3}}],
    epsilons=[1.0], cv={"folds": 4}, scales={"smoke": {"max_rows": 200}},
)
OLD = "2020-01-01T00:00:00+00:00"


@pytest.fixture()
def results(tmp_path, monkeypatch):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tiny-retime.yaml").write_text(yaml.safe_dump(TINY))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    return tmp_path / "results"


def _run(results, *extra):
    res = CliRunner().invoke(app, ["run", "tiny-retime", "--results-dir", str(results),
                                   "--no-render", "-q", *extra])
    assert res.exit_code == 0, res.output
    return res.stdout


def _cells(results):
    return sorted((results / "cache" / "tiny-retime" / "smoke" / "seed-0").glob("*.json"))


def _age(path, stamp=OLD):
    def aged(data):
        for row in data["rows"]:
            row["timestamp"] = stamp

    rewrite_cached_cell(path, aged)


def test_recomputes_older_cells_only_and_resumes(results):
    assert "4 computed, 0 from cache" in _run(results)
    cells = _cells(results)
    assert len(cells) == 4
    for p in cells[:3]:
        _age(p)
    untouched = cells[3].read_bytes()
    before = "2025-06-01T00:00:00Z"
    assert "3 computed, 1 from cache" in _run(results, "--recompute-before", before)
    assert cells[3].read_bytes() == untouched
    for p in cells[:3]:  # recomputed: stamped now, the same values
        stamps = {r["timestamp"] for r in json.loads(p.read_text())["rows"]}
        assert min(stamps) > "2025"
    # the same command again: everything is newer than TIME, nothing is recomputed
    assert "0 computed, 4 from cache" in _run(results, "--recompute-before", before)


def test_values_are_the_same_after_recomputing(results):
    _run(results)
    values = {p.name: [r["value"] for r in json.loads(p.read_text())["rows"]]
              for p in _cells(results)}
    for p in _cells(results):
        _age(p)
    _run(results, "--recompute-before", "2025-06-01")
    again = {p.name: [r["value"] for r in json.loads(p.read_text())["rows"]]
             for p in _cells(results)}
    assert again == values


def test_bad_time_is_a_one_line_error_before_any_work(results):
    res = CliRunner().invoke(app, ["run", "tiny-retime", "--results-dir", str(results),
                                   "--recompute-before", "last week", "-q"])
    assert res.exit_code == 2
    assert "not an ISO 8601 date or time" in res.output
    assert "Traceback" not in res.output
    assert not results.exists()


@pytest.mark.parametrize(("stamps", "when", "expected"), [
    ([OLD, OLD], "2021-01-01T00:00:00+00:00", True),
    (["2022-01-01T00:00:00+00:00"], "2021-01-01T00:00:00+00:00", False),
    (["2022-01-01T00:00:00+00:00", OLD], "2021-01-01T00:00:00+00:00", True),  # the earliest
    (["2021-01-01T00:00:00+00:00"], "2021-01-01T00:00:00+00:00", False),  # at TIME: kept
    (["2021-01-01T00:30:00"], "2021-01-01T01:00:00+01:00", False),  # naive = UTC
    ([None], "2021-01-01T00:00:00+00:00", True),  # unstamped: recomputed
    (["not a time"], "2021-01-01T00:00:00+00:00", True),
    ([], "2021-01-01T00:00:00+00:00", True),
])
def test_computed_before(stamps, when, expected):
    payload = {"rows": [{"timestamp": s} for s in stamps]}
    assert computed_before(payload, datetime.fromisoformat(when).astimezone(UTC)) is expected
