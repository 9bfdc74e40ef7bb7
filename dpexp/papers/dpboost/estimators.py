"""DPBoost (Li et al. 2020, "Privacy-Preserving Gradient Boosting Decision Trees"),
its baselines SEQ and PARA (Section 4) and the non-private GBDT NP, on the shared
histogram grower (:mod:`dpexp.trees.grower`).

* ``mode="dpboost"``: Algorithm 2 (ensemble of ensembles). ``N_e = ceil(T / T_e)``
  ensembles in sequence, each costing ``epsilon / N_e``; inside an ensemble the trees get
  disjoint record subsets (parallel composition, Theorem 8) of expected size
  ``|D| eta (1-eta)^te / (1 - (1-eta)^Te)``, ``te = 0..Te-1``. Every tree is Algorithm 1
  (TrainSingleTree) with GDF (Section 3.1), the exponential mechanism for splits with
  ``Delta G = 3 g*^2`` (Lemma 1) and ``epsilon_nleaf = epsilon_t / (2 Depth_max)`` per
  depth, and GLC-clipped Laplace leaves with
  ``Delta V = min(g*/(1+lambda), 2 g* (1-eta)^(t-1))`` (Corollary 2),
  ``epsilon_leaf = epsilon_t / 2``.
* ``mode="seq"``: every tree on all the data with ``epsilon / T`` (sequential
  composition); ``mode="para"``: tree ``k`` takes half of the still-unused records and
  the full ``epsilon`` (parallel composition). Both use GDF and the GDF bounds
  ``Delta G = 3 g*^2``, ``Delta V = g*/(1+lambda)`` without GLC (Section 4).
* :class:`NPGBDTClassifier`/``Regressor``: the same engine with the greedy split and the
  exact leaf (Eq. 4), same depth, lambda and learning rate.

Options for the ablation towards the authors' code (issue 20; every default is the paper's
text, each non-private option marks the fit not DP through the accountant):

* ``objective="authors"``: the objective of the authors' fork for the task, in place of
  ``loss`` with ``h = 1``: classification LightGBM's ``binary`` (logistic loss with exact
  hessians ``p(1-p)``, not the ``h = 1`` of Section 4 the sensitivities of Lemmas 1-2
  assume -- not DP); regression LightGBM's ``regression`` (square loss, whose exact
  hessian is 1: the paper's own setting, still DP).
* ``exact_growth=True``: the fork's tree growth (``serial_tree_learner.cpp``,
  ``feature_histogram.hpp``): candidates whose exact gain does not beat the parent's score
  or that leave a child with fewer than ``min_child_samples`` rows get probability 0, a node
  with no such candidate stays a leaf, and at most ``num_leaves`` leaves are kept, the
  nodes with the largest exact gain split first (per depth here: the grower is level-wise,
  the fork leaf-wise) -- not DP.
* ``init_score="mean"``: the exact label mean (log-odds for the logistic loss) as the
  initial score, as LightGBM's ``boost_from_average`` -- not DP. ``init_score="authors"``:
  what the authors' run scripts do (``run_exp.py``): the mean for regression (branch master
  keeps ``boost_from_average``), 0 for classification (``boost_from_average: False``).
* ``split_budget_divisor=4``: ``epsilon_nleaf = epsilon_t / (4 Depth_max)`` per depth, the
  fork's split budget (half of the tree budget halved again); still DP (it spends less).
* ``learning_rate=0.1`` and ``binning="quantile"`` were already parameters.

Note on the subset formula: Algorithm 2 writes ``te = t mod Te`` with ``t`` from 1, which
would give the *last* tree of an ensemble (``te = 0``) the largest share and shares that
do not sum to one; we use the 0-based position, for which the shares
``eta (1-eta)^te / (1-(1-eta)^Te)`` sum exactly to 1 and decrease with ``te`` like the
GLC leaf bound, as the text of Section 3.2 intends.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.boosting.gbdt import (
    ScaledScoreRegressorMixin,
    apply_tree,
    check_reg_lambda,
    make_bin_mapper,
    not_dp_reasons,
    prepare_predict_matrix,
    raw_predict,
    split_sensitivity,
    staged_raw_predict,
)
from dpexp.boosting.labels import BinaryScoreClassifierMixin, proba_from_pm1_score
from dpexp.errors import check_epsilon
from dpexp.privacy import Accountant, exponential_mechanism, record_ids, record_partition
from dpexp.privacy.budget import charges_budget
from dpexp.privacy.randomness import NOT_PRIVATE, EstimatorStreams, estimator_streams
from dpexp.trees.grower import GrowWorkspace, SplitContext, grow_tree
from dpexp.trees.policies import ExponentialSplit, GreedySplit, LaplaceLeaf, NewtonLeaf
from dpexp.trees.split_search import split_gains

MODES = ("dpboost", "seq", "para")

# ----------------------------------------------------------------------------- formulas


def glc_threshold(g_star: float, learning_rate: float, t: int) -> float:
    """GLC clip of tree ``t`` (1-based): ``g* (1 - eta)^(t-1)`` (Theorem 6, Section 3.1)."""
    return g_star * (1.0 - learning_rate) ** (t - 1)


def leaf_sensitivity(g_star: float, reg_lambda: float, learning_rate: float, t: int,
                     glc: bool) -> float:
    """Delta V_t: ``min(g*/(1+lambda), 2 g*(1-eta)^(t-1))`` with GLC (Corollary 2),
    ``g*/(1+lambda)`` without (Lemma 2, Corollary 1)."""
    base = g_star / (1.0 + reg_lambda)
    if not glc:
        return base
    return min(base, 2.0 * glc_threshold(g_star, learning_rate, t))


def dpboost_subset_proportions(trees_per_ensemble: int, learning_rate: float) -> np.ndarray:
    """Share of the records of tree ``te = 0..Te-1`` of an ensemble (Algorithm 2 line 6):
    ``eta (1-eta)^te / (1 - (1-eta)^Te)``; they sum to 1."""
    te = np.arange(trees_per_ensemble, dtype=np.float64)
    eta = learning_rate
    p = eta * (1.0 - eta) ** te / (1.0 - (1.0 - eta) ** trees_per_ensemble)
    return p / max(1.0, p.sum())  # guard the float sum against exceeding 1


def para_proportions(n_trees: int) -> np.ndarray:
    """PARA (Section 4): tree ``k`` takes half of the unused records: shares ``2^-(k+1)``."""
    return 0.5 ** np.arange(1, n_trees + 1, dtype=np.float64)


def n_ensembles(n_trees: int, trees_per_ensemble: int) -> int:
    """N_e = ceil(T / T_e) (Algorithm 2)."""
    return math.ceil(n_trees / trees_per_ensemble)


def per_tree_budget(mode: str, epsilon: float, n_trees: int, trees_per_ensemble: int) -> float:
    """epsilon_t: ``epsilon / N_e`` (DPBoost), ``epsilon / T`` (SEQ), ``epsilon`` (PARA)."""
    if mode == "dpboost":
        return epsilon / n_ensembles(n_trees, trees_per_ensemble)
    if mode == "seq":
        return epsilon / n_trees
    if mode == "para":
        return epsilon
    raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


LOSSES = ("square", "logistic")


def gradients(F: np.ndarray, y: np.ndarray, loss: str, out: np.ndarray | None = None
              ) -> np.ndarray:
    """First-order gradients ``g`` at the scores ``F`` for labels ``y`` in [-1, 1].

    ``"square"``: ``l = (F - y)^2 / 2``, ``g = F - y`` (Section 4, g*_l = 1).
    ``"logistic"`` (classification, labels in {-1, 1}): ``l = log(1 + exp(-y F))``,
    ``g = -y / (1 + exp(y F))`` with ``|g| < 1`` -- the binary objective of the authors'
    LightGBM-based code, used with ``h = 1`` as Section 4 states for classification.
    ``out``: written in place (e.g. a column of the statistics; no temporary array).
    """
    if loss == "square":
        return np.subtract(F, y, out=out)
    if loss == "logistic":
        g = -y / (1.0 + np.exp(np.clip(y * F, -700, 700)))
        if out is None:
            return g
        out[...] = g
        return out
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")


OBJECTIVES = ("paper", "authors")
INIT_SCORES = ("zero", "mean", "authors")


def exact_hessians(F: np.ndarray, loss: str, out: np.ndarray) -> np.ndarray:
    """The loss's true second derivative at ``F`` into ``out``: 1 for the square loss,
    ``p (1 - p)`` with ``p = 1 / (1 + exp(-F))`` for the logistic loss (LightGBM's binary
    objective, which the authors' classification branch uses)."""
    if loss == "square":
        out[...] = 1.0
        return out
    p = 1.0 / (1.0 + np.exp(-np.clip(F, -700, 700)))
    np.multiply(p, 1.0 - p, out=out)
    return out


def mean_initial_score(y: np.ndarray, loss: str) -> float:
    """The exact, non-private initial score of LightGBM's ``boost_from_average``: the label
    mean (square loss) or the log-odds of the share of ``+1`` labels (logistic loss)."""
    if loss == "square":
        return float(np.mean(y)) if y.size else 0.0
    p = float(np.mean(y > 0)) if y.size else 0.5
    p = min(max(p, 1e-15), 1.0 - 1e-15)
    return math.log(p / (1.0 - p))


def gdf_mask(gradients: np.ndarray, g_star: float) -> np.ndarray:
    """Gradient-based data filtering (Section 3.1): keep the rows with ``|g| <= g*_l``."""
    return np.abs(gradients) <= g_star


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


# ----------------------------------------------------------------------------- estimators


class _BoostingBase(BaseEstimator):
    """Shared fit/predict of the boosted estimators (square loss, initial score 0)."""

    _private = True

    def _validate_common(self):
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if int(self.n_trees) < 1:
            raise ValueError(f"n_trees must be >= 1, got {self.n_trees!r}")
        if int(self.max_depth) < 0:
            raise ValueError(f"max_depth must be >= 0, got {self.max_depth!r}")
        if not 0.0 < float(self.learning_rate) < 1.0:
            raise ValueError(f"learning_rate must be in (0, 1), got {self.learning_rate!r}")
        check_reg_lambda(self.reg_lambda)

    def _fit_targets(self, X, y):  # pragma: no cover - overridden
        raise NotImplementedError

    @charges_budget
    def fit(self, X, y):
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
            ensure_all_finite=True,
        )
        self._validate_common()
        target = self._fit_targets(X, y)
        self.mapper_, leaked = make_bin_mapper(
            X, binning=self.binning, feature_domain=self.feature_domain,
            categorical_features=self.categorical_features, n_categories=self.n_categories,
            max_bins=int(self.max_bins), private=self._private,
        )
        # the table's bundles and row-major codes are built with the table, before the
        # trees' timer starts (the authors' LightGBM builds its bundles in the Dataset)
        data = self.mapper_.transform(X).prepare()
        streams = estimator_streams(self.random_state, getattr(self, "noise_rng", NOT_PRIVATE))
        t0 = time.perf_counter()
        self.trees_, diag = self._boost(data, X, target, streams)
        elapsed = time.perf_counter() - t0
        if self._private:
            self._mark_public_input_leaks(leaked)
        diag.update(
            seconds_per_tree=elapsed / max(1, len(self.trees_)),
            n_trees_built=float(len(self.trees_)),
            binning_is_quantile=float(self.binning == "quantile"),
            domain_from_data=float(leaked),
        )
        self.diagnostics_ = diag
        return self

    def _mark_public_input_leaks(self, leaked: bool) -> None:
        """Mark the fit not DP for each public input it read from the private data."""
        quantile = self.binning == "quantile"
        for reason in not_dp_reasons(
            classes=getattr(self, "_classes_from_data", False),
            label_domain=getattr(self, "_label_domain_from_data", False),
            feature_domain=leaked and not quantile, quantile=quantile,
        ):
            self.accountant_.mark_not_dp(reason)

    def _update_scores(self, grown, data, X, F, read_later: np.ndarray | None = None):
        """``F += learning_rate * tree(x)`` in place for every training row, or (dense data)
        for the rows ``read_later`` only: the rows a later tree of the fit reads. The
        others' scores are never read again, so they are left behind; each row that is
        read got every tree's addition in order, as with the full update."""
        lr = float(self.learning_rate)
        if data.is_sparse:
            F += lr * grown.tree.value[apply_tree(grown.tree, prepare_predict_matrix(X)), 0]
        else:
            grown.add_to_scores(F, lr, data, rows=read_later)

    def _raw(self, X):
        check_is_fitted(self, "trees_")
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          reset=False)
        return X

    def _decision(self, X) -> np.ndarray:
        X = self._raw(X)
        return raw_predict(self.trees_, float(self.learning_rate), X,
                           init=getattr(self, "init_score_", 0.0))

    def _staged_decision(self, X) -> Iterator[np.ndarray]:
        X = self._raw(X)
        yield from staged_raw_predict(self.trees_, float(self.learning_rate), X,
                                      init=getattr(self, "init_score_", 0.0))


