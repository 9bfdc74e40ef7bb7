"""Split and leaf policies for :func:`dpexp.trees.grower.grow_tree`.

GBDT statistics are ``stats[:, 0] = g`` (gradient) and ``stats[:, 1] = h`` (hessian;
``h = 1`` gives the row count, Li et al. 2020 Section 4: "we set the second-order gradient
h to the constant value one").

* :class:`GreedySplit`: the non-private best split by the gain of Eq. (3) (NP).
* :class:`ExponentialSplit`: the exponential mechanism over *all* candidates of a node
  with utility G of Eq. (3) (Algorithm 1, lines 4-8), one spend per node of a depth in a
  parallel scope (nodes of one depth hold disjoint rows; Theorem 7).
* :class:`NewtonLeaf`: ``V = -sum g / (sum h + lambda)`` (Eq. 4).
* :class:`LaplaceLeaf`: Eq. (4), optionally clipped to ``[-clip, clip]`` (geometric leaf
  clipping, Section 3.1), then the Laplace mechanism (Algorithm 1, lines 11-14), one spend
  per leaf in a parallel scope.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from dpexp.privacy.accountant import Round
from dpexp.trees.grower import LeafContext, SplitContext
from dpexp.trees.split_search import (
    SplitRule,
    best_splits,
    candidate_gains,
    candidate_offsets,
    split_gains,
)

_EMPTY_COUNTS = np.zeros((0, 0, 0))
T = TypeVar("T")


@dataclass
class GreedySplit:
    """Best gain split (non-private). A node becomes a leaf when no candidate improves
    the objective by more than ``min_gain`` with both children satisfying
    ``min_child_weight`` (hessian sum) and ``min_samples_leaf`` (rows, = hessian sum when
    h = 1)."""

    reg_lambda: float = 0.1
    min_child_weight: float = 1e-3
    min_samples_leaf: int = 1
    min_gain: float = 0.0

    def __call__(self, ctx: SplitContext) -> tuple[np.ndarray, np.ndarray]:
        feat, bins, _ = best_splits(
            ctx.hist, float(self.reg_lambda), ctx.n_candidates,
            float(self.min_child_weight), float(self.min_samples_leaf), _EMPTY_COUNTS,
            ctx.totals, min_gain=float(self.min_gain), n_valid_total=ctx.n_candidates_total,
        )
        return feat, bins

    def compiled_rule(self) -> SplitRule | None:
        """This search as the compiled tree loop runs it
        (:func:`~dpexp.trees.fused_levels.greedy_tree_levels`: the same kernels, the same
        splits); None for a subclass, which may search otherwise."""
        if type(self) is not GreedySplit:
            return None
        return SplitRule(float(self.reg_lambda), float(self.min_child_weight),
                         float(self.min_samples_leaf), float(self.min_gain))


def candidate_index(n_candidates: np.ndarray, n_cand_max: int) -> np.ndarray:
    """Flat indices (into ``d * n_cand_max``) of the public candidates (f, b < n_candidates[f])."""
    valid = np.arange(n_cand_max)[None, :] < np.asarray(n_candidates)[:, None]
    return np.flatnonzero(valid.ravel())


def gain_utilities(ctx: SplitContext, reg_lambda: float) -> tuple[np.ndarray, np.ndarray]:
    """Gains G (Eq. 3) of every candidate of every node, ``(n_nodes, n_candidates)``, and
    the flat ``f * (B - 1) + b`` index of each candidate."""
    gains = split_gains(ctx.hist, float(reg_lambda), ctx.n_candidates)
    idx = candidate_index(ctx.n_candidates, gains.shape[2])
    flat = gains.reshape(gains.shape[0], -1)
    if idx.size == flat.shape[1]:  # every (feature, bin) is a candidate: no gathered copy
        return flat, idx
    return flat[:, idx], idx


class _CandidateLayout:
    """The packed candidate columns of :func:`~dpexp.trees.split_search.candidate_gains`
    for one public candidate grid (``n_candidates``, histogram width), kept by a policy
    across the depths and trees of a fit instead of being rebuilt per call."""

    def __init__(self, n_candidates: np.ndarray, n_bins: int) -> None:
        self.key = (np.asarray(n_candidates, dtype=np.int64).copy(), n_bins)
        self.offsets = candidate_offsets(n_candidates, n_bins)
        n_valid, offset = self.offsets
        # the feature of every packed column (what a binary search of the features'
        # column ranges gives, looked up)
        self.column_feature = np.repeat(np.arange(n_valid.shape[0], dtype=np.int64), n_valid)
        self._seen: np.ndarray | None = None  # the last array found equal to the key

    def matches(self, n_candidates: np.ndarray, n_bins: int) -> bool:
        if n_bins != self.key[1]:
            return False
        # the grower passes one array for every depth of a tree (and never writes it):
        # compared once per tree, not once per depth
        if n_candidates is self._seen:
            return True
        if not np.array_equal(n_candidates, self.key[0]):
            return False
        self._seen = n_candidates
        return True

    def feature_bin(self, choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(feature, bin)`` of packed candidate columns ``choice``."""
        feat = self.column_feature[choice]
        return feat, choice - self.offsets[1][feat]


