"""The leaderboard's ``audit`` column (issue 44), from a small hand-made audit record written
and read back as ``dpexp audit --all --record`` does: a DP entry's targets and largest bound
against its claim with the verdict, ``not audited`` with the reason, ``—`` for a non-private
reference, the command when no record exists; and the column in the rendered section."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from dpexp.audit.record import (
    AuditRecord,
    RecordedTarget,
    Unaudited,
    read_record,
    record_paths,
    write_record,
)
from dpexp.experiments.catalog import resolve
from dpexp.render.audit_summary import audit_summary_block
from dpexp.render.leaderboard import boards, entry_status, ranking_table
from dpexp.render.leaderboard_audit import NO_RECORD, NON_PRIVATE, leaderboard_audit
from dpexp.render.leaderboard_files import LeaderboardFiles
from dpexp.render.leaderboard_section import LeaderboardPart, leaderboard_blocks

SPEC = resolve("leaderboard")


def _target(name: str, algorithm: str | None, bound: float | None, outcome: str = "pass", *,
            delta: float = 0.0, kind: str = "end-to-end", skipped: str = "") -> RecordedTarget:
    return RecordedTarget(
        name=name, kind=kind, algorithm=algorithm, release_paths=(), source="tests",
        description="", claimed_epsilon=1.0, claimed_delta=delta, epsilon_lower_bound=bound,
        samples=300, alpha=1e-6, expected_to_pass=True, outcome=outcome, skipped=skipped)


def _record() -> AuditRecord:
    interpret = "needs the optional package(s) interpret"
    return AuditRecord(
        suite="correct", mode="quick", seed=0, revision="0123456789ab",
        targets=(
            _target("laplace", None, 0.93, kind="mechanism"),
            _target("dpboost_a", "dpboost", 0.41), _target("dpboost_b", "dpboost", -0.12),
            _target("dpboost_defaults", "dpboost", -math.inf),
            _target("jpw_a", "jpw", 0.2), _target("jpw_b", "jpw", 1.7, "flagged"),
            _target("gbdt_a", "gaussian_bdt", 0.0, delta=1e-6),
            _target("ebm_a", "dp_ebm", None, "skipped", delta=1e-6, skipped=interpret),
        ),
        unaudited=(Unaudited("dp_ebm", f"{interpret} (not importable where the record was "
                                       "written)"),
                   Unaudited("fletcher_forest", "no end-to-end audit target declared")),
        recorded_at="2026-11-27T00:00:00+00:00")


def test_the_column_shows_targets_bound_claim_and_verdict(tmp_path):
    write_record(_record(), tmp_path, "dpexp audit --all --quick --record")
    audit = leaderboard_audit(SPEC, tmp_path)
    cells = audit.cells
    assert cells["DPBoost"] == "3 targets, ε̂ ≥ 0.41 (claim ε = 1): pass"
    assert cells["JPW"] == "2 targets, ε̂ ≥ 1.70 (claim ε = 1): FLAGGED (jpw_b)"
    # a bound at or below 0 detects nothing: shown as 0 (epsilon is never negative)
    assert cells["Gaussian BDT"] == "1 target, ε̂ ≥ 0.00 (claim ε = 1, δ = 1e-06): pass"
    assert cells["DP-EBM (InterpretML)"] == ("not audited: needs the optional package(s) "
                                             "interpret (not importable where the record was "
                                             "written)")
    assert cells["Fletcher-Islam forest"] == "not audited: no end-to-end audit target declared"
    assert cells["SEQ"] == "not audited: no end-to-end audit target in the record"
    assert cells["LightGBM (defaults)"] == cells["RandomForest (defaults)"] == NON_PRIVATE
    assert "`audit/audit.json` (quick mode, seed 0, dpexp revision `0123456789ab`" in audit.caption
    assert "8 targets, **1 unexpected outcome(s)**" in audit.caption
    assert str(tmp_path) not in audit.caption  # the report stays the same wherever it is built


def test_without_a_record_every_entry_says_how_to_write_one(tmp_path):
    audit = leaderboard_audit(SPEC, tmp_path)
    assert set(audit.cells.values()) == {NO_RECORD}
    assert NO_RECORD == "no audit record (run dpexp audit --all --record)"
    assert "no audit record (`audit/audit.json`)" in audit.caption
    path = record_paths(tmp_path)[0]
    path.parent.mkdir(parents=True)
    path.write_text("{")
    unreadable = leaderboard_audit(SPEC, tmp_path)
    assert "cannot be read" in unreadable.caption
    assert unreadable.cells["DPBoost"] == "audit record unreadable (run dpexp audit --all --record)"


def test_the_record_round_trips(tmp_path):
    record = _record()
    json_path, md_path = write_record(record, tmp_path, "dpexp audit --all --quick --record")
    assert read_record(json_path) == record
    md = md_path.read_text()
    assert "| jpw_b | end-to-end: jpw | ε = 1 | 1.700 | 300 | flagged |" in md
    assert "| dpboost_defaults | end-to-end: dpboost | ε = 1 | -inf | 300 | pass |" in md
    assert "* fletcher_forest: no end-to-end audit target declared" in md


def test_the_rendered_ranking_table_has_the_audit_column(tmp_path):
    write_record(_record(), tmp_path, "dpexp audit --all --quick --record")
    entries = {"DPBoost": (0.20, True), "DP-EBM (InterpretML)": (0.25, True),
               "LightGBM (defaults)": (0.10, False)}
    frame = pd.DataFrame([
        {"dataset": f"d{i}", "label": label, "epsilon": 1.0 if private else math.inf,
         "fold": 0, "repeat": 0, "seed": 0, "metric": "error", "metric_kind": "metric",
         "value": value + 0.01 * i, "private": private, "not_dp_reason": "",
         "delta_spent": 0.0 if private else math.inf}
        for i in range(2) for label, (value, private) in entries.items()])
    [board] = boards(frame, {"classification": "error"})
    files = LeaderboardFiles([board], [ranking_table(board, entry_status(frame))], {})
    blocks = leaderboard_blocks(LeaderboardPart(SPEC, "smoke", files), tmp_path)
    text = "\n".join(b.markdown for b in blocks)
    assert "| # | entry | mean rank | mean error | privacy | audit | vs rank 1 (post-hoc) |" in text
    assert ("| 2 | DPBoost | 2.00 | 0.205 | ε-DP | 3 targets, ε̂ ≥ 0.41 (claim ε = 1): pass "
            "| not tested |") in text
    assert "| 1 | LightGBM (defaults) | 1.00 | 0.105 | non-private reference | — | rank 1 |" in text
    assert "| DP-EBM (InterpretML) | 3.00 | 0.255 | ε-DP | not audited: needs the optional" in text
    assert "*Audit column:* from the audit record `audit/audit.json`" in text


def test_the_report_summarises_the_record_per_paper(tmp_path):
    no_record = audit_summary_block(tmp_path).markdown
    assert no_record.startswith("## Privacy audit\n\nNo audit record (`audit/audit.json`)")
    assert "`dpexp audit --all --record`" in no_record
    record = _record()
    record = replace(record, targets=tuple(
        replace(t, source="dpexp.audit.mechanism_targets" if t.algorithm is None
                else f"dpexp.papers.{'fletcher' if t.algorithm == 'jpw' else 'x'}.audit")
        for t in record.targets))
    write_record(record, tmp_path, "dpexp audit --all --quick --record")
    md = audit_summary_block(tmp_path).markdown
    assert "(quick mode, seed 0, dpexp revision `0123456789ab`, α = 1e-06 per release)" in md
    assert "8 targets, 6 pass, 1 **FLAGGED**, 1 skipped." in md
    assert ("- **fletcher**: 2 targets: 1 pass, 1 **FLAGGED**; largest ε̂ of a target "
            "expected to pass 1.70 (claim ε = 1, jpw\\_b)") in md.splitlines()
    assert "- **primitives (dpexp.audit)**: 1 target: 1 pass; largest" in md
    assert "*Private algorithms no target covers:* dp\\_ebm (needs the optional" in md