class _DPBoostMixin:
    """The private fit loop shared by the DPBoost classifier and regressor.

    Randomness (:func:`dpexp.privacy.randomness.estimator_streams`): the record partitions
    of PARA and of DPBoost's ensembles come from the *structure* stream (data-independent,
    record-stable keyed draws; the privacy proof conditions on them), every exponential
    and Laplace draw from the *noise* stream (``noise_rng``), one child per tree.
    """

    def _boost(self, data, X, y, streams: EstimatorStreams):
        eps = check_epsilon(self.epsilon, name="epsilon")
        mode = self.mode
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        T, Te, D = int(self.n_trees), int(self.trees_per_ensemble), int(self.max_depth)
        if Te < 1:
            raise ValueError(f"trees_per_ensemble must be >= 1, got {Te!r}")
        lr, lam, g_star = float(self.learning_rate), float(self.reg_lambda), float(self.g_star)
        if g_star <= 0:
            raise ValueError(f"g_star must be > 0, got {g_star!r}")
        acc = Accountant(epsilon=eps)
        self.accountant_ = acc
        exact_h, divisor, init_mean = self._check_original_options(acc)
        n = data.n_rows
        self.init_score_ = mean_initial_score(y, self.loss_) if init_mean else 0.0
        F = np.full(n, self.init_score_)
        # columns: g, h, and (exact hessians only) the row count the grower counts
        stats = np.empty((n, 3 if exact_h else 2))
        stats[:, -1] = 1.0  # h = 1 (Section 4), or the count column
        eps_t = per_tree_budget(mode, eps, T, Te)
        glc = bool(self.glc) and mode == "dpboost"
        split = self._split_policy(lam, eps_t / (divisor * D), split_sensitivity(g_star)) \
            if D else None
        part_ss = streams.structure
        tree_rngs = streams.noise_generators(T)
        trees, offered, used = [], [], []
        rounds_offered, rounds_used = [], []
        workspace = GrowWorkspace()

        def one_tree(t: int, rows: np.ndarray, t_glc: int | None = None,
                     read_later: np.ndarray | None = None):
            # t_glc: the iteration index GLC decays with (the tree's 1-based position in
            # its ensemble when glc_per_ensemble, else t; only mode "dpboost" clips).
            # read_later: the rows later trees read (None: every row), the only scores
            # the update must keep current
            t_glc = t if t_glc is None or not self.glc_per_ensemble else t_glc
            gradients(F, y, self.loss_, out=stats[:, 0])
            if exact_h:
                exact_hessians(F, self.loss_, out=stats[:, 1])
            if bool(self.gdf):
                keep = rows[gdf_mask(stats[rows, 0], g_star)]
            else:  # no filter: clip instead, so |g| <= g* as the split and leaf
                # sensitivities assume (Lemma 1, Corollary 2); unclipped it would not be DP
                keep = rows
                np.clip(stats[:, 0], -g_star, g_star, out=stats[:, 0])
            offered.append(rows.size)
            used.append(keep.size)
            leaf = LaplaceLeaf(
                lam, eps_t / 2 if D else eps_t,
                leaf_sensitivity(g_star, lam, lr, t_glc, glc),
                clip=glc_threshold(g_star, lr, t_glc) if glc else None,
            )
            with acc.sequential(f"tree {t}"):
                grown = grow_tree(
                    data, stats, keep, self.mapper_, max_depth=D,
                    split_policy=split, leaf_policy=leaf, rng=tree_rngs[t - 1],
                    accountant=acc, label=f"tree {t}", workspace=workspace, unit_last=True,
                )
            self._update_scores(grown, data, X, F, read_later)
            trees.append(grown.tree)

        all_rows = np.arange(n)
        # partitions keyed by each record's content (features, target), never its row:
        # a record added anywhere moves no other record (Li et al. 2020 Theorem 4)
        ids = record_ids(X, y) if mode != "seq" else None
        if mode == "seq":
            for t in range(1, T + 1):
                one_tree(t, all_rows)
                rounds_offered.append(offered[-1])
                rounds_used.append(used[-1])
        elif mode == "para":
            parts = record_partition(ids, para_proportions(T), np.random.default_rng(part_ss))
            with acc.parallel("trees (disjoint halves of the unused records)"):
                for t in range(1, T + 1):  # tree t reads part t - 1 only
                    one_tree(t, np.flatnonzero(parts == t - 1),
                             read_later=np.flatnonzero(parts >= t))
            rounds_offered.append(sum(offered))
            rounds_used.append(sum(used))
        else:
            ens_ss = part_ss.spawn(n_ensembles(T, Te))
            props = dpboost_subset_proportions(Te, lr)
            t = 0
            for e, s in enumerate(ens_ss):
                parts = record_partition(ids, props, np.random.default_rng(s))
                k0 = len(offered)
                last = e == len(ens_ss) - 1  # after it no ensemble reads the records again
                with acc.sequential(f"ensemble {e}"), acc.parallel(f"trees of ensemble {e}"):
                    for te in range(min(Te, T - t)):
                        t += 1
                        one_tree(t, np.flatnonzero(parts == te), te + 1,
                                 read_later=np.flatnonzero(parts > te) if last else None)
                rounds_offered.append(sum(offered[k0:]))
                rounds_used.append(sum(used[k0:]))
        # exact counts of the private data: diagnostics for the experiments (recorded with
        # metric_kind="diagnostic"), not part of the DP release
        n_off, n_used = float(np.mean(rounds_offered)), float(np.mean(rounds_used))
        diag = {
            "n_filtered": float(sum(offered) - sum(used)),
            "n_instances_offered": n_off,
            "n_instances_used": n_used,
            "gdf_filtered_ratio": (n_off - n_used) / n_off if n_off else 0.0,
            "epsilon_per_tree": eps_t,
        }
        return trees, diag

    def _check_original_options(self, acc: Accountant) -> tuple[bool, float]:
        """Validate the ablation options (module docstring) and mark the fit not DP for
        each non-private one; returns (exact hessians in use, split budget divisor, initial
        score = the exact label mean)."""
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        authors = self.objective == "authors"
        # the loss the fit uses (predict_proba reads it): the fork's for the task, or `loss`
        self.loss_ = self._AUTHORS_LOSS if authors else self.loss
        if self.init_score not in INIT_SCORES:
            raise ValueError(f"init_score must be one of {INIT_SCORES}, got {self.init_score!r}")
        try:
            divisor = float(self.split_budget_divisor)
        except (TypeError, ValueError):
            divisor = float("nan")
        if not (math.isfinite(divisor) and divisor >= 2):  # < 2 would overspend epsilon_t
            raise ValueError("split_budget_divisor must be a number >= 2 (2: the paper's "
                             f"epsilon_t / (2 Depth_max)), got {self.split_budget_divisor!r}")
        if int(self.min_child_samples) < 0:
            raise ValueError(f"min_child_samples must be >= 0, got {self.min_child_samples!r}")
        if self.num_leaves is not None and int(self.num_leaves) < 1:
            raise ValueError(f"num_leaves must be >= 1 or None, got {self.num_leaves!r}")
        # the square loss's hessian is exactly 1: exact hessians change nothing there
        exact_h = authors and self.loss_ != "square"
        init_mean = self.init_score == "mean" or (
            self.init_score == "authors" and self._AUTHORS_INIT == "mean")
        for reason in not_dp_reasons(exact_hessian=exact_h, exact_growth=bool(self.exact_growth),
                                     mean_init=init_mean):
            acc.mark_not_dp(reason)
        return exact_h, divisor, init_mean

    def _split_policy(self, lam: float, eps_node: float, sensitivity: float):
        """Algorithm 1's exponential split, or the fork's pruned one (``exact_growth``)."""
        if not bool(self.exact_growth):
            return ExponentialSplit(lam, eps_node, sensitivity)
        return PrunedExponentialSplit(
            lam, eps_node, sensitivity, int(self.min_child_samples),
            None if self.num_leaves is None else int(self.num_leaves))


