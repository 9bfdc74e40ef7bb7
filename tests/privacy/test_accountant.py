"""Composition arithmetic of the accountant (property-based) and its ledger."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpexp
from dpexp.errors import BudgetExceededError as ErrorsBudgetExceeded
from dpexp.privacy import Accountant, BudgetExceededError
from dpexp.privacy.accountant import Round, compact_ledger
from dpexp.privacy.mechanisms import inverse_cdf_rows

spend = st.tuples(st.floats(1e-4, 2.0), st.sampled_from([0.0, 1e-7, 1e-5]))
tree = st.recursive(
    spend,
    lambda children: st.tuples(
        st.sampled_from(["sequential", "parallel"]), st.lists(children, max_size=4)
    ),
    max_leaves=25,
)


def expected_cost(node, kind="sequential"):
    """Reference composition: sequential sums, parallel takes the max over children."""
    if isinstance(node[0], float):
        return node
    kind, children = node
    costs = [expected_cost(c) for c in children]
    if not costs:
        return (0.0, 0.0)
    if kind == "sequential":
        return (math.fsum(c[0] for c in costs), math.fsum(c[1] for c in costs))
    return (max(c[0] for c in costs), max(c[1] for c in costs))


def replay(acc, node, label="n"):
    if isinstance(node[0], float):
        acc.release(lambda: None, epsilon=node[0], delta=node[1], what=f"release {label}")
        return
    kind, children = node
    with getattr(acc, kind)(label):
        for i, child in enumerate(children):
            replay(acc, child, f"{label}.{i}")


@settings(max_examples=150, deadline=None)
@given(tree)
def test_composition_matches_reference(node):
    acc = Accountant(epsilon=math.inf, delta=0.999)
    replay(acc, node)
    eps, dlt = expected_cost(("sequential", [node]))
    assert acc.epsilon_spent == pytest.approx(eps, rel=1e-9, abs=1e-12)
    assert acc.delta_spent == pytest.approx(dlt, rel=1e-9, abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(tree, st.floats(0.01, 5.0))
def test_budget_is_never_exceeded_and_raises_at_the_crossing(node, budget):
    acc = Accountant(epsilon=budget, delta=0.5)
    try:
        replay(acc, node)
    except BudgetExceededError:
        n_before = len(acc.ledger())
        spent_before = acc.epsilon_spent
        assert spent_before <= budget * (1 + 1e-9)
        with pytest.raises(BudgetExceededError):
            acc.release(lambda: None, epsilon=budget * 2, what="too much")
        assert len(acc.ledger()) == n_before and acc.epsilon_spent == spent_before
    else:
        assert expected_cost(("sequential", [node]))[0] <= budget * (1 + 1e-9)
    assert acc.epsilon_spent <= budget * (1 + 1e-9)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 50))
def test_equal_split_uses_the_budget_exactly(k):
    acc = Accountant(epsilon=1.0)
    for i in range(k):
        acc.release(lambda: None, epsilon=1.0 / k, what=f"part {i}")
    assert acc.epsilon_spent == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        acc.release(lambda: None, epsilon=1e-6, what="one more")


def test_dpboost_shape():
    # 2 ensembles (sequential) x 4 trees (parallel) x depth 3 (sequential) x nodes (parallel)
    eps_node = 0.25
    acc = Accountant(epsilon=1.5)
    for e in range(2):
        with acc.sequential(f"ensemble {e}"), acc.parallel(f"trees of ensemble {e}"):
            for t in range(4):
                with acc.sequential(f"tree {t}"):
                    for d in range(3):
                        with acc.parallel(f"depth {d}"):
                            for node in range(2**d):
                                acc.release(lambda: None, epsilon=eps_node, what=f"tree {t} depth {d} node {node} split")
    assert acc.epsilon_spent == pytest.approx(2 * 3 * eps_node)
    entry = acc.ledger()[-1]
    assert entry["what"] == "tree 3 depth 2 node 3 split"
    assert entry["scope"] == ["ensemble 1", "trees of ensemble 1", "tree 3", "depth 2"]
    assert entry["scope_kinds"] == ["sequential", "parallel", "sequential", "parallel"]
    assert len(acc.ledger()) == 2 * 4 * 7


def test_gaussian_bdt_deltas_add_up():
    acc = Accountant(epsilon=1.0, delta=1e-5)
    for t in range(4):
        with acc.sequential(f"tree {t}"), acc.parallel("leaves"):
            for leaf in range(8):
                acc.release(lambda: None, epsilon=0.25, delta=2.5e-6, what=f"tree {t} leaf {leaf}", mechanism="gaussian")
    assert acc.delta_spent == pytest.approx(1e-5)
    assert acc.ledger()[0]["mechanism"] == "gaussian"
    with pytest.raises(BudgetExceededError, match="budget"):
        acc.release(lambda: None, epsilon=1e-9, delta=1e-7, what="over delta")


def test_budget_error_is_the_project_error_and_message_names_release():
    assert BudgetExceededError is ErrorsBudgetExceeded
    acc = Accountant(epsilon=0.5)
    with acc.sequential("tree 7"), pytest.raises(BudgetExceededError, match="tree 7 depth 3 split"):
        acc.release(lambda: None, epsilon=0.6, what="tree 7 depth 3 split")
    assert acc.ledger() == [] and acc.epsilon_spent == 0.0


def test_json_dump_and_outputs():
    acc = Accountant(epsilon=math.inf, keep_outputs=True)
    acc.release(lambda: None, epsilon=0.1, what="leaf")
    acc.record_output("leaf", 3)
    data = json.loads(acc.to_json())
    assert data["epsilon_budget"] == "inf" and data["epsilon_spent"] == pytest.approx(0.1)
    assert data["ledger"][0]["what"] == "leaf"
    assert acc.outputs == {"leaf": 3}
    quiet = Accountant(epsilon=1.0)
    quiet.record_output("leaf", 3)
    assert quiet.outputs == {}


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": 1.0, "delta": 1.0}, "delta"),
        ({"epsilon": 1.0, "delta": -0.1}, "delta"),
    ],
)
def test_bad_budget(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Accountant(**kwargs)


def test_bad_spend():
    acc = Accountant(epsilon=1.0)
    for eps in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="epsilon"):
            acc.release(lambda: None, epsilon=eps, what="x")
    with pytest.raises(ValueError, match="delta"):
        acc.release(lambda: None, epsilon=0.1, delta=float("nan"), what="x")
    with pytest.raises(ValueError, match="what"):
        acc.release(lambda: None, epsilon=0.1, what="")
    assert acc.ledger() == []


def test_batched_releases_cost_what_a_parallel_scope_costs():
    batched, scoped = Accountant(epsilon=1.0), Accountant(epsilon=1.0)
    for t in range(3):
        with batched.sequential(f"tree {t}"):
            batched.release(lambda: None, epsilon=0.1, what=f"tree {t} splits", releases=8)
        with scoped.sequential(f"tree {t}"), scoped.parallel("splits"):
            for node in range(8):
                scoped.release(lambda: None, epsilon=0.1, what=f"tree {t} node {node} split")
    assert batched.epsilon_spent == pytest.approx(scoped.epsilon_spent) == pytest.approx(0.3)
    assert batched.summary()["n_releases"] == scoped.summary()["n_releases"] == 24
    assert len(batched.ledger()) == 3 and batched.ledger()[0]["releases"] == 8
    with pytest.raises(BudgetExceededError):
        batched.release(lambda: None, epsilon=0.75, what="too much", releases=2)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="releases"):
            batched.release(lambda: None, epsilon=0.01, what="bad", releases=bad)


def test_compact_ledger_aggregates_per_scope_and_mechanism():
    acc = Accountant(epsilon=1.0)
    with acc.sequential("tree 0"):
        for depth in range(3):
            with acc.parallel(f"depth {depth}"):
                for node in range(2 ** depth):
                    acc.release(lambda: None, epsilon=0.1, what=f"tree 0 depth {depth} node {node} split")
        acc.release(lambda: None, epsilon=0.2, what="tree 0 leaves")
    rows = compact_ledger(acc.ledger())
    assert len(rows) == 2
    split = next(r for r in rows if "split" in r["what"])
    assert (split["scope"], split["count"], split["epsilon_max"]) == (
        "tree # / depth #", 7, 0.1)
    assert split["epsilon"] == pytest.approx(0.7)
    assert sum(r["count"] for r in rows) == len(acc.ledger())


# ----------------------------------------------------------------- draw and charge in one call


def test_a_mechanism_method_draws_and_charges_in_one_call():
    acc = Accountant(epsilon=1.0)
    rng = np.random.default_rng(0)
    out = acc.laplace(np.zeros(3), epsilon=0.5, sensitivity=2.0, rng=rng, what="three sums",
                      releases=3)
    assert np.shape(out) == (3,) and np.all(out != 0.0)
    (entry,) = acc.ledger()
    assert entry["what"] == "three sums" and entry["epsilon"] == 0.5
    assert entry["mechanism"] == "laplace" and entry["sensitivity"] == 2.0
    assert entry["releases"] == 3
    assert acc.epsilon_spent == pytest.approx(0.5)


def test_an_overspending_release_draws_nothing():
    acc = Accountant(epsilon=1.0)
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        acc.exponential(np.zeros(4), epsilon=2.0, sensitivity=1.0, rng=rng, what="too much")
    assert rng.bit_generator.state == before  # the draw never happened
    assert acc.ledger() == [] and acc.epsilon_spent == 0.0


def test_a_draw_that_raises_charges_nothing():
    acc = Accountant(epsilon=1.0)

    def draw():
        raise RuntimeError("sampler failed")

    with pytest.raises(RuntimeError, match="sampler failed"):
        acc.release(draw, epsilon=0.5, what="failed release")
    assert acc.ledger() == [] and acc.epsilon_spent == 0.0


def _rounds_of_utilities(utilities):
    """``select`` for exponential_rounds: round ``r`` (rows ``utilities[r]``) draws with
    the next uniforms, by the mechanism's own inverse CDF."""
    def select(scale, uniforms):
        out, used = [], 0
        for u in utilities:
            choice = np.empty((1, u.shape[0]), dtype=np.int64)
            inverse_cdf_rows(u, scale, uniforms[used:used + u.shape[0]].reshape(1, -1),
                              choice)
            out.append(choice[0])
            used += u.shape[0]
        return out
    return select


