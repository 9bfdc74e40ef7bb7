"""The compiled level loop (dpexp.trees.fused_levels) grows the reference path's trees
bit for bit: greedy and exponential-mechanism trees in one call per tree (the latter with
the same draws and ledger entries), any other policy in one call per depth."""

from __future__ import annotations

import numpy as np
import pytest

import dpexp.trees.grower as grower
import dpexp.trees.policies as policies
from dpexp.errors import BudgetExceededError
from dpexp.privacy.accountant import Accountant
from dpexp.trees import parallel as par
from dpexp.trees.binning import fit_bin_mapper
from dpexp.trees.grower import GrowWorkspace, grow_tree
from dpexp.trees.policies import ExponentialSplit, GreedySplit, LaplaceLeaf, NewtonLeaf

TREE_ARRAYS = ("kind", "feature", "threshold", "child_start", "n_children", "value", "depth")


def _table(n: int, seed: int):
    """Continuous columns, a column of few distinct values (bins past its codes stay
    empty), binary columns (bundled) and a constant column (all rows in one bin)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.random((n, 4)), rng.integers(0, 3, n) / 2.0,
                         (rng.random((n, 3)) > 0.85).astype(float), np.full(n, 0.5)])
    y = np.where(X[:, 0] + 0.4 * X[:, 5] + 0.2 * rng.normal(size=n) > 0.7, 1.0, -1.0)
    mapper = fit_bin_mapper(X, feature_domain=np.tile([0.0, 1.0], (X.shape[1], 1)),
                            max_bins=48)
    return mapper.transform(X), mapper, y


def _grow(monkeypatch, compiled: bool, data, mapper, stats, rows, **kw):
    monkeypatch.setattr(grower, "COMPILED_LEVELS", compiled)
    scores = None if kw.pop("scored", False) is False else np.zeros(data.n_rows)
    acc = Accountant(1e9)
    grown = grow_tree(data, stats, rows, mapper, accountant=acc, scores=scores,
                      score_scale=0.3, **kw)
    return grown, scores, acc.ledger()


def _counted(monkeypatch, module, name: str) -> list[int]:
    """Count the calls of ``module.name`` (one entry per call), which still runs."""
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(module, name, counted)
    return calls


def _assert_same(a, b) -> None:
    (ga, sa, la), (gb, sb, lb) = a, b
    for name in TREE_ARRAYS:
        np.testing.assert_array_equal(getattr(ga.tree, name), getattr(gb.tree, name))
    np.testing.assert_array_equal(ga.bins, gb.bins)
    assert (ga.order is None) == (gb.order is None)
    if ga.order is not None:
        for name in ("order", "leaf_start", "leaf_end", "leaf_node"):
            np.testing.assert_array_equal(getattr(ga, name), getattr(gb, name))
    if sa is not None:
        np.testing.assert_array_equal(sa, sb)
    assert la == lb


class _RandomLeaves:
    """A split policy that closes random nodes of every depth and splits the others on a
    random candidate (children may be empty): the per-depth compiled path."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, ctx):
        n = ctx.n_nodes
        feat = self.rng.integers(0, ctx.hist.shape[1], n)
        bins_ = self.rng.integers(0, np.maximum(ctx.n_candidates[feat], 1))
        feat[self.rng.random(n) < 0.3] = -1
        return feat, np.where(feat < 0, -1, bins_)