class _NPMixin:
    """The non-private fit loop (NP): greedy splits, exact leaves, all rows every tree."""

    _private = False

    def _boost(self, data, X, y, streams: EstimatorStreams):
        self.accountant_ = Accountant(epsilon=float("inf"))
        n = data.n_rows
        F = np.zeros(n)
        stats = np.empty((n, 2))
        stats[:, 1] = 1.0
        lam = float(self.reg_lambda)
        split = GreedySplit(lam, min_child_weight=1e-3, min_samples_leaf=int(self.min_samples_leaf))
        leaf = NewtonLeaf(lam)
        rng = np.random.default_rng(streams.structure)  # unused by the greedy policies
        rows = np.arange(n)
        trees = []
        workspace = GrowWorkspace()
        for _ in range(int(self.n_trees)):
            gradients(F, y, self.loss, out=stats[:, 0])
            grown = grow_tree(
                data, stats, rows, self.mapper_, max_depth=int(self.max_depth),
                split_policy=split, leaf_policy=leaf, rng=rng, workspace=workspace,
                unit_last=True, scores=F, score_scale=float(self.learning_rate),
            )  # F += learning_rate * tree(x) for every row, done by the grower
            trees.append(grown.tree)
        return trees, {"n_instances_used": float(n), "n_instances_offered": float(n),
                       "n_filtered": 0.0, "gdf_filtered_ratio": 0.0}


