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
from collections.abc import Generator, Iterator

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin

from dpexp.boosting.base import (
    Boosted,
    BoostingEstimator,
    BoostingFit,
    TreeSlot,
    all_rows_slots,
    store_params,
)
from dpexp.boosting.gbdt import (
    ScaledScoreRegressorMixin,
    check_reg_lambda,
    not_dp_reasons,
    split_sensitivity,
)
from dpexp.boosting.labels import BinaryScoreClassifierMixin, proba_from_pm1_score
from dpexp.papers.dpboost.formulas import (
    INIT_SCORES,
    LOSSES,
    MODES,
    OBJECTIVES,
    mean_initial_score,
    per_tree_budget,
)
from dpexp.papers.dpboost.steps import (
    AuthorsOptions,
    DPBoostTreeStep,
    NPTreeStep,
    PrunedExponentialSplit,
    chunked_record_ids,
    ensemble_slots,
    para_slots,
)
from dpexp.trees.policies import ExponentialSplit, GreedySplit, NewtonLeaf

# ----------------------------------------------------------------------------- estimators


class _BoostingBase(BoostingEstimator):
    """What the boosted estimators of Li et al. share: parameter checks, the prepared
    table, the diagnostics (square loss, initial score 0 unless an option sets it)."""

    _fit_dtype = [np.float64, np.float32]

    def _check_params(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if int(self.n_trees) < 1:
            raise ValueError(f"n_trees must be >= 1, got {self.n_trees!r}")
        if int(self.max_depth) < 0:
            raise ValueError(f"max_depth must be >= 0, got {self.max_depth!r}")
        if not 0.0 < float(self.learning_rate) < 1.0:
            raise ValueError(f"learning_rate must be in (0, 1), got {self.learning_rate!r}")
        check_reg_lambda(self.reg_lambda)

    def _bin(self, X):
        mapper, data, leaked = super()._bin(X)
        # the table's bundles and row-major codes are built with the table, before the
        # trees' timer starts (the authors' LightGBM builds its bundles in the Dataset)
        return mapper, data.prepare(), leaked

    def _fit_diagnostics(self, boosted: Boosted, leaked: bool) -> dict[str, float]:
        return {
            "n_trees_built": float(len(boosted.trees)),
            "binning_is_quantile": float(self.binning == "quantile"),
            "domain_from_data": float(leaked),
        }


class _DPBoostMixin:
    """The private fit of the DPBoost classifier and regressor: the tree step of Algorithm
    1 and the schedule of the mode (Algorithm 2's ensembles, SEQ, PARA).

    Randomness (:func:`dpexp.privacy.randomness.estimator_streams`): the record partitions
    of PARA and of DPBoost's ensembles come from the *structure* stream (data-independent,
    record-stable keyed draws; the privacy proof conditions on them), every exponential
    and Laplace draw from the *noise* stream (``noise_rng``), one child per tree.
    """

    def _check_params(self) -> None:
        super()._check_params()
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if int(self.trees_per_ensemble) < 1:
            raise ValueError(f"trees_per_ensemble must be >= 1, got {self.trees_per_ensemble!r}")
        if float(self.g_star) <= 0:
            raise ValueError(f"g_star must be > 0, got {self.g_star!r}")
        self._authors_options()

    def _authors_options(self) -> AuthorsOptions:
        """Validate the ablation options (module docstring) and set ``loss_``, the loss the
        fit uses (the fork's for the task, or ``loss``; ``predict_proba`` reads it)."""
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        authors = self.objective == "authors"
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
        return AuthorsOptions(
            exact_hessian=authors and self.loss_ != "square", split_budget_divisor=divisor,
            mean_init=self.init_score == "mean" or (
                self.init_score == "authors" and self._AUTHORS_INIT == "mean"))

    def _not_dp_reasons(self, leaked: bool) -> list[str]:
        """The non-private ablation options in use, then the public input read from the
        private data."""
        opts = self._authors_options()
        return not_dp_reasons(exact_hessian=opts.exact_hessian,
                              exact_growth=bool(self.exact_growth),
                              mean_init=opts.mean_init) + self._public_input_reasons(leaked)

    def _split_policy(self, lam: float, eps_node: float, sensitivity: float):
        """Algorithm 1's exponential split, or the fork's pruned one (``exact_growth``)."""
        if not bool(self.exact_growth):
            return ExponentialSplit(lam, eps_node, sensitivity)
        return PrunedExponentialSplit(
            lam, eps_node, sensitivity, int(self.min_child_samples),
            None if self.num_leaves is None else int(self.num_leaves))

    def _tree_step(self, fit: BoostingFit) -> DPBoostTreeStep:
        opts = self._authors_options()
        T, Te, D = int(self.n_trees), int(self.trees_per_ensemble), int(self.max_depth)
        lam, g_star = float(self.reg_lambda), float(self.g_star)
        self.init_score_ = mean_initial_score(fit.target, self.loss_) if opts.mean_init else 0.0
        # columns: g, h, and (exact hessians only) the row count the grower counts
        # a tree writes its own rows' statistics (DPBoostTreeStep): zeros elsewhere
        stats = np.zeros((fit.n_rows, 3 if opts.exact_hessian else 2))
        stats[:, -1] = 1.0  # h = 1 (Section 4), or the count column
        eps_t = per_tree_budget(self.mode, fit.epsilon, T, Te)
        split = self._split_policy(lam, eps_t / (opts.split_budget_divisor * D),
                                   split_sensitivity(g_star)) if D else None
        return DPBoostTreeStep(
            fit, self.loss_, float(self.learning_rate), lam, g_star, D, eps_t, bool(self.gdf),
            bool(self.glc) and self.mode == "dpboost", self.glc_per_ensemble,
            opts.exact_hessian, split, fit.streams.noise_generators(T), stats,
            self.init_score_)

    def _tree_slots(self, fit: BoostingFit) -> Generator[TreeSlot, None, None]:
        T = int(self.n_trees)
        if self.mode == "seq":  # every tree on all the data (sequential composition)
            return all_rows_slots(T, fit.n_rows, first_label=1)
        # partitions keyed by each record's content (features, target), never its row:
        # a record added anywhere moves no other record (Li et al. 2020 Theorem 4)
        ids = chunked_record_ids(fit.X, fit.target)
        if self.mode == "para":
            return para_slots(fit.accountant, ids, T, fit.streams.structure)
        return ensemble_slots(fit.accountant, ids, T, int(self.trees_per_ensemble),
                              float(self.learning_rate), fit.streams.structure, trim_last=True)


class _NPMixin:
    """The non-private fit (NP): greedy splits, exact leaves, all rows every tree."""

    _private = False

    def _tree_step(self, fit: BoostingFit) -> NPTreeStep:
        lam = float(self.reg_lambda)
        stats = np.empty((fit.n_rows, 2))
        stats[:, 1] = 1.0
        return NPTreeStep(
            fit, self.loss, float(self.learning_rate), int(self.max_depth),
            GreedySplit(lam, min_child_weight=1e-3, min_samples_leaf=int(self.min_samples_leaf)),
            NewtonLeaf(lam), np.random.default_rng(fit.streams.structure), stats)


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


class _RegressorPart(ScaledScoreRegressorMixin, RegressorMixin):
    """Regression with labels scaled to [-1, 1] by the public label domain (Section 4)."""

    _AUTHORS_LOSS = "square"  # the fork's branch master: objective=regression
    _AUTHORS_INIT = "mean"  # its run_exp.py keeps LightGBM's boost_from_average (label mean)

    def _fit_targets(self, X, y):
        if self.loss != "square":
            raise ValueError("regression supports loss='square' only")
        return super()._fit_targets(X, y)


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
        store_params(self, locals())


class DPBoostRegressor(_RegressorPart, _DPBoostMixin, _BoostingBase):
    """DPBoost / SEQ / PARA regressor; see :class:`DPBoostClassifier`."""

    def __init__(self, *, epsilon=1.0, mode="dpboost", n_trees=50, trees_per_ensemble=50,
                 max_depth=6, learning_rate=0.01, reg_lambda=0.1, g_star=1.0, gdf=True,
                 glc=True, glc_per_ensemble=True, loss="square", binning="domain", max_bins=255,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, random_state=None, noise_rng=None, accountant=None,
                 objective="paper", exact_growth=False, min_child_samples=20, num_leaves=None,
                 init_score="zero", split_budget_divisor=2):
        store_params(self, locals())


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
        store_params(self, locals())


class NPGBDTRegressor(_RegressorPart, _NPMixin, _BoostingBase):
    """Non-private GBDT regressor; see :class:`NPGBDTClassifier`."""

    def __init__(self, *, n_trees=50, max_depth=6, learning_rate=0.01, reg_lambda=0.1,
                 min_samples_leaf=20, loss="square", binning="domain", max_bins=255,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, random_state=None):
        store_params(self, locals())
