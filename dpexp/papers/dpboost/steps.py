"""DPBoost's tree steps and schedules on the shared boosting loop
(:func:`dpexp.boosting.base.boosting_loop`): Algorithm 1 (TrainSingleTree) with GDF and
GLC, the NP tree, the authors' pruned split (``exact_growth``), and the schedules of
Algorithm 2's ensemble of ensembles and of PARA (Li et al. 2020, Sections 3-4; see
:mod:`dpexp.papers.dpboost.estimators`)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpexp.boosting.base import BoostingFit, TreeSlot, add_tree_to_scores
from dpexp.jit import njit
from dpexp.papers.dpboost.formulas import (
    dpboost_subset_proportions,
    exact_hessians,
    gdf_mask,
    glc_threshold,
    gradients,
    leaf_sensitivity,
    n_ensembles,
    para_proportions,
)
from dpexp.privacy import Accountant, exponential_mechanism, record_ids, record_partition
from dpexp.privacy.partition import RecordIds
from dpexp.trees.grower import GrownTree, GrowWorkspace, SplitContext, grow_tree
from dpexp.trees.policies import GreedySplit, LaplaceLeaf, NewtonLeaf
from dpexp.trees.split_search import split_gains


class PrunedExponentialSplit:
    """The authors' split step (``exact_growth=True``; not DP): the exponential mechanism
    of Algorithm 1 over the candidates the fork leaves a non-zero probability, chosen with
    the exact gains.

    A candidate is kept when its exact gain beats the parent's score
    ``G^2/(H + lambda)`` and both children have ``>= min_child_samples`` rows (the row
    count is the last statistic, ``unit_last``); a node with no kept candidate becomes a
    leaf. ``num_leaves`` caps the tree's leaves: per depth, only the nodes with the largest
    exact best gain split while the leaf count allows (LightGBM grows leaf-wise; the shared
    grower is level-wise). Spends ``epsilon`` once per depth (the split nodes hold
    disjoint rows) with sensitivity ``Delta G``, as :class:`ExponentialSplit`; the fit is
    marked not DP by the estimator because the kept set and the stopping read the private
    gains.
    """

    def __init__(self, reg_lambda: float, epsilon: float, sensitivity: float,
                 min_child_samples: int, num_leaves: int | None) -> None:
        self.reg_lambda, self.epsilon, self.sensitivity = reg_lambda, epsilon, sensitivity
        self.min_child_samples, self.num_leaves = min_child_samples, num_leaves
        self._closed = 0  # leaves closed at earlier depths of the current tree

    def _kept(self, ctx: SplitContext) -> tuple[np.ndarray, np.ndarray]:
        """Exact gain over the parent ``(n_nodes, d, B-1)`` and the kept-candidate mask."""
        gains = split_gains(ctx.hist, self.reg_lambda, ctx.n_candidates)
        parent = ctx.totals[:, 0] ** 2 / (ctx.totals[:, 1] + self.reg_lambda)
        delta = gains - parent[:, None, None]
        left = np.cumsum(ctx.hist[..., -1], axis=2)[..., :-1]  # rows going left
        right = ctx.totals[:, -1][:, None, None] - left
        m = self.min_child_samples
        with np.errstate(invalid="ignore"):  # NaN = not a candidate: never kept
            keep = (delta > 0) & (left >= m) & (right >= m)
        return delta, keep

    def __call__(self, ctx: SplitContext) -> tuple[np.ndarray, np.ndarray]:
        if ctx.depth == 0:
            self._closed = 0
        n = ctx.n_nodes
        feat, bins = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        n_cand = ctx.hist.shape[2] - 1
        if n_cand <= 0:
            self._closed += n
            return feat, bins
        delta, keep = self._kept(ctx)
        best = np.where(keep, delta, -np.inf).reshape(n, -1).max(axis=1)
        order = np.argsort(-best, kind="stable")
        splittable = order[np.isfinite(best[order])]
        if self.num_leaves is not None:
            # every open node is at least one leaf; each split adds one more
            room = max(0, int(self.num_leaves) - self._closed - n)
            splittable = splittable[:room]
        self._closed += n - splittable.size
        if splittable.size == 0:
            return feat, bins
        def draw() -> list[int]:  # one exponential mechanism per node, over its kept candidates
            picks = []
            for j in splittable:
                idx = np.flatnonzero(keep[j].ravel())
                util = (delta[j].reshape(-1))[idx]
                picks.append(int(idx[int(exponential_mechanism(
                    util, epsilon=self.epsilon, sensitivity=self.sensitivity, rng=ctx.rng))]))
            return picks

        # the nodes of a depth hold disjoint rows: one release over them (parallel)
        picks = ctx.accountant.release(
            draw, epsilon=self.epsilon, releases=int(splittable.size),
            what=f"{ctx.label} depth {ctx.depth} splits (pruned candidates)",
            nodes=[int(ctx.node_ids[j]) for j in splittable], mechanism="exponential",
            sensitivity=self.sensitivity)
        for j, c in zip(splittable, picks, strict=True):
            feat[j], bins[j] = c // n_cand, c % n_cand
        return feat, bins


# ----------------------------------------------------------------------------- schedules


#: Rows hashed per :func:`record_ids` call by :func:`chunked_record_ids`: a block of at
#: most this many float64 values (32 MiB), whatever the table's width.
RECORD_ID_BLOCK_VALUES = 1 << 22


def chunked_record_ids(X, y: np.ndarray) -> RecordIds:
    """:func:`~dpexp.privacy.record_ids` of ``(X, y)``, hashed a block of rows at a time.

    A record's id depends on that record alone, so the ids of row blocks concatenated are
    the ids of the whole table, bit for bit; but ``record_ids`` converts a dense table to
    one float64 copy first, which for the float32 table of a large fit is twice the
    table's size at once (1M x 400: 3 GiB more than the non-private fit, issue 43).
    """
    n_rows, n_cols = X.shape
    step = max(1, RECORD_ID_BLOCK_VALUES // max(1, n_cols))
    if n_rows <= step:
        return record_ids(X, y)
    y = np.asarray(y)
    return RecordIds(np.concatenate([
        record_ids(X[start:start + step], y[start:start + step]).values
        for start in range(0, n_rows, step)]))


@njit(cache=True, nogil=True)
def rows_by_part(parts: np.ndarray, n_parts: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, bounds)``: ``rows[bounds[k]:bounds[k + 1]]`` is ``np.flatnonzero(parts ==
    k)`` for every part ``0 <= k < n_parts`` (a counting sort, stable: what
    ``np.argsort(parts, kind="stable")`` gives for those parts, without the sort)."""
    bounds = np.zeros(n_parts + 1, dtype=np.int64)
    for i in range(parts.shape[0]):
        k = parts[i]
        if 0 <= k < n_parts:
            bounds[k + 1] += 1
    for k in range(n_parts):
        bounds[k + 1] += bounds[k]
    fill = bounds[:-1].copy()
    rows = np.empty(bounds[n_parts], dtype=np.int64)
    for i in range(parts.shape[0]):
        k = parts[i]
        if 0 <= k < n_parts:
            rows[fill[k]] = i
            fill[k] += 1
    return rows, bounds


