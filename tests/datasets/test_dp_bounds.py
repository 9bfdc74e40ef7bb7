"""dpexp.privacy.bounds: the DP alternative to an observed (data-derived) feature domain."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpexp.errors import BudgetExceededError
from dpexp.privacy.accountant import Accountant
from dpexp.privacy.bounds import _bin_counts, dp_feature_domain, log2_bin_edges


def _data(n: int = 4000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(3, 90, n), rng.normal(0, 1, n), rng.uniform(1000, 3000, n)])


def test_range_covers_the_bulk_and_charges_the_budget():
    X = _data()
    acc = Accountant(1.0)
    dom = dp_feature_domain(X, 1.0, np.random.default_rng(1), accountant=acc)
    assert acc.epsilon_spent == pytest.approx(1.0)
    (entry,) = acc.ledger()
    assert entry["mechanism"] == "discrete_laplace" and entry["sensitivity"] == 3
    q_lo, q_hi = np.quantile(X, [0.01, 0.99], axis=0)
    assert np.all(dom[:, 0] <= q_lo) and np.all(dom[:, 1] >= q_hi)
    assert np.all(dom[:, 1] <= 2 * X.max(axis=0) + 1)  # power-of-two bins: within a factor 2


def test_neighbouring_datasets_change_the_histogram_by_at_most_d():
    """The sensitivity the Laplace scale uses: one added record moves d counts by one."""
    X = _data(500)
    edges = log2_bin_edges(-10, 40)
    for record in ([1e15, -1e15, 0.0], [np.nan, 5.0, 2.0**-20]):
        diff = _bin_counts(np.vstack([X, record]), edges) - _bin_counts(X, edges)
        assert np.abs(diff).sum() <= X.shape[1]


def test_an_extreme_canary_does_not_move_the_range():
    X = _data(1000)
    canary = np.vstack([X, [2.0**35, -(2.0**35), 2.0**35]])
    a = dp_feature_domain(X, 1.0, np.random.default_rng(7))
    b = dp_feature_domain(canary, 1.0, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)  # same noise; the canary's count stays below T


def test_no_positive_noisy_count_gives_the_whole_public_range(monkeypatch):
    from dpexp.privacy import bounds

    assert bounds._run_around_peak(np.array([-3.0, -1.0, 0.0])).size == 0
    dom = dp_feature_domain(np.ones((3, 2)), 0.1, np.random.default_rng(0), max_exponent=20)
    assert np.all(dom[:, 0] < dom[:, 1])  # a range of public edges, whatever the noise


def test_below_the_threshold_the_peak_run_finds_concentrated_data():
    """15 columns at epsilon 0.01: T = 1500 ln(15 K / 2e-3) ~ 20,000 is above the 15,000
    records, yet the bin holding them stands out of Laplace(1500) noise: the range is
    theirs, not [-2^40, 2^40] (the regression label of a small leaderboard cell)."""
    rng = np.random.default_rng(3)
    X = np.tile(rng.uniform(2.0**18, 2.0**19, size=(15000, 1)), (1, 15))
    dom = dp_feature_domain(X, 0.01, np.random.default_rng(5))
    assert np.all(dom[:, 0] >= 2.0**16) and np.all(dom[:, 1] <= 2.0**21)
    assert np.mean((dom[:, 0] <= 2.0**18) & (dom[:, 1] >= 2.0**19)) > 0.8


def test_peak_run_is_contiguous_above_half_the_peak():
    from dpexp.privacy import bounds

    run = bounds._run_around_peak(np.array([0.0, 6.0, 1.0, 5.5, 10.0, 7.0, 2.0, 9.0]))
    np.testing.assert_array_equal(run, [3, 4, 5])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"X": np.ones(3)}, "2-D"),
        ({"X": sp.csr_matrix(np.ones((3, 2)))}, "dense"),
        ({"beta": 1.5}, "beta"),
        ({"rng": 3}, "Generator"),
        ({"min_exponent": 5, "max_exponent": 1}, "min_exponent"),
    ],
)
def test_bad_input_is_a_clear_value_error(kwargs, match):
    args = {"X": np.ones((3, 2)), "epsilon": 1.0, "rng": np.random.default_rng(0), **kwargs}
    with pytest.raises(ValueError, match=match):
        dp_feature_domain(args.pop("X"), args.pop("epsilon"), args.pop("rng"), **args)


def test_overspending_is_refused():
    acc = Accountant(0.5)
    with pytest.raises(BudgetExceededError):
        dp_feature_domain(_data(100), 1.0, np.random.default_rng(0), accountant=acc)


def test_audit_passes_the_dp_estimate_and_flags_the_observed_domain():
    """dpexp.audit.domain_targets: quick audit (2,000 draws) of both targets."""
    from dpexp.audit.domain_targets import AUDIT_TARGETS, BROKEN_AUDIT_TARGETS
    from dpexp.audit.run import run_target

    (dp,), (observed,) = AUDIT_TARGETS, BROKEN_AUDIT_TARGETS
    assert run_target(dp, quick=True).passed
    flagged = run_target(observed, quick=True)
    assert not flagged.passed and flagged.as_expected
