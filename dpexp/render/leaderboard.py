"""The statistics of the leaderboard (issue 44), from an experiment's union results table.

Per task and epsilon, each entry's score on a block is the mean of its test metric (lower is
better: error, RMSE) over the block's cells; a non-private reference (epsilon = inf) joins
every epsilon with its one score. Then, as Demšar (2006, "Statistical Comparisons of
Classifiers over Multiple Data Sets", JMLR 7, Sections 3.2.2 and 3.2.4) recommends:

* the mean rank of every entry over the blocks (rank 1 = best, ties share the mean rank);
* the Friedman test of "all entries are equivalent" and the Nemenyi post-hoc test, with its
  critical difference (CD), computed by ``autorank`` (Herbold 2020) in its non-parametric
  mode; the CD diagram is drawn with autorank's own plot (:mod:`dpexp.render.leaderboard_files`).

A block is a dataset when at least :data:`MIN_BLOCKS` datasets hold every entry (Demšar's
setting: independent data sets); with fewer (a smoke run), the blocks are the (dataset,
seed, repeat, fold) cells, which are paired (the same folds for every entry) but not
independent -- the table says which. autorank needs 5 blocks; with fewer, the mean ranks
are given without a test.

The price of privacy of a DP entry on a dataset at epsilon is its mean score minus the best
non-private reference's (the lowest mean score of any ``private=False`` algorithm run
without epsilon): what privacy costs against what a user would run instead.
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpexp.errors import DpexpError
from dpexp.experiments.schema import METRIC

#: autorank's minimum number of paired blocks (rows) for its tests.
MIN_BLOCKS = 5
#: The significance level of the Friedman and post-hoc tests.
ALPHA = 0.05
#: The extra that installs autorank (and the DP-EBM peer).
EXTRA = "leaderboard"
#: Columns of a replicate block (one cell of the grid).
CELL_BLOCK = ["dataset", "seed", "repeat", "fold"]


@dataclass(frozen=True)
class RankTest:
    """autorank's Friedman/Nemenyi outcome on one board (None fields: not tested)."""

    #: Mean rank per entry (rank 1 = best), best first.
    mean_ranks: pd.Series
    #: The Friedman test's p-value (None: too few blocks to test).
    p_value: float | None
    #: The Nemenyi critical difference of the mean ranks (None: not tested, or two
    #: entries: autorank then runs Wilcoxon's signed-rank test, no CD).
    critical_difference: float | None
    #: What a block is and how many there are, in words.
    blocks: str
    #: autorank's RankResult, for its CD diagram (None: not tested).
    result: Any = None
    #: The tests autorank ran ("friedman + nemenyi"; "wilcoxon" for two entries).
    test_name: str = ""


@dataclass(frozen=True)
class Board:
    """One ranking: the entries' scores on the paired blocks of one task and epsilon."""

    task: str
    metric: str
    epsilon: float
    #: blocks x entries (rows: datasets or cells; columns: labels), no missing value.
    scores: pd.DataFrame
    #: Entries left out because a block lacks them, with why.
    left_out: tuple[str, ...]
    test: RankTest


def metric_rows(frame: pd.DataFrame, metric_of_task: dict[str, str]) -> pd.DataFrame:
    """The rows of the leaderboard's metric (one per cell), with their ``task``."""
    task_of = {m: t for t, m in metric_of_task.items()}
    rows = frame[(frame["metric_kind"] == METRIC) & frame["metric"].isin(task_of)].copy()
    rows["task"] = rows["metric"].map(task_of)
    rows["epsilon"] = rows["epsilon"].astype(float)
    rows["value"] = rows["value"].astype(float)
    return rows


def block_scores(rows: pd.DataFrame, block: list[str]) -> pd.DataFrame:
    """Mean metric per (task, block, label, epsilon), over the replicates inside a block."""
    keys = ["task", *block, "label", "epsilon"]
    return rows.groupby(keys, as_index=False, dropna=False)["value"].mean()


def board_scores(scores: pd.DataFrame, task: str, epsilon: float, block: list[str]) -> pd.DataFrame:
    """blocks x entries at ``epsilon``: the DP entries' scores there and every non-private
    reference's (epsilon = inf) score."""
    at = scores[(scores["task"] == task)
                & ((scores["epsilon"] == epsilon) | np.isinf(scores["epsilon"]))]
    return at.pivot_table(index=block, columns="label", values="value", aggfunc="mean")