@dataclass
class ExponentialSplit:
    """Exponential mechanism split (Li et al. 2020 Algorithm 1, lines 4-8).

    ``epsilon``: the per-depth budget ``epsilon_nleaf`` (each node of the depth spends it
    on disjoint rows); ``sensitivity``: Delta G (``3 g*^2``, Lemma 1 / Corollary 1). Every
    node of a depth < max_depth is split (the tree is grown to the maximum depth), so the
    set of candidates is public: all (feature, bin) pairs of the bin mapper.
    """

    reg_lambda: float
    epsilon: float
    sensitivity: float
    _layout: _CandidateLayout | None = field(default=None, init=False, repr=False,
                                             compare=False)

    def __call__(self, ctx: SplitContext) -> tuple[np.ndarray, np.ndarray]:
        n_bins = ctx.hist.shape[2]
        total = (int(ctx.n_candidates.sum()) if ctx.n_candidates_total is None
                 else ctx.n_candidates_total)
        if n_bins <= 1 or total == 0:
            none = np.full(ctx.n_nodes, -1, dtype=np.int64)
            return none, none.copy()
        lay = self._layout_for(ctx.n_candidates, n_bins)
        # the public candidates' gains, packed (candidate (f, b) at offset[f] + b): the
        # utilities gain_utilities gives, bit for bit, without the padded array; computed
        # with the histograms by the grower when it could (compiled_gains)
        util = ctx.utilities
        if util is None:
            util = candidate_gains(ctx.hist, float(self.reg_lambda), ctx.n_candidates,
                                   lay.offsets, ctx.n_bins)
        # one split per node; the nodes of a depth hold disjoint rows (parallel composition)
        choice = np.asarray(ctx.accountant.exponential(
            util, epsilon=self.epsilon, sensitivity=self.sensitivity, rng=ctx.rng,
            releases=ctx.n_nodes, what=f"{ctx.label} depth {ctx.depth} splits",
            nodes=np.asarray(ctx.node_ids, dtype=np.int64).tolist(),
        ), dtype=np.int64).reshape(-1)
        return lay.feature_bin(choice)

    def _layout_for(self, n_candidates: np.ndarray, n_bins: int) -> _CandidateLayout:
        lay = self._layout
        if lay is None or not lay.matches(n_candidates, n_bins):
            lay = self._layout = _CandidateLayout(n_candidates, n_bins)
        return lay

    def compiled_tree(self, levels: Callable[[float, np.ndarray, np.ndarray], T],
                      n_candidates: np.ndarray, n_bins: int, *, max_depth: int, rng,
                      accountant, label: str) -> T:
        """The splits of every depth of a tree at once: ``levels(scale, uniforms,
        column_feature)`` grows the whole tree
        (:func:`~dpexp.trees.fused_levels.exponential_tree_levels`: the utilities of
        :meth:`compiled_gains`, node ``j`` of depth ``d`` drawing from ``uniforms[2**d - 1 +
        j]``, packed column ``c`` being a candidate of feature ``column_feature[c]``)
        inside one accountant call
        (:meth:`~dpexp.privacy.accountant.Accountant.exponential_rounds`): the depths'
        total checked before any draw, the uniforms :meth:`__call__` draws depth by depth
        drawn at once, and each depth charged as :meth:`__call__` charges it (every node
        of a depth splits, so depth ``d`` has the ``2**d`` nodes ``2**d - 1 ...``)."""
        column_feature = self._layout_for(n_candidates, n_bins).column_feature
        rounds = [Round(f"{label} depth {d} splits", 1 << d,
                        {"nodes": list(range((1 << d) - 1, (2 << d) - 1))})
                  for d in range(max_depth)]
        return accountant.exponential_rounds(
            lambda scale, uniforms: levels(scale, uniforms, column_feature),
            epsilon=self.epsilon, sensitivity=self.sensitivity, rng=rng, rounds=rounds)

    def compiled_gains(self, n_candidates: np.ndarray, n_bins: int) -> tuple | None:
        """``(True, lambda, n_valid, offset, n_columns)``: what the grower's compiled
        level step needs to compute this policy's utilities (the packed gains of
        :func:`~dpexp.trees.split_search.candidate_gains`) with the histograms of every
        depth below the root (``SplitContext.utilities``); None when it should not (a
        subclass, or no candidate: no gains are computed then)."""
        if type(self) is not ExponentialSplit or n_bins <= 1:
            return None
        n_valid, offset = self._layout_for(n_candidates, n_bins).offsets
        # (with n_bins > 1 the packed columns are the candidates: none when their sum is 0)
        n_columns = int(offset[-1] + n_valid[-1]) if n_valid.size else 0
        return (True, float(self.reg_lambda), n_valid, offset, n_columns) if n_columns else None


@dataclass
class NewtonLeaf:
    """``V = -sum g / (sum h + lambda)`` (Eq. 4), non-private."""

    reg_lambda: float = 0.1

    def __call__(self, ctx: LeafContext) -> np.ndarray:
        return -ctx.totals[:, 0] / (ctx.totals[:, 1] + self.reg_lambda)


@dataclass
class LaplaceLeaf:
    """Eq. (4) leaf, clipped to ``[-clip, clip]`` (GLC) when ``clip`` is set, plus
    ``Lap(sensitivity / epsilon)`` (Algorithm 1 lines 11-14; Corollary 2 for Delta V)."""

    reg_lambda: float
    epsilon: float
    sensitivity: float
    clip: float | None = None

    def __call__(self, ctx: LeafContext) -> np.ndarray:
        v = -ctx.totals[:, 0] / (ctx.totals[:, 1] + self.reg_lambda)
        if self.clip is not None:
            v = np.clip(v, -self.clip, self.clip)
        if not ctx.n_leaves:
            return np.atleast_1d(v)
        # one value per leaf; leaves hold disjoint rows (parallel composition)
        return np.atleast_1d(ctx.accountant.laplace(
            v, epsilon=self.epsilon, sensitivity=self.sensitivity, rng=ctx.rng,
            releases=ctx.n_leaves, what=f"{ctx.label} leaf values",
            nodes=np.asarray(ctx.node_ids, dtype=np.int64).tolist(),
        ))
