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
no noise. The same DP tree (:func:`dpexp.papers.xgbdp.tree.grow_xgbdp_tree`) builds the random forest and AdaBoost
comparators of :mod:`dpexp.papers.xgbdp.comparators`.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from sklearn.base import ClassifierMixin

from dpexp.boosting.base import (
    Boosted,
    BoostingEstimator,
    BoostingFit,
    TreeSlot,
    all_rows_slots,
    boosting_loop,
    store_params,
)
from dpexp.boosting.gbdt import check_reg_lambda, prepare_predict_matrix
from dpexp.boosting.labels import binary_classes
from dpexp.papers.xgbdp import PAPER_NOT_DP  # the manifest states it
from dpexp.papers.xgbdp.tree import (
    G_STAR,
    grow_xgbdp_tree,
    parse_noiseless,
    per_node_budgets,
    per_tree_budget,
    split_counts,
    tree_values,
)
from dpexp.privacy import Accountant
from dpexp.privacy.randomness import EstimatorStreams
from dpexp.trees.binned_data import BinnedData
from dpexp.trees.binning import BinMapper
from dpexp.trees.grower import GrownTree
from dpexp.trees.tree import ArrayTree

VARIANTS = ("correct", "paper")
#: Initial score of the residual boosting (XGBoost's default ``base_score``).
BASE_SCORE = 0.5


# ----------------------------------------------------------------------------- estimators


class XGBDPEnsembleBase(ClassifierMixin, BoostingEstimator):
    """Shared fit/predict of the XGBoost-DP family (binary classification, dense input).

    Subclasses implement ``_ensemble(data, X, y01, streams, acc)`` returning
    ``(trees, weights, diagnostics)`` and ``_score_from(values, weights)``; ``predict_proba``
    maps the ensemble score to P(class 1).
    """

    _accept_sparse = False

    def _check_params(self) -> None:
        if int(self.n_trees) < 1:
            raise ValueError(f"n_trees must be >= 1, got {self.n_trees!r}")
        if int(self.max_depth) < 0:
            raise ValueError(f"max_depth must be >= 0, got {self.max_depth!r}")
        check_reg_lambda(self.reg_lambda)

    def _fit_targets(self, X, y) -> np.ndarray:  # noqa: ARG002 - the hook's signature
        """``y01``: 1 for ``classes_[1]`` (the declared label set), 0 otherwise."""
        declared = getattr(self, "classes", None)
        # True when the label set was read from the private labels (not DP): fit marks it
        self._classes_from_data = declared is None
        self.classes_ = binary_classes(y, declared)
        return (y == self.classes_[-1]).astype(np.float64)

    def _boost(self, fit: BoostingFit) -> Boosted:
        trees, self.tree_weights_, diag = self._ensemble(fit.data, fit.X, fit.target,
                                                         fit.streams, fit.accountant)
        counts = split_counts(trees, fit.X.shape[1])
        self.feature_importances_ = counts / counts.sum() if counts.sum() > 0 else counts
        return Boosted(trees, diag, len(trees))

    def _fit_diagnostics(self, boosted: Boosted, leaked: bool) -> dict[str, float]:
        diag = {
            "domain_from_data": float(leaked),
            "binning_is_quantile": float(self.binning == "quantile"),
            "mean_leaves": float(np.mean([t.leaves.size for t in boosted.trees])),
        }
        if self._private:
            acc = self.accountant_
            diag["epsilon_unused"] = max(0.0, acc.epsilon - acc.epsilon_spent)
        return diag

    # -- prediction
    def _staged_scores(self, X) -> Iterator[np.ndarray]:
        X = prepare_predict_matrix(self._predict_matrix(X))
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
        tags.classifier_tags.multi_class = False
        return tags


@dataclass
class ResidualTreeStep:
    """One tree of Section 4's residual fitting: gradients ``F - y`` clipped to
    ``[-g*, g*]``, an XGBoost-DP tree (:func:`grow_xgbdp_tree`; ``eps_tree=None``: the
    non-private twin), ``F += eta * f_t(x)``."""

    data: BinnedData
    mapper: BinMapper
    y01: np.ndarray
    learning_rate: float
    max_depth: int
    reg_lambda: float
    eps_tree: float | None
    g_star: float
    noise_rngs: list
    accountant: Accountant | None
    tree_kwargs: dict
    initial_score: float = BASE_SCORE

    def grow(self, slot: TreeSlot, scores: np.ndarray) -> GrownTree:
        g = np.clip(scores - self.y01, -self.g_star, self.g_star)
        return grow_xgbdp_tree(
            self.data, g, slot.rows, self.mapper, max_depth=self.max_depth,
            eps_tree=self.eps_tree, rng=self.noise_rngs[slot.index], accountant=self.accountant,
            label=slot.label, reg_lambda=self.reg_lambda, **self.tree_kwargs)

    def add_to_scores(self, grown: GrownTree, scores: np.ndarray, slot: TreeSlot) -> None:
        grown.add_to_scores(scores, self.learning_rate, self.data)

    def diagnostics(self) -> dict[str, float]:
        return {}


