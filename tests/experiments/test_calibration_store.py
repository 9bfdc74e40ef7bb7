"""The plan's calibrations are stored (issue 43: ``dpexp plan --all`` spent 24 of its 28 s
calibrating diffprivlib in its side environment, every time): a second calibrator (a
later process) on the same machine and code fits nothing it fitted before, whatever its
time budget; another machine, code, parameter or data version calibrates again; a
broken or foreign stored file is ignored; a plan of several experiments has the
overview's short budget and says which groups it left."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import tiny_spec

from dpexp.experiments import calibration
from dpexp.experiments import plan as plan_mod
from dpexp.experiments.calibration import CalibrationStore, Calibrator, _FitModel
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import expand

RF = {"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 5}}


@pytest.fixture()
def specs(tmp_path, monkeypatch):
    """Two tiny specs on synthA (2 folds of 300 rows), RF at depth 3 and at depth 4."""
    folder = tmp_path / "specs"
    folder.mkdir()
    for spec_id, depth in (("storeA", 3), ("storeB", 4)):
        algo = {**RF, "params": {**RF["params"], "max_depth": depth}}
        (folder / f"{spec_id}.yaml").write_text(yaml.safe_dump(tiny_spec(spec_id, algorithms=[algo])))
    monkeypatch.setenv("DPEXP_EXPERIMENTS_DIR", str(folder))
    return [resolve(s).at_scale("smoke") for s in ("storeA", "storeB")]


@pytest.fixture()
def fits(monkeypatch):
    """Each calibration fitted (its cell's experiment), a fixed model instead of fits."""
    calls: list[str] = []

    def fake(self, cell, params):
        calls.append(cell.experiment)
        return _FitModel(0.5, 0.001, params.get("n_estimators"), "calibrated: fake fits")

    monkeypatch.setattr(Calibrator, "_calibrate", fake)
    return calls


def _estimate(calibrator, spec):
    cell = expand(spec, "smoke", 0)[0]
    return calibrator.estimate(cell, spec)


def test_a_later_calibrator_uses_the_stored_calibration(tmp_path, specs, fits):
    store = CalibrationStore(tmp_path / "store")
    first = _estimate(Calibrator(store=store), specs[0])
    assert fits == ["storeA"] and len(list(store.folder.glob("*.json"))) == 1
    assert first[2].startswith("calibrated: fake fits to 150 rows")
    again = _estimate(Calibrator(store=store, budget_seconds=0), specs[0])  # budget spent
    assert fits == ["storeA"]  # nothing fitted: the stored calibration, at no cost
    assert again[:2] == first[:2]
    assert again[2].startswith("calibrated: fake fits (measured 20") and ", stored) to 150 rows" in again[2]
    # another depth is another calibration; within its budget, else it says so
    left = _estimate(Calibrator(store=store, budget_seconds=0), specs[1])
    assert left[0] is None and left[2] == ("unknown: calibration time budget (0 s) spent (calibrations "
                                           "are stored: the next plan calibrates further groups)")
    _estimate(Calibrator(store=store), specs[1])
    assert fits == ["storeA", "storeB"] and len(list(store.folder.glob("*.json"))) == 2


def test_another_machine_or_code_calibrates_again(tmp_path, specs, fits, monkeypatch):
    store = CalibrationStore(tmp_path / "store")
    _estimate(Calibrator(store=store), specs[0])
    calibration.machine_fingerprint.cache_clear()
    monkeypatch.setattr(calibration, "_code_digest", lambda: "another revision of the fitting code")
    try:
        _estimate(Calibrator(store=store), specs[0])
        assert fits == ["storeA", "storeA"]
        monkeypatch.setattr(calibration.platform, "node", lambda: "another-host")
        calibration.machine_fingerprint.cache_clear()
        _estimate(Calibrator(store=store), specs[0])
        assert fits == ["storeA"] * 3
    finally:
        calibration.machine_fingerprint.cache_clear()


def test_the_key_holds_what_decides_a_fit_and_no_path(tmp_path, specs):
    cell = expand(specs[0], "smoke", 0)[0]
    key = json.loads(CalibrationStore.key(cell, {"n_estimators": 3}))
    assert key["algorithm"] == "breiman_rf" and key["dataset"] == "synthA"
    assert key["private"] is False and key["params"] == {"n_estimators": 3}
    assert set(json.loads(key["machine"])) == {"host", "arch", "cpus", "python", "packages", "code"}
    text = CalibrationStore.key(cell, {"n_estimators": 3})
    assert str(tmp_path) not in text and str(calibration.Path(__file__).parents[2]) not in text
    assert CalibrationStore.key(cell, {"n_estimators": 4}) != text
    assert "epsilon" not in key  # calibrations are shared across epsilons, as in a process


def test_broken_or_foreign_files_are_ignored_and_an_unwritable_store_is_harmless(tmp_path, specs, fits):
    store = CalibrationStore(tmp_path / "store")
    _estimate(Calibrator(store=store), specs[0])
    [path] = store.folder.glob("*.json")
    path.write_text("{not json")
    _estimate(Calibrator(store=store), specs[0])
    assert fits == ["storeA"] * 2
    stored = json.loads(path.read_text())
    path.write_text(json.dumps({**stored, "key": "another calibration's key"}))
    _estimate(Calibrator(store=store), specs[0])
    assert fits == ["storeA"] * 3
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    result = _estimate(Calibrator(store=CalibrationStore(blocked / "store")), specs[0])
    assert result[0] is not None  # calibrated, just not stored
    _estimate(Calibrator(store=False), specs[0])
    assert fits == ["storeA"] * 5


def test_a_real_calibration_is_stored_and_read_back(tmp_path, specs):
    store = CalibrationStore(tmp_path / "store")
    first = _estimate(Calibrator(store=store), specs[0])
    assert first[0] > 0 and first[2].startswith("calibrated: ")
    [path] = store.folder.glob("*.json")
    stored = json.loads(path.read_text())
    assert {"key", "fixed", "per_row", "trees", "how", "measured"} <= set(stored)
    again = _estimate(Calibrator(store=store), specs[0])
    assert again[:2] == pytest.approx(first[:2]) and "stored)" in again[2]


def test_a_plan_of_several_experiments_has_the_overview_budget(tmp_path, specs, monkeypatch):
    budgets = []

    class Recording(Calibrator):
        def __init__(self, budget_seconds=None, store=None, in_process_only=False):
            budgets.append((budget_seconds, in_process_only))
            super().__init__(budget_seconds, store=CalibrationStore(tmp_path / "store"),
                             in_process_only=in_process_only)

    monkeypatch.setattr(plan_mod, "Calibrator", Recording)
    monkeypatch.setattr(Calibrator, "_calibrate", lambda self, cell, params: _FitModel(
        0.5, 0.001, None, "calibrated: fake fits"))
    plan_mod.make_plans(specs, "smoke", tmp_path / "results")
    plan_mod.make_plan(specs[0], "smoke", tmp_path / "results")
    assert budgets == [(calibration.OVERVIEW_BUDGET_SECONDS, True), (None, False)]
    assert calibration.OVERVIEW_BUDGET_SECONDS < calibration.CALIBRATION_BUDGET_SECONDS


def test_an_overview_does_not_calibrate_in_a_side_environment(tmp_path, specs, fits, monkeypatch):
    """A fit in a side environment takes seconds and ran past the overview's budget: an
    overview says which plan calibrates it; a plan of its own experiment does."""
    monkeypatch.setattr(calibration, "fits_out_of_process", lambda algorithm: True)
    store = CalibrationStore(tmp_path / "store")
    left = _estimate(Calibrator(store=store, in_process_only=True), specs[0])
    assert fits == [] and left[0] is None
    assert left[2] == ("unknown: its fits run in a side environment, which an overview does "
                       "not calibrate (`dpexp plan storeA` does, and stores it)")
    own = _estimate(Calibrator(store=store), specs[0])
    assert fits == ["storeA"] and own[2].startswith("calibrated: fake fits")
    stored = _estimate(Calibrator(store=store, in_process_only=True), specs[0])
    assert fits == ["storeA"] and "stored)" in stored[2]  # a stored calibration is used
