"""Spec validation (errors name the key), aliases, scales and grid expansion."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from dpexp.errors import SpecError, UnknownNameError
from dpexp.experiments.catalog import all_specs, load_catalog, resolve
from dpexp.experiments.cells import expand, grid_points
from dpexp.experiments.spec_checks import EQUIVALENCE_KINDS, VALUE_KINDS, entry_kind
from dpexp.experiments.spec_parse import load_spec_file, parse_spec
from dpexp.registry import all_algorithms

BASE = {
    "id": "t",
    "paper": "p",
    "artefact": "Figure 1",
    "kind": "figure",
    "caption": "c",
    "datasets": ["synthA"],
    "algorithms": [{"name": "breiman_rf", "params": {"n_estimators": 5}}],
    "epsilons": [1, 2],
    "cv": {"folds": 3, "repeats": 2},
}


def spec(**over):
    raw = {**BASE, **over}
    return parse_spec(raw, Path("t.yaml"))


def test_every_shipped_spec_validates():
    specs = all_specs()
    assert "quickstart" in specs
    for s in specs.values():
        for scale in ("smoke", "paper"):
            s.at_scale(scale)


def test_every_paper_value_selects_an_epsilon_its_algorithm_runs_at():
    """A printed value of a non-private algorithm selects ``epsilon: no_noise`` (its cells
    record infinity), one of a private algorithm an epsilon of the paper-scale grid:
    otherwise it silently matches no cell and is never shown beside ours."""
    algorithms = all_algorithms()
    wrong = []
    for sid, s in sorted(all_specs().items()):
        paper = s.at_scale("paper")
        refs = {a.label: a for a in paper.algorithms}
        for v in (s.paper_values or {}).get("values") or []:
            ref = refs.get(v.get("algorithm"))
            if "epsilon" not in v or ref is None or ref.name is None:
                continue
            want = math.inf if str(v["epsilon"]) in ("inf", "no_noise") else float(v["epsilon"])
            ok = (any(math.isclose(want, e) for e in paper.epsilons)
                  if algorithms[ref.name].private else math.isinf(want))
            if not ok:
                wrong.append((sid, v["algorithm"], v.get("dataset"), v["epsilon"]))
    assert not wrong


@pytest.mark.parametrize(
    ("over", "key"),
    [
        ({"epsilons": [1, -1]}, "epsilons"),
        ({"epsilons": [float("nan")]}, "epsilons"),
        ({"epsilons": [0]}, "epsilons"),
        ({"kind": "poster"}, "kind"),
        ({"cv": {"folds": 1}}, "cv.folds"),
        ({"cv": {"fols": 3}}, "fols"),
        ({"metrics": ["eror"]}, "eror"),
        ({"algorithms": [{"label": "x"}]}, "algorithms\\[0\\]"),
        ({"scales": {"paper": {"max_rows": 100}}}, "scales.paper.max_rows"),
        ({"scales": {"huge": {}}}, "huge"),
        ({"datasets": []}, "datasets"),
        ({"colour": "red"}, "colour"),
        ({"algorithms": [{"name": "breiman_rf", "params": {"max_depth": {"classification": 3}}}]},
         "params.max_depth"),
        ({"plot": {"x": "epsilon", "panels": "metric"}}, "plot.panels"),
        # one value per dataset: a panel per dataset would hold one point each
        ({"plot": {"x": "dataset_param:n_samples", "panels": "dataset"}}, "plot.x"),
        ({"plot": {"x": "dataset_param:n_samples"}}, "plot.x"),
    ],
)
def test_malformed_spec_names_the_bad_key(over, key):
    with pytest.raises(SpecError, match=key):
        spec(**over)


def test_missing_required_key():
    raw = dict(BASE)
    del raw["caption"]
    with pytest.raises(SpecError, match="'caption'"):
        parse_spec(raw, Path("t.yaml"))


def test_id_must_match_file(tmp_path):
    p = tmp_path / "other.yaml"
    p.write_text(yaml.safe_dump(BASE))
    with pytest.raises(SpecError, match="file is named 'other'"):
        load_spec_file(p)


def test_invalid_yaml_is_a_spec_error(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("id: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_spec_file(p)


def test_unknown_experiment_suggests(tmp_path):
    with pytest.raises(UnknownNameError, match="quickstart"):
        resolve("quikstart")


def test_grid_and_cells():
    s = spec(algorithms=[{"name": "breiman_rf", "params": {"n_estimators": 5}, "grid": {"max_depth": [2, 4]}}])
    assert grid_points(s.algorithms[0]) == [{"n_estimators": 5, "max_depth": 2}, {"n_estimators": 5, "max_depth": 4}]
    cells = expand(s, "paper")
    # non-private: one epsilon (inf), 2 grid points x 3 folds x 2 repeats
    assert len(cells) == 12
    assert len({c.key for c in cells}) == 12
    assert all(c.epsilon == float("inf") for c in cells)


def test_per_task_params_resolve_in_each_cell():
    """``{classification: a, regression: b}`` is resolved per dataset, so a cell's params
    (its key) name the value it ran with."""
    s = spec(datasets=["adult", "abalone"],
             algorithms=[{"name": "np_gbdt", "params": {"max_depth": {"classification": 3, "regression": 5}}}])
    depth = {c.dataset.name: c.params["max_depth"] for c in expand(s, "paper")}
    assert depth == {"adult": 3, "abalone": 5}


def test_smoke_scale_overrides():
    s = spec(scales={"smoke": {"max_rows": 500, "epsilons": [1], "cv": {"folds": 2, "repeats": 1},
                               "params": {"n_estimators": 3}}})
    sm = s.at_scale("smoke")
    assert sm.epsilons == (1.0,) and sm.cv.folds == 2 and sm.cv.repeats == 1
    assert sm.algorithms[0].params["n_estimators"] == 3
    assert sm.max_rows("smoke") == 500
    assert s.at_scale("paper").cv.folds == 3


def test_smoke_scale_can_shrink_a_grid():
    s = spec(algorithms=[{"name": "breiman_rf", "params": {"n_estimators": 5}, "grid": {"max_depth": [2, 4, 8, 16]}}],
             scales={"smoke": {"grid": {"max_depth": [2, 4], "min_samples_leaf": [1, 2]}}})
    sm = s.at_scale("smoke")
    assert sm.algorithms[0].grid == {"max_depth": [2, 4]}  # only keys it varies
    assert s.at_scale("paper").algorithms[0].grid == {"max_depth": [2, 4, 8, 16]}


def test_a_per_task_series_is_stale_only_for_the_other_tasks_value():
    """A cell of a per-task series is current only with its own task's value: a
    classification cell run with the regression value is stale."""
    from dpexp.experiments.cells import canonical_json
    from dpexp.experiments.results import current_params, is_stale

    s = spec(datasets=["adult", "abalone"],
             algorithms=[{"name": "np_gbdt", "params": {"max_depth": {"classification": 3, "regression": 5}}}])
    current = current_params(s)
    label = s.algorithms[0].label
    assert not is_stale(label, canonical_json({"max_depth": 3}), current, "classification")
    assert is_stale(label, canonical_json({"max_depth": 5}), current, "classification")
    assert not is_stale(label, canonical_json({"max_depth": 5}), current, "regression")
    assert is_stale(label, canonical_json({"max_depth": 4}), current, "regression")


def _printed(spec_id: str, values: list[dict]) -> dict:
    return {**BASE, "id": spec_id, "paper_values": {
        "kind": "performance", "tolerance": 0.01, "tolerance_reason": "half a unit plus the paper's std",
        "values": values}}


def test_every_shipped_paper_value_declares_its_kind_and_reason():
    """Issue 41: every printed value has a kind, every tolerance its reason, and a reprint
    names its original (the catalog loads only if each same_as does)."""
    for s in all_specs().values():
        pv = s.paper_values or {}
        for v in pv.get("values") or []:
            kind = entry_kind(pv, v)
            assert kind in VALUE_KINDS, (s.id, v)
            if kind in EQUIVALENCE_KINDS and "not_judged" not in v:
                assert "tolerance" in v or "tolerance" in pv, (s.id, v)
                assert v.get("tolerance_reason") or pv.get("tolerance_reason"), (s.id, v)


def test_a_reprint_across_specs_must_name_one_original_with_the_same_number(tmp_path):
    value = {"dataset": "synthA", "algorithm": "breiman_rf", "epsilon": 1, "metric": "accuracy"}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(_printed("a", [{**value, "value": 0.9}])))
    link = {"experiment": "a", **value}
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(_printed("b", [{**value, "value": 0.9, "same_as": link}])))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(_printed("c", [{**value, "value": 0.8, "same_as": link}])))
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(_printed("d", [{**value, "value": 0.9,
                                                                    "same_as": {**link, "experiment": "zz"}}])))
    catalog = load_catalog(tmp_path)
    assert {"a", "b"} <= set(catalog.specs)
    assert "same_as names a value that is not the same number" in str(catalog.errors["c"])
    assert "paper_values.values[0].same_as names experiment 'zz'" in str(catalog.errors["d"])


def test_with_algorithms_joins_only_what_the_spec_lacks_and_rejects_unknown_names():
    from dpexp.experiments.spec import with_algorithms

    spec = resolve("leaderboard")
    # an entry already (by name, then by label): nothing added
    assert with_algorithms(spec, ["dpboost", "DPBoost"]) is spec
    assert not any(a.name == "inprivate_np" for a in spec.algorithms)
    joined = with_algorithms(spec, ["inprivate_np", "inprivate_np"])
    assert joined.algorithms[:-1] == spec.algorithms
    assert (joined.algorithms[-1].label, joined.algorithms[-1].name) == ("inprivate_np", "inprivate_np")
    with pytest.raises(UnknownNameError, match="np_gbdt"):
        with_algorithms(spec, ["np_gbd"])