class _BoostingPart:
    """Residual boosting (Section 4): F = 0.5 + eta * sum_t f_t(x); class 1 iff F > 0.5."""

    _threshold = 0.5
    _base_score = BASE_SCORE

    def _finish(self, summed, n_trees):
        return self._base_score + summed

    def _proba1(self, score):
        return np.clip(score, 0.0, 1.0)

    def _select_features(self, data, X, y01, streams: EstimatorStreams):
        """Table 1 step 5 (paper variant only): the top ``n_selected_features`` features by
        split count of a NON-private boosted model with the same hyperparameters fitted on
        the private training data. No noise: this step is not differentially private."""
        trees = self._boost_trees(data, y01, streams, None, private=False)
        imp = split_counts(trees, X.shape[1])
        k = max(1, min(int(self.n_selected_features), X.shape[1]))
        mask = np.zeros(X.shape[1], dtype=bool)
        mask[np.argsort(-imp, kind="stable")[:k]] = True
        return mask

    def _boost_trees(self, data, y01, streams: EstimatorStreams, acc, *, private: bool,
                     feature_mask=None) -> list[ArrayTree]:
        """The boosting loop with the XGBoost-DP tree (private) or its greedy twin; one
        noise generator per tree (the greedy twin draws none)."""
        T = int(self.n_trees)
        if private:
            kw = {"min_noisy_count": self.min_noisy_count, "count_share": float(self.count_share),
                  "exact": parse_noiseless(self.noiseless), "feature_mask": feature_mask}
        else:
            kw = {"min_samples_leaf": int(getattr(self, "min_samples_leaf", 1))}
        g_star = float(self.grad_clip) if private else G_STAR
        step = ResidualTreeStep(
            data, self.mapper_, y01, float(self.learning_rate), int(self.max_depth),
            float(self.reg_lambda), per_tree_budget(acc.epsilon, T) if private else None,
            g_star, streams.noise_generators(T), acc if private else None,
            {"g_star": g_star, **kw} if private else kw)
        return boosting_loop(step, all_rows_slots(T, data.n_rows), data.n_rows, acc,
                             private=private)


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
        store_params(self, locals())

    def _check_params(self) -> None:
        super()._check_params()
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if not (self.min_noisy_count == "auto" or float(self.min_noisy_count) >= 0):
            raise ValueError(f"min_noisy_count must be 'auto' or >= 0, got {self.min_noisy_count!r}")
        if not 0.0 < float(self.grad_clip) <= G_STAR:
            raise ValueError(f"grad_clip must be in (0, {G_STAR}], got {self.grad_clip!r}")
        per_node_budgets(1.0, 0, self.count_share)  # checks count_share
        parse_noiseless(self.noiseless)  # checks noiseless

    def _ensemble(self, data, X, y01, streams, acc):
        exact = parse_noiseless(self.noiseless)
        if exact:
            acc.mark_not_dp(f"ablation: {', '.join(sorted(exact))} noise switched off "
                            "(noiseless); charged as if noised")
        mask = None
        if self.variant == "paper":
            acc.mark_not_dp(PAPER_NOT_DP)
            mask = self._select_features(data, X, y01, streams)
        trees = self._boost_trees(data, y01, streams, acc, private=True, feature_mask=mask)
        diag = {
            "nonprivate_feature_selection": float(self.variant == "paper"),
            "n_features_used": float(X.shape[1] if mask is None else mask.sum()),
            "paper_claimed_epsilon": per_tree_budget(acc.epsilon, int(self.n_trees)),
            "epsilon_per_tree": per_tree_budget(acc.epsilon, int(self.n_trees)),
        }
        return trees, [float(self.learning_rate)] * len(trees), diag


class NPXGBoostClassifier(_BoostingPart, XGBDPEnsembleBase):
    """Non-private XGBoost on the same engine (Table 2 ``no_noise`` row): greedy Eq. (9)
    splits, Newton leaves ``-G/(H+lambda)``, same residual boosting, no noise."""

    _private = False

    def __init__(self, *, n_trees=5, max_depth=7, learning_rate=0.3, reg_lambda=1.0,
                 min_samples_leaf=1, binning="domain", max_bins=32, feature_domain=None,
                 categorical_features=None, n_categories=None, classes=None,
                 random_state=None):
        store_params(self, locals())

    def _ensemble(self, data, X, y01, streams, acc):
        trees = self._boost_trees(data, y01, streams, acc, private=False)
        return trees, [float(self.learning_rate)] * len(trees), {}
