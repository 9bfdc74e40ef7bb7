"""The private flag is the truth; defaults are private (issue #38, items 1, 2 and 6).

* the runner's noise is an explicit, recorded choice (``noise`` column);
* ``n_records`` comes from the registry's row count and the CV arithmetic, never ``len(X)``,
  and data that disagree with the registry are a DatasetError;
* a row is ``private=True`` only when every public input was declared: an observed
  domain (or an ``n_records`` from the data) makes it ``private=False`` with the reason;
* no committed row says ``private=True`` with an observed domain.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.datasets.registry import get_dataset_info
from dpexp.errors import DatasetError
from dpexp.experiments import design
from dpexp.experiments import execute as runner
from dpexp.experiments.cells import expand
from dpexp.experiments.noise import NO_NOISE, PEER_NOISE, SEEDED_NOISE, noise_source
from dpexp.experiments.reflag import reflag_text
from dpexp.experiments.spec import CVScheme, DatasetRef
from dpexp.experiments.spec_parse import parse_spec

ROOT = Path(__file__).resolve().parents[2]

SPEC = {
    "id": "flags", "paper": "test", "artefact": "Figure 0", "kind": "figure", "caption": "c",
    "datasets": ["synthA", "weather_temperature"],
    "algorithms": [
        {"name": "gaussian_bdt", "label": "Gaussian BDT", "params": {"n_trees": 3, "max_depth": 2}},
        {"name": "inprivate", "label": "InPrivate",
         "params": {"n_participants": 2, "records_per_participant": 50, "depth": 2}},
    ],
    "epsilons": [1.0], "cv": {"folds": 3}, "metrics": {"classification": ["accuracy"],
                                                     "regression": ["rmse"]},
    "plot": {"x": "epsilon", "y": "accuracy"},
    "scales": {"smoke": {"max_rows": 301}},
}


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> pd.DataFrame:
    """The smoke run of SPEC: synthA (observed domain) and weather_temperature (declared)."""
    tmp = tmp_path_factory.mktemp("flags")
    specs = tmp / "specs"
    specs.mkdir()
    (specs / "flags.yaml").write_text(yaml.safe_dump(SPEC))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
        res = CliRunner().invoke(app, ["run", "flags", "--results-dir", str(tmp / "results"),
                                       "--no-render", "-q"])
    assert res.exit_code == 0, res.output
    return pd.read_csv(tmp / "results" / "flags" / "results-smoke.csv")


def test_runner_rows_say_the_noise_is_seeded(table):
    assert set(table["noise"]) == {SEEDED_NOISE}
    assert "research result, not a release" in SEEDED_NOISE


def test_observed_domain_cell_is_not_private_with_its_reason(table):
    observed = table[table.dataset == "synthA"]
    assert len(observed) and not observed["private"].any()
    assert set(observed["not_dp_reason"]) == {
        "domain observed (not DP: domain from data: all 5 features)"}
    assert observed["epsilon_spent"].notna().all()  # what the mechanisms charged, kept


def test_declared_domain_and_registry_n_give_private_rows(table):
    declared = table[table.dataset == "weather_temperature"]
    assert set(declared["domain_source"]) == {"declared"}
    assert declared["private"].all() and declared["not_dp_reason"].isna().all()


def test_n_records_is_the_registry_row_count_and_cv_arithmetic(table):
    # 301 rows (the smoke cap), 3 folds: 101 + 100 + 100 test rows
    inprivate = table[(table.algorithm == "inprivate") & (table.dataset == "weather_temperature")]
    assert sorted(set(zip(inprivate["fold"], inprivate["n_train"], strict=True))) == [
        (0, 200), (1, 201), (2, 201)]


def test_fold_sizes_follow_scikit_learn_without_the_labels():
    from sklearn.model_selection import StratifiedKFold, train_test_split

    y = np.random.default_rng(0).integers(0, 3, 1003)
    cv = CVScheme(folds=7)
    for fold, (_, te) in enumerate(StratifiedKFold(7, shuffle=True, random_state=1).split(y, y)):
        assert len(te) == design.fold_test_rows(1003, cv, fold)
    _, te = train_test_split(np.arange(1003), test_size=0.25, stratify=y, random_state=0)
    assert len(te) == design.fold_test_rows(1003, CVScheme(scheme="holdout", test_size=0.25), 0)
    ref = DatasetRef("synthA", {"n_samples": 1000})
    assert design.declared_training_rows(ref, CVScheme(folds=3), None, 0) == 666
    assert design.declared_training_rows(ref, CVScheme(folds=3), 300, 2) == 200
    assert design.declared_training_rows(DatasetRef("adult_uci"), CVScheme(scheme="given"), None) == 30_162


def test_data_disagreeing_with_the_registry_is_a_dataset_error():
    spec = parse_spec({**SPEC, "datasets": ["synthA"]}, Path("flags.yaml"))
    cell = expand(spec.at_scale("smoke"), "smoke", 0)[0]
    data = runner._Split(X_train=np.zeros((7, 5)))
    with pytest.raises(DatasetError, match="disagree with datasets.yaml"):
        runner._training_size(cell, spec.at_scale("smoke"), data)


def test_no_declared_count_takes_n_from_the_data_and_says_so(monkeypatch):
    info = get_dataset_info("synthA")
    monkeypatch.setattr(design, "get_dataset_info",
                        lambda name: SimpleNamespace(**{**info.__dict__, "rows": None}))
    size = design.training_size(DatasetRef("synthA"), CVScheme(folds=2), None, 0, loaded=123)
    assert size == design.TrainingSize(123, design.N_FROM_DATA)


def test_noise_column_of_older_rows_is_derived():
    assert noise_source("fletcher_forest", True) == SEEDED_NOISE
    assert noise_source("fletcher_forest", False) == NO_NOISE
    assert noise_source("breiman_rf", True) == NO_NOISE
    assert noise_source("procedure:fletcher_jpw_vote", True) == SEEDED_NOISE
    assert noise_source("dpboost_original", True) == PEER_NOISE


_HEADER = ("experiment,dataset,algorithm,params,fold,private,not_dp_reason,domain_source,"
           "n_train,value")


def test_reflag_rewrites_only_the_flag_columns_and_is_idempotent():
    rows = [
        'fletcher-fig4,synthA,jpw,{},0,True,,observed (not DP: domain from data: all 5 features),27000.0,0.5',
        'fletcher-fig4,adult,jpw,{},0,True,,declared,29304.0,0.25',
        'fletcher-fig4,synthA,breiman_rf,{},0,False,non-private algorithm,"observed (x, y)",27000.0,1.0',
    ]
    text = "\n".join([_HEADER, *rows, ""])
    new, changed, flipped, reasons = reflag_text(text)
    lines = new.split("\n")
    assert lines[1] == ('fletcher-fig4,synthA,jpw,{},0,False,domain observed (not DP: domain from '
                        'data: all 5 features),observed (not DP: domain from data: all 5 features),'
                        '27000.0,0.5')
    assert lines[2] == rows[1]  # declared domain, n = 32561 - ceil(32561 / 10) (10 folds): private
    assert lines[3] == rows[2]  # a baseline: untouched
    assert (changed, flipped, dict(reasons)) == (1, 1, {"domain observed": 1})
    assert reflag_text(new)[1] == 0


def test_reflag_marks_an_n_that_is_not_the_declared_one():
    row = 'fletcher-fig4,adult,jpw,{},0,True,,declared,26000.0,0.25'
    new, _, flipped, _ = reflag_text("\n".join([_HEADER, row, ""]))
    assert flipped == 1 and ",False,n_records from the data,declared," in new


def test_no_committed_row_is_private_with_an_observed_domain():
    tables = sorted((ROOT / "results").glob("*/results-paper.csv.gz"))
    assert tables
    for path in tables:
        with gzip.open(path, "rt") as fh:
            frame = pd.read_csv(fh, usecols=["private", "domain_source"], low_memory=False)
        private = frame[frame["private"].astype(str) == "True"]
        # declared, or paid for with part of the budget (dp_domain_share)
        source = private["domain_source"].astype(object).fillna("").astype(str)
        bad = private[~source.str.startswith(("declared", "paid"))]
        assert bad.empty, f"{path.parent.name}: {len(bad)} private rows with an observed domain"
