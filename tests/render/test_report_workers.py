"""``dpexp report`` builds its sections in forked worker processes (issue 43: one core
read and rendered 57 artefacts one after another); the files are the same, byte for byte,
as built in one process, and the optional packages' probes are collected before forking."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from dpexp import optional_packages
from dpexp.cli import app
from dpexp.render import report
from dpexp.render.report import report_workers, write_report

FILES = ("REPORT-smoke.md", "report-smoke.html", "summary-smoke.json")


def _texts(results):
    # the generation time is the one line that differs between two reports
    return {f: re.sub(r"generated(\*\*|</strong>): [^<\s]+", "generated", (results / f).read_text()) for f in FILES}


def test_sections_built_in_workers_make_the_same_files(tmp_path, monkeypatch):
    r, f = tmp_path / "results", tmp_path / "figures"
    res = CliRunner().invoke(app, ["run", "quickstart", "--results-dir", str(r), "--figures-dir", str(f),
                                   "--no-render"])
    assert res.exit_code == 0, res.output
    forked = []
    pool = report.ProcessPoolExecutor

    def counted(*args, **kwargs):
        forked.append(args[0] if args else kwargs.get("max_workers"))
        return pool(*args, **kwargs)

    monkeypatch.setattr(report, "ProcessPoolExecutor", counted)
    seen = []
    write_report(r, f, "smoke", progress=lambda i, n, exp: seen.append(exp), workers=1)
    alone = _texts(r)
    assert forked == []
    seen_parallel = []
    write_report(r, f, "smoke", progress=lambda i, n, exp: seen_parallel.append(exp), workers=2)
    assert forked == [2]
    assert _texts(r) == alone
    assert "quickstart" in alone["REPORT-smoke.md"]
    assert sorted(seen_parallel) == sorted(seen) and len(seen) > 10  # each section once


def test_probes_are_collected_before_the_workers_fork(tmp_path, monkeypatch):
    order = []
    monkeypatch.setattr(report, "finish_probes", lambda: order.append("probes"))
    pool = report.ProcessPoolExecutor

    def forking(*args, **kwargs):
        order.append("fork")
        return pool(*args, **kwargs)

    monkeypatch.setattr(report, "ProcessPoolExecutor", forking)
    write_report(tmp_path / "results", tmp_path / "figures", "smoke", workers=2)
    assert order == ["probes", "fork"]
    assert not optional_packages._RUNNING


def test_report_workers_is_at_most_two():
    assert 1 <= report_workers() <= 2