@njit(cache=True, nogil=True)
def rows_after_part(rows: np.ndarray, parts: np.ndarray, part: int) -> np.ndarray:
    """``rows[parts[rows] > part]`` in one pass (a new array; ``rows`` is not written)."""
    out = np.empty(rows.shape[0], dtype=np.int64)
    m = 0
    for i in range(rows.shape[0]):
        r = rows[i]
        out[m] = r
        m += parts[r] > part
    return out[:m]


def ensemble_slots(accountant: Accountant, ids: RecordIds, n_trees: int,
                   trees_per_ensemble: int, learning_rate: float,
                   structure: np.random.SeedSequence, *, trim_last: bool = False
                   ) -> Generator[TreeSlot, None, None]:
    """Algorithm 2's schedule: ``N_e`` ensembles in sequence, each a parallel scope whose
    tree ``te`` reads part ``te`` of a fresh record partition with the shares of
    :func:`dpboost_subset_proportions` (keyed by each record's content, never its row: a
    record added anywhere moves no other record, Li et al. 2020 Theorem 4). The
    partitions come from the structure stream. ``trim_last``: the last ensemble's trees
    update only the scores of the rows a later tree reads (no ensemble reads them again)."""
    props = dpboost_subset_proportions(trees_per_ensemble, learning_rate)
    seeds = structure.spawn(n_ensembles(n_trees, trees_per_ensemble))
    t = 0
    for e, seed in enumerate(seeds):
        parts = record_partition(ids, props, np.random.default_rng(seed))
        last = trim_last and e == len(seeds) - 1
        n_here = min(trees_per_ensemble, n_trees - t)
        # the rows of every part at once (each part's rows ascending:
        # np.flatnonzero(parts == te) for each te), not one pass over all rows per tree
        by_part, bounds = rows_by_part(parts, n_here)
        later = np.flatnonzero(parts > 0) if last else None  # ascending, shrinks per tree
        with accountant.sequential(f"ensemble {e}"), accountant.parallel(f"trees of ensemble {e}"):
            for te in range(n_here):
                if later is not None and te:
                    later = rows_after_part(later, parts, te)  # np.flatnonzero(parts > te)
                yield TreeSlot(t, f"tree {t + 1}", by_part[bounds[te]:bounds[te + 1]], later,
                               position=te + 1, round=e)
                t += 1


