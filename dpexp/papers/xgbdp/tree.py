"""The XGBoost-DP tree (Shi, Yin, Chen & Yan 2021, Table 1 and Section 5.1): the budget split
over the trees, layers and the two halves of a node, the noisy-count split policy
(termination, exponential-mechanism split) and the noisy-mean leaf, on the shared
histogram grower. Used by the booster (:mod:`dpexp.papers.xgbdp.estimators`, whose
docstring states the algorithm and our reading) and by the random forest and AdaBoost
comparators (:mod:`dpexp.papers.xgbdp.comparators`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpexp.boosting.gbdt import apply_tree, split_sensitivity
from dpexp.privacy import Accountant
from dpexp.trees.binned_data import BinnedData
from dpexp.trees.binning import BinMapper
from dpexp.trees.grower import GrownTree, LeafContext, SplitContext, grow_tree
from dpexp.trees.split_search import best_splits, split_gains
from dpexp.trees.tree import ArrayTree

#: g* of the clipped squared-loss gradients / +-1 labels (|g| <= 1).
G_STAR = 1.0
#: "auto" termination: noisy count below this many standard deviations of its noise.
AUTO_STOP_SDS = 4.0
_EMPTY_COUNTS = np.zeros((0, 0, 0))

# ----------------------------------------------------------------------------- budgets


def per_tree_budget(epsilon: float, n_trees: int) -> float:
    """``eps_1 = eps_a / n`` (Table 1 line 6; Section 5.1 ``eps' = B / n``)."""
    return float(epsilon) / int(n_trees)


def per_node_half_budget(eps_tree: float, max_depth: int) -> float:
    """``eps = eps_1 / (2 (d + 1))`` (Table 1 line 7; Section 5.1 ``eps''/2``)."""
    return float(eps_tree) / (2.0 * (int(max_depth) + 1))


def per_node_budgets(eps_tree: float, max_depth: int, count_share: float = 0.5) -> tuple[float, float]:
    """``(count budget, split-or-leaf budget)`` of one node: the layer budget
    ``eps'' = eps_1 / (d + 1)`` (Section 5.1) split ``count_share : 1 - count_share``
    (the paper's "two halves" is ``count_share = 0.5``; other shares are our ablation)."""
    share = float(count_share)
    if not 0.0 < share < 1.0:
        raise ValueError(f"count_share must be in (0, 1), got {count_share!r}")
    layer = float(eps_tree) / (int(max_depth) + 1)
    return layer * share, layer * (1.0 - share)


#: The noise sources that ``noiseless`` can switch off (ablation only; not DP then).
NOISE_SOURCES = ("count", "split", "leaf")


def parse_noiseless(noiseless) -> frozenset[str]:
    """``"leaf"``, ``"count,split"``, ... -> the set of noise sources computed exactly."""
    if noiseless is None or noiseless == "":
        return frozenset()
    parts = {p.strip() for p in str(noiseless).split(",") if p.strip()}
    bad = sorted(parts - set(NOISE_SOURCES))
    if bad:
        raise ValueError(f"noiseless must list some of {NOISE_SOURCES} (comma-separated), got {bad}")
    return frozenset(parts)


def auto_min_noisy_count(eps_half: float) -> float:
    """Default termination threshold: ``4 sqrt(2) / eps`` (4 sd of Lap(1/eps))."""
    return AUTO_STOP_SDS * math.sqrt(2.0) / eps_half


def resolve_max_features(max_features, n_features: int) -> int | None:
    """Features drawn per node (data-independently): None/all, "sqrt", "log2", int, float."""
    if max_features is None or n_features == 0:
        return None
    if max_features == "sqrt":
        return max(1, int(math.sqrt(n_features)))
    if max_features == "log2":
        return max(1, int(math.log2(n_features)))
    if isinstance(max_features, float) and 0 < max_features <= 1:
        return max(1, int(max_features * n_features))
    if isinstance(max_features, int | np.integer) and max_features >= 1:
        return min(int(max_features), n_features)
    raise ValueError(f"max_features must be None, 'sqrt', 'log2', an int >= 1 or a float in "
                     f"(0, 1], got {max_features!r}")


# ----------------------------------------------------------------------------- policies


@dataclass
class NoisyCountSplit:
    """Internal nodes (Section 5.1): noisy count (Laplace, ``eps_half``, sensitivity 1),
    then the termination test, then the exponential-mechanism split (``eps_half``,
    sensitivity ``3 g*^2``) over the allowed public candidates.

    ``eps_half`` is the count's budget, ``eps_split`` the split's (None: ``eps_half``);
    ``g_star`` the gradient bound of the split sensitivity; ``exact`` the noise sources the
    ablation computes without noise (still charged; the caller marks the fit not DP).
    ``eps_half=None`` is the non-private twin: exact count, greedy best gain (Eq. 9).
    ``max_features`` draws that many features per node uniformly at random (random forest;
    data-independent, so free of privacy cost); ``feature_mask`` restricts the whole tree.
    Noisy counts are kept in :attr:`counts` (node id -> count) for the leaf policy.
    """

    eps_half: float | None
    reg_lambda: float
    min_count: float
    feature_rng: np.random.Generator | None
    max_features: int | None = None
    feature_mask: np.ndarray | None = None
    min_samples_leaf: int = 1
    eps_split: float | None = None
    g_star: float = G_STAR
    exact: frozenset[str] = frozenset()
    counts: dict[int, float] = field(default_factory=dict)

    @property
    def split_budget(self) -> float | None:
        return self.eps_half if self.eps_split is None else self.eps_split

    def _allowed(self, ctx: SplitContext) -> np.ndarray:
        n, d = ctx.n_nodes, ctx.hist.shape[1]
        base = (ctx.n_candidates > 0) if self.feature_mask is None else (
            (ctx.n_candidates > 0) & self.feature_mask)
        allowed = np.broadcast_to(base, (n, d)).copy()
        if self.max_features is not None and self.max_features < d:
            keys = self.feature_rng.random((n, d))
            keys[~allowed] = np.inf
            top = np.argsort(keys, axis=1)[:, : self.max_features]
            chosen = np.zeros((n, d), dtype=bool)
            np.put_along_axis(chosen, top, True, axis=1)
            allowed &= chosen
        return allowed

    def __call__(self, ctx: SplitContext) -> tuple[np.ndarray, np.ndarray]:
        n = ctx.n_nodes
        feat = np.full(n, -1, dtype=np.int64)
        bins = np.full(n, -1, dtype=np.int64)
        n_cand_max = ctx.hist.shape[2] - 1
        allowed = self._allowed(ctx) if n_cand_max > 0 else np.zeros((n, ctx.hist.shape[1]), bool)
        raw = ctx.totals[:, 1].astype(np.float64)
        private = self.eps_half is not None
        # every node's count, charged even when an ablation releases it exactly
        noisy = self._noisy_counts(ctx, raw) if private else raw
        for j, node in enumerate(ctx.node_ids):
            self.counts[int(node)] = float(noisy[j])
        can = allowed.any(axis=1)
        split = can & (noisy >= self.min_count) if self.min_count > 0 else can
        if private:
            js = np.flatnonzero(split)
            if js.size:
                # gains (n, d, B-1); the candidate set of a node is public (grid, draw)
                gains = split_gains(ctx.hist[js], float(self.reg_lambda),
                                    ctx.n_candidates.astype(np.int64))
                on_grid = np.arange(n_cand_max)[None, :] < ctx.n_candidates[:, None]
            # the splitting nodes hold disjoint records: each split's cost once (parallel)
            with ctx.accountant.parallel(f"{ctx.label} depth {ctx.depth} splits"):
                for i, j in enumerate(js):
                    cand = np.flatnonzero((allowed[j][:, None] & on_grid).ravel())
                    best = self._split(ctx, gains[i].ravel()[cand], int(ctx.node_ids[j]))
                    pick = int(cand[best])
                    feat[j], bins[j] = pick // n_cand_max, pick % n_cand_max
            return feat, bins
        js = np.flatnonzero(split)
        if self.max_features is None and self.feature_mask is None:
            groups = [(js, ctx.n_candidates.astype(np.int64))] if js.size else []
        else:
            groups = [(js[i : i + 1], np.where(allowed[j], ctx.n_candidates, 0).astype(np.int64))
                      for i, j in enumerate(js)]
        for sel, nc in groups:
            f, b, gain = best_splits(np.ascontiguousarray(ctx.hist[sel]), float(self.reg_lambda),
                                     nc, 1e-3, float(self.min_samples_leaf), _EMPTY_COUNTS,
                                     ctx.totals[sel])
            ok = gain > 0
            feat[sel[ok]], bins[sel[ok]] = f[ok], b[ok]
        return feat, bins

    def _noisy_counts(self, ctx: SplitContext, raw: np.ndarray) -> np.ndarray:
        """Every node's count plus exact discrete Laplace noise (``eps_half``, sensitivity
        1), one release over the nodes of a depth (disjoint records). Each node's budget is
        then its count's plus its split's: the same maximum as a parallel scope of per-node
        sequential pairs."""
        acc, what = ctx.accountant, f"{ctx.label} depth {ctx.depth} noisy counts"
        counts = np.rint(raw).astype(np.int64)
        if "count" in self.exact:  # ablation (not DP): the exact counts, still charged
            return acc.release(lambda: raw, epsilon=self.eps_half, what=what,
                               releases=raw.size, mechanism="none (ablation)")
        return np.atleast_1d(acc.discrete_laplace(
            counts, epsilon=self.eps_half, rng=ctx.rng, what=what, releases=raw.size,
        )).astype(np.float64)

    def _split(self, ctx: SplitContext, gains: np.ndarray, node: int) -> int:
        """One node's split by the exponential mechanism (``split_budget``, Delta G of
        Shi et al. Section 5.1); the ``split`` ablation (not DP) takes the best, still
        charged."""
        what = f"{ctx.label} depth {ctx.depth} node {node} split"
        if "split" in self.exact:
            return int(ctx.accountant.release(lambda: np.argmax(gains), epsilon=self.split_budget,
                                              what=what, mechanism="none (ablation)"))
        return int(ctx.accountant.exponential(
            gains, epsilon=self.split_budget, sensitivity=split_sensitivity(self.g_star),
            rng=ctx.rng, what=what))


@dataclass
class NoisyMeanLeaf:
    """Leaves (Section 5.1): noisy count (for depth-``d`` nodes, whose count was not yet
    released; ``split.eps_half``) and the Laplace-noised residual sum ``-sum g``
    (``eps_half``, sensitivity ``g*``); value ``-G'/(max(N', m) + lambda)`` clipped to
    ``[-g*, g*]``, ``m`` = the termination threshold (at least 1).
    ``eps_half=None``: exact Newton leaf ``-G/(H + lambda)`` (Eq. 9 optimum)."""

    eps_half: float | None
    reg_lambda: float
    split: NoisyCountSplit

    def __call__(self, ctx: LeafContext) -> np.ndarray:
        sums = -ctx.totals[:, 0]
        counts = ctx.totals[:, 1].astype(np.float64)
        if self.eps_half is None:
            return sums / (counts + self.reg_lambda)
        acc, lab = ctx.accountant, ctx.label
        ids = [int(i) for i in ctx.node_ids]
        need = [j for j, node in enumerate(ids) if node not in self.split.counts]
        if need:
            depth = int(ctx.depth[need[0]])
            what = f"{lab} depth {depth} noisy counts"
            if "count" in self.split.exact:  # ablation (not DP): exact, still charged
                noisy = acc.release(lambda: counts[need], epsilon=self.split.eps_half, what=what,
                                    releases=len(need), mechanism="none (ablation)")
            else:  # the leaves hold disjoint records: one release over them
                noisy = np.atleast_1d(acc.discrete_laplace(
                    np.rint(counts[need]).astype(np.int64), epsilon=self.split.eps_half,
                    rng=ctx.rng, what=what, releases=len(need)))
            for j, c in zip(need, noisy, strict=True):
                self.split.counts[ids[j]] = float(c)
        g_star = self.split.g_star
        what = f"{lab} leaves noisy residual sums"
        if "leaf" in self.split.exact:  # ablation (not DP): exact, still charged
            s = acc.release(lambda: sums, epsilon=self.eps_half, what=what, releases=len(ids),
                            mechanism="none (ablation)")
        else:
            s = np.atleast_1d(acc.laplace(sums, epsilon=self.eps_half, sensitivity=g_star,
                                          rng=ctx.rng, what=what, releases=len(ids)))
        c = np.array([self.split.counts[node] for node in ids], dtype=np.float64)
        floor = max(1.0, self.split.min_count)
        return np.clip(s / (np.maximum(c, floor) + self.reg_lambda), -g_star, g_star)


def grow_xgbdp_tree(
    data: BinnedData,
    g: np.ndarray,
    rows: np.ndarray,
    mapper: BinMapper,
    *,
    max_depth: int,
    eps_tree: float | None,
    rng: np.random.Generator,
    accountant: Accountant | None,
    label: str,
    structure_rng: np.random.Generator | None = None,
    reg_lambda: float = 1.0,
    min_noisy_count="auto",
    max_features: int | None = None,
    feature_mask: np.ndarray | None = None,
    min_samples_leaf: int = 1,
    count_share: float = 0.5,
    g_star: float = G_STAR,
    exact: frozenset[str] = frozenset(),
) -> GrownTree:
    """One XGBoost-DP tree (Section 5.1) on ``rows`` with gradients ``g`` (|g| <= 1).

    ``rng`` draws every noise (noisy counts, exponential-mechanism splits, noisy leaf
    sums); ``structure_rng`` the data-independent per-node feature draws of
    ``max_features`` (required then). ``eps_tree=None`` grows the non-private twin (greedy Eq. 9 splits, Newton leaves,
    nodes with fewer than ``2 min_samples_leaf`` rows stop). Spends go to ``accountant``
    inside the caller's scope; the tree costs ``eps_tree`` when it reaches depth ``d``.
    ``count_share`` splits each node's budget between its count and its split/leaf
    (Section 5.1: halves); ``g_star`` bounds ``|g|`` (the caller clips); ``exact`` lists
    noise sources computed without noise (ablation only: the caller marks the fit not DP).
    """
    stats = np.empty((g.shape[0], 2))
    stats[:, 0] = g
    stats[:, 1] = 1.0
    if max_features is not None and structure_rng is None:
        raise ValueError("structure_rng is required with max_features (per-node feature draws)")
    if eps_tree is None:
        eps_count = eps_other = None
        min_count = float(2 * min_samples_leaf)
    else:
        eps_count, eps_other = per_node_budgets(eps_tree, max_depth, count_share)
        min_count = (auto_min_noisy_count(eps_count) if min_noisy_count == "auto"
                     else float(min_noisy_count))
    split = NoisyCountSplit(eps_count, float(reg_lambda), min_count, structure_rng,
                            max_features=max_features, feature_mask=feature_mask,
                            min_samples_leaf=int(min_samples_leaf), eps_split=eps_other,
                            g_star=float(g_star), exact=frozenset(exact))
    leaf = NoisyMeanLeaf(eps_other, float(reg_lambda), split)
    return grow_tree(data, stats, rows, mapper, max_depth=int(max_depth), split_policy=split,
                     leaf_policy=leaf, rng=rng, accountant=accountant, label=label)


def tree_values(tree: ArrayTree, X: np.ndarray) -> np.ndarray:
    """Leaf value of each row of ``X`` (dense, already prepared)."""
    return tree.value[apply_tree(tree, X), 0]


def split_counts(trees: list[ArrayTree], n_features: int) -> np.ndarray:
    """Number of internal nodes splitting on each feature ("weight" importance)."""
    out = np.zeros(n_features)
    for t in trees:
        f = t.feature[t.feature >= 0]
        out += np.bincount(f, minlength=n_features)[:n_features]
    return out
