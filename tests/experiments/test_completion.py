"""One definition of "done" (issue 42): cells done / that can be had here / in the grid,
the same numbers from ``dpexp list``, ``plan`` and ``report``, the missing datasets named."""

from __future__ import annotations

import json

import yaml
from conftest import tiny_spec
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import expand
from dpexp.experiments.completion import Completion, Tally, completion, tally_completion

#: synthA is generated here; gss is a file a user must supply (never in a mirror).
SPEC = tiny_spec("tiny_done", datasets=["synthA", "gss"], epsilons=[1.0])


def test_completion_counts_done_here_and_grid():
    spec = resolve("quickstart").at_scale("smoke")
    cells = expand(spec, "smoke", 0)
    first = cells[0].dataset.name
    done = {c.key for c in cells[:3]}
    c = completion(cells, lambda cell: cell.key in done, lambda name: name != first,
                   {cells[-1].label: "somepkg"}, outside=2)
    on_first = [x for x in cells if x.dataset.name == first]
    lacking = [x for x in cells if x.label == cells[-1].label and x.dataset.name != first
               and x.key not in done]
    assert c.grid == len(cells) and c.done == 3 and c.outside == 2
    assert c.here == len(cells) - sum(x.key not in done for x in on_first) - len(lacking)
    assert c.text() == f"3 / {c.here} / {len(cells)} +2"
    assert c.packages_missing == (f"{cells[-1].label} (somepkg)",)
    # a dataset with a done cell is not "not here"
    assert c.datasets_missing == (() if any(x.key in done for x in on_first) else (first,))


def test_completions_add_up():
    a = Completion(1, 2, 3, 0, ("x",), ())
    b = Completion(4, 5, 6, 1, ("x", "y"), ("s (p)",))
    assert a + b == Completion(5, 7, 9, 1, ("x", "y"), ("s (p)",))


def test_list_plan_and_report_agree(tmp_path, monkeypatch):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tiny_done.yaml").write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("DPEXP_DATA_MIRROR", raising=False)
    results = tmp_path / "results"
    runner = CliRunner()

    def invoke(*args):
        res = runner.invoke(app, [str(a) for a in args])
        assert res.exit_code == 0, res.output
        return res.output

    invoke("run", "tiny_done", "--results-dir", results, "--no-render", "-q", "--skip-unavailable")
    grid = len(expand(resolve("tiny_done").at_scale("smoke"), "smoke", 0))
    half = grid // 2  # the synthA cells: gss cannot be had here
    listed = {r["id"]: r for r in json.loads(invoke("list", "--json", "--results-dir", results))
              if "id" in r}["tiny_done"]["cells"]["smoke"]
    planned = json.loads(invoke("plan", "tiny_done", "--results-dir", results, "--no-calibrate",
                                "--json"))["completion"]
    invoke("report", "--results-dir", results, "--figures-dir", tmp_path / "figures", "--scale", "smoke")
    reported = {r["artefact"]: r for r in json.loads((results / "summary-smoke.json").read_text())}["tiny_done"]
    assert (listed["done"], listed["here"], listed["grid"]) == (half, half, grid)
    assert (planned["done"], planned["here"], planned["grid"]) == (half, half, grid)
    assert (reported["cells_done"], reported["cells_total"], reported["cells_grid"]) == (half, half, grid)
    assert listed["datasets_missing"] == planned["datasets_missing"] == reported["datasets_unavailable"] == ["gss"]
    text = invoke("plan", "tiny_done", "--results-dir", results, "--no-calibrate")
    assert f"cells (done / here / grid): {half} / {half} / {grid}; datasets not here: gss" in text


def test_tallies_by_grid_point_count_as_cell_by_cell():
    """``dpexp list`` tallies a grid point's cells together (:func:`tally_completion`):
    the same completion as counting each cell, done ones on a missing dataset included."""
    spec = resolve("quickstart").at_scale("smoke")
    cells = expand(spec, "smoke", 0)
    first = cells[0].dataset.name
    done = {c.key for c in cells[::3]}
    lacking = {cells[-1].label: "somepkg"}
    available = lambda name: name != first  # noqa: E731
    by_cell = completion(cells, lambda cell: cell.key in done, available, lacking, outside=1)
    groups: dict[tuple[str, str, str], list] = {}
    for c in cells:
        groups.setdefault((c.dataset.name, c.label, c.params_json + repr(c.epsilon)), []).append(c)
    tallies = [Tally(name, label, len(cs), sum(c.key in done for c in cs))
               for (name, label, _), cs in groups.items()]
    assert tally_completion(tallies, available, lacking, outside=1) == by_cell
    assert by_cell.done == len(done)
