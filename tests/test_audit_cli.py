"""`dpexp audit` through the CLI (quick sizes)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from dpexp.cli import app

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
