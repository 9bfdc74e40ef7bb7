"""The parallel schedules of Algorithm 2 (Section VI-A baseline, Section VI-C speed-up)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dpexp.papers.inprivate.estimators import InPrivateClassifier
from dpexp.papers.inprivate.schedule import (
    durations,
    eq18_seconds,
    eq19_seconds,
    schedule_order_ok,
)
from dpexp.privacy.randomness import seeded_noise

DOM = np.array([[-6.0, 6.0]] * 6)


def test_equations_18_19():
    assert eq18_seconds(4, 1.0, 10.0) == 6 + 40
    assert eq19_seconds(4, 1.0, 10.0) == 3 + 40
    assert eq18_seconds(1, 5.0, 2.0) == eq19_seconds(1, 5.0, 2.0) == 2.0


@pytest.fixture(scope="module")
def fits():
    X, y = make_classification(3000, 6, random_state=0)
    kw = dict(epsilon=1.0, n_participants=3, n_rounds=2, depth=4, quality_control=True,
              feature_domain=DOM, classes=[0, 1], random_state=4,
              noise_rng=seeded_noise(4))  # the same noise in every fit (default: fresh)
    inline = InPrivateClassifier(**kw).fit(X, y)
    out = {"inline": inline, "X": X}
    for sch in ("baseline", "speedup"):
        out[sch] = InPrivateClassifier(n_jobs=-1, schedule=sch, **kw).fit(X, y)
    return out


@pytest.mark.parametrize("schedule", ["baseline", "speedup"])
def test_parallel_workers_reproduce_the_inline_ensemble(fits, schedule):
    est, ref, X = fits[schedule], fits["inline"], fits["X"]
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))
    assert est.accountant_.epsilon_spent == pytest.approx(ref.accountant_.epsilon_spent)
    assert est.accountant_.ledger() == ref.accountant_.ledger()


@pytest.mark.parametrize("schedule", ["baseline", "speedup"])
def test_order_of_events_matches_algorithm2(fits, schedule):
    res = fits[schedule].schedule_result_
    assert schedule_order_ok(res)
    trains = sorted((e.t, e.slot, e.participant) for e in res.timeline if e.kind == "train_start")
    assert [s for _, s, _ in trains] == list(range(6))
    assert [p for _, _, p in trains] == [0, 1, 2, 0, 1, 2]  # predefined order, round after round
    assert durations(res.timeline, "train").size == 6


def test_baseline_evaluates_only_after_the_predecessor_hands_over(fits):
    tl = fits["baseline"].schedule_result_.timeline
    for e in tl:
        if e.kind == "eval_start":
            recv = [x.t for x in tl if x.kind == "recv" and x.participant == e.participant and x.t <= e.t]
            assert recv, "a baseline participant evaluated a tree before receiving the chain"
    # one send per hand-over (n - 1 per round chain), each carrying all trees so far
    assert fits["baseline"].schedule_result_.n_sends == 5


def test_speedup_broadcasts_each_tree_to_every_waiting_participant(fits):
    """Section VI-C: tree 0 reaches participant 2 directly from participant 0 (so she can
    evaluate it while participant 1 trains); in the baseline only via participant 1."""
    speed = fits["speedup"].schedule_result_.timeline
    base = fits["baseline"].schedule_result_.timeline
    assert any(e.kind == "recv" and e.participant == 2 and e.slot == 0 for e in speed)
    assert not any(e.kind == "recv" and e.participant == 2 and e.slot == 0 for e in base)
    # participant 2 evaluates tree 0 before she trains tree 2. (Whether tree 0 or tree 1
    # reaches her first is a race between participant 0's two puts and participant 1's
    # training, which a loaded machine can decide either way; the node buffers either order.)
    eval0 = min(e.t for e in speed if e.kind == "eval_end" and e.participant == 2 and e.slot == 0)
    train2 = min(e.t for e in speed if e.kind == "train_start" and e.participant == 2 and e.slot == 2)
    assert eval0 <= train2
    # broadcast: every tree but the last goes to the N - 1 others
    assert fits["speedup"].schedule_result_.n_sends == 5 * 2


def test_dask_workers_reproduce_the_inline_ensemble(fits):
    """Section VI-C with one dask worker per participant (a real LocalCluster on 127.0.0.1)."""
    distributed = pytest.importorskip("dask.distributed")
    X, ref = fits["X"], fits["inline"]
    y = make_classification(3000, 6, random_state=0)[1]
    kw = dict(epsilon=1.0, n_participants=3, n_rounds=2, depth=4, quality_control=True,
              feature_domain=DOM, classes=[0, 1], random_state=4,
              noise_rng=seeded_noise(4))  # the same noise in every fit (default: fresh)
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        est = InPrivateClassifier(n_jobs=-1, schedule="speedup", backend="dask", **kw).fit(X, y)
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))
    assert est.accountant_.ledger() == ref.accountant_.ledger()
    assert schedule_order_ok(est.schedule_result_)
