"""The plan reads cached cells' timings through an index (issue 43: parsing 25,000 cell
files cost 5 of ``dpexp plan --all``'s 9 s): a second read parses no unchanged file and
gives the same timings; a rewritten, removed, new or corrupt file, a racy one and a
broken index are each seen as parsing every file would see them."""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

import pytest
import yaml
from conftest import rewrite_cached_cell, tiny_spec
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.errors import CorruptCellWarning
from dpexp.experiments import cache, cell_times
from dpexp.experiments.cell_times import INDEX_NAME, cached_times


@pytest.fixture()
def results(tmp_path, monkeypatch) -> Path:
    """A results directory where a tiny spec ran (6 cells), every file an hour old."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "timesA.yaml").write_text(yaml.safe_dump(tiny_spec("timesA")))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    r = tmp_path / "results"
    res = CliRunner().invoke(app, ["run", "timesA", "--results-dir", str(r), "-q", "--no-render"])
    assert res.exit_code == 0, res.output
    for path in _files(r):
        _age(path)
    return r


def _files(r: Path) -> list[Path]:
    return cache.cell_files(r, "timesA", "smoke")


def _age(path: Path, seconds: float = 3600.0) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


@pytest.fixture()
def parsed(monkeypatch) -> list[Path]:
    """Every cell file the reads below parse."""
    seen: list[Path] = []
    original = cache.load_cell_file

    def counting(path, cell=None):
        seen.append(path)
        return original(path, cell)

    monkeypatch.setattr(cache, "load_cell_file", counting)
    return seen


def _times(r: Path):
    return cached_times(r, "timesA", "smoke")


def _index(r: Path) -> Path:
    return cache.cache_dir(r, "timesA", "smoke") / INDEX_NAME


def test_a_second_read_parses_no_unchanged_file(results, parsed):
    first = _times(results)
    assert len(first) == 6 and len(parsed) == 6 and _index(results).is_file()
    assert all(t.seconds is not None and t.source == "cached" for t in first)
    parsed.clear()
    assert _times(results) == first and parsed == []


def test_a_rewritten_file_is_parsed_again(results, parsed):
    first = _times(results)
    path = _files(results)[0]
    rewrite_cached_cell(path, lambda p: p.update(wall_seconds=12345.5))
    _age(path, 1800.0)  # another time than the index holds, and settled
    parsed.clear()
    again = _times(results)
    assert parsed == [path]
    changed = [t for t in again if t not in first]
    assert [t.seconds for t in changed] == [12345.5]


def test_removed_and_new_files(results, parsed):
    first = _times(results)
    gone = _files(results)[0]
    payload = gone.read_text()
    gone.unlink()
    assert len(_times(results)) == 5
    gone.write_text(payload)  # back, new to the index
    parsed.clear()
    assert _times(results) == first and parsed == [gone]


def test_a_corrupt_file_is_warned_about_every_time_and_never_indexed(results, parsed):
    _times(results)
    path = _files(results)[0]
    path.write_text(path.read_text().replace('"rows"', '"rowz"', 1))
    _age(path, 1800.0)
    for _ in range(2):
        with pytest.warns(CorruptCellWarning, match=path.name):
            assert len(_times(results)) == 5
    assert path.relative_to(path.parents[1]).as_posix() not in json.loads(
        _index(results).read_text())["files"]


def test_a_file_modified_just_now_is_not_indexed_yet(results, parsed):
    path = _files(results)[0]
    os.utime(path)  # now: a same-size rewrite within the clock's tick would keep its stamp
    _times(results)
    parsed.clear()
    _times(results)
    assert parsed == [path]


@pytest.mark.parametrize("index", ["{not json", '{"format": 0, "files": {}}',
                                   '{"format": 1, "files": {"seed-0/x.json": 3}}',
                                   '{"format": 1, "files": []}'])
def test_a_broken_or_foreign_index_is_rebuilt(results, parsed, index):
    first = _times(results)
    _index(results).write_text(index)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _times(results) == first
    assert json.loads(_index(results).read_text())["format"] == cell_times.INDEX_FORMAT


def test_an_index_entry_with_a_stale_stamp_is_not_used(results, parsed):
    """A forged entry (another timing, an old stamp) for a real file is replaced."""
    first = _times(results)
    data = json.loads(_index(results).read_text())
    name = sorted(data["files"])[0]
    data["files"][name][0] += 1  # the size
    data["files"][name][5] = 999.0  # the seconds
    _index(results).write_text(json.dumps(data))
    parsed.clear()
    assert _times(results) == first and len(parsed) == 1


@pytest.mark.parametrize("entry", [[1, 2, 3], "x", None,
                                   [0, 0, 1, "l", ["d", "a", "{}"], 1.0, True]])
def test_a_malformed_entry_for_a_real_file_is_replaced(results, parsed, entry):
    first = _times(results)
    data = json.loads(_index(results).read_text())
    name = sorted(data["files"])[0]
    if isinstance(entry, list) and len(entry) == 7:  # the right stamp, a key of the wrong type
        entry[:2] = data["files"][name][:2]
    data["files"][name] = entry
    _index(results).write_text(json.dumps(data))
    parsed.clear()
    assert _times(results) == first and len(parsed) == 1
