"""``dpexp run --skip-unavailable`` (``make reproduce-all`` on an offline machine): datasets
this machine cannot get are left out with a note; a corrupted download still fails."""

from __future__ import annotations

import yaml
from conftest import tiny_spec
from typer.testing import CliRunner

from dpexp.cli import app

SPEC = tiny_spec(
    "tiny_offline", artefact="Figure 1", datasets=["synthA", "abalone"], epsilons=[1.0],
    algorithms=[{"name": "np_gbdt", "label": "NP", "params": {"n_trees": 2, "max_depth": 2}}],
    metrics={"classification": ["error"], "regression": ["rmse"]},
    plot={"x": "epsilon", "y": {"classification": "error", "regression": "rmse"}},
    scales={"smoke": {"max_rows": 200}},
)


def offline(tmp_path, monkeypatch, spec=SPEC):
    """The spec, an empty data cache and a mirror folder: nothing real can be had."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / f"{spec['id']}.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DPEXP_DATA_MIRROR", str(tmp_path / "mirror"))
    return ["--results-dir", str(tmp_path / "results"), "--no-render", "-q"]


def run(*args):
    return CliRunner().invoke(app, ["run", *args])


def test_without_the_flag_an_unreachable_dataset_fails_clearly(tmp_path, monkeypatch):
    res = run("tiny_offline", *offline(tmp_path, monkeypatch))
    assert res.exit_code != 0 and "could not download abalone.data" in res.output
    assert "Traceback" not in res.output


def test_the_flag_skips_it_with_a_note_and_runs_the_rest(tmp_path, monkeypatch):
    res = run("tiny_offline", *offline(tmp_path, monkeypatch), "--skip-unavailable")
    assert res.exit_code == 0, res.output
    assert "note: skipped dataset abalone: Dataset 'abalone': could not download" in res.output
    assert "2 cells, 2 computed" in res.output  # synthA's 2 folds only


def test_nothing_left_is_a_note_not_a_failure(tmp_path, monkeypatch):
    spec = {**SPEC, "id": "tiny_offline2", "datasets": ["abalone"]}
    res = run("tiny_offline2", *offline(tmp_path, monkeypatch, spec), "--skip-unavailable")
    assert res.exit_code == 0, res.output
    assert "nothing to run here, every dataset was skipped" in res.output


def test_a_corrupted_file_still_fails(tmp_path, monkeypatch):
    args = offline(tmp_path, monkeypatch)
    bad = tmp_path / "mirror" / "abalone" / "abalone.data"
    bad.parent.mkdir()
    bad.write_text("M,0.1,0.1,0.1,0.1,0.1,0.1,0.1,5\n")
    res = run("tiny_offline", *args, "--skip-unavailable")
    assert res.exit_code != 0 and "sha256 check" in res.output
