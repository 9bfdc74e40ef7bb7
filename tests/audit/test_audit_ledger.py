"""The ledger-entry audit conditions every entry on fixed earlier releases.

An adaptive two-release fit: a side is chosen with the one-sided noisy arg-max of the
side counts (epsilon_1 = 1), then the majority label *of the chosen side* is released
(epsilon_2 = 0.1). Sequential composition makes it 1.1-DP, and the second release is
0.1-DP for every fixed side -- which is what the ledger says. Audited without holding
the side fixed, the label would carry the side's dependence on the data (~0.38 in log
ratio) and be flagged against its 0.1: not a valid audit of adaptive releases.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from dpexp.audit.run import run_target
from dpexp.audit.targets import ledger_entry_target
from dpexp.privacy import Accountant, report_noisy_max_one_sided

EPS_SIDE, EPS_LABEL = 1.0, 0.1


def _records(n_side0: int, n_side1: int) -> np.ndarray:
    """(side, label) rows: side 0 records are labelled 1, side 1 records labelled 0."""
    side0 = np.tile([0, 1], (n_side0, 1))
    side1 = np.tile([1, 0], (n_side1, 1))
    return np.concatenate([side0, side1]).astype(np.int64)


# Tied sides (P(side 1) = 1/2), then a canary on side 1 (P(side 1) = e/(1+e) ~ 0.73).
DATASETS = (_records(60, 60), _records(60, 61))


def _fit(honour_fixed: bool):
    def fit(
        data: np.ndarray,
        *,
        epsilon: float,
        rng: np.random.Generator,
        public_rng: np.random.Generator,
        fixed_outputs: Mapping[str, Any] | None,
    ) -> Accountant:
        acc = Accountant(epsilon=epsilon, keep_outputs=True, fixed_outputs=fixed_outputs)
        acc.release(lambda: None, epsilon=EPS_SIDE, what="side", mechanism="report_noisy_max_one_sided")
        side_counts = np.bincount(data[:, 0], minlength=2)
        side = report_noisy_max_one_sided(side_counts, epsilon=EPS_SIDE, rng=rng)
        used = acc.record_output("side", side)
        if not honour_fixed:  # the bug the conditioning guards against
            used = side
        acc.release(lambda: None, epsilon=EPS_LABEL, what="label of the chosen side", mechanism="report_noisy_max_one_sided")
        label_counts = np.bincount(data[data[:, 0] == used, 1], minlength=2)
        acc.record_output(
            "label of the chosen side",
            report_noisy_max_one_sided(label_counts, epsilon=EPS_LABEL, rng=rng),
        )
        return acc

    return fit


def _target(honour_fixed: bool):
    return ledger_entry_target(
        "adaptive_two_releases",
        fit=_fit(honour_fixed),
        datasets=DATASETS,
        pairs=[(0, 1)],
        epsilon=EPS_SIDE + EPS_LABEL,
        samples=3_000,
        quick_samples=3_000,
    )


def test_conditioned_ledger_audit_passes_an_adaptive_private_fit():
    result = run_target(_target(honour_fixed=True), quick=True, seed=11)
    assert result.kind == "ledger-entry"
    releases = {r["release"]: r for r in result.details["releases"]}
    assert releases["side"]["claimed_epsilon"] == EPS_SIDE
    assert releases["label of the chosen side"]["claimed_epsilon"] == EPS_LABEL
    assert result.passed, result.summary_line()


def test_unconditioned_adaptive_release_is_what_the_conditioning_prevents():
    # The same fit, but continuing with its own draw instead of the fixed value: the
    # label release now mixes over the data-dependent side and exceeds its 0.1.
    result = run_target(_target(honour_fixed=False), quick=True, seed=11)
    releases = {r["release"]: r for r in result.details["releases"]}
    label = releases["label of the chosen side"]
    assert not label["passed"] and label["epsilon_lower_bound"] > 2 * EPS_LABEL
    assert releases["side"]["passed"]


def test_fit_that_ignores_fixed_outputs_is_refused():
    def fit(data, *, epsilon, rng, public_rng, fixed_outputs):
        return _fit(True)(data, epsilon=epsilon, rng=rng, public_rng=public_rng, fixed_outputs=None)

    target = ledger_entry_target(
        "ignores_fixed", fit=fit, datasets=DATASETS, pairs=[(0, 1)], epsilon=1.1,
        quick_samples=200,
    )
    with pytest.raises(ValueError, match="fixed_outputs"):
        run_target(target, quick=True)


def test_fit_must_record_every_ledger_entry():
    def fit(data, *, epsilon, rng, public_rng, fixed_outputs):
        acc = Accountant(epsilon=epsilon, keep_outputs=True, fixed_outputs=fixed_outputs)
        acc.release(lambda: None, epsilon=epsilon, what="unrecorded release")
        return acc

    target = ledger_entry_target(
        "unrecorded", fit=fit, datasets=DATASETS, pairs=[(0, 1)], epsilon=1.0,
        quick_samples=200,
    )
    with pytest.raises(ValueError, match="record_output"):
        run_target(target, quick=True)


def test_accountant_hands_back_the_fixed_output():
    acc = Accountant(epsilon=1.0, keep_outputs=True, fixed_outputs={"split": 3})
    assert acc.record_output("split", 5) == 3  # later code continues with the fixed value
    assert acc.outputs == {"split": 5}  # the audit sees the value actually drawn
    assert acc.record_output("leaf", 7) == 7  # entries not fixed pass through
    plain = Accountant(epsilon=1.0)
    assert plain.record_output("split", 5) == 5 and plain.outputs == {}
    with pytest.raises(TypeError, match="fixed_outputs"):
        Accountant(epsilon=1.0, fixed_outputs=[("split", 3)])
