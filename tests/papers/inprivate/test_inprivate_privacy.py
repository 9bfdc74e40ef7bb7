"""Accounting and disjointness of InPrivate Digging (Section V Theorem 7, Section VI-B)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from dpexp.papers.inprivate.estimators import (
    InPrivateClassifier,
    InPrivateRegressor,
)
from dpexp.papers.inprivate.formulas import (
    assign_chunks,
    round_shares,
)
from dpexp.privacy import record_ids
from dpexp.privacy.randomness import estimator_streams

DOM = np.array([[-6.0, 6.0]] * 5)


@pytest.mark.parametrize("qc", [False, True])
def test_every_tree_costs_epsilon_and_the_ensemble_too(qc):
    X, y = make_classification(1500, 5, random_state=0)
    est = InPrivateClassifier(epsilon=0.7, n_participants=3, n_rounds=2, depth=4, quality_control=qc,
                              advance_threshold=-1.0 if qc else None, feature_domain=DOM,
                              classes=[0, 1], random_state=0).fit(X, y)
    assert est.accountant_.epsilon_spent == pytest.approx(0.7)
    assert len(est.messages_) == 6
    for m in est.messages_:
        assert sum(e["epsilon"] for e in m.ledger if "split" in e["what"]) > 0
        # per chunk (sequential inside): qc + one entry per level (all its nodes, parallel
        # composition: ``releases`` = nodes of the level) + 2 leaf queries = epsilon
        splits = [e for e in m.ledger if "split" in e["what"]]
        assert len(splits) == 3  # depth 4 = 3 split levels, one ledger entry each
        assert [e.get("releases", 1) for e in splits][0] == 1  # the root level: one node
        level_eps = [e["epsilon"] for e in splits]
        leaves = [e for e in m.ledger if "leaves" in e["what"]]
        assert [e["what"].split()[-1] for e in leaves] == ["numerator", "denominator"]
        assert all(e.get("releases", 1) == len(m.tree.leaves) for e in leaves)
        leaf = leaves[0]["epsilon"]
        q = sum(e["epsilon"] for e in m.ledger if "quality" in e["what"] or "chunk size" in e["what"])
        # slot 0 has no predecessor to check: its quality share (10%) stays unspent
        expected = 0.7 if (m.slot > 0 or not qc) else 0.63
        assert sum(level_eps) + 2 * leaf + q == pytest.approx(expected)


def test_regression_ledger_and_spend_never_exceeds():
    X, y = make_regression(800, 5, random_state=1)
    est = InPrivateRegressor(epsilon=2.0, n_participants=2, n_rounds=3, depth=3,
                             feature_domain=np.array([[-4.0, 4.0]] * 5),
                             label_domain=(-400.0, 400.0), random_state=3).fit(X, y)
    assert est.accountant_.epsilon_spent <= 2.0 * (1 + 1e-9)
    assert est.accountant_.epsilon_spent == pytest.approx(2.0)


@pytest.mark.parametrize("final_round", ["rest", "half"])
def test_chunks_are_disjoint_across_rounds_and_participants(final_round):
    n, N, R = 40000, 4, 3
    ids = record_ids(np.random.default_rng(1).normal(size=(n, 2)))
    owner, rnd = assign_chunks(ids, N, 1 / N, round_shares(R, final_round), np.random.default_rng(0))
    keys = owner * R + rnd
    used = owner >= 0
    assert np.all((owner >= 0) == (rnd >= 0))
    # every record in at most one chunk (a single label), chunk sizes follow the halving rule
    sizes = np.bincount(keys[used], minlength=N * R).reshape(N, R) / (n / N)
    np.testing.assert_allclose(sizes.mean(axis=0), round_shares(R, final_round), atol=0.02)
    if final_round == "half":
        assert 0.1 < (~used).mean() < 0.15  # 1/8 of the records never used


def _config(est, X):
    """The protocol configuration fit builds (its budget and public grid)."""
    return est._protocol_config(est._budget()[0], est._bin(X)[0])


def _chunks(est, X, z) -> dict[tuple, tuple[int, int]]:
    """(participant, round) of every record, keyed by its content, as fit draws them."""
    nodes, _ = est._make_nodes(X, z, _config(est, X), estimator_streams(5), None)
    return {(*row, t): (nd.pid, int(r)) for nd in nodes
            for row, t, r in zip(map(tuple, nd.X), nd.z, nd.rounds, strict=True)}


@pytest.mark.parametrize("at", [0, 500, 1000])
def test_partition_is_record_stable(at):
    """A canary inserted at row 0, in the middle or at the end leaves every other record's
    chunk unchanged: chunks are keyed by the records' content (record_ids), not rows."""
    X, y = make_classification(1000, 5, random_state=0)
    z = np.where(y == 1, 1.0, -1.0)
    est = InPrivateClassifier(epsilon=1.0, n_participants=4, n_rounds=2, depth=2,
                              feature_domain=DOM, classes=[0, 1], random_state=5)
    before = _chunks(est, X, z)
    canary = (9.0, -9.0, 9.0, -9.0, 9.0, 1.0)
    after = _chunks(est, np.insert(X, at, canary[:5], axis=0), np.insert(z, at, canary[5]))
    after.pop(canary, None)
    assert after == before and len(before) > 500


def test_trees_in_a_round_use_disjoint_records():
    X, y = make_classification(2000, 5, random_state=0)
    est = InPrivateClassifier(epsilon=1.0, n_participants=2, n_rounds=2, depth=2, feature_domain=DOM,
                              classes=[0, 1], random_state=0)
    est.fit(X, y)
    # re-derive the chunks as fit does and check they are disjoint and each tree saw one
    streams = estimator_streams(0)
    nodes, _ = est._make_nodes(X, np.where(y == 1, 1.0, -1.0), _config(est, X), streams, None)
    rows = [tuple(map(tuple, nd.X[nd.rounds == r])) for nd in nodes for r in range(2)]
    flat = [row for chunk in rows for row in chunk]
    assert len(flat) == len(set(flat))