class _ClassifierPart(BinaryScoreClassifierMixin, ClassifierMixin):
    """Binary classification with square loss on labels mapped to {-1, +1} (Section 4)."""

    _AUTHORS_LOSS = "logistic"  # the fork's branch binary-classification: objective=binary
    _AUTHORS_INIT = "zero"  # its run_exp.py sets boost_from_average False

    def staged_decision_function(self, X) -> Iterator[np.ndarray]:
        yield from self._staged_decision(X)

    def predict_proba(self, X) -> np.ndarray:
        """``[P(classes_[0]), P(classes_[1])]`` from the score F (post-processing, free).

        ``loss="square"`` on ``{-1, +1}`` targets: F estimates ``E[y] = 2p - 1``, so
        ``p = clip((1 + F) / 2, 0, 1)``; ``loss="logistic"``: F is the log-odds, so
        ``p = 1 / (1 + exp(-F))``. Either way ``p > 1/2`` exactly where ``predict`` gives
        ``classes_[1]``.
        """
        F = self._decision(X)
        if getattr(self, "loss_", self.loss) == "logistic":
            p1 = 1.0 / (1.0 + np.exp(-np.clip(F, -700.0, 700.0)))
            return np.column_stack([1.0 - p1, p1])
        return proba_from_pm1_score(F)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags


