"""``dpexp run --shard K/N`` (issue 43): the shards split the grid alike, longest first,
cover it once, and their caches merged give one run's table bit for bit."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
import yaml
from conftest import tiny_spec
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.errors import DpexpError
from dpexp.experiments.cache import cell_files
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import expand
from dpexp.experiments.committed import table_path
from dpexp.experiments.config import Shard, parse_shard
from dpexp.experiments.shard import deal_longest_first, expected_seconds, shard_digests
from dpexp.experiments.timings import committed_group_seconds

SPEC = tiny_spec("sharded")  # 4 DP forest cells (2 epsilons x 2 folds) and 2 RF cells


def _invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _run(results, *extra):
    res = _invoke("run", "sharded", "--results-dir", results, "--no-render", "-q", *extra)
    assert res.exit_code == 0, res.output
    return res.output


def _values(results) -> pd.DataFrame:
    """The table's values: the timing metrics (``*_seconds``) differ from run to run."""
    table = pd.read_csv(table_path(results, "sharded", "smoke"))
    cols = ["dataset", "label", "params", "epsilon", "fold", "repeat", "metric", "step"]
    table = table[~table["metric"].str.contains("second")]
    return table.sort_values(cols)[[*cols, "value"]].reset_index(drop=True)


@pytest.fixture()
def specs(tmp_path, monkeypatch):
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "sharded.yaml").write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(folder))
    return folder


def test_longest_first_onto_the_least_loaded_shard():
    # 7 and 6 open the two shards, 5 joins the lighter (6), 4 the lighter (7), ...
    assert deal_longest_first([5, 7, 1, 6, 4, 2], 2) == [1, 0, 1, 1, 0, 0]
    # equal weights keep the given order, round robin from the first shard
    assert deal_longest_first([1.0] * 5, 3) == [0, 1, 2, 0, 1]
    weights = [float((i * 37) % 11 + 1) for i in range(40)]
    owner = deal_longest_first(weights, 4)
    loads = [sum(w for w, o in zip(weights, owner, strict=True) if o == s) for s in range(4)]
    assert max(loads) - min(loads) <= max(weights)  # within the longest cell of each other


@pytest.mark.parametrize("text, shard", [("1/1", Shard(1, 1)), ("2/4", Shard(2, 4)), (" 3 / 3 ", Shard(3, 3))])
def test_parse_shard(text, shard):
    assert parse_shard(text) == shard and str(shard) == f"{shard.index}/{shard.count}"


@pytest.mark.parametrize("value, says", [("0/2", "does not exist"), ("3/2", "does not exist"),
                                         ("x", "is not K/N"), ("1/0", "does not exist"),
                                         ("1/2/3", "is not K/N")])
def test_a_bad_shard_is_one_line_naming_the_flag(value, says):
    with pytest.raises(DpexpError, match=says):
        parse_shard(value)
    res = _invoke("run", "--shard", value)
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "--shard" in lines[0] and says in lines[0], res.output


def test_merged_shards_give_one_runs_table_bit_for_bit(specs, tmp_path):
    single, merged = tmp_path / "single", tmp_path / "merged"
    _run(single)
    shards = [tmp_path / f"shard{k}" for k in (1, 2)]
    for k, folder in enumerate(shards, start=1):
        out = _run(folder, "--shard", f"{k}/2")
        assert f"shard {k}/2" in out and "of the grid's 6 cells" in out, out
        assert not table_path(folder, "sharded", "smoke").exists()  # no table from one shard
    names = [{p.name for p in cell_files(f, "sharded", "smoke")} for f in shards]
    assert names[0] and names[1] and not names[0] & names[1]  # each cell in one shard
    assert names[0] | names[1] == {p.name for p in cell_files(single, "sharded", "smoke")}
    for folder in shards:  # the README's merge: copy the shards' cache folders together
        shutil.copytree(folder / "cache", merged / "cache", dirs_exist_ok=True)
    assert "0 computed" in _run(merged)
    pd.testing.assert_frame_equal(_values(merged), _values(single))


def test_shards_run_one_after_the_other_in_one_folder_cover_the_grid(specs, tmp_path):
    results = tmp_path / "results"
    _run(results)  # a table with measured times: the shards balance by them
    table = table_path(results, "sharded", "smoke")
    before, values = table.read_bytes(), _values(results)
    spec = resolve("sharded").at_scale("smoke")
    cells = expand(spec, "smoke")
    measured = committed_group_seconds(results, "sharded", "smoke")
    assert set(measured) == {("synthA", "DP forest"), ("synthA", "RF")}
    assert expected_seconds(cells, results, "smoke") == [measured[(c.dataset.key, c.label)] for c in cells]
    parts = [shard_digests(cells, Shard(k, 3), results, "smoke") for k in (1, 2, 3)]
    assert sum(map(len, parts)) == len(cells) and set().union(*parts) == {c.digest for c in cells}
    for k in (1, 2, 3):  # recompute every cell, shard by shard, in the one folder
        out = _run(results, "--shard", f"{k}/3", "--force")
        assert f"{len(parts[k - 1])} computed" in out, out
        assert table.read_bytes() == before  # a shard leaves the table (and its times) alone
    assert "0 computed" in _run(results)
    pd.testing.assert_frame_equal(_values(results), values)


def test_without_committed_times_every_cell_counts_alike(specs, tmp_path):
    cells = expand(resolve("sharded").at_scale("smoke"), "smoke")
    assert expected_seconds(cells, tmp_path / "empty", "smoke") == [1.0] * len(cells)
    # an even split by count, in the grid's order
    parts = [shard_digests(cells, Shard(k, 2), tmp_path / "empty", "smoke") for k in (1, 2)]
    assert [len(p) for p in parts] == [3, 3]


def test_a_shard_on_dask_computes_the_same_cells(specs, tmp_path):
    pytest.importorskip("dask.distributed")
    loky, dask = tmp_path / "loky", tmp_path / "dask"
    _run(loky, "--shard", "2/2")
    _run(dask, "--shard", "2/2", "--backend", "dask", "--jobs", "2")  # a local 2-worker cluster
    assert ({p.name for p in cell_files(dask, "sharded", "smoke")}
            == {p.name for p in cell_files(loky, "sharded", "smoke")})
    for folder in (loky, dask):  # the rest of the grid, then each folder's table
        _run(folder, "--shard", "1/2")
        assert "0 computed" in _run(folder)
    pd.testing.assert_frame_equal(_values(dask), _values(loky))