@pytest.mark.parametrize("depth", [1, 2, 4, 7])
@pytest.mark.parametrize("seed", [0, 1])
def test_greedy_trees_equal_the_reference(monkeypatch, depth, seed):
    data, mapper, y = _table(1500, seed)
    n = y.size
    sub = np.sort(np.random.default_rng(seed).choice(n, n // 3, replace=False))
    calls = _counted(monkeypatch, grower, "greedy_tree_levels")
    for stats, unit in ((np.column_stack([-y, np.ones(n)]), True),
                        (np.column_stack([-y, 0.5 + np.abs(y) / 4, y ** 2]), False)):
        for rows in (np.arange(n), sub, sub[:0]):
            for policy in (GreedySplit(0.1), GreedySplit(0.1, min_samples_leaf=40),
                           GreedySplit(0.1, min_child_weight=0.0, min_samples_leaf=0,
                                       min_gain=-np.inf)):  # empty children allowed
                for scored in (False, True):
                    kw = dict(max_depth=depth, split_policy=policy,
                              leaf_policy=NewtonLeaf(0.1), rng=np.random.default_rng(0),
                              unit_last=unit, scored=scored, workspace=GrowWorkspace())
                    before = len(calls)
                    fast = _grow(monkeypatch, True, data, mapper, stats, rows, **kw)
                    assert len(calls) == before + 1  # one compiled call for the tree
                    kw["workspace"] = GrowWorkspace()
                    _assert_same(_grow(monkeypatch, False, data, mapper, stats, rows, **kw),
                                 fast)


@pytest.mark.parametrize("depth", [1, 3, 6])
def test_per_depth_compiled_policies_equal_the_reference(monkeypatch, depth):
    """Exponential-mechanism and random splits: the same trees, leaves, noise and
    ledger; below the root the mechanism's utilities come with the histograms."""
    monkeypatch.setattr(grower, "COMPILED_EXPONENTIAL_TREE", False)  # one call per depth
    gain_calls = _counted(monkeypatch, policies, "candidate_gains")
    data, mapper, y = _table(1200, 5)
    stats = np.column_stack([np.clip(-y, -1, 1), np.ones(y.size)])
    rows = np.arange(0, y.size, 2)
    for make_split, leaf in (
            (lambda: ExponentialSplit(0.1, 0.5, 3.0), LaplaceLeaf(0.1, 0.5, 1.0, clip=1.0)),
            (lambda: _RandomLeaves(3), NewtonLeaf(0.1))):
        for unit in (False, True):
            ws = GrowWorkspace()  # one workspace for both paths, alternating trees
            results = []
            for compiled in (True, False, True):
                before = len(gain_calls)
                results.append(_grow(monkeypatch, compiled, data, mapper, stats, rows,
                                     max_depth=depth, split_policy=make_split(),
                                     leaf_policy=leaf, rng=np.random.default_rng(9),
                                     unit_last=unit, workspace=ws))
                if isinstance(leaf, LaplaceLeaf):  # every node splits: one call per depth
                    assert len(gain_calls) - before == (1 if compiled else depth)
            _assert_same(results[1], results[0])
            _assert_same(results[1], results[2])


def test_parallel_kernels_inside_the_compiled_loop(monkeypatch):
    """With every threshold at zero the compiled loop takes the parallel twins (when numba
    has threads): the same trees."""
    for name in ("HIST_PARALLEL_MIN_WORK", "LEVEL_PARALLEL_MIN_WORK",
                 "SPLIT_PARALLEL_MIN_CANDIDATES"):
        monkeypatch.setattr(par, name, 0)
    data, mapper, y = _table(2000, 7)
    stats = np.column_stack([-y, np.ones(y.size)])
    kw = dict(max_depth=5, split_policy=GreedySplit(0.1), leaf_policy=NewtonLeaf(0.1),
              rng=np.random.default_rng(0), unit_last=True, scored=True)
    _assert_same(_grow(monkeypatch, False, data, mapper, stats, np.arange(y.size), **kw),
                 _grow(monkeypatch, True, data, mapper, stats, np.arange(y.size), **kw))


def test_greedy_trees_too_wide_for_one_call_go_per_depth(monkeypatch):
    """A greedy tree whose widest depth's histograms would not fit the one-call buffers
    runs per depth (the policy in Python, the rest compiled): the same tree."""
    monkeypatch.setattr(grower, "COMPILED_TREE_MAX_HIST_BYTES", 0)
    monkeypatch.setattr(grower, "greedy_tree_levels", None)  # must not be called
    data, mapper, y = _table(1500, 3)
    stats = np.column_stack([-y, np.ones(y.size)])
    kw = dict(max_depth=6, split_policy=GreedySplit(0.1, min_samples_leaf=10),
              leaf_policy=NewtonLeaf(0.1), rng=np.random.default_rng(0), unit_last=True,
              scored=True)
    _assert_same(_grow(monkeypatch, False, data, mapper, stats, np.arange(y.size), **kw),
                 _grow(monkeypatch, True, data, mapper, stats, np.arange(y.size), **kw))


def _grow_dp(monkeypatch, mode: str, data, mapper, stats, rows, acc, rng, **kw):
    """One exponential-mechanism tree: ``mode`` "tree" (one compiled call), "depth" (the
    policy per depth, the rest compiled) or "reference" (the plain per-depth loop)."""
    monkeypatch.setattr(grower, "COMPILED_LEVELS", mode != "reference")
    monkeypatch.setattr(grower, "COMPILED_EXPONENTIAL_TREE", mode == "tree")
    scores = None if kw.pop("scored", False) is False else np.zeros(data.n_rows)
    with acc.sequential("tree 0"):
        grown = grow_tree(data, stats, rows, mapper, accountant=acc, rng=rng, scores=scores,
                          score_scale=0.3, split_policy=ExponentialSplit(0.1, 0.5, 3.0),
                          leaf_policy=LaplaceLeaf(0.1, 0.5, 1.0, clip=1.0), label="t0", **kw)
    return grown, scores, acc.ledger()


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_exponential_trees_in_one_call_equal_the_per_depth_paths(monkeypatch, depth):
    """The whole tree in one compiled call: the trees, leaves, scores, ledger (entry for
    entry, keys in order) and the generator's state after it of both per-depth paths."""
    data, mapper, y = _table(1300, 11)
    n = y.size
    calls = _counted(monkeypatch, grower, "exponential_tree_levels")
    sub = np.sort(np.random.default_rng(2).choice(n, n // 4, replace=False))
    for stats, unit in ((np.column_stack([np.clip(-y, -1, 1), np.ones(n)]), True),
                        (np.column_stack([-y, 0.5 + np.abs(y) / 4, y ** 2]), False)):
        for rows in (np.arange(n), sub):
            for scored in (False, True):
                got = {}
                for mode in ("tree", "depth", "reference"):
                    before = len(calls)
                    rng = np.random.default_rng(4)
                    got[mode] = _grow_dp(monkeypatch, mode, data, mapper, stats, rows,
                                         Accountant(50.0), rng, max_depth=depth,
                                         unit_last=unit, scored=scored,
                                         workspace=GrowWorkspace())
                    got[mode] += (rng.random(),)  # where the generator stands after
                    assert len(calls) - before == (mode == "tree")
                for mode in ("depth", "reference"):
                    _assert_same(got[mode][:3], got["tree"][:3])
                    assert got[mode][3] == got["tree"][3]
                    assert [list(e) for e in got[mode][2]] == [list(e) for e in got["tree"][2]]
                whats = [e["what"] for e in got["tree"][2]]
                assert whats == [f"t0 depth {d} splits" for d in range(depth)] + ["t0 leaf values"]


def test_exponential_tree_checks_the_depths_total_before_any_draw(monkeypatch):
    """One accountant call per tree: a budget short of the depths' total raises before
    anything is drawn or charged (the per-depth path charges the depths that fit)."""
    data, mapper, y = _table(800, 4)
    stats = np.column_stack([np.clip(-y, -1, 1), np.ones(y.size)])
    rows = np.arange(y.size)
    for mode, charged in (("tree", 0), ("depth", 2)):
        acc, rng = Accountant(1.2), np.random.default_rng(0)  # 0.5 a depth: two fit
        with pytest.raises(BudgetExceededError, match="depth 2 splits"):
            _grow_dp(monkeypatch, mode, data, mapper, stats, rows, acc, rng, max_depth=3,
                     unit_last=True)
        assert len(acc.ledger()) == charged
        assert (rng.random() == np.random.default_rng(0).random()) == (charged == 0)


def test_exponential_tree_refuses_non_finite_utilities(monkeypatch):
    """Gradients whose gains overflow: the mechanism's error, nothing charged."""
    data, mapper, y = _table(600, 8)
    stats = np.column_stack([np.where(y > 0, 1e300, -1e300), np.ones(y.size)])
    for mode in ("tree", "depth"):
        acc = Accountant(50.0)
        with pytest.raises(ValueError, match="must be finite"):
            _grow_dp(monkeypatch, mode, data, mapper, stats, np.arange(y.size), acc,
                     np.random.default_rng(0), max_depth=3, unit_last=True)
        assert acc.ledger() == []
