"""`dpexp audit` through the CLI (quick sizes)."""

from __future__ import annotations

import json
from dataclasses import replace

from typer.testing import CliRunner

from dpexp.audit.catalogue import get_audit_target
from dpexp.cli import app
from dpexp.cli import audit as cli_audit_module

runner = CliRunner()


def test_correct_mechanism_passes():
    res = runner.invoke(app, ["audit", "laplace", "--quick", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["passed"] and data["claimed_epsilon"] == 1.0
    assert 0.5 < data["epsilon_lower_bound"] <= 1.0


def test_broken_fixture_exits_non_zero():
    res = runner.invoke(app, ["audit", "laplace_half_scale", "--broken", "--quick"])
    assert res.exit_code == 1, res.output
    assert "laplace_half_scale" in res.output


def test_smooth_sensitivity_rule_is_flagged():
    res = runner.invoke(app, ["audit", "smooth_sensitivity_2017", "--quick"])
    assert res.exit_code == 1
    assert "flagged as expected" in res.output


def test_bad_audit_input():
    res = runner.invoke(app, ["audit", "lapalce"])
    assert res.exit_code == 2 and "Did you mean 'laplace'" in res.output
    res = runner.invoke(app, ["audit", "laplace", "--epsilon", "-1"])
    assert res.exit_code == 2 and "epsilon" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["audit"])
    assert res.exit_code == 2 and "--all" in res.output


# ------------------------------------------------------------------ --all, --json, exit codes


def _small_registry(monkeypatch, real: dict, broken: dict | None = None) -> None:
    """Make ``--all`` audit only ``real`` (and ``broken``): the full run takes minutes."""
    pools = {False: dict(real), True: dict(broken or {})}
    monkeypatch.setattr(cli_audit_module, "audit_targets",
                        lambda *, broken=False, include_algorithms=True: pools[broken])


def _targets(*names: str) -> dict:
    return {n: get_audit_target(n) for n in names}


def _fake_end_to_end(name: str = "fake_estimator_e2e", **changes):
    base = get_audit_target("rosnam")
    return replace(base, name=name, kind="end-to-end", algorithm="fletcher_forest",
                   quick_samples=2_000, **changes)


def test_all_json_lists_kind_algorithm_claim_bound_outcome(monkeypatch):
    e2e = _fake_end_to_end()
    _small_registry(monkeypatch, {**_targets("laplace", "smooth_sensitivity_2017"), e2e.name: e2e})
    res = runner.invoke(app, ["audit", "--all", "--quick", "--json"])
    assert res.exit_code == 0, res.output  # the known-unprivate rule is flagged as expected
    rows = {r["name"]: r for r in json.loads(res.stdout)}
    assert set(rows) == {"laplace", "smooth_sensitivity_2017", e2e.name}
    for row in rows.values():
        for key in ("kind", "algorithm", "claimed_epsilon", "epsilon_lower_bound", "outcome"):
            assert key in row
    assert rows[e2e.name]["kind"] == "end-to-end"
    assert rows[e2e.name]["algorithm"] == "fletcher_forest"
    assert rows["laplace"]["kind"] == "mechanism" and rows["laplace"]["algorithm"] is None
    assert rows["smooth_sensitivity_2017"]["outcome"] == "known unprivate, flagged as expected"
    assert rows[e2e.name]["samples"] == 2_000  # --quick is the target's CI size


def test_all_exits_1_only_on_an_unexpected_outcome(monkeypatch):
    leak = replace(get_audit_target("laplace_half_scale"), name="leaky_e2e",
                   kind="end-to-end", algorithm="dpboost", expected_to_pass=True)
    _small_registry(monkeypatch, {**_targets("laplace"), leak.name: leak})
    res = runner.invoke(app, ["audit", "--all", "--quick"])
    assert res.exit_code == 1, res.output
    assert "leaky_e2e [end-to-end: dpboost]" in res.output and "FAIL" in res.output
    assert "UNEXPECTED: leaky_e2e" in res.output  # the closing summary names it


def test_all_broken_exits_0_when_every_fixture_is_flagged(monkeypatch):
    _small_registry(monkeypatch, {}, _targets("laplace_half_scale", "forest_position_blocks"))
    res = runner.invoke(app, ["audit", "--all", "--broken", "--quick"])
    assert res.exit_code == 0, res.output
    assert "2 targets (0 end-to-end): 0 passed, 2 flagged as expected, 0 unexpected" in res.output


def test_one_name_exits_by_its_bound_not_by_expectation():
    res = runner.invoke(app, ["audit", "laplace_half_scale", "--quick", "--json"])
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert data["as_expected"] is True and data["passed"] is False


def test_bad_numbers_and_combinations_are_one_line_errors():
    for args, word in [
        (["audit", "laplace", "--samples", "10"], "--samples"),
        (["audit", "laplace", "--seed", "-3"], "--seed"),
        (["audit", "--all", "--epsilon", "1"], "--epsilon"),
        (["audit", "laplace", "--all"], "--all"),
    ]:
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert word in res.output and "Traceback" not in res.output


def test_a_release_path_twin_is_flagged_through_the_cli():
    # issue #38: the runner before the fix (n_records = len(X)) crosses JPW's depth boundary
    res = runner.invoke(app, ["audit", "jpw_runner_n_from_len_x", "--broken", "--quick", "--json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    assert data["kind"] == "end-to-end" and data["algorithm"] == "jpw"
    assert data["as_expected"] and data["epsilon_lower_bound"] > data["claimed_epsilon"]