def para_slots(accountant: Accountant, ids: RecordIds, n_trees: int,
               structure: np.random.SeedSequence) -> Generator[TreeSlot, None, None]:
    """PARA's schedule (Section 4): tree ``t`` reads part ``t`` of one record partition
    with the shares :func:`para_proportions`, all in one parallel scope."""
    parts = record_partition(ids, para_proportions(n_trees), np.random.default_rng(structure))
    with accountant.parallel("trees (disjoint halves of the unused records)"):
        for t in range(n_trees):
            yield TreeSlot(t, f"tree {t + 1}", np.flatnonzero(parts == t),
                           np.flatnonzero(parts > t))


@njit(cache=True, nogil=True)
def square_gdf_rows(rows: np.ndarray, scores: np.ndarray, target: np.ndarray, g_star: float,
                    stats: np.ndarray) -> np.ndarray:
    """The square loss's gradients ``g = F - y`` of ``rows`` into ``stats[rows, 0]`` and
    the rows GDF keeps (``|g| <= g*``, Section 3.1), in order: what
    :func:`~dpexp.papers.dpboost.formulas.gradients` and
    :func:`~dpexp.papers.dpboost.formulas.gdf_mask` give, bit for bit."""
    keep = np.empty(rows.shape[0], dtype=rows.dtype)
    m = 0
    for i in range(rows.shape[0]):
        r = rows[i]
        g = scores[r] - target[r]
        stats[r, 0] = g
        keep[m] = r
        m += abs(g) <= g_star
    return keep[:m]


# ----------------------------------------------------------------------------- tree steps


@dataclass(frozen=True)
class AuthorsOptions:
    """The ablation options in use (module docstring): exact hessians, the split budget
    divisor, the exact label mean as the initial score."""

    exact_hessian: bool
    split_budget_divisor: float
    mean_init: bool


