"""End-to-end audit of the real InPrivate estimators (dpexp.papers.inprivate.audit).

The correct targets (declared classes, shares and domains) must pass; the same targets
with each bug put back (label set from the labels, share from the private n, label
domain from the labels) must be flagged.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.audit.catalogue import audit_targets
from dpexp.audit.run import run_target
from dpexp.papers.inprivate import audit as ia

FIXED = {t.name: t for t in ia.AUDIT_TARGETS}
BROKEN = {t.name: t for t in ia.BROKEN_AUDIT_TARGETS}


def test_targets_are_discovered_by_the_audit():
    assert set(FIXED) <= set(audit_targets())
    assert set(BROKEN) <= set(audit_targets(broken=True))
    assert all(t.expected_to_pass for t in FIXED.values())
    assert not any(t.expected_to_pass for t in BROKEN.values())


def test_neighbours_differ_by_one_last_record():
    for make in (ia.class_removal_data, ia.extreme_label_data, ia.share_boundary_data):
        a, b = make()
        small, big = (a, b) if a.X.shape[0] < b.X.shape[0] else (b, a)
        assert big.X.shape[0] == small.X.shape[0] + 1
        np.testing.assert_array_equal(big.X[:-1], small.X)  # row ids of the others kept
        np.testing.assert_array_equal(big.y[:-1], small.y)


def test_class_removal_release_keeps_the_declared_classes():
    d_with, d_without = ia.class_removal_data()
    rel = FIXED["inprivate_class_removal"].release
    for d in (d_with, d_without):
        out = rel(d, epsilon=1.0, delta=0.0, rng=np.random.default_rng(0), size=20)
        assert out.shape == (20, 2 + len(ia.CLASS_PROBES))
        assert np.all(out[:, 0] == 2)  # classes_ is the declared pair, with or without class 1
    broken = BROKEN["inprivate_class_removal_broken"].release
    out = broken(d_without, epsilon=1.0, delta=0.0, rng=np.random.default_rng(0), size=5)
    assert np.all(out == ia.REFUSED)  # one label left and no declared set: fit refuses


@pytest.mark.parametrize("name", ["inprivate_class_removal", "inprivate_extreme_label"])
def test_correct_targets_pass(name):
    result = run_target(FIXED[name], samples=300)
    assert result.passed, result.to_dict()


@pytest.mark.parametrize("name", ["inprivate_class_removal_broken",
                                  "inprivate_extreme_label_broken"])
def test_broken_targets_are_flagged(name):
    """Deterministic leaks: 300 draws give a bound above the claim of 1."""
    result = run_target(BROKEN[name], samples=300)
    assert not result.passed
    assert result.epsilon_lower_bound > 2.0


@pytest.mark.slow
def test_share_from_n_is_flagged_and_the_declared_share_passes():
    """Four records' Laplace shift: the broken share is flagged at the quick size
    (measured lower bound about 2 for a claim of 1); the declared share passes."""
    broken = run_target(BROKEN["inprivate_share_from_n"], quick=True)
    assert not broken.passed and broken.epsilon_lower_bound > 1.0
    fixed = run_target(FIXED["inprivate_share_boundary"], quick=True)
    assert fixed.passed
