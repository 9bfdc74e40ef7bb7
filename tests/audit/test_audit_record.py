"""``dpexp audit --all --record``: the audit kept as a record (issue 44).

Two ``--quick`` runs of a mechanism target and one estimator's end-to-end target give
identical files but ``recorded_at``; the record says what each target audits, its claim,
bound, draws, alpha and outcome, the seed, the mode and the revision; a private algorithm
whose only target cannot run here is listed as unaudited with the reason; the CLI's errors
are one line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpexp.audit import run as audit_run
from dpexp.audit.catalogue import get_audit_target
from dpexp.audit.record import (
    OUTCOMES,
    RECORD_FORMAT,
    AuditRecordError,
    private_algorithms,
    read_record,
    record_paths,
)
from dpexp.cli import app
from dpexp.cli import audit as cli_audit_module
from dpexp.experiments.environment import git_revision

runner = CliRunner()

#: A mechanism target (about 1 s at its quick size) and an estimator's end-to-end target
#: (about 4 s: 4 x 300 fits of XGBoost-DP's classifier).
MECHANISM, ESTIMATOR = "laplace", "xgboost_dp_last_record_of_class"
#: The defaults path of the same estimator: its default noise source is fresh OS entropy.
UNSEEDED = "xgboost_dp_defaults"
TARGET_KEYS = {"name", "kind", "algorithm", "release_paths", "source", "description",
               "claimed_epsilon", "claimed_delta", "epsilon_lower_bound", "samples", "alpha",
               "expected_to_pass", "outcome", "event", "pair", "mu_lower_bound", "mu_claim",
               "skipped", "seeded"}


def _only(monkeypatch, *names: str, broken: bool = False) -> None:
    """``--all`` audits only ``names`` (the full run takes minutes)."""
    pool = {n: get_audit_target(n, broken=broken) for n in names}
    monkeypatch.setattr(cli_audit_module, "audit_targets",
                        lambda *, broken=False, include_algorithms=True: pool)


def _record(results_dir, *extra: str) -> tuple[int, str]:
    res = runner.invoke(app, ["audit", "--all", "--quick", "--record", "--results-dir",
                              str(results_dir), *extra])
    return res.exit_code, res.output


def test_two_quick_runs_give_the_same_record_but_recorded_at(monkeypatch, tmp_path):
    _only(monkeypatch, MECHANISM, ESTIMATOR, UNSEEDED)
    texts = []
    for i in (1, 2):
        code, output = _record(tmp_path / f"run{i}")
        assert code == 0, output
        json_path, md_path = record_paths(tmp_path / f"run{i}")
        assert f"audit record: {json_path} and {md_path}" in output
        texts.append(json_path.read_text())
    first, second = (json.loads(t) for t in texts)
    assert first.pop("recorded_at") and second.pop("recorded_at")
    assert first == second
    # the defaults path draws fresh entropy: no event (hashes of random outputs), bound >= 0
    unseeded = first["targets"][2]
    assert unseeded["name"] == UNSEEDED and unseeded["seeded"] is False
    assert unseeded["event"] == "" and unseeded["pair"] == []
    assert unseeded["epsilon_lower_bound"] == 0.0 and unseeded["outcome"] == "pass"
    assert all(t["seeded"] for t in first["targets"][:2])
    # nothing in the file says where or when it was written, but recorded_at
    assert str(tmp_path) not in texts[0] and "seconds" not in texts[0]


def test_the_record_says_what_was_audited_with_what_bound(monkeypatch, tmp_path):
    _only(monkeypatch, MECHANISM, ESTIMATOR)
    code, output = _record(tmp_path, "--seed", "3")
    assert code == 0, output
    json_path, md_path = record_paths(tmp_path)
    data = json.loads(json_path.read_text())
    assert data["format"] == RECORD_FORMAT and data["suite"] == "correct"
    assert data["mode"] == "quick" and data["seed"] == 3 and data["alpha"] == 1e-6
    assert data["revision"] == git_revision()
    assert data["counts"] == {**dict.fromkeys(OUTCOMES, 0), "pass": 2}
    rows = {t["name"]: t for t in data["targets"]}
    assert list(rows) == [MECHANISM, ESTIMATOR]
    for row in rows.values():
        assert set(row) == TARGET_KEYS
        assert row["outcome"] == "pass" and row["alpha"] == 1e-6
        assert row["epsilon_lower_bound"] <= row["claimed_epsilon"] == 1.0
        assert row["event"] and len(row["pair"]) == 2
    mech, e2e = rows[MECHANISM], rows[ESTIMATOR]
    assert (mech["kind"], mech["algorithm"], mech["samples"]) == ("mechanism", None, 100_000)
    assert mech["source"] == "dpexp.audit.mechanism_targets"
    assert mech["epsilon_lower_bound"] > 0.5  # a correct Laplace mechanism is nearly tight
    assert (e2e["kind"], e2e["algorithm"], e2e["samples"]) == ("end-to-end", "xgboost_dp", 300)
    assert e2e["source"] == "dpexp.papers.xgbdp.audit"
    # every other private algorithm has no target in this (two-target) record
    unaudited = {u["algorithm"]: u["reason"] for u in data["unaudited"]}
    assert set(unaudited) == set(private_algorithms()) - {"xgboost_dp"}
    assert unaudited["jpw"] == "no end-to-end audit target declared"
    # the markdown table: one row per target, the command that wrote it
    md = md_path.read_text()
    assert "`dpexp audit --all --quick --seed 3 --record`" in md
    assert f"| {ESTIMATOR} | end-to-end: xgboost_dp | ε = 1 | " in md
    assert "| 300 | pass |" in md and "* jpw: no end-to-end audit target declared" in md
    record = read_record(json_path)
    assert record is not None and record.as_expected and record.targets[0].name == MECHANISM


def test_a_target_that_cannot_run_here_is_recorded_as_skipped_with_why(monkeypatch, tmp_path):
    _only(monkeypatch, MECHANISM, "dp_ebm_corner_record")
    real = audit_run.missing_requirements
    monkeypatch.setattr(audit_run, "missing_requirements",
                        lambda t: ["interpret"] if t.algorithm == "dp_ebm" else real(t))
    code, output = _record(tmp_path)
    assert code == 0, output
    assert "dp_ebm_corner_record: skipped (needs the optional package(s) interpret)" in output
    record = read_record(record_paths(tmp_path)[0])
    assert record is not None
    skipped = record.targets[1]
    assert (skipped.outcome, skipped.epsilon_lower_bound) == ("skipped", None)
    assert skipped.skipped == "needs the optional package(s) interpret"
    assert skipped.source == "dpexp.papers.peers.audit" and skipped.samples == 300
    assert (skipped.claimed_epsilon, skipped.claimed_delta) == (1.0, 1e-6)
    reasons = {u.algorithm: u.reason for u in record.unaudited}
    assert reasons["dp_ebm"] == ("needs the optional package(s) interpret (not importable "
                                 "where the record was written)")


def test_broken_twins_go_to_their_own_record_as_expected_flagged(monkeypatch, tmp_path):
    _only(monkeypatch, "laplace_half_scale", broken=True)
    code, output = _record(tmp_path, "--broken")
    assert code == 0, output
    assert not record_paths(tmp_path)[0].exists()  # the correct targets' record is untouched
    json_path, md_path = record_paths(tmp_path, broken=True)
    assert json_path.name == "audit-broken.json" and md_path.name == "AUDIT-broken.md"
    record = read_record(json_path)
    assert record is not None and record.suite == "broken"
    [target] = record.targets
    assert target.outcome == "expected-flagged" and not target.expected_to_pass
    assert target.epsilon_lower_bound is not None and target.epsilon_lower_bound > 1.0


def test_record_errors_are_one_line(monkeypatch, tmp_path):
    _only(monkeypatch, MECHANISM)
    blocker = tmp_path / "results"
    blocker.write_text("a file where the results folder should be")
    code, output = _record(blocker)
    assert code == 2 and "Traceback" not in output
    assert output.startswith("error:") and len(output.strip().splitlines()) == 1
    assert "not usable" in output and "is a file" in output
    res = runner.invoke(app, ["audit", "laplace", "--record", "--results-dir", str(tmp_path)])
    assert res.exit_code == 2 and "--record keeps the outcome of --all" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_a_malformed_record_is_a_clear_error(tmp_path):
    path = record_paths(tmp_path)[0]
    assert read_record(path) is None
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(AuditRecordError, match="cannot be read"):
        read_record(path)
    path.write_text(json.dumps({"format": RECORD_FORMAT + 1}))
    with pytest.raises(AuditRecordError, match="format"):
        read_record(path)