@dataclass
class DPBoostTreeStep:
    """Algorithm 1 (TrainSingleTree) on the rows of a slot: gradients at the current
    scores, GDF (or clipping), the exponential split of every depth, GLC-clipped Laplace
    leaves with ``Delta V_t`` of the tree's GLC index (Corollary 2)."""

    fit: BoostingFit
    loss: str
    learning_rate: float
    reg_lambda: float
    g_star: float
    max_depth: int
    eps_tree: float
    gdf: bool
    glc: bool
    glc_per_ensemble: bool
    exact_hessian: bool
    split: Any
    noise_rngs: list
    stats: np.ndarray
    initial_score: float
    workspace: GrowWorkspace = field(default_factory=GrowWorkspace)
    offered: list[int] = field(default_factory=list)  # rows offered to each tree
    used: list[int] = field(default_factory=list)  # rows GDF kept
    rounds: list[int] = field(default_factory=list)  # each tree's round

    def grow(self, slot: TreeSlot, scores: np.ndarray) -> GrownTree:
        t = slot.index + 1
        # the iteration index GLC decays with: the tree's 1-based position in its
        # ensemble when glc_per_ensemble, else t (only mode "dpboost" clips)
        t_glc = t if slot.position is None or not self.glc_per_ensemble else slot.position
        g_star, lam, lr = self.g_star, self.reg_lambda, self.learning_rate
        keep = self._slot_statistics(slot.rows, scores)
        self.offered.append(slot.rows.size)
        self.used.append(keep.size)
        self.rounds.append(slot.round)
        leaf = LaplaceLeaf(
            lam, self.eps_tree / 2 if self.max_depth else self.eps_tree,
            leaf_sensitivity(g_star, lam, lr, t_glc, self.glc),
            clip=glc_threshold(g_star, lr, t_glc) if self.glc else None,
        )
        return grow_tree(
            self.fit.data, self.stats, keep, self.fit.mapper, max_depth=self.max_depth,
            split_policy=self.split, leaf_policy=leaf, rng=self.noise_rngs[slot.index],
            accountant=self.fit.accountant, label=slot.label, workspace=self.workspace,
            unit_last=True,
        )

    def _slot_statistics(self, rows: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """Gradients (and exact hessians) of the slot's rows into ``self.stats``, GDF or
        clipping (Section 3.1); the rows the tree grows on.

        A tree reads the statistics of its own rows only, so a slot of part of the table
        (DPBoost's and PARA's disjoint subsets: ~2% of the rows a tree on adult at Fig. 2)
        computes those rows' and not every row's: the same values, element by element.
        """
        stats, g_star = self.stats, self.g_star
        if rows.size == stats.shape[0]:  # every row (SEQ): no gathered copies
            gradients(scores, self.fit.target, self.loss, out=stats[:, 0])
            if self.exact_hessian:
                exact_hessians(scores, self.loss, out=stats[:, 1])
            if self.gdf:
                return rows[gdf_mask(stats[rows, 0], g_star)]
            # no filter: clip instead, so |g| <= g* as the split and leaf sensitivities
            # assume (Lemma 1, Corollary 2); unclipped it would not be DP
            np.clip(stats[:, 0], -g_star, g_star, out=stats[:, 0])
            return rows
        if self.loss == "square" and self.gdf and not self.exact_hessian:
            # Section 4's setting in one compiled pass over the slot's rows
            return square_gdf_rows(rows, scores, self.fit.target, g_star, stats)
        row_scores = scores[rows]
        g = gradients(row_scores, self.fit.target[rows], self.loss)
        if self.exact_hessian:
            stats[rows, 1] = exact_hessians(row_scores, self.loss, out=np.empty_like(g))
        if self.gdf:
            keep = rows[gdf_mask(g, g_star)]
        else:  # clipped, as above
            np.clip(g, -g_star, g_star, out=g)
            keep = rows
        stats[rows, 0] = g
        return keep

    def add_to_scores(self, grown: GrownTree, scores: np.ndarray, slot: TreeSlot) -> None:
        add_tree_to_scores(grown, scores, self.learning_rate, self.fit.data, self.fit.X,
                           rows=slot.read_later)

    def diagnostics(self) -> dict[str, float]:
        # exact counts of the private data: diagnostics for the experiments (recorded with
        # metric_kind="diagnostic"), not part of the DP release; means over the rounds
        # (groups of trees on disjoint records)
        rounds = list(dict.fromkeys(self.rounds))
        n_off = float(np.mean([sum(o for o, r in zip(self.offered, self.rounds, strict=True)
                                   if r == k) for k in rounds]))
        n_used = float(np.mean([sum(u for u, r in zip(self.used, self.rounds, strict=True)
                                    if r == k) for k in rounds]))
        return {
            "n_filtered": float(sum(self.offered) - sum(self.used)),
            "n_instances_offered": n_off,
            "n_instances_used": n_used,
            "gdf_filtered_ratio": (n_off - n_used) / n_off if n_off else 0.0,
            "epsilon_per_tree": self.eps_tree,
        }


@dataclass
class NPTreeStep:
    """NP: greedy splits, exact Newton leaves (Eq. 4), all rows every tree; the grower adds
    each tree to the scores."""

    fit: BoostingFit
    loss: str
    learning_rate: float
    max_depth: int
    split: GreedySplit
    leaf: NewtonLeaf
    rng: np.random.Generator  # unused by the greedy policies
    stats: np.ndarray
    initial_score: float = 0.0
    workspace: GrowWorkspace = field(default_factory=GrowWorkspace)

    def grow(self, slot: TreeSlot, scores: np.ndarray) -> GrownTree:
        gradients(scores, self.fit.target, self.loss, out=self.stats[:, 0])
        return grow_tree(
            self.fit.data, self.stats, slot.rows, self.fit.mapper, max_depth=self.max_depth,
            split_policy=self.split, leaf_policy=self.leaf, rng=self.rng,
            workspace=self.workspace, unit_last=True, scores=scores,
            score_scale=self.learning_rate,
        )  # F += learning_rate * tree(x) for every row, done by the grower

    def add_to_scores(self, grown: GrownTree, scores: np.ndarray, slot: TreeSlot) -> None:
        """Nothing to do: the grower added the tree to every row's score."""

    def diagnostics(self) -> dict[str, float]:
        n = float(self.fit.n_rows)
        return {"n_instances_used": n, "n_instances_offered": n, "n_filtered": 0.0,
                "gdf_filtered_ratio": 0.0}