def complete(table: pd.DataFrame) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The entries present on every block (Friedman needs complete blocks), and the others."""
    missing = [c for c in table.columns if table[c].isna().any()]
    return table.drop(columns=missing), tuple(
        f"{c} (no score on {int(table[c].isna().sum())} of {len(table)} blocks)" for c in missing)


def mean_ranks(table: pd.DataFrame) -> pd.Series:
    """Mean rank of every column over the rows, lowest score = rank 1, ties averaged
    (Demšar 2006, Section 3.2.2), best first."""
    ranks = table.rank(axis=1, method="average", ascending=True)
    return ranks.mean(axis=0).sort_values(kind="stable")


def rank_test(table: pd.DataFrame, blocks: str, alpha: float = ALPHA) -> RankTest:
    """Mean ranks, and (with at least :data:`MIN_BLOCKS` blocks and two entries) autorank's
    Friedman test and Nemenyi critical difference."""
    ranks = mean_ranks(table)
    if len(table) < MIN_BLOCKS or table.shape[1] < 2:
        why = (f"{blocks}; not tested: the Friedman test needs {MIN_BLOCKS} blocks and two "
               f"entries (here {len(table)} and {table.shape[1]})")
        return RankTest(ranks, None, None, why)
    autorank = _autorank()
    data = table.reset_index(drop=True)
    data.columns = [str(c) for c in data.columns]
    # autorank prints its forced mode, and its effect sizes divide by a zero spread when an
    # entry scores the same on every block: neither concerns the ranks or the tests
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = autorank.autorank(data, alpha=alpha, verbose=False, order="ascending",
                                   force_mode="nonparametric")
    cd = None if result.cd is None else float(result.cd)
    test = f"{result.omnibus}" + (f" + {result.posthoc}" if result.posthoc else "")
    return RankTest(ranks, float(result.pvalue), cd, blocks, result, test)


def _autorank() -> Any:
    try:
        # lazy: autorank is an optional package (the leaderboard extra), needed only here
        import autorank
    except ImportError as exc:
        raise DpexpError(f"the leaderboard statistics need the optional package autorank: "
                         f"pip install \"dpexp[{EXTRA}]\" (importing it failed: {exc})") from None
    return autorank


def boards(frame: pd.DataFrame, metric_of_task: dict[str, str],
           epsilons: list[float] | None = None) -> list[Board]:
    """Every board of the results: per task (in ``metric_of_task`` order) and epsilon
    (the finite epsilons of its rows, or ``epsilons``)."""
    rows = metric_rows(frame, metric_of_task)
    out = []
    for task, metric in metric_of_task.items():
        mine = rows[rows["task"] == task]
        if mine.empty:
            continue
        finite = sorted(e for e in mine["epsilon"].unique() if math.isfinite(e))
        n_datasets = mine["dataset"].nunique()
        for eps in (e for e in finite if epsilons is None or e in epsilons):
            table, left_out = complete(board_scores(block_scores(mine, ["dataset"]), task, eps,
                                                    ["dataset"]))
            blocks = f"blocks: {len(table)} datasets"
            if len(table) < MIN_BLOCKS:
                cells = board_scores(block_scores(mine, CELL_BLOCK), task, eps, CELL_BLOCK)
                table, left_out = complete(cells)
                blocks = (f"blocks: {len(table)} (dataset, fold) cells of {n_datasets} datasets, "
                          f"fewer than {MIN_BLOCKS} datasets (paired, not independent)")
            out.append(Board(task, metric, eps, table, left_out, rank_test(table, blocks)))
    return out


def price_of_privacy(frame: pd.DataFrame, metric_of_task: dict[str, str]) -> pd.DataFrame:
    """Per (task, dataset, DP entry, epsilon): its mean score, the best non-private
    reference's, the gap (score minus reference: lower-is-better metrics) and whether every
    row of the entry there is private (``private``: a run on observed domains is not)."""
    rows = metric_rows(frame, metric_of_task)
    scores = block_scores(rows, ["dataset"])
    rows["is_private"] = rows["private"].astype(str).str.lower() == "true"
    private = (rows.groupby(["task", "dataset", "label", "epsilon"], as_index=False, dropna=False)
               ["is_private"].all().rename(columns={"is_private": "private"}))
    ref = scores[np.isinf(scores["epsilon"])]
    best = (ref.sort_values("value", kind="stable").groupby(["task", "dataset"], as_index=False)
            .first().rename(columns={"label": "reference", "value": "reference_score"})
            .drop(columns="epsilon"))
    dp = scores[np.isfinite(scores["epsilon"])].merge(best, on=["task", "dataset"], how="inner")
    dp["gap"] = dp["value"] - dp["reference_score"]
    dp = dp.merge(private, on=["task", "dataset", "label", "epsilon"], how="left")
    return dp.rename(columns={"value": "score"})[
        ["task", "dataset", "label", "epsilon", "score", "reference", "reference_score", "gap",
         "private"]]


def entry_status(frame: pd.DataFrame) -> dict[str, str]:
    """Per entry (label): its privacy status over its rows -- "non-private reference",
    "epsilon-DP", "(epsilon, delta = d)-DP", or "not DP on k of n datasets: reason"."""
    out: dict[str, str] = {}
    rows = frame[frame["metric_kind"] == METRIC]
    for label, mine in rows.groupby("label", sort=False):
        if np.isinf(mine["epsilon"].astype(float)).all():
            out[str(label)] = "non-private reference"
            continue
        private = mine["private"].astype(str).str.lower() == "true"
        if not private.all():
            bad = mine[~private]
            reason = str(bad["not_dp_reason"].iloc[0])
            out[str(label)] = (f"not DP on {bad['dataset'].nunique()} of "
                               f"{mine['dataset'].nunique()} datasets: {reason}")
            continue
        delta = float(pd.to_numeric(mine["delta_spent"], errors="coerce").max())
        out[str(label)] = (f"(ε, δ = {delta:g})-DP" if delta > 0 else "ε-DP")
    return out


def ranking_table(board: Board, status: dict[str, str]) -> pd.DataFrame:
    """One board as a table: entry, mean rank, mean score over its blocks, privacy status;
    best mean rank first."""
    ranks = board.test.mean_ranks
    return pd.DataFrame({
        "task": board.task, "epsilon": board.epsilon, "entry": ranks.index,
        "mean_rank": ranks.to_numpy(),
        f"mean_{board.metric}": board.scores[ranks.index].mean(axis=0).to_numpy(),
        "status": [status.get(str(e), "") for e in ranks.index],
    })
