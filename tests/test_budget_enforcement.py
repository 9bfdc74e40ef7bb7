"""A run whose spends exceed the epsilon it promised fails loudly and loses no cached cell."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from dpexp.cli import app


@pytest.fixture()
def broken_setup(tmp_path, monkeypatch):
    import dpexp.registry as registry

    monkeypatch.setattr(registry, "EXTRA_PAPERS", ["overspending_algorithms"])
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("reports_too_much", "spends_too_much"):
        spec = {"id": f"overspend-{name}", "paper": "test", "artefact": "t", "kind": "table",
                "caption": "c", "datasets": ["synthA"],
                "algorithms": [{"name": "breiman_rf", "params": {"n_estimators": 5}}, {"name": name}],
                "epsilons": [1.0], "cv": {"folds": 2}, "metrics": ["accuracy"],
                "scales": {"smoke": {"max_rows": 300}}}
        (specs / f"overspend-{name}.yaml").write_text(yaml.safe_dump(spec))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    return tmp_path / "results"


@pytest.mark.parametrize(("name", "needle"), [
    ("reports_too_much", "spent epsilon 2.0 but was given 1.0"),
    ("spends_too_much", "second release"),
])
def test_overspending_run_fails_loudly(broken_setup, name, needle):
    results = broken_setup
    res = CliRunner().invoke(app, ["run", f"overspend-{name}", "--results-dir", str(results), "--no-render"])
    assert res.exit_code == 3, res.output
    assert needle in res.output and "Traceback" not in res.output
    cached = list((results / "cache" / f"overspend-{name}" / "smoke").glob("seed-*/*.json"))
    # the non-private cells that finished are kept; no cell of the overspender is recorded
    algos = {json.loads(p.read_text())["cell"]["algorithm"] for p in cached}
    assert algos == {"breiman_rf"}
