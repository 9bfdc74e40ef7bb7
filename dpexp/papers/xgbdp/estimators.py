"""XGBoost-DP (Shi, Yin, Chen & Yan 2021, "XGBoost Algorithm under Differential Privacy
Protection", ``../shared/papers/xgboost-dp-shi-2021.txt``) on the shared histogram grower.

The algorithm (Table 1 and Section 4; budget split of Section 5.1)
------------------------------------------------------------------
* Table 1 line 6: the budget ``eps_a`` is split evenly over the ``n`` trees,
  ``eps_1 = eps_a / n``.
* Table 1 line 7 / Section 5.1: each tree's budget is split evenly over its ``d + 1``
  layers (``eps'' = eps_1 / (d + 1)``; the nodes of one layer hold disjoint records, so
  each node gets the whole layer budget) and each node's budget in two halves
  ``eps = eps'' / 2``: one half for the Laplace-noised record count of the node
  (sensitivity 1), the other half either for the exponential-mechanism choice of the split
  (internal node) or for the Laplace-noised label statistic of the leaf.
* Section 4: residual fitting -- "the classification result of the first tree is compared
  with the actual result to obtain difference value, which is used as the training sample
  of the next tree"; the final prediction adds the trees' outputs (Table 1, prediction
  step 5) and picks "the class with the minimum residual".

Our reading, where the paper leaves choices open (stated in captions too):

* Loss: mean squared error (Section 3.2, "The loss function is replaced by mean square
  error"), labels ``y in {0, 1}``, initial score 0.5 (XGBoost's default ``base_score``),
  gradient ``g = F - y`` clipped to ``[-1, 1]``, hessian ``h = 1``. The class is 1 when
  ``F(x) > 0.5`` (the class with the smaller residual ``|y - F|``).
* Split utility: the XGBoost structure score of Eq. (9), ``G_L^2/(H_L+lambda) +
  G_R^2/(H_R+lambda)`` over the public candidate grid (all features x bin thresholds of the
  public domain), with sensitivity ``3 g*^2 = 3`` (Li et al. 2020 Lemma 1, reused from
  :mod:`dpexp.papers.dpboost.estimators`). Section 4 once says the exponential mechanism is *not*
  used for split points while Section 5.1 says it is; we follow Section 5.1.
* Leaf: "noisy label counts" generalised to residuals. The leaf releases the Laplace-noised
  sum of residuals ``-sum g`` (sensitivity 1); its value is
  ``-G' / (max(N', m) + lambda)`` with ``N'`` the node's noisy count and ``m`` the
  termination threshold below (at least 1), clipped to ``[-1, 1]`` (post-processing: a
  leaf whose noisy count is below the noise level is shrunk towards 0 rather than noise
  being divided by a tiny count).
* Termination ("determine whether the current node reach the termination condition"):
  maximum depth ``d``, or a noisy count below ``min_noisy_count`` (``"auto"``:
  ``4 sqrt(2) / eps``, four standard deviations of the count noise). ``0`` grows every
  node to depth ``d``.

Paper version vs the correct version (``variant``)
--------------------------------------------------
* ``variant="correct"`` (default, ``xgboost_dp``): every tree sees all training records,
  so the trees compose *sequentially*; the accountant adds the trees' spends and the
  total is exactly ``eps_a`` when every tree reaches depth ``d`` (less when nodes stop
  early). All features are used.
* ``variant="paper"`` (``xgboost_dp_paper``) adds Table 1 step 5, "According to feature
  importance, select certain features for training": the top ``n_selected_features``
  features by the split-count importance of a *non-private* boosted model fitted on the
  private training data. That selection is a release of the private data with no noise,
  so the resulting model is **not** differentially private for any finite epsilon: the fit
  calls ``accountant_.mark_not_dp`` (the runner writes ``private = false`` and no
  ``epsilon_spent``), the registry entry carries ``not_dp``, and
  ``diagnostics_['nonprivate_feature_selection'] = 1`` flags the leak. The paper also argues (Section 5.1) that "samples do not overlap
  so the privacy budget consumed by each tree does not need to be superimposed"; under
  that argument the paper would claim ``eps_a / n`` for the whole model, which is wrong:
  residual boosting reuses every record in every tree. The noise of both variants is the
  same (the paper does divide by ``n``), the accountant always composes the trees
  sequentially (``epsilon_spent = eps_a``), and the paper's claim is recorded as
  ``diagnostics_['paper_claimed_epsilon'] = eps_a / n``.
* Table 1 step 2 fills missing values with the attribute mode (computed on private data);
  Section 5 instead drops rows with missing values (30,162 / 15,060), which is what the
  ``adult_uci`` dataset does, so no imputation is done here. Step 3 ("encoding non-numeric
  characters") is the dataset's ordinal coding 0..k-1 of the 8 categorical columns; a
  categorical feature is split as ``code <= b`` (one bin per code).

Public input, randomness and what is released
---------------------------------------------
``feature_domain``/``categorical_features``/``n_categories`` (the candidate grid) and
``classes`` (exactly two labels; ``classes_`` is the declared set whatever labels the
training fold holds) are public input; when missing they are read from the data with a
``DataDependentWarning`` and the fit is marked not DP (``accountant_.is_dp``), as is
``binning="quantile"`` and ``variant="paper"``. Structure randomness (the random forest's
per-node feature draws, AdaBoost's Poisson resampling keys) comes from ``random_state``;
every Laplace/exponential draw from ``noise_rng`` (``None``: fresh OS entropy, never
derived from ``random_state``; a SeedSequence such as :func:`dpexp.privacy.seeded_noise` for
reproducible experiments; :func:`dpexp.privacy.secure_generator` for a published model). Released:
``trees_`` (splits, noisy leaf values; the shape of a tree shows which noisy counts fell
below the threshold), ``tree_weights_``, ``feature_importances_`` (split shares of the
released trees) and predictions. ``diagnostics_`` values that count private rows (e.g.
AdaBoost's ``mean_rows_per_round``) are diagnostics for the experiments, recorded with
``metric_kind="diagnostic"``, not part of the DP release.

The non-private reference for the ``no_noise`` row of Table 2 is :class:`NPXGBoostClassifier`
(``np_xgboost``): the same engine with greedy splits (Eq. 9 gain), exact Newton leaves and
no noise. The same DP tree (:func:`grow_xgbdp_tree`) builds the random forest and AdaBoost
comparators of :mod:`dpexp.papers.xgbdp.comparators`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.boosting.gbdt import (
    apply_tree,
    check_reg_lambda,
    make_bin_mapper,
    not_dp_reasons,
    prepare_predict_matrix,
    split_sensitivity,
)
from dpexp.boosting.labels import binary_classes
from dpexp.errors import check_epsilon
from dpexp.papers.xgbdp import PAPER_NOT_DP  # the manifest states it
from dpexp.privacy import Accountant
from dpexp.privacy.budget import charges_budget
from dpexp.privacy.randomness import NOT_PRIVATE, EstimatorStreams, estimator_streams
from dpexp.trees.binning import BinMapper, BinnedData
from dpexp.trees.grower import GrownTree, LeafContext, SplitContext, grow_tree
from dpexp.trees.split_search import best_splits, split_gains
from dpexp.trees.tree import ArrayTree

VARIANTS = ("correct", "paper")
#: Why ``variant="paper"`` is not DP (registry entry and the fit's accountant).
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


# ----------------------------------------------------------------------------- estimators


class XGBDPEnsembleBase(ClassifierMixin, BaseEstimator):
    """Shared fit/predict of the XGBoost-DP family (binary classification, dense input).

    Subclasses implement ``_ensemble(data, X, y01, streams, acc)`` returning
    ``(trees, weights, diagnostics)`` and ``_score_from(values, weights)``; ``predict_proba``
    maps the ensemble score to P(class 1).
    """

    _private = True

    def _check_params(self) -> None:
        if int(self.n_trees) < 1:
            raise ValueError(f"n_trees must be >= 1, got {self.n_trees!r}")
        if int(self.max_depth) < 0:
            raise ValueError(f"max_depth must be >= 0, got {self.max_depth!r}")
        check_reg_lambda(self.reg_lambda)

    def _budget(self) -> float:
        return check_epsilon(self.epsilon, name="epsilon") if self._private else math.inf

    @charges_budget
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite=True)
        declared = getattr(self, "classes", None)
        self.classes_ = binary_classes(y, declared)
        self._check_params()
        eps = self._budget()
        y01 = (y == self.classes_[-1]).astype(np.float64)
        self.mapper_, leaked = make_bin_mapper(
            X, binning=self.binning, feature_domain=self.feature_domain,
            categorical_features=self.categorical_features, n_categories=self.n_categories,
            max_bins=int(self.max_bins), private=self._private,
        )
        data = self.mapper_.transform(X)
        acc = Accountant(epsilon=eps)
        self.accountant_ = acc
        if self._private:
            quantile = self.binning == "quantile"
            for reason in not_dp_reasons(classes=declared is None,
                                         feature_domain=leaked and not quantile,
                                         quantile=quantile):
                acc.mark_not_dp(reason)
        streams = estimator_streams(self.random_state, getattr(self, "noise_rng", NOT_PRIVATE))
        t0 = time.perf_counter()
        self.trees_, self.tree_weights_, diag = self._ensemble(data, X, y01, streams, acc)
        counts = split_counts(self.trees_, X.shape[1])
        self.feature_importances_ = counts / counts.sum() if counts.sum() > 0 else counts
        diag.update(
            seconds_per_tree=(time.perf_counter() - t0) / max(1, len(self.trees_)),
            domain_from_data=float(leaked),
            binning_is_quantile=float(self.binning == "quantile"),
            mean_leaves=float(np.mean([t.leaves.size for t in self.trees_])),
        )
        if self._private:
            diag["epsilon_unused"] = max(0.0, eps - acc.epsilon_spent)
        self.diagnostics_ = diag
        return self

    # -- prediction
    def _prepared(self, X):
        check_is_fitted(self, "trees_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return prepare_predict_matrix(X)

    def _staged_scores(self, X) -> Iterator[np.ndarray]:
        X = self._prepared(X)
        summed = np.zeros(X.shape[0])
        for k, (t, w) in enumerate(zip(self.trees_, self.tree_weights_, strict=True), start=1):
            summed = summed + self._contribution(tree_values(t, X), w)
            yield self._finish(summed, k)

    def _contribution(self, values: np.ndarray, weight: float) -> np.ndarray:
        return weight * values

    def _finish(self, summed: np.ndarray, n_trees: int) -> np.ndarray:
        return summed

    def _raw_score(self, X) -> np.ndarray:
        *_, last = self._staged_scores(X)
        return last

    def decision_function(self, X) -> np.ndarray:
        """The ensemble score minus the class threshold: ``classes_[1]`` iff positive."""
        return self._raw_score(X) - self._threshold

    def predict_proba(self, X) -> np.ndarray:
        p1 = self._proba1(self._raw_score(X))
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X) -> np.ndarray:
        return self._label(self._raw_score(X))

    def staged_predict(self, X) -> Iterator[np.ndarray]:
        """Predicted classes after each tree (convergence curves)."""
        for s in self._staged_scores(X):
            yield self._label(s)

    def _label(self, score: np.ndarray) -> np.ndarray:
        pos = (score > self._threshold).astype(int) * (self.classes_.size - 1)
        return self.classes_[pos]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.classifier_tags.multi_class = False
        return tags


class _BoostingPart:
    """Residual boosting (Section 4): F = 0.5 + eta * sum_t f_t(x); class 1 iff F > 0.5."""

    _threshold = 0.5
    _base_score = 0.5

    def _finish(self, summed, n_trees):
        return self._base_score + summed

    def _proba1(self, score):
        return np.clip(score, 0.0, 1.0)

    def _select_features(self, data, X, y01, streams: EstimatorStreams):
        """Table 1 step 5 (paper variant only): the top ``n_selected_features`` features by
        split count of a NON-private boosted model with the same hyperparameters fitted on
        the private training data. No noise: this step is not differentially private."""
        trees, _, _ = self._boost(data, y01, streams, None, private=False)
        imp = split_counts(trees, X.shape[1])
        k = max(1, min(int(self.n_selected_features), X.shape[1]))
        mask = np.zeros(X.shape[1], dtype=bool)
        mask[np.argsort(-imp, kind="stable")[:k]] = True
        return mask

    def _boost(self, data, y01, streams: EstimatorStreams, acc, *, private: bool,
               feature_mask=None):
        T, D = int(self.n_trees), int(self.max_depth)
        lr = float(self.learning_rate)
        eps_t = per_tree_budget(acc.epsilon, T) if private else None
        n = data.n_rows
        F = np.full(n, self._base_score)
        rows = np.arange(n)
        trees = []
        # one noise generator per tree (the greedy twin draws none)
        noise = streams.noise_generators(T)
        g_star = float(self.grad_clip) if private else G_STAR
        for t in range(T):
            g = np.clip(F - y01, -g_star, g_star)
            kw = {"min_noisy_count": self.min_noisy_count, "g_star": g_star,
                  "count_share": float(self.count_share),
                  "exact": parse_noiseless(self.noiseless)} if private else {
                "min_samples_leaf": int(getattr(self, "min_samples_leaf", 1))}
            if private:
                with acc.sequential(f"tree {t}"):
                    grown = grow_xgbdp_tree(
                        data, g, rows, self.mapper_, max_depth=D, eps_tree=eps_t,
                        rng=noise[t], accountant=acc, label=f"tree {t}",
                        reg_lambda=float(self.reg_lambda), feature_mask=feature_mask, **kw)
            else:
                grown = grow_xgbdp_tree(
                    data, g, rows, self.mapper_, max_depth=D, eps_tree=None,
                    rng=noise[t], accountant=None, label=f"tree {t}",
                    reg_lambda=float(self.reg_lambda), **kw)
            # serial walk for small tables (apply_binned always starts the thread pool)
            grown.add_to_scores(F, lr, data)
            trees.append(grown.tree)
        return trees, [lr] * len(trees), {}


class XGBoostDPClassifier(_BoostingPart, XGBDPEnsembleBase):
    """XGBoost-DP (Shi et al. 2021, Table 1 / Sections 4 and 5.1); see the module docstring.

    The paper states neither ``n_trees`` nor ``learning_rate``. The defaults ``n_trees=5``,
    ``learning_rate=0.3`` (XGBoost's default eta) were once picked on the Adult *test*
    split and are kept only so that cached results of the specs that rely on them stay
    valid; Table 2 and its ablation set ``n_trees=10``, ``learning_rate=0.3``, picked on a
    validation split of the training file (``experiments/xgbdp-selection.yaml``).
    ``max_depth=7`` is Table 2's depth. ``max_bins`` sets the public candidate grid of
    continuous features (equal-width over the public domain). ``variant="paper"`` adds the non-private feature
    selection of Table 1 step 5 (not DP; see the module docstring).

    Ablation knobs (``experiments/xgbdp-ablation.yaml``), the paper's choice first:
    ``grad_clip`` (``g*``, 1: gradients ``F - y`` clipped to ``[-g*, g*]``; the split
    sensitivity ``3 g*^2`` and the leaf sum's ``g*`` follow), ``count_share`` (0.5: the
    "two halves" of a node's budget, Section 5.1; the count's share, the rest to the split
    or leaf) and ``noiseless`` (``""``; e.g. ``"leaf"`` or ``"count,split"`` computes those
    releases without noise -- **not DP**, the fit's accountant says so -- to show where the
    accuracy is lost).
    """

    def __init__(self, *, epsilon=1.0, variant="correct", n_trees=5, max_depth=7,
                 learning_rate=0.3, reg_lambda=1.0, min_noisy_count="auto",
                 n_selected_features=10, grad_clip=1.0, count_share=0.5, noiseless="",
                 binning="domain", max_bins=32, feature_domain=None,
                 categorical_features=None, n_categories=None, classes=None,
                 random_state=None, noise_rng=None, accountant=None):
        self.epsilon = epsilon
        self.variant = variant
        self.grad_clip = grad_clip
        self.count_share = count_share
        self.noiseless = noiseless
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.reg_lambda = reg_lambda
        self.min_noisy_count = min_noisy_count
        self.n_selected_features = n_selected_features
        self.binning = binning
        self.max_bins = max_bins
        self.feature_domain = feature_domain
        self.categorical_features = categorical_features
        self.n_categories = n_categories
        self.classes = classes
        self.random_state = random_state
        self.noise_rng = noise_rng
        self.accountant = accountant

    def _ensemble(self, data, X, y01, streams, acc):
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if not (self.min_noisy_count == "auto" or float(self.min_noisy_count) >= 0):
            raise ValueError(f"min_noisy_count must be 'auto' or >= 0, got {self.min_noisy_count!r}")
        if not 0.0 < float(self.grad_clip) <= G_STAR:
            raise ValueError(f"grad_clip must be in (0, {G_STAR}], got {self.grad_clip!r}")
        per_node_budgets(1.0, 0, self.count_share)  # checks count_share
        exact = parse_noiseless(self.noiseless)
        if exact:
            acc.mark_not_dp(f"ablation: {', '.join(sorted(exact))} noise switched off "
                            "(noiseless); charged as if noised")
        mask = None
        if self.variant == "paper":
            acc.mark_not_dp(PAPER_NOT_DP)
            mask = self._select_features(data, X, y01, streams)
        trees, w, diag = self._boost(data, y01, streams, acc, private=True, feature_mask=mask)
        diag.update(
            nonprivate_feature_selection=float(self.variant == "paper"),
            n_features_used=float(X.shape[1] if mask is None else mask.sum()),
            paper_claimed_epsilon=per_tree_budget(acc.epsilon, int(self.n_trees)),
            epsilon_per_tree=per_tree_budget(acc.epsilon, int(self.n_trees)),
        )
        return trees, w, diag


class NPXGBoostClassifier(_BoostingPart, XGBDPEnsembleBase):
    """Non-private XGBoost on the same engine (Table 2 ``no_noise`` row): greedy Eq. (9)
    splits, Newton leaves ``-G/(H+lambda)``, same residual boosting, no noise."""

    _private = False

    def __init__(self, *, n_trees=5, max_depth=7, learning_rate=0.3, reg_lambda=1.0,
                 min_samples_leaf=1, binning="domain", max_bins=32, feature_domain=None,
                 categorical_features=None, n_categories=None, classes=None,
                 random_state=None):
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.reg_lambda = reg_lambda
        self.min_samples_leaf = min_samples_leaf
        self.binning = binning
        self.max_bins = max_bins
        self.feature_domain = feature_domain
        self.categorical_features = categorical_features
        self.n_categories = n_categories
        self.classes = classes
        self.random_state = random_state

    def _ensemble(self, data, X, y01, streams, acc):
        return self._boost(data, y01, streams, acc, private=False)
