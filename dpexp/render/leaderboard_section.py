"""The leaderboard's part of its section of ``dpexp report`` (issue 44).

Per task and ε: the ranking table (entry, mean rank over the blocks, mean score, privacy
status: ε-DP, (ε, δ)-DP with its δ, not DP with the reason, or non-private reference; the
audit of its algorithm from the committed audit record, :mod:`dpexp.render.leaderboard_audit`), the
Friedman test and its post-hoc (Nemenyi's critical difference; Demšar 2006, Sections 3.2.2
and 3.2.4) and the critical-difference diagram; then the price of privacy per dataset (a
DP entry's mean score minus the best non-private reference's). With no results yet, the
command that computes them -- never a number that was not computed.

A spec is a leaderboard when its ``paper`` is :data:`LEADERBOARD_PAPER`
(``experiments/leaderboard.yaml`` and any copy run with ``dpexp leaderboard --spec``). The
numbers come from :func:`dpexp.render.leaderboard_files.write_leaderboard`, on the cached
and committed cells the section's figure is drawn from, at the section's scale; the report
thereby rewrites the ranking files and CD diagrams as it rewrites every figure.
"""

from __future__ import annotations

import html
import math
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dpexp.errors import DpexpError
from dpexp.experiments.spec import ExperimentSpec
from dpexp.render.html import Block, render_block
from dpexp.render.leaderboard import ALPHA, Board
from dpexp.render.leaderboard_audit import LeaderboardAudit, leaderboard_audit
from dpexp.render.leaderboard_files import LeaderboardFiles, write_leaderboard
from dpexp.render.markup import SMOKE_LABEL, md_code, md_escape
from dpexp.render.numbers import plain
from dpexp.render.section import Section

#: The ``paper`` of a leaderboard spec: its section gets the ranks.
LEADERBOARD_PAPER = "leaderboard"
#: Marks a price of privacy taken from rows that are not DP (observed domains).
NOT_DP_MARK = "†"


def is_leaderboard(spec: ExperimentSpec) -> bool:
    """Whether ``spec`` is a leaderboard (its report section shows the ranks)."""
    return spec.paper == LEADERBOARD_PAPER


@dataclass(frozen=True)
class LeaderboardPart:
    """What the report shows of one leaderboard spec."""

    spec: ExperimentSpec
    #: The scale ranked (None: no result at any scale yet).
    scale: str | None
    #: The boards, ranking tables, diagrams and price of privacy (None: not computed).
    files: LeaderboardFiles | None = None
    #: Why the ranks could not be computed ("" when they were).
    problem: str = ""


def leaderboard_part(sec: Section, results_dir: Path, figures_dir: Path) -> LeaderboardPart:
    """The ranks of a leaderboard section at its scale (its cached and committed cells)."""
    if sec.scale is None:
        return LeaderboardPart(sec.spec, None)
    try:
        files = write_leaderboard(sec.spec.at_scale(sec.scale), sec.scale, Path(results_dir),
                                  Path(figures_dir), frame=sec.cached_frame)
    except DpexpError as exc:  # e.g. autorank missing: the section says so, the report goes on
        return LeaderboardPart(sec.spec, sec.scale, problem=str(exc))
    return LeaderboardPart(sec.spec, sec.scale, files)


def leaderboard_extras(sec: Section, results_dir: Path, figures_dir: Path) -> list[Block]:
    """The blocks appended to ``sec``: a leaderboard section's ranks, tests, CD diagrams
    and price of privacy (none for another section). They need that section alone, so
    ``dpexp report`` makes them where it builds the section, beside the others."""
    if not is_leaderboard(sec.spec):
        return []
    return leaderboard_blocks(leaderboard_part(sec, results_dir, figures_dir), results_dir)


def command(spec: ExperimentSpec, scale: str) -> str:
    """The command that computes (or completes) the leaderboard at ``scale``."""
    which = "" if spec.id == "leaderboard" else f" --spec {spec.id}"
    return f"dpexp leaderboard{which} --scale {scale} --jobs 2"


