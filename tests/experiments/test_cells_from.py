"""``cells_from``: an artefact that shows another spec's cells (issue 19: Fletcher Figs.
12-14 are metrics of Fig. 11's run, computed once).

Tiny specs (synthA, 300 rows, 2 folds) keep each run to seconds.
"""

from __future__ import annotations

from io import StringIO

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.errors import SpecError

SOURCE = {
    "id": "tiny_src", "paper": "test", "artefact": "Figure 1", "kind": "figure", "caption": "c",
    "datasets": ["synthA"],
    "algorithms": [
        {"name": "fletcher_forest", "label": "DP forest", "params": {"n_trees": 3}},
        {"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 5}},
    ],
    "epsilons": [1.0, 3.0], "cv": {"folds": 2}, "metrics": ["accuracy", "auc"],
    "plot": {"x": "epsilon", "y": "accuracy"},
    "scales": {"smoke": {"max_rows": 300}},
}
VIEW = {
    **SOURCE, "id": "tiny_view", "artefact": "Figure 2", "cells_from": "tiny_src",
    "algorithms": [SOURCE["algorithms"][0]], "epsilons": [1.0], "metrics": ["auc"],
    "plot": {"x": "epsilon", "y": "auc"},
}


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def write_specs(tmp_path, monkeypatch, *specs: dict):
    d = tmp_path / "specs"
    d.mkdir(exist_ok=True)
    for s in specs:
        (d / f"{s['id']}.yaml").write_text(yaml.safe_dump(s))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(d))
    return tmp_path / "results", tmp_path / "figures"


def test_view_cells_are_the_source_cells(tmp_path, monkeypatch):
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.cells import expand

    write_specs(tmp_path, monkeypatch, SOURCE, VIEW)
    view, source = resolve("tiny_view"), resolve("tiny_src")
    assert view.cells_id == "tiny_src" and source.cells_id == "tiny_src"
    mine = expand(view.at_scale("smoke"), "smoke")
    theirs = {c.key for c in expand(source.at_scale("smoke"), "smoke")}
    assert len(mine) == 2 and {c.experiment for c in mine} == {"tiny_src"}
    assert {c.key for c in mine} <= theirs


@pytest.mark.parametrize(("change", "words"), [
    ({"datasets": ["synthB"]}, "dataset 'synthB' is not in tiny_src"),
    ({"epsilons": [2.0]}, "epsilons [2.0] are not in tiny_src"),
    ({"metrics": ["f1_minority"]}, "metric 'f1_minority'"),
    ({"cv": {"folds": 3}}, "cv differs"),
    ({"algorithms": [{"name": "fletcher_forest", "label": "DP forest",
                      "params": {"n_trees": 4}}]}, "parameters {'n_trees': 4}"),
    ({"algorithms": [{"name": "jpw", "label": "JPW"}]}, "series 'JPW' (jpw) is not in tiny_src"),
    ({"scales": {"smoke": {"max_rows": 200}}}, "at smoke scale, max_rows differs"),
    ({"dp_domains": 0.1}, "dp_domains differs from tiny_src's (0.1 vs None)"),
    ({"cells_from": "nope"}, "no experiment 'nope'"),
])
def test_a_view_that_is_not_a_subset_is_a_spec_error(tmp_path, monkeypatch, change, words):
    from dpexp.experiments.catalog import load_catalog, resolve

    results, _ = write_specs(tmp_path, monkeypatch, SOURCE, {**VIEW, **change})
    catalog = load_catalog()
    assert "tiny_view" not in catalog.specs and "tiny_src" in catalog.specs
    with pytest.raises(SpecError, match="key 'cells_from'") as err:
        resolve("tiny_view")
    assert words in str(err.value)
    res = invoke("run", "tiny_view", "--results-dir", results, "-q", "--no-render")
    assert res.exit_code != 0 and "cells_from" in res.output and "Traceback" not in res.output


def test_chained_views_are_refused(tmp_path, monkeypatch):
    from dpexp.experiments.catalog import load_catalog

    write_specs(tmp_path, monkeypatch, SOURCE, VIEW, {**VIEW, "id": "tiny_view2", "cells_from": "tiny_view"})
    err = str(load_catalog().errors["tiny_view2"])
    assert "tiny_view shows the cells of tiny_src itself; name tiny_src instead" in err


def test_running_the_view_fills_the_source_and_the_source_reuses_them(tmp_path, monkeypatch):
    results, figures = write_specs(tmp_path, monkeypatch, SOURCE, VIEW)
    run = ("--results-dir", results, "--figures-dir", figures, "-q", "--no-render")
    res = invoke("run", "tiny_view", *run)
    assert res.exit_code == 0, res.output
    assert "2 computed, 0 from cache" in res.output
    cache = results / "cache"
    assert not (cache / "tiny_view").exists()
    assert len(list((cache / "tiny_src" / "smoke" / "seed-0").glob("*.json"))) == 2
    # the union table is the source's, with every metric the source computes
    assert not (results / "tiny_view" / "results-smoke.csv").exists()
    table = pd.read_csv(results / "tiny_src" / "results-smoke.csv")
    assert set(table["experiment"]) == {"tiny_src"} and {"accuracy", "auc"} <= set(table["metric"])

    res = invoke("run", "tiny_src", *run)
    assert res.exit_code == 0, res.output
    # 2 folds x (2 epsilons of the DP forest + 1 RF) = 6 cells, 2 of them the view's
    assert "4 computed, 2 from cache" in res.output

    shown = invoke("results", "tiny_view", "--results-dir", results)
    assert shown.exit_code == 0, shown.output
    frame = pd.read_csv(StringIO(shown.stdout))
    metrics = frame[frame["metric_kind"] == "metric"]
    assert set(metrics["metric"]) == {"auc"} and set(metrics["label"]) == {"DP forest"}
    assert set(metrics["epsilon"].astype(float)) == {1.0} and len(metrics) == 2
    assert metrics["value"].notna().all()


def test_plan_totals_count_shared_cells_once(tmp_path, monkeypatch):
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.plan import make_plans, totals

    results, _ = write_specs(tmp_path, monkeypatch, SOURCE, VIEW)
    specs = [resolve(n).at_scale("smoke") for n in ("tiny_src", "tiny_view")]
    plans = make_plans(specs, "smoke", results, calibrate_fits=False)
    assert [p.cells for p in plans] == [6, 2] and plans[1].cells_of == "tiny_src"
    t = totals(plans)
    assert t["cells"] == 6 and t["views"] == 1 and t["experiments"] == 2
    alone = totals(plans[1:])  # the view planned without its source counts its cells
    assert alone["cells"] == 2