def test_exponential_rounds_draw_and_charge_as_one_call_per_round():
    """The draws, ledger entries (keys in order), totals and the generator's state after
    them of one ``exponential`` call per round."""
    utilities = [np.random.default_rng(r).normal(size=(1 << r, 9)) for r in range(4)]
    rounds = [Round(f"depth {r} splits", 1 << r, {"nodes": list(range(1 << r))})
              for r in range(4)]
    one, each = Accountant(epsilon=3.0), Accountant(epsilon=3.0)
    rng_one, rng_each = np.random.default_rng(5), np.random.default_rng(5)
    with one.sequential("ensemble"), one.parallel("trees"):
        with one.sequential("tree 0"):  # a sibling spent first: the parallel max moves
            one.release(lambda: None, epsilon=1.5, what="earlier tree")
        with one.sequential("tree 1"):
            got = one.exponential_rounds(_rounds_of_utilities(utilities), epsilon=0.5,
                                         sensitivity=2.0, rng=rng_one, rounds=rounds)
    with each.sequential("ensemble"), each.parallel("trees"):
        with each.sequential("tree 0"):
            each.release(lambda: None, epsilon=1.5, what="earlier tree")
        with each.sequential("tree 1"):
            want = [each.exponential(u, epsilon=0.5, sensitivity=2.0, rng=rng_each,
                                     what=r.what, releases=r.releases, **r.info)
                    for u, r in zip(utilities, rounds, strict=True)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert one.ledger() == each.ledger()
    assert [list(e) for e in one.ledger()] == [list(e) for e in each.ledger()]
    assert one.epsilon_spent == each.epsilon_spent == 2.0
    assert one.summary() == each.summary()
    assert rng_one.random() == rng_each.random()


def test_exponential_rounds_check_their_total_before_any_draw():
    acc = Accountant(epsilon=1.0)
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    rounds = [Round(f"round {r}") for r in range(3)]  # 0.4 each: the third overspends
    with acc.sequential("tree"), pytest.raises(BudgetExceededError, match="round 2"):
        acc.exponential_rounds(lambda scale, u: None, epsilon=0.4, sensitivity=1.0, rng=rng,
                               rounds=rounds)
    assert rng.bit_generator.state == before
    assert acc.ledger() == [] and acc.epsilon_spent == 0.0

    def failed(scale, uniforms):
        raise ValueError("utility must be finite")

    with pytest.raises(ValueError, match="finite"):
        acc.exponential_rounds(failed, epsilon=0.4, sensitivity=1.0, rng=rng,
                               rounds=rounds[:2])
    assert acc.ledger() == [] and acc.epsilon_spent == 0.0


def test_absorbed_ledgers_compose_in_their_scopes():
    part = Accountant(epsilon=1.0)
    with part.sequential("chunk"):  # one chunk's releases, as an InPrivate participant's
        with part.sequential("tree"), part.parallel("leaves"):
            part.release(lambda: None, epsilon=0.25, what="leaf values", releases=4)
        with part.sequential("tree 2"):
            part.release(lambda: None, epsilon=0.5, what="leaf values 2")
    whole = Accountant(epsilon=1.0)
    with whole.parallel("chunks"):
        whole.absorb_ledger(part.ledger())
        whole.absorb_ledger(part.ledger())
    assert whole.epsilon_spent == pytest.approx(part.epsilon_spent)
    assert [e["scope"] for e in whole.ledger()][:2] == [["chunks", "chunk", "tree", "leaves"],
                                                       ["chunks", "chunk", "tree 2"]]
    assert whole.ledger()[0]["releases"] == 4


def test_no_budget_is_charged_outside_the_accountant_mechanisms():
    """Every draw of noise in the estimators goes through an accountant method (issue
    38): no ``.spend(`` in the package except the cross-fit BudgetAccountant, and no
    estimator module imports a value-noise mechanism to call it by hand."""
    root = Path(dpexp.__file__).parent
    noise_functions = re.compile(
        r"\b(laplace_mechanism|gaussian_mechanism|discrete_laplace_mechanism)\(|"
        r"^from dpexp\.privacy.* import .*\b(laplace|gaussian|discrete_laplace)_mechanism\b",
        re.MULTILINE)
    spends, raw = [], []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(root).as_posix()
        if ".spend(" in text and rel != "privacy/budget.py":
            spends.append(rel)
        if rel.split("/")[0] in ("papers", "trees", "boosting") and noise_functions.search(text):
            raw.append(rel)
    assert spends == [] and raw == []