def leaderboard_blocks(part: LeaderboardPart, results_dir: Path) -> list[Block]:
    """The ranks, tests, CD diagrams and price of privacy of ``part`` as report blocks."""
    title = "#### The leaderboard"
    if part.scale is None:
        return [Block("\n".join([
            title, "", "No result yet: no entry is ranked. Compute the leaderboard (the plan "
            f"is printed first) with {md_code(command(part.spec, 'paper'))} "
            f"(a pipeline check: {md_code(command(part.spec, 'smoke'))}), then "
            f"{md_code('dpexp report')}.", ""]))]
    scale = SMOKE_LABEL if part.scale == "smoke" else f"{part.scale} scale"
    head = [f"{title} ({scale})", ""]
    if part.files is None:
        return [Block("\n".join([*head, f"**The ranks could not be computed:** "
                                 f"{md_escape(part.problem)}", ""]))]
    if not part.files.boards:
        return [Block("\n".join([*head, "No board has results yet: compute them with "
                                 f"{md_code(command(part.spec, part.scale))}.", ""]))]
    head += [f"Per task and ε, each entry's mean rank over the blocks (rank 1 = lowest "
             f"error or RMSE; ties share their mean rank), its mean score and its privacy "
             f"status. The Friedman test asks whether all entries are equivalent; where it "
             f"rejects at {ALPHA:g}, two entries differ when their mean ranks are more than "
             f"the Nemenyi critical difference (CD) apart (Demšar 2006), which the diagram "
             f"draws: entries joined by a bar do not differ. Computed by "
             f"{md_code(command(part.spec, part.scale))}.", ""]
    audit = leaderboard_audit(part.spec, Path(results_dir))
    head += [audit.caption, ""]
    blocks = [Block("\n".join(head))]
    for board, table in zip(part.files.boards, part.files.tables, strict=True):
        diagram = part.files.diagrams.get((board.task, board.epsilon))
        blocks.append(Block("\n".join(board_md(board, table, diagram, results_dir, audit))))
    if part.files.price is not None and not part.files.price.empty:
        blocks += price_blocks(part.files.price, results_dir)
    return blocks


def _test_md(board: Board) -> str:
    """The board's tests in words."""
    test = board.test
    blocks = f"*Blocks:* {md_escape(test.blocks.removeprefix('blocks: '))}."
    if test.p_value is None:
        return blocks
    p = plain(test.p_value, 3)
    if test.critical_difference is None:  # two entries: autorank's paired test, no CD
        verdict = "the two differ" if test.p_value < ALPHA else "no difference detected"
        return f"{blocks} **{md_escape(test.test_name)} p = {p}** ({verdict} at {ALPHA:g})."
    cd = plain(test.critical_difference, 3)
    if test.p_value < ALPHA:
        return (f"{blocks} **Friedman p = {p}** (the entries differ at {ALPHA:g}); "
                f"**Nemenyi post-hoc: CD = {cd}** (mean ranks further apart differ).")
    return (f"{blocks} **Friedman p = {p}**: no difference detected at {ALPHA:g}, so the "
            f"post-hoc is not read (Nemenyi CD = {cd}).")


def versus_top(board: Board, entry: str) -> str:
    """The post-hoc reading of ``entry`` against the board's rank-1 entry."""
    test, ranks = board.test, board.test.mean_ranks
    top = str(ranks.index[0])
    if entry == top:
        return "rank 1"
    if test.p_value is None:
        return "not tested"
    if test.p_value >= ALPHA:
        return "no difference detected"
    if test.critical_difference is None:  # two entries: the omnibus test is the pair's
        return "differs"
    apart = float(ranks[entry] - ranks.iloc[0])
    return "differs (beyond CD)" if apart > test.critical_difference else "within CD"


def board_md(board: Board, table: pd.DataFrame, diagram: Path | None,
             results_dir: Path, audit: LeaderboardAudit) -> list[str]:
    """One board: its heading, tests, ranking table (with each entry's ``audit`` column)
    and CD diagram (or why there is none)."""
    score = f"mean_{board.metric}"
    md = [f"##### {md_escape(board.task)}, ε = {board.epsilon:g} "
          f"({md_escape(board.metric)}, lower is better)", "", _test_md(board), "",
          f"| # | entry | mean rank | mean {md_escape(board.metric)} | privacy | audit | "
          f"vs rank 1 (post-hoc) |",
          "|---|---|---|---|---|---|---|"]
    for i, row in enumerate(table.itertuples(index=False), 1):
        entry = str(row.entry)
        md.append(f"| {i} | {md_escape(entry)} | {row.mean_rank:.2f} | "
                  f"{plain(getattr(row, score), 4)} | {md_escape(row.status)} | "
                  f"{md_escape(audit.cell(entry))} | {versus_top(board, entry)} |")
    md.append("")
    if board.left_out:
        md += [f"*Left out of this board (a block lacks them):* "
               f"{md_escape('; '.join(board.left_out))}.", ""]
    if diagram is not None:
        alt = f"critical-difference diagram, {board.task}, ε = {board.epsilon:g}"
        md += [f"![{md_escape(alt)}]({os.path.relpath(diagram, results_dir)})", ""]
    else:
        md += [f"*No critical-difference diagram:* {_no_diagram(board)}.", ""]
    return md


