"""The leaderboard's statistics on hand-made result frames with known answers: mean ranks
(ties averaged), the Friedman test and Nemenyi critical difference (Demšar 2006), the price
of privacy and the privacy status of each entry."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpexp.render.leaderboard import (
    MIN_BLOCKS,
    boards,
    entry_status,
    mean_ranks,
    price_of_privacy,
    rank_test,
)

INF = math.inf
METRICS = {"classification": "error"}


def rows(spec: list[tuple[str, str, float, list[float]]], **extra) -> pd.DataFrame:
    """Result rows: (dataset, label, epsilon, one error per fold)."""
    out = []
    for dataset, label, eps, values in spec:
        for fold, v in enumerate(values):
            out.append({"dataset": dataset, "label": label, "epsilon": eps, "fold": fold,
                        "repeat": 0, "seed": 0, "metric": "error", "metric_kind": "metric",
                        "value": v, "private": math.isfinite(eps), "not_dp_reason": "",
                        "delta_spent": 0.0 if math.isfinite(eps) else INF, **extra})
    return pd.DataFrame(out)


def test_mean_ranks_average_ties_and_put_the_lowest_score_first():
    table = pd.DataFrame({"A": [0.2, 0.3, 0.2], "B": [0.3, 0.2, 0.2], "R": [0.1, 0.1, 0.25]},
                         index=["d1", "d2", "d3"])
    ranks = mean_ranks(table)
    assert list(ranks.index) == ["R", "A", "B"]
    assert ranks["R"] == pytest.approx(5 / 3)
    assert ranks["A"] == pytest.approx(6.5 / 3) == ranks["B"]


def test_friedman_and_nemenyi_match_the_closed_form():
    # six datasets, A always best, C always worst: chi2_F = 12 N / (k (k+1)) (sum R^2 - k (k+1)^2 / 4)
    # = 12 * 6 / 12 * (14 - 12) = 12, p = exp(-12 / 2) (2 degrees of freedom); Nemenyi
    # CD = q_0.05(3) sqrt(k (k+1) / (6 N)) = 2.343 * sqrt(1/3) (Demšar 2006, Section 3.2.2)
    n = 6
    table = pd.DataFrame({"A": np.arange(n) * 0.01 + 0.1, "B": np.arange(n) * 0.01 + 0.2,
                          "C": np.arange(n) * 0.01 + 0.3})
    test = rank_test(table, "blocks: 6 datasets")
    assert list(test.mean_ranks.index) == ["A", "B", "C"]
    assert test.mean_ranks.to_list() == [1.0, 2.0, 3.0]
    assert test.p_value == pytest.approx(math.exp(-6), rel=1e-6)
    assert test.critical_difference == pytest.approx(2.343 * math.sqrt(1 / 3), abs=2e-3)
    # autorank's own mean ranks are ours
    assert test.result.rankdf["meanrank"].to_dict() == pytest.approx(test.mean_ranks.to_dict())


def test_too_few_blocks_give_ranks_without_a_test():
    table = pd.DataFrame({"A": [0.1, 0.2], "B": [0.2, 0.1]})
    test = rank_test(table, "blocks: 2 datasets")
    assert test.p_value is None and test.result is None and "not tested" in test.blocks
    assert test.mean_ranks.to_list() == [1.5, 1.5]


def test_boards_rank_per_epsilon_with_the_references_in_each():
    spec = []
    for i in range(MIN_BLOCKS):
        d = f"d{i}"
        spec += [(d, "A", 1.0, [0.30, 0.32]), (d, "A", 10.0, [0.10, 0.12]),
                 (d, "B", 1.0, [0.20, 0.22]), (d, "B", 10.0, [0.20, 0.22]),
                 (d, "R", INF, [0.15, 0.15])]
    found = boards(rows(spec), METRICS)
    assert [(b.task, b.epsilon) for b in found] == [("classification", 1.0),
                                                     ("classification", 10.0)]
    at1, at10 = found
    assert at1.test.blocks == f"blocks: {MIN_BLOCKS} datasets"
    assert at1.test.mean_ranks.to_dict() == {"R": 1.0, "B": 2.0, "A": 3.0}
    assert at10.test.mean_ranks.to_dict() == {"A": 1.0, "R": 2.0, "B": 3.0}
    assert at1.scores.loc["d0", "A"] == pytest.approx(0.31)
    assert at1.test.p_value is not None and at1.test.p_value < 0.05


def test_boards_fall_back_to_paired_cells_and_drop_incomplete_entries():
    spec = [("d0", "A", 1.0, [0.1, 0.2, 0.3]), ("d0", "B", 1.0, [0.2, 0.3, 0.4]),
            ("d1", "A", 1.0, [0.1, 0.2, 0.3]), ("d1", "B", 1.0, [0.2, 0.3, 0.4]),
            ("d0", "C", 1.0, [0.0, 0.0, 0.0])]  # C has no score on d1
    (board,) = boards(rows(spec), METRICS)
    assert "6 (dataset, fold) cells of 2 datasets" in board.test.blocks
    assert list(board.scores.columns) == ["A", "B"] and len(board.scores) == 6
    assert board.left_out == ("C (no score on 3 of 6 blocks)",)
    assert board.test.mean_ranks.to_dict() == {"A": 1.0, "B": 2.0}


def test_price_of_privacy_is_the_gap_to_the_best_reference():
    spec = [("d0", "A", 1.0, [0.30, 0.32]), ("d0", "R1", INF, [0.10, 0.12]),
            ("d0", "R2", INF, [0.15, 0.15]), ("d1", "A", 1.0, [0.40]), ("d1", "R2", INF, [0.2])]
    price = price_of_privacy(rows(spec), METRICS).set_index("dataset")
    assert price.loc["d0", "reference"] == "R1"
    assert price.loc["d0", "gap"] == pytest.approx(0.31 - 0.11)
    assert price.loc["d1", "reference"] == "R2"
    assert price.loc["d1", "gap"] == pytest.approx(0.2)
    assert set(price["label"]) == {"A"}  # references have no price


def test_entry_status_says_how_private_each_entry_is():
    frame = pd.concat([
        rows([("d0", "A", 1.0, [0.3]), ("d1", "A", 1.0, [0.3]), ("d0", "R", INF, [0.1])]),
        rows([("d0", "G", 1.0, [0.3])], delta_spent=1e-6),
        rows([("d0", "C", 1.0, [0.3])]),
        rows([("d1", "C", 1.0, [0.3])]).assign(private=False, not_dp_reason="domain observed"),
    ])
    assert entry_status(frame) == {
        "A": "ε-DP", "R": "non-private reference", "G": "(ε, δ = 1e-06)-DP",
        "C": "not DP on 1 of 2 datasets: domain observed"}
