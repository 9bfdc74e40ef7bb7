"""Committed results are finished cells (dpexp/experiments/committed.py, issue 19)."""

from __future__ import annotations

import gzip
import shutil

import pandas as pd
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import expand
from dpexp.experiments.committed import adopt_committed, row_key, table_path, write_table
from dpexp.experiments.results import cached_results


def _run(results, *extra):
    res = CliRunner().invoke(app, ["run", "quickstart", "--results-dir", str(results),
                                   "--no-render", "-q", *extra])
    assert res.exit_code == 0, res.output
    return res.output


def test_rows_of_the_table_are_finished_cells(tmp_path):
    results = tmp_path / "results"
    _run(results)
    spec = resolve("quickstart").at_scale("smoke")
    first = cached_results(spec, "smoke", results).frame
    # every row's key is its cell's row key
    keys = {c.view_key for c in expand(spec, "smoke", 0)}
    assert {row_key(r) for r in first.to_dict("records")} == keys
    # a fresh clone: only the table is there; the run computes nothing and gets the rows
    shutil.rmtree(results / "cache")
    out = _run(results)
    assert " 0 computed" in out, out
    again = cached_results(spec, "smoke", results).frame
    cols = ["dataset", "label", "params", "epsilon", "fold", "repeat", "metric"]
    a = first.sort_values(cols).reset_index(drop=True)
    b = again.sort_values(cols).reset_index(drop=True)
    assert a["value"].tolist() == b["value"].tolist()
    assert a["not_dp_reason"].tolist() == b["not_dp_reason"].tolist()
    # --force recomputes instead of adopting
    shutil.rmtree(results / "cache")
    assert " 0 computed" not in _run(results, "--force")


def test_another_seed_is_not_adopted(tmp_path):
    results = tmp_path / "results"
    _run(results)
    shutil.rmtree(results / "cache")
    spec = resolve("quickstart").at_scale("smoke")
    assert adopt_committed(spec, "smoke", results, expand(spec, "smoke", 1)) == 0
    assert adopt_committed(spec, "smoke", results, expand(spec, "smoke", 0)) == len(expand(spec, "smoke", 0))


def test_paper_table_is_compressed_and_deterministic(tmp_path):
    frame = pd.DataFrame({"dataset": ["b", "a"], "label": ["x", "x"], "params": ["{}", "{}"],
                          "epsilon": [1.0, 1.0], "seed": [0, 0], "repeat": [0, 0],
                          "fold": [1, 0], "metric": ["error", "error"], "step": [None, None],
                          "value": [0.25, 0.5]})
    path = write_table(frame, tmp_path, "exp", "paper")
    assert path == table_path(tmp_path, "exp", "paper") and path.name.endswith(".csv.gz")
    first = path.read_bytes()
    write_table(frame.iloc[::-1], tmp_path, "exp", "paper")
    assert path.read_bytes() == first  # same rows, same bytes (no timestamp, sorted)
    assert gzip.decompress(first).decode().splitlines()[1].startswith("a,")


def test_a_partial_rerun_keeps_the_other_committed_cells(tmp_path):
    results = tmp_path / "results"
    _run(results)
    table = pd.read_csv(table_path(results, "quickstart", "smoke"))
    shutil.rmtree(results / "cache")
    labels = sorted(table["label"].unique())
    _run(results, "--algorithms", labels[0])  # touches one column's cells only
    after = pd.read_csv(table_path(results, "quickstart", "smoke"))
    assert len(after) == len(table) and sorted(after["label"].unique()) == labels


def test_results_and_render_from_the_committed_table_alone(tmp_path):
    results = tmp_path / "results"
    _run(results)
    before = cached_results(resolve("quickstart"), "smoke", results).frame
    shutil.rmtree(results / "cache")
    after = cached_results(resolve("quickstart"), "smoke", results).frame
    assert len(after) == len(before) and not (results / "cache").exists()
    res = CliRunner().invoke(app, ["render", "quickstart", "--results-dir", str(results),
                                   "--figures-dir", str(tmp_path / "figures")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "figures" / "quickstart" / "quickstart-smoke.png").exists()


def test_report_and_summary_from_the_committed_table_alone(tmp_path):
    import json

    results = tmp_path / "results"
    _run(results)
    shutil.rmtree(results / "cache")
    res = CliRunner().invoke(app, ["report", "--scale", "smoke", "--results-dir", str(results),
                                   "--figures-dir", str(tmp_path / "figures")])
    assert res.exit_code == 0, res.output
    assert (results / "REPORT-smoke.md").exists() and not (results / "REPORT.md").exists()
    rows = {r["artefact"]: r for r in json.loads((results / "summary-smoke.json").read_text())}
    quick = rows["quickstart"]
    assert quick["scale"] == "smoke" and quick["cells_done"] == quick["cells_total"] > 0
    assert quick["claims_pass"] == quick["claims_fail"] == 0  # smoke: never evaluated
    assert set(quick) >= {"datasets_unavailable", "values_total", "values_reproduced",
                          "values_shown", "values_plausible", "values_unexplained",
                          "values_not_judged", "values_by_kind", "claims_not_evaluated"}


def _committed_experiments() -> list[str]:
    from dpexp.paths import project_root

    root = project_root() / "results"
    return sorted(p.parent.name for p in root.glob("*/results-paper.csv.gz"))


def test_the_committed_reproduction_still_renders(tmp_path):
    """Every committed paper-scale table renders with the current code (from the table
    alone, into a scratch folder: the committed files are not touched)."""
    from dpexp.experiments.committed import table_path as committed_table
    from dpexp.paths import project_root
    from dpexp.render.render import render_experiment

    experiments = _committed_experiments()
    if not experiments:
        import pytest

        pytest.skip("no committed paper-scale results in this checkout")
    for exp in experiments:
        shutil.copytree(project_root() / "results" / exp, tmp_path / "results" / exp,
                        ignore=shutil.ignore_patterns(f"{exp}.*"))
        assert committed_table(tmp_path / "results", exp, "paper").exists()
        rendered = render_experiment(resolve(exp).at_scale("paper"), "paper",
                                     tmp_path / "results", tmp_path / "figures")
        assert rendered.files and rendered.total_cells - rendered.missing_cells > 0, exp


def test_render_is_the_same_from_the_cache_and_from_the_committed_table(tmp_path):
    """Rows are read in cell-key order whatever the source, so the rendered numbers (means,
    stds to the last bit) and lists come out identical on a fresh clone."""
    results = tmp_path / "results"
    _run(results)

    def rendered() -> dict[str, bytes]:
        res = CliRunner().invoke(app, ["render", "quickstart", "--results-dir", str(results),
                                       "--figures-dir", str(tmp_path / "figures")])
        assert res.exit_code == 0, res.output
        return {p.name: p.read_bytes() for p in sorted((results / "quickstart").glob("quickstart-smoke.*"))}

    from_cache = rendered()
    shutil.rmtree(results / "cache")
    assert rendered() == from_cache and {"quickstart-smoke.md", "quickstart-smoke.csv"} <= set(from_cache)