def _no_diagram(board: Board) -> str:
    if board.test.p_value is None:
        return "the board is not tested (see its blocks)"
    return f"with two entries autorank runs {md_escape(board.test.test_name)}, which has no CD"


def _gap(value: float, private: bool) -> str:
    return plain(value, 3, sign=True) + ("" if private else NOT_DP_MARK)


def best_gaps(price: pd.DataFrame) -> pd.DataFrame:
    """Per (task, dataset, epsilon): the DP entry with the lowest gap, among the entries
    whose rows there are DP if any are (else among all, flagged not private); ``private``
    holds booleans."""
    ordered = price.sort_values(["private", "gap"], ascending=[False, True], kind="stable")
    return ordered.groupby(["task", "dataset", "epsilon"], as_index=False, sort=False).first()


def price_blocks(price: pd.DataFrame, results_dir: Path) -> list[Block]:
    """The price of privacy per dataset: the best DP entry's gap at each ε (a table), and
    every entry's gap (collapsed)."""
    price = price.assign(private=price["private"].fillna(False).astype(bool))
    eps = sorted(e for e in price["epsilon"].unique() if math.isfinite(e))
    head = ("| task | dataset | best non-private reference | "
            + " | ".join(f"ε = {e:g}" for e in eps) + " |")
    rule = "|---|---|---|" + "---|" * len(eps)
    best = best_gaps(price).set_index(["task", "dataset", "epsilon"])
    refs = price.drop_duplicates(["task", "dataset"])
    md = ["##### The price of privacy per dataset", "",
          "Each ε column: the lowest gap of a DP entry on the dataset (its mean score minus "
          "the best non-private reference's; lower is a smaller price) and which entry. "
          f"{NOT_DP_MARK}: no entry's rows are DP on that dataset (its domain is observed), "
          "so the gap is of a run that is not DP.", "", head, rule]
    for ref in refs.itertuples(index=False):
        cells = []
        for e in eps:
            key = (ref.task, ref.dataset, e)
            if key not in best.index:
                cells.append("—")
                continue
            b = best.loc[key]
            cells.append(f"{_gap(b['gap'], bool(b['private']))} ({md_escape(b['label'])})")
        md.append(f"| {md_escape(ref.task)} | {md_escape(ref.dataset)} | "
                  f"{md_escape(ref.reference)}: {plain(ref.reference_score, 4)} | "
                  + " | ".join(cells) + " |")
    md.append("")
    return [Block("\n".join(md)), collapsed(f"Every DP entry's price of privacy "
                                            f"({len(price):,} gaps)", every_gap_md(price, eps),
                                            results_dir)]


def every_gap_md(price: pd.DataFrame, eps: list[float]) -> str:
    """Every DP entry's gap per dataset and ε, one row per (task, dataset, entry)."""
    lines = ["| task | dataset | entry | " + " | ".join(f"ε = {e:g}" for e in eps) + " |",
             "|---|---|---|" + "---|" * len(eps)]
    # one (gap, private) per (task, dataset, entry, epsilon): a dict, not a frame look-up a cell
    keys = zip(price["task"], price["dataset"], price["label"], price["epsilon"], strict=True)
    by = dict(zip(keys, zip(price["gap"], price["private"], strict=True), strict=True))
    if len(by) != len(price):
        raise ValueError("price of privacy: an entry has two gaps at one (task, dataset, ε)")
    for (task, dataset, label), _ in price.groupby(["task", "dataset", "label"], sort=False):
        cells = []
        for e in eps:
            at = by.get((task, dataset, label, e))
            cells.append("—" if at is None else _gap(at[0], bool(at[1])))
        lines.append(f"| {md_escape(task)} | {md_escape(dataset)} | {md_escape(label)} | "
                     + " | ".join(cells) + " |")
    return "\n".join([*lines, "", f"{NOT_DP_MARK}: the entry's rows there are not DP."])


def collapsed(summary: str, markdown: str, results_dir: Path) -> Block:
    """A ``<details>`` block (not the caveats' red box): ``summary`` shown, the rest folded."""
    inner = render_block(Block(markdown), results_dir)
    head = html.escape(summary)
    return Block(f"<details><summary>{head}</summary>\n\n{markdown.strip()}\n\n</details>",
                 html=f"<details><summary>{head}</summary>\n{inner}</details>")
