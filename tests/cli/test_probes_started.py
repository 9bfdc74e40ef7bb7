"""``list``, ``plan`` and ``report`` start the optional packages' import probes first, all
together in the background (issue 43: on a fresh machine they were probed one after
another when first asked): every registered algorithm's packages for ``list`` and
``report``, the planned experiments' for ``plan``."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dpexp import optional_packages
from dpexp.cli import app
from dpexp.paths import project_root
from dpexp.registry import all_algorithms


@pytest.fixture
def started(monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(optional_packages, "start_probes", lambda packages: calls.append(list(packages)))
    return calls


def test_list_starts_every_optional_packages_probe(started, tmp_path):
    res = CliRunner().invoke(app, ["list", "--json", "--results-dir", str(project_root() / "results")])
    assert res.exit_code == 0, res.output
    every = {p for info in all_algorithms().values() for p in info.requires}
    assert len(started) == 1 and set(started[0]) == every and len(every) >= 3


@pytest.mark.parametrize("experiment, packages", [("xgbdp-table2", {"xgboost"}),
                                                  ("dpboost-fig2", set())])
def test_plan_starts_the_probes_of_its_experiments_packages(started, tmp_path, experiment, packages):
    res = CliRunner().invoke(app, ["plan", experiment, "--no-calibrate", "--results-dir",
                                   str(tmp_path / "results")])
    assert res.exit_code == 0, res.output
    assert [set(s) for s in started] == [packages]
