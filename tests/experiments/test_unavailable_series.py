"""Series whose optional package does not import here (the diffprivlib peer next to
scikit-learn >= 1.6): `dpexp run` skips them, so the plan and the report leave their cells
out of the totals and name them, as they do for datasets this machine cannot load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import tiny_spec

SPEC = tiny_spec(
    "tiny_peer", artefact="Figure 1", epsilons=[1.0], scales={},
    algorithms=[{"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 5}},
                {"name": "diffprivlib_rf", "label": "diffprivlib RF (peer)"}],
)


@pytest.fixture()
def no_diffprivlib(tmp_path, monkeypatch):
    """The tiny spec, and diffprivlib failing to import whether or not it is installed, with
    no side environment to provide it (its interpreter variable names a missing file)."""
    import dpexp.experiments.runner as runner

    monkeypatch.setenv("DPEXP_DIFFPRIVLIB_PYTHON", str(tmp_path / "no-side-python"))

    real = runner.optional_unavailable

    def fake(requires):
        if "diffprivlib" in requires:
            return "diffprivlib (ModuleNotFoundError: No module named 'diffprivlib')"
        return real(requires)

    monkeypatch.setattr(runner, "optional_unavailable", fake)
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tiny_peer.yaml").write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(specs))
    return tmp_path / "results"


def test_plan_leaves_the_series_out_and_names_it(no_diffprivlib):
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.plan import make_plans, totals

    plan = make_plans([resolve("tiny_peer").at_scale("smoke")], "smoke", no_diffprivlib,
                      calibrate_fits=False)[0]
    peer = next(g for g in plan.groups if g.label == "diffprivlib RF (peer)")
    assert peer.kind == "unavailable" and peer.missing_package == "diffprivlib"
    assert plan.unavailable_cells == 2 and plan.unavailable_datasets() == []
    assert totals([plan])["unavailable_algorithms"] == ["diffprivlib RF (peer) (diffprivlib)"]


def test_report_counts_only_cells_that_can_run_here(no_diffprivlib):
    from dpexp.experiments.catalog import resolve
    from dpexp.render.section import build_section
    from dpexp.render.verdict_rows import verdict_row

    sec = build_section(resolve("tiny_peer"), no_diffprivlib, Path(no_diffprivlib) / "fig", None)
    row = verdict_row(sec).summary()
    # 2 folds of RF (non-private: epsilon = inf); the peer's 2 cells are not counted
    assert row["cells_total"] == 2 and row["cells_done"] == 0
    assert row["algorithms_unavailable"] == ["diffprivlib RF (peer) (needs diffprivlib)"]