class _RegressorPart(ScaledScoreRegressorMixin, RegressorMixin):
    """Regression with labels scaled to [-1, 1] by the public label domain (Section 4)."""

    _AUTHORS_LOSS = "square"  # the fork's branch master: objective=regression
    _AUTHORS_INIT = "mean"  # its run_exp.py keeps LightGBM's boost_from_average (label mean)

    def _fit_targets(self, X, y):
        if self.loss != "square":
            raise ValueError("regression supports loss='square' only")
        return super()._fit_targets(X, y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _init(self, params: dict) -> None:
    """Store the constructor's arguments unchanged (scikit-learn's convention)."""
    for key, value in params.items():
        if key not in ("self", "__class__"):
            setattr(self, key, value)


_DP_DOC = """
    Public input (never read from the private data when given): ``feature_domain``,
    ``categorical_features``, ``n_categories`` (the candidate split grid), ``label_domain``
    (regression scale){classes}. Missing ones are taken from the data with a
    :class:`~dpexp.privacy.public.DataDependentWarning` and the fit is marked not DP
    (``accountant_.is_dp`` is False), as is ``binning="quantile"``.

    Randomness: ``random_state`` seeds the data-independent structure (record partitions
    of DPBoost's ensembles and of PARA); ``noise_rng`` (a ``numpy.random.Generator`` or
    :func:`dpexp.privacy.secure_generator`) draws every exponential-mechanism and Laplace
    noise; ``None``: fresh OS entropy, never derived from ``random_state``; a SeedSequence
    (:func:`dpexp.privacy.seeded_noise`) for reproducible experiments.

    Released: ``trees_`` (split features/thresholds and noisy leaf values) and what is
    computed from them (``predict``, ``decision_function``, ``staged_predict``{proba}).
    ``diagnostics_`` holds exact counts of the private data (``n_filtered``,
    ``n_instances_offered``, ``n_instances_used``, ``gdf_filtered_ratio``): diagnostics
    for the experiments (Table 3), recorded with ``metric_kind="diagnostic"``, **not**
    part of the DP release.
"""


class DPBoostClassifier(_ClassifierPart, _DPBoostMixin, _BoostingBase):
    """DPBoost / SEQ / PARA binary classifier (see the module docstring).

    Parameters follow Section 4: ``learning_rate=0.01``, ``max_depth=6``,
    ``reg_lambda=0.1`` (must be > 0), ``g_star=1`` (GDF threshold g*_l of the square
    loss), ``n_trees=50``, ``trees_per_ensemble=50``. ``gdf``/``glc`` switch GDF and GLC
    (GLC applies to ``mode="dpboost"`` only; ``gdf=False`` clips the gradients to
    ``[-g*, g*]`` instead of filtering, which keeps the sensitivities valid). ``glc_per_ensemble=True`` restarts GLC's
    decay ``g*(1-eta)^(t-1)`` with every ensemble (t = the tree's position in it): Section
    3.2 says the ensemble of ensembles "address[es] the side effect of geometric leaf
    clipping ... too tight restriction as the iteration grows", and Fig. 3's error keeps
    falling over 5,000 trees, which a global t (clip ~1e-22 by then) would forbid;
    ``False`` uses the global tree index of Algorithm 2 line 12 as printed. The leaf
    sensitivity follows the same index, so privacy holds either way. With one ensemble
    the two are the same. ``binning="domain"`` takes candidate splits
    from the public ``feature_domain``; ``"quantile"`` from the data (not private).
    ``objective``, ``exact_growth`` (with ``min_child_samples``, ``num_leaves``),
    ``init_score`` and ``split_budget_divisor``: the authors' code's behaviours beyond the
    paper's text (module docstring); the defaults are the paper's (``loss`` with h = 1, Algorithm 1's
    growth to the maximum depth, initial score 0, ``epsilon_t / (2 Depth_max)``).
    ``classes``: the public label set (exactly two labels); ``classes_`` is it, whatever
    labels the training fold holds.
    """

    def __init__(self, *, epsilon=1.0, mode="dpboost", n_trees=50, trees_per_ensemble=50,
                 max_depth=6, learning_rate=0.01, reg_lambda=0.1, g_star=1.0, gdf=True,
                 glc=True, glc_per_ensemble=True, loss="square", binning="domain", max_bins=255,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, classes=None, random_state=None, noise_rng=None,
                 accountant=None, objective="paper", exact_growth=False, min_child_samples=20,
                 num_leaves=None, init_score="zero", split_budget_divisor=2):
        _init(self, locals())


class DPBoostRegressor(_RegressorPart, _DPBoostMixin, _BoostingBase):
    """DPBoost / SEQ / PARA regressor; see :class:`DPBoostClassifier`."""

    def __init__(self, *, epsilon=1.0, mode="dpboost", n_trees=50, trees_per_ensemble=50,
                 max_depth=6, learning_rate=0.01, reg_lambda=0.1, g_star=1.0, gdf=True,
                 glc=True, glc_per_ensemble=True, loss="square", binning="domain", max_bins=255,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, random_state=None, noise_rng=None, accountant=None,
                 objective="paper", exact_growth=False, min_child_samples=20, num_leaves=None,
                 init_score="zero", split_budget_divisor=2):
        _init(self, locals())


DPBoostClassifier.__doc__ += _DP_DOC.format(
    classes=", ``classes`` (the label set)", proba=", ``predict_proba``")
DPBoostRegressor.__doc__ += _DP_DOC.format(classes="", proba="")


class NPGBDTClassifier(_ClassifierPart, _NPMixin, _BoostingBase):
    """Non-private GBDT (NP, Section 4) on the same engine: greedy splits, Eq. (4) leaves.

    ``min_samples_leaf=20`` is LightGBM's default ``min_data_in_leaf`` (the original code
    is a LightGBM fork). ``reg_lambda`` must be > 0 (Eq. 4 divides by ``H + lambda``).
    ``classes``: the label set (exactly two labels; ``None`` reads it from ``y``).
    """

    def __init__(self, *, n_trees=50, max_depth=6, learning_rate=0.01, reg_lambda=0.1,
                 min_samples_leaf=20, loss="square", binning="domain", max_bins=255,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, classes=None, random_state=None):
        _init(self, locals())


class NPGBDTRegressor(_RegressorPart, _NPMixin, _BoostingBase):
    """Non-private GBDT regressor; see :class:`NPGBDTClassifier`."""

    def __init__(self, *, n_trees=50, max_depth=6, learning_rate=0.01, reg_lambda=0.1,
                 min_samples_leaf=20, loss="square", binning="domain", max_bins=255,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, random_state=None):
        _init(self, locals())
