"""End-to-end: `dpexp run fig2 --scale smoke` through the CLI."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner


@pytest.mark.slow
def test_cli_fig2_smoke(tmp_path):
    """Real adult data from the session's source (tests/conftest.py: shared copies or skip)."""
    from dpexp.cli import app

    res = CliRunner().invoke(app, [
        "run", "fig2", "--scale", "smoke", "--results-dir", str(tmp_path / "res"),
        "--figures-dir", str(tmp_path / "fig"), "-q",
    ])
    assert res.exit_code == 0, res.output
    csv = tmp_path / "res" / "dpboost-fig2" / "results-smoke.csv"
    assert csv.exists()
    import pandas as pd

    rows = pd.read_csv(csv)
    assert set(rows["algorithm"]) >= {"dpboost", "seq", "para", "np_gbdt"}
    private = rows[rows["algorithm"] != "np_gbdt"]
    assert (private["epsilon_spent"] <= private["epsilon"] * (1 + 1e-9)).all()
