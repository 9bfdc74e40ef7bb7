"""The leaderboard's part of its report section (issue 44), on hand-made result frames with
known answers: the ranking table (entry, mean rank, mean score, privacy status), the
Friedman/Nemenyi reading, the CD diagram or why there is none, the price of privacy per
dataset; with no results, the command and no number."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from dpexp.experiments.catalog import resolve
from dpexp.render.leaderboard import boards, entry_status, price_of_privacy, ranking_table
from dpexp.render.leaderboard_audit import NO_RECORD, NON_PRIVATE, LeaderboardAudit
from dpexp.render.leaderboard_section import (
    NOT_DP_MARK,
    LeaderboardPart,
    board_md,
    is_leaderboard,
    leaderboard_blocks,
    price_blocks,
)
from dpexp.render.report import write_report

INF = math.inf
METRICS = {"classification": "error"}


def rows(spec: list[tuple[str, str, float, float, bool]]) -> pd.DataFrame:
    """Result rows, one fold each: (dataset, label, epsilon, error, private)."""
    return pd.DataFrame([
        {"dataset": d, "label": label, "epsilon": eps, "fold": 0, "repeat": 0, "seed": 0,
         "metric": "error", "metric_kind": "metric", "value": v, "private": private,
         "not_dp_reason": "" if private or not math.isfinite(eps) else "domain observed",
         "delta_spent": 0.0 if math.isfinite(eps) else INF}
        for d, label, eps, v, private in spec])


def six_datasets() -> pd.DataFrame:
    """A always best of the DP entries, C always worst, R (non-private) best of all."""
    spec = []
    for i in range(6):
        d = f"d{i}"
        spec += [(d, "A", 1.0, 0.20 + 0.01 * i, True), (d, "B", 1.0, 0.25 + 0.01 * i, True),
                 (d, "C", 1.0, 0.40 + 0.01 * i, True), (d, "R", INF, 0.10 + 0.01 * i, False)]
    return rows(spec)


def test_a_board_shows_its_ranks_status_tests_and_cd_diagram(tmp_path):
    pytest.importorskip("autorank", reason="the leaderboard extra (autorank) is not installed")
    frame = six_datasets()
    [board] = boards(frame, METRICS)
    table = ranking_table(board, entry_status(frame))
    diagram = tmp_path / "figures" / "lb" / "lb-cd-classification-eps1-smoke.png"
    audit = LeaderboardAudit({"A": "2 targets, ε̂ ≥ 0.41 (claim ε = 1): pass", "R": NON_PRIVATE,
                              "B": "not audited: needs the optional package(s) interpret"}, "")
    md = board_md(board, table, diagram, tmp_path / "results", audit)
    text = "\n".join(md)
    assert md[0] == "##### classification, ε = 1 (error, lower is better)"
    assert "*Blocks:* 6 datasets." in text
    assert re.search(r"\*\*Friedman p = 0\.000\d+\*\* \(the entries differ at 0\.05\); "
                     r"\*\*Nemenyi post-hoc: CD = 1\.91\*\*", text), text
    body = [x for x in md if re.match(r"\| \d", x)]
    assert body == [
        "| 1 | R | 1.00 | 0.125 | non-private reference | — | rank 1 |",
        "| 2 | A | 2.00 | 0.225 | ε-DP | 2 targets, ε̂ ≥ 0.41 (claim ε = 1): pass | within CD |",
        "| 3 | B | 3.00 | 0.275 | ε-DP | not audited: needs the optional package(s) interpret "
        "| differs (beyond CD) |",
        "| 4 | C | 4.00 | 0.425 | ε-DP | not audited: not an entry of the leaderboard's spec "
        "| differs (beyond CD) |",
    ]
    image = "../figures/lb/lb-cd-classification-eps1-smoke.png"
    assert f"![critical-difference diagram, classification, ε = 1]({image})" in md


def test_an_untested_board_says_why_it_has_no_diagram(tmp_path):
    frame = six_datasets()
    frame = frame[frame["dataset"].isin(["d0", "d1"])]  # 2 blocks: below autorank's 5
    [board] = boards(frame, METRICS)
    no_record = LeaderboardAudit(dict.fromkeys("ABCR", NO_RECORD), "")
    text = "\n".join(board_md(board, ranking_table(board, entry_status(frame)), None, tmp_path,
                              no_record))
    assert "not tested: the Friedman test needs 5 blocks and two entries (here 2 and 4)" in text
    assert "Friedman p" not in text
    assert ("| 2 | A | 2.00 | 0.205 | ε-DP | no audit record (run dpexp audit --all --record) "
            "| not tested |") in text
    assert "*No critical-difference diagram:* the board is not tested" in text


def test_the_price_of_privacy_takes_the_best_dp_entry_and_flags_runs_that_are_not_dp(tmp_path):
    frame = rows([
        # d1: B scores lower but its rows are not DP; A is the price of privacy there
        ("d1", "A", 1.0, 0.30, True), ("d1", "B", 1.0, 0.22, False), ("d1", "R", INF, 0.20, False),
        # d2: no entry is DP (an observed domain): the best run is shown, flagged
        ("d2", "A", 1.0, 0.50, False), ("d2", "B", 1.0, 0.45, False), ("d2", "R", INF, 0.40, False),
    ])
    price = price_of_privacy(frame, METRICS)
    assert price.set_index(["dataset", "label"])["private"].to_dict() == {
        ("d1", "A"): True, ("d1", "B"): False, ("d2", "A"): False, ("d2", "B"): False}
    table, every = price_blocks(price, tmp_path)
    lines = table.markdown.splitlines()
    assert "| classification | d1 | R: 0.2 | +0.1 (A) |" in lines
    assert f"| classification | d2 | R: 0.4 | +0.05{NOT_DP_MARK} (B) |" in lines
    assert f"| classification | d1 | B | +0.02{NOT_DP_MARK} |" in every.markdown
    assert every.html.startswith("<details><summary>") and "<table>" in every.html


def test_no_results_gives_the_command_and_no_number(tmp_path):
    spec = resolve("leaderboard")
    assert is_leaderboard(spec) and not is_leaderboard(resolve("fig2"))
    [block] = leaderboard_blocks(LeaderboardPart(spec, None), tmp_path)
    assert "`dpexp leaderboard --scale paper --jobs 2`" in block.markdown
    assert not re.search(r"\d\.\d", block.markdown)  # no score, no rank
    # the report of an empty results directory says it in the leaderboard's section
    md, _ = write_report(tmp_path / "results", tmp_path / "figures", scale="smoke")
    text = md.read_text()
    section = text[text.index('<a id="leaderboard"></a>'):]
    section = section[:section.index('<a id="', 1)]
    assert "#### The leaderboard\n\nNo result yet" in section
    assert "`dpexp leaderboard --scale paper --jobs 2`" in section

