"""Paid DP domains in the runner (``dp_domain_share``, ``dp_domains``; issues 38 and 44).

A private cell on a dataset whose registry declares no domain pays ``share * epsilon`` for a
DP release of the observed domains (``dp_feature_domain``, training fold only) and fits
with the rest; its rows are then ``private=True`` with ``domain_source = paid (...)``. The
cells of declared datasets and of non-private series keep the keys they had.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import require_datasets
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.datasets import load_dataset
from dpexp.datasets.registry import get_dataset_info
from dpexp.errors import BudgetExceededError, SpecError
from dpexp.experiments import execute
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import expand
from dpexp.experiments.harness_params import DP_DOMAIN_SHARE, estimator_params
from dpexp.experiments.paid_domains import domain_noise, pay_for_domains
from dpexp.experiments.reflag import row_flags
from dpexp.experiments.results import current_params, is_stale
from dpexp.experiments.spec_parse import parse_spec
from dpexp.privacy.accountant import Accountant
from dpexp.registry import get_algorithm

SPEC = {
    "id": "paid", "paper": "test", "artefact": "Figure 0", "kind": "figure", "caption": "c",
    "datasets": ["synthA", "weather_temperature"],
    "algorithms": [
        {"name": "gaussian_bdt", "label": "Gaussian BDT", "params": {"n_trees": 3, "max_depth": 2}},
        {"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 3}},
    ],
    "epsilons": [1.0], "cv": {"folds": 2},
    "metrics": {"classification": ["accuracy"], "regression": ["rmse"]},
    "plot": {"x": "epsilon", "y": "accuracy"},
    "scales": {"smoke": {"max_rows": 400}},
}


def _run(tmp: Path, spec: dict) -> tuple[pd.DataFrame, Path]:
    specs = tmp / "specs"
    specs.mkdir()
    (specs / f"{spec['id']}.yaml").write_text(yaml.safe_dump(spec))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
        res = CliRunner().invoke(app, ["run", spec["id"], "--scale", "smoke", "--results-dir",
                                       str(tmp / "results"), "--no-render", "-q"])
    assert res.exit_code == 0, res.output
    return pd.read_csv(tmp / "results" / spec["id"] / "results-smoke.csv"), tmp / "results"


@pytest.fixture(scope="module")
def paid(tmp_path_factory) -> tuple[pd.DataFrame, Path]:
    return _run(tmp_path_factory.mktemp("paid"), {**SPEC, "dp_domains": 0.1})


@pytest.fixture(scope="module")
def observed(tmp_path_factory) -> pd.DataFrame:
    return _run(tmp_path_factory.mktemp("observed"), {**SPEC, "id": "observed"})[0]


def test_paid_rows_are_private_within_budget_and_say_paid(paid):
    table, _ = paid
    rows = table[(table.dataset == "synthA") & (table.algorithm == "gaussian_bdt")]
    assert len(rows) and rows["private"].all()
    assert (rows["epsilon_spent"] <= rows["epsilon"] * (1 + 1e-9)).all()
    assert set(rows["domain_source"]) == {
        "paid (dp_feature_domain, epsilon 0.1 of 1: all 5 features)"}
    assert set(rows[f"p_{DP_DOMAIN_SHARE}"]) == {0.1}


def test_the_ledger_holds_the_domain_release(paid):
    _, results = paid
    ledgers = list((results / "cache" / "paid").rglob("ledgers/*.json"))
    entries = []
    for path in ledgers:
        payload = json.loads(path.read_text())
        entries += payload if isinstance(payload, list) else payload.get("ledger", [])
    domain = [e for e in entries if e.get("what", "").startswith("feature domain")]
    assert len(domain) == 2  # one per fold of the private series on synthA
    assert all(e["scope"] == DP_DOMAIN_SHARE and e["epsilon"] == pytest.approx(0.1) for e in domain)


def test_declared_and_non_private_rows_are_unchanged_by_dp_domains(paid, observed):
    table, _ = paid
    declared = table[(table.dataset == "weather_temperature") & (table.algorithm == "gaussian_bdt")]
    assert set(declared["domain_source"]) == {"declared"} and declared["private"].all()
    assert table[table.dataset == "weather_temperature"][f"p_{DP_DOMAIN_SHARE}"].isna().all()
    assert table[table.algorithm == "breiman_rf"][f"p_{DP_DOMAIN_SHARE}"].isna().all()
    same = ["dataset", "algorithm", "params", "fold", "metric", "step", "value"]

    def kept(frame: pd.DataFrame) -> pd.DataFrame:
        rows = frame[((frame.dataset == "weather_temperature") | (frame.algorithm == "breiman_rf"))
                     & (frame.metric_kind == "metric")]  # diagnostics hold timings
        return rows[same].sort_values(same[:6], na_position="first").reset_index(drop=True)

    pd.testing.assert_frame_equal(kept(table), kept(observed))


def test_without_dp_domains_the_same_rows_are_not_private(observed):
    rows = observed[(observed.dataset == "synthA") & (observed.algorithm == "gaussian_bdt")]
    assert len(rows) and not rows["private"].any()
    assert set(rows["domain_source"]) == {"observed (not DP: domain from data: all 5 features)"}


def test_a_declared_dataset_keeps_its_cell_keys():
    spec = parse_spec(SPEC, Path("paid.yaml")).at_scale("smoke")
    with_share = parse_spec({**SPEC, "dp_domains": 0.1}, Path("paid.yaml")).at_scale("smoke")
    before = {(c.dataset.key, c.label, c.fold): c.key for c in expand(spec, "smoke")}
    after = {(c.dataset.key, c.label, c.fold): c.key for c in expand(with_share, "smoke")}
    assert before.keys() == after.keys()
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {("synthA", "Gaussian BDT", 0), ("synthA", "Gaussian BDT", 1)}


@pytest.mark.parametrize("value", [0, 1, 1.5, -0.1, "ten", True, None])
def test_a_malformed_dp_domains_is_a_spec_error_naming_the_key(value):
    with pytest.raises(SpecError, match="key 'dp_domains'"):
        parse_spec({**SPEC, "dp_domains": value}, Path("paid.yaml"))


def test_the_registry_decides_which_datasets_pay():
    assert get_dataset_info("weather_temperature").declares_every_domain
    assert get_dataset_info("adult").declares_every_domain
    assert not get_dataset_info("synthA").declares_every_domain
    assert not get_dataset_info("cod-rna").declares_every_domain  # 2 of 8 features observed
    assert not get_dataset_info("YearPredictionMSD").declares_every_domain  # features observed
    assert not get_dataset_info("abalone").declares_every_domain  # label range observed


def _synth(task: str = "classification"):
    ds = load_dataset("synthA", max_rows=300, progress=False)
    if task == "regression":
        y = ds.X[:, 0] * 3.0 + 1.0
        ds = replace(ds, task="regression", y=y, classes=None,
                     label_domain=(float(y.min()), float(y.max())), label_domain_source="observed")
    return ds


def test_the_budget_is_split_and_only_observed_entries_are_replaced():
    ds = _synth()
    sources = ["declared", "observed", "declared", "observed", "observed"]
    ds = replace(ds, feature_domain_sources=sources)
    out = pay_for_domains(ds, ds.X, ds.y, share=0.25, epsilon=2.0, rng=np.random.default_rng(0))
    assert out.estimator_epsilon == pytest.approx(1.5)
    assert out.accountant.epsilon_spent == pytest.approx(0.5)
    assert len(out.accountant.ledger()) == 1
    assert out.accountant.ledger()[0]["sensitivity"] == 3  # one column per observed feature
    got, was = out.public["feature_domain"], ds.feature_domain
    np.testing.assert_array_equal(got[[0, 2]], was[[0, 2]])  # declared: untouched
    assert not np.array_equal(got[[1, 3, 4]], was[[1, 3, 4]])
    edges = np.abs(got[[1, 3, 4]].ravel())
    assert np.all((edges == 0) | (np.log2(np.where(edges == 0, 1, edges)) % 1 == 0))  # the public grid
    assert ds.feature_domain is was and out.public["classes"] is ds.classes  # nothing mutated
    assert out.domain_source == "paid (dp_feature_domain, epsilon 0.5 of 2: 3 of 5 features)"


def test_an_observed_label_range_is_one_more_column_of_the_same_release():
    ds = _synth("regression")
    out = pay_for_domains(ds, ds.X, ds.y, share=0.5, epsilon=4.0, rng=np.random.default_rng(1))
    (entry,) = out.accountant.ledger()
    assert entry["sensitivity"] == 6  # 5 features + the label
    assert out.public["label_domain"] != ds.label_domain
    assert out.domain_source.endswith("all 5 features, label range)")


def test_a_dataset_declaring_every_domain_pays_nothing():
    ds = _synth()
    ds = replace(ds, feature_domain_sources=["declared"] * 5)
    assert pay_for_domains(ds, ds.X, ds.y, share=0.1, epsilon=1.0,
                           rng=np.random.default_rng(0)) is None


def test_the_domain_noise_is_a_stream_of_its_own():
    a = domain_noise(0, "cell").integers(2**62, size=4)
    assert np.array_equal(a, domain_noise(0, "cell").integers(2**62, size=4))
    assert not np.array_equal(a, domain_noise(0, "other").integers(2**62, size=4))
    assert not np.array_equal(a, domain_noise(1, "cell").integers(2**62, size=4))


def test_the_share_never_reaches_the_estimator():
    assert estimator_params({DP_DOMAIN_SHARE: 0.1, "n_trees": 3}) == {"n_trees": 3}
    spec = parse_spec({**SPEC, "dp_domains": 0.1}, Path("paid.yaml")).at_scale("smoke")
    cell = next(c for c in expand(spec, "smoke") if DP_DOMAIN_SHARE in c.params)
    assert DP_DOMAIN_SHARE not in execute.cell_params(cell, 200)


def test_an_overspend_with_the_domain_release_fails_loudly():
    spec = parse_spec({**SPEC, "dp_domains": 0.1}, Path("paid.yaml")).at_scale("smoke")
    cell = next(c for c in expand(spec, "smoke") if DP_DOMAIN_SHARE in c.params)
    info = get_algorithm("gaussian_bdt")
    est_acc, paid_acc = Accountant(epsilon=1.0), Accountant(epsilon=0.1)
    est_acc.release(lambda: 0, epsilon=1.0, what="the whole estimator's budget")
    paid_acc.release(lambda: 0, epsilon=0.1, what="feature domain (DP range estimate)")
    with pytest.raises(BudgetExceededError, match="spent epsilon 1.1"):
        execute.privacy_of(cell, info, SimpleNamespace(accountant_=est_acc), (), paid_acc)


def test_a_non_private_algorithm_refuses_the_share():
    spec = parse_spec({**SPEC, "datasets": ["synthA"]}, Path("paid.yaml")).at_scale("smoke")
    cell = next(c for c in expand(spec, "smoke") if c.algorithm == "breiman_rf")
    cell = replace(cell, params={**cell.params, DP_DOMAIN_SHARE: 0.1})
    with pytest.raises(SpecError, match="not private"):
        execute.paid_domains_of(cell, get_algorithm("breiman_rf"), None, None, None,
                                rng=np.random.default_rng(0))


def test_observed_cells_of_a_paying_series_are_stale():
    spec = parse_spec({**SPEC, "dp_domains": 0.1}, Path("paid.yaml")).at_scale("smoke")
    current = current_params(spec)
    plain = json.dumps({"max_depth": 2, "n_trees": 3}, sort_keys=True, separators=(",", ":"))
    paid = json.dumps({"dp_domain_share": 0.1, "max_depth": 2, "n_trees": 3}, sort_keys=True,
                      separators=(",", ":"))
    assert is_stale("Gaussian BDT", plain, current, "classification", "synthA")
    assert not is_stale("Gaussian BDT", paid, current, "classification", "synthA")
    assert not is_stale("Gaussian BDT", plain, current, "regression", "weather_temperature")
    assert is_stale("Gaussian BDT", paid, current, "regression", "weather_temperature")


def test_reflag_keeps_a_paid_row_private():
    row = {"experiment": "leaderboard", "dataset": "synthA", "algorithm": "gaussian_bdt",
           "params": json.dumps({DP_DOMAIN_SHARE: 0.1}), "fold": "0", "private": "True",
           "not_dp_reason": "", "n_train": "",
           "domain_source": "paid (dp_feature_domain, epsilon 0.1 of 1: all 5 features)"}
    assert row_flags(row) == ("True", "", [])


def test_a_real_regression_dataset_pays_for_its_label_range_too(tmp_path):
    require_datasets("abalone")
    spec = {**SPEC, "id": "paidreg", "dp_domains": 0.1, "datasets": ["abalone"],
            "algorithms": SPEC["algorithms"][:1]}
    table, _ = _run(tmp_path, spec)
    assert len(table) and table["private"].all()
    assert (table["epsilon_spent"] <= table["epsilon"] * (1 + 1e-9)).all()
    assert set(table["domain_source"]) == {
        "paid (dp_feature_domain, epsilon 0.1 of 1: 7 of 8 features, label range)"}


def test_the_leaderboard_keeps_the_keys_of_its_declared_and_non_private_cells():
    spec = resolve("leaderboard")
    assert spec.dp_domains == 0.1
    new = {c.view_key: c.key for c in expand(spec.at_scale("paper"), "paper")}
    old = {c.view_key: c.key for c in expand(replace(spec, dp_domains=None).at_scale("paper"), "paper")}
    kept = [c for c in expand(replace(spec, dp_domains=None).at_scale("paper"), "paper")
            if get_dataset_info(c.dataset.name).declares_every_domain
            or not get_algorithm(c.algorithm).private]
    assert kept and all(new.get(c.view_key) == c.key for c in kept)
    paid = [k for k in old if k not in new]
    assert paid and all(not get_dataset_info(json.loads(k)["dataset"]).declares_every_domain
                        for k in paid)


def test_run_dp_domains_adds_twins_only_where_a_domain_is_undeclared(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "twins.yaml").write_text(yaml.safe_dump({**SPEC, "id": "twins"}))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
        res = CliRunner().invoke(app, ["run", "twins", "--results-dir", str(tmp_path / "results"),
                                       "--no-render", "-q", "--dp-domains"])
        assert res.exit_code == 0, res.output
        assert ("Gaussian BDT (DP domains): skipped 1 dataset (weather_temperature): it declares "
                "every domain") in res.output
        bad = CliRunner().invoke(app, ["run", "twins", "--results-dir", str(tmp_path / "results"),
                                       "--no-render", "-q", "--dp-domain-share", "1.5"])
    assert bad.exit_code != 0 and "--dp-domain-share must be a number strictly between 0 and 1" in bad.output
    table = pd.read_csv(tmp_path / "results" / "twins" / "results-smoke.csv")
    twin = table[table.label == "Gaussian BDT (DP domains)"]
    assert set(twin["dataset"]) == {"synthA"} and twin["private"].all()
    assert set(twin[f"p_{DP_DOMAIN_SHARE}"]) == {0.1}
    assert twin["domain_source"].str.startswith("paid").all()
    original = table[(table.label == "Gaussian BDT") & (table.dataset == "synthA")]
    assert len(original) and not original["private"].any()
    assert set(table.label) == {"Gaussian BDT", "Gaussian BDT (DP domains)", "RF"}  # no RF twin


@pytest.mark.parametrize(("algorithm", "value", "words"), [
    ({"name": "breiman_rf", "label": "RF"}, 0.1, "for registered private algorithms only"),
    ({"name": "gaussian_bdt", "label": "G"}, 2.0, "dp_domain_share must be a number strictly"),
])
def test_an_explicit_share_is_checked_where_it_is_written(algorithm, value, words):
    spec = {**SPEC, "algorithms": [{**algorithm, "params": {DP_DOMAIN_SHARE: value}}]}
    with pytest.raises(SpecError, match=words):
        parse_spec(spec, Path("paid.yaml"))
