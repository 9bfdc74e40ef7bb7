"""Gaussian-mechanism boosted decision trees (Peinemann, "Approximating Boosted Decision
Trees with Differential Privacy", slides, ``../shared/papers/gaussian-bdt-peinemann-slides.txt``).

* DP-Splitting (slide "DP-approximated splitting algorithm"): "split each node until max
  depth is reached", "split randomly": every node picks a feature uniformly at random and a
  threshold uniformly among that feature's public candidate thresholds (the bin grid of
  the public ``feature_domain``; one threshold per code of a categorical feature). No
  data is used, so the structure "has no leakage" (slide "DP-Proof").
* DP-Leaves (slide "DP-approximated splitting and leaves algorithms"): for each leaf,
  clip the error-corrected labels ``r = y - F`` to ``[-L, L]``, sum them (``S_c``), count
  the points (``C``), add Gaussian noise to both and store ``S'_c / C'``. We store
  ``S'_c / max(C', 1)`` clipped to ``[-L, L]`` (post-processing; the slides divide by
  ``C'`` as is, which may be <= 0).
* Boosting over the error-corrected labels (slides "Error correction for iterative BDT
  training"): ``F <- F + learning_rate * tree(x)``, ``F_0 = 0``. The slides add no
  shrinkage (``learning_rate=1`` is their algorithm); the defaults ``n_trees=10``,
  ``max_depth=4``, ``learning_rate=0.3`` are our choice (the slides give none): on the
  synthetic weather data with learning rate 1 the accumulated leaf noise costs far more
  than it gains (RMSE 19.6 vs 6.8 at epsilon = 1, 20 trees).
* Privacy (slide "DP-Proof"): a record only affects its own leaf, so the leaves of a tree
  compose in parallel; adding a record changes ``S_c`` by at most ``L`` and ``C`` by 1
  (L2 sensitivities). Gaussian mechanism: ``sigma > sqrt(2 ln(1.25/delta)) L / epsilon``,
  valid for ``epsilon in (0, 1)`` only. The budget ``(epsilon, delta)`` is split evenly over
  the ``n_trees`` trees (basic sequential composition through the accountant) and each
  tree's share in two halves, one for ``S_c`` and one for ``C``. ``calibration="auto"``
  uses the slides' classic formula when the per-release epsilon is below 1 and the
  analytic Gaussian mechanism of Balle & Wang (ICML 2018, Theorem 8/Algorithm 1) when it is
  >= 1, where the classic formula is not valid; ``diagnostics_['analytic_calibration']``
  says which one was used. The classic sigma is taken one ulp above the bound (the
  slides' inequality is strict).

Public input and randomness: ``feature_domain`` (the candidate thresholds of the random
splits), ``label_domain`` (regression scale) and ``classes`` (classifier label set) are
public; missing ones are read from the data with a ``DataDependentWarning`` and the fit is
marked not DP (``accountant_.is_dp``), as is ``binning="quantile"``. The random splits
come from ``random_state``'s *structure* stream (data-independent, publishable); every
Gaussian draw from the *noise* stream (``noise_rng``; ``None``: fresh OS entropy; a
SeedSequence such as :func:`dpexp.privacy.seeded_noise` for reproducible experiments;
:func:`dpexp.privacy.secure_generator` for a published model). Released:
``trees_`` (random splits + noisy leaf values) and predictions from them.

Labels: regression labels are scaled to ``[-1, 1]`` with the public ``label_domain``
(predictions are mapped back); classification labels are ``{-1, +1}`` (class 1 iff
``F > 0``). The default clip ``L = 1`` covers the labels; the error-corrected labels lie
in ``[-2, 2]`` and are clipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from dpexp.boosting.base import (
    Boosted,
    BoostingEstimator,
    BoostingFit,
    TreeSlot,
    add_tree_to_scores,
    store_params,
)
from dpexp.boosting.gbdt import ScaledScoreRegressorMixin
from dpexp.boosting.labels import BinaryScoreClassifierMixin, proba_from_pm1_score
from dpexp.errors import check_epsilon
from dpexp.privacy import analytic_gaussian_sigma, gaussian_sigma_classic
from dpexp.privacy.calibration import check_delta
from dpexp.trees.grower import GrownTree, LeafContext, SplitContext, grow_tree

CALIBRATIONS = ("auto", "classic", "analytic")


def slides_sigma(*, epsilon: float, delta: float, sensitivity: float) -> float:
    """The slides' bound ``sqrt(2 ln(1.25/delta)) L / epsilon`` (epsilon < 1), one ulp up
    so that ``sigma >`` the bound as the slide states."""
    bound = gaussian_sigma_classic(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    return float(np.nextafter(bound, np.inf))


def leaf_sigma(*, epsilon: float, delta: float, sensitivity: float, calibration: str = "auto"
               ) -> tuple[float, bool]:
    """``(sigma, analytic?)`` of one Gaussian release. ``"auto"``: classic (slides) for
    ``epsilon < 1``, analytic (Balle & Wang 2018) for ``epsilon >= 1``."""
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    analytic = calibration == "analytic" or (calibration == "auto" and epsilon >= 1.0)
    if analytic:
        return analytic_gaussian_sigma(epsilon=epsilon, delta=delta,
                                       sensitivity=sensitivity), True
    return slides_sigma(epsilon=epsilon, delta=delta, sensitivity=sensitivity), False


def release_budgets(epsilon: float, delta: float, n_trees: int) -> tuple[float, float]:
    """``(epsilon, delta)`` of each of the two releases (sum, count) of a leaf."""
    return epsilon / (2.0 * n_trees), delta / (2.0 * n_trees)


@dataclass
class RandomSplit:
    """Slides' DP-Splitting: a uniformly random feature (among those with candidates) and a
    uniformly random public threshold of it, for every node; never stops before max depth."""

    rng: np.random.Generator

    def __call__(self, ctx: SplitContext) -> tuple[np.ndarray, np.ndarray]:
        nc = np.asarray(ctx.n_candidates, dtype=np.int64)
        usable = np.flatnonzero(nc > 0)
        n = ctx.n_nodes
        if usable.size == 0:
            none = np.full(n, -1, dtype=np.int64)
            return none, none.copy()
        feat = usable[self.rng.integers(usable.size, size=n)]
        bins = (self.rng.random(n) * nc[feat]).astype(np.int64)
        return feat, np.minimum(bins, nc[feat] - 1)


@dataclass
class GaussianLeaf:
    """Slides' DP-Leaves: ``S'_c = S_c + N(0, sigma_s^2)``, ``C' = C + N(0, sigma_c^2)``,
    value ``S'_c / max(C', 1)`` clipped to ``[-L, L]``; two releases per leaf (the
    accountant's float-safe Gaussian, ``calibration`` "classic" as the slides or
    "analytic"), leaves in parallel. ``eps=None`` is the exact (non-private) ``S_c / C``."""

    clip: float
    eps: float | None = None
    delta: float = 0.0
    calibration: str = "classic"

    def __call__(self, ctx: LeafContext) -> np.ndarray:
        s, c = ctx.totals[:, 0], ctx.totals[:, 1]
        if self.eps is None:
            return s / np.maximum(c, 1.0)
        # the leaves hold disjoint records: each of the two queries costs its (eps, delta)
        # once over all leaves, and the two add up -- the cost of a parallel scope of
        # per-leaf sequential pairs
        acc, k = ctx.accountant, int(s.size)
        with acc.sequential(f"{ctx.label} leaves"):
            s_noisy = acc.gaussian(s, epsilon=self.eps, delta=self.delta, sensitivity=self.clip,
                                   rng=ctx.rng, calibration=self.calibration, releases=k,
                                   what=f"{ctx.label} leaves clipped sums")
            c_noisy = acc.gaussian(c, epsilon=self.eps, delta=self.delta, sensitivity=1.0,
                                   rng=ctx.rng, calibration=self.calibration, releases=k,
                                   what=f"{ctx.label} leaves counts")
        return np.clip(s_noisy / np.maximum(c_noisy, 1.0), -self.clip, self.clip)


@dataclass
class GaussianTreeStep:
    """One tree of the slides' loop: error-corrected labels ``r = y - F`` clipped to
    ``[-L, L]``, random splits (structure stream, one generator per tree), Gaussian leaves
    (noise stream, one generator per tree)."""

    fit: BoostingFit
    clip: float
    max_depth: int
    learning_rate: float
    leaf: GaussianLeaf
    split_rngs: list[np.random.Generator]
    noise_rngs: list
    stats: np.ndarray
    budget_diagnostics: dict[str, float]
    initial_score: float = 0.0  # F_0 = 0 (slides)

    def grow(self, slot: TreeSlot, scores: np.ndarray) -> GrownTree:
        self.stats[:, 0] = np.clip(self.fit.target - scores, -self.clip, self.clip)
        return grow_tree(self.fit.data, self.stats, slot.rows, self.fit.mapper,
                         max_depth=self.max_depth,
                         split_policy=RandomSplit(self.split_rngs[slot.index]),
                         leaf_policy=self.leaf, rng=self.noise_rngs[slot.index],
                         accountant=self.fit.accountant, label=slot.label)

    def add_to_scores(self, grown: GrownTree, scores: np.ndarray, slot: TreeSlot) -> None:
        add_tree_to_scores(grown, scores, self.learning_rate, self.fit.data, self.fit.X)

    def diagnostics(self) -> dict[str, float]:
        return dict(self.budget_diagnostics)


class _GaussianBDTBase(BoostingEstimator):
    """The slides' tree step and budget split on the shared boosting fit (dense or CSR)."""

    def _check_params(self) -> None:
        if int(self.n_trees) < 1:
            raise ValueError(f"n_trees must be >= 1, got {self.n_trees!r}")
        if int(self.max_depth) < 0:
            raise ValueError(f"max_depth must be >= 0, got {self.max_depth!r}")
        if not float(self.clip) > 0:
            raise ValueError(f"clip must be > 0, got {self.clip!r}")
        if not float(self.learning_rate) > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {self.calibration!r}")

    def _budget(self) -> tuple[float, float]:
        return check_epsilon(self.epsilon, name="epsilon"), check_delta(self.delta)

    def _tree_step(self, fit: BoostingFit) -> GaussianTreeStep:
        T, L = int(self.n_trees), float(self.clip)
        eps_r, delta_r = release_budgets(fit.accountant.epsilon, fit.accountant.delta, T)
        sigma_s, analytic = leaf_sigma(epsilon=eps_r, delta=delta_r, sensitivity=L,
                                       calibration=self.calibration)
        sigma_c, _ = leaf_sigma(epsilon=eps_r, delta=delta_r, sensitivity=1.0,
                                calibration=self.calibration)
        stats = np.empty((fit.n_rows, 2))
        stats[:, 1] = 1.0
        return GaussianTreeStep(
            fit, L, int(self.max_depth), float(self.learning_rate),
            GaussianLeaf(L, eps_r, delta_r, "analytic" if analytic else "classic"),
            # random splits: structure (data-independent, may be published); leaves: noise
            [np.random.default_rng(c) for c in fit.streams.structure.spawn(T)],
            fit.streams.noise_generators(T), stats,
            {"sigma_sum": sigma_s, "sigma_count": sigma_c, "analytic_calibration": float(analytic),
             "epsilon_per_release": eps_r, "delta_per_release": delta_r},
        )

    def _fit_diagnostics(self, boosted: Boosted, leaked: bool) -> dict[str, float]:
        return {"domain_from_data": float(leaked)}


class GaussianBDTRegressor(ScaledScoreRegressorMixin, RegressorMixin, _GaussianBDTBase):
    """Gaussian-mechanism BDT regressor (slides); see the module docstring."""

    def __init__(self, *, epsilon=1.0, delta=1e-5, n_trees=10, max_depth=4, learning_rate=0.3,
                 clip=1.0, calibration="auto", binning="domain", max_bins=32,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, random_state=None, noise_rng=None, accountant=None):
        store_params(self, locals())


class GaussianBDTClassifier(BinaryScoreClassifierMixin, ClassifierMixin, _GaussianBDTBase):
    """Gaussian-mechanism BDT binary classifier on labels ``{-1, +1}`` (slides' algorithm
    with the error-corrected labels of a +-1 coding). ``classes``: the public label set
    (exactly two labels); ``classes_`` is it whatever labels the training fold holds."""

    def __init__(self, *, epsilon=1.0, delta=1e-5, n_trees=10, max_depth=4, learning_rate=0.3,
                 clip=1.0, calibration="auto", binning="domain", max_bins=32,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 classes=None, random_state=None, noise_rng=None, accountant=None):
        store_params(self, locals())

    def predict_proba(self, X) -> np.ndarray:
        """``p = clip((1 + F) / 2, 0, 1)``: F estimates ``E[y]`` for ``y = +-1`` (leaves are
        mean clipped residuals), so ``E[y] = 2p - 1``; columns in ``classes_`` order."""
        check_is_fitted(self, "trees_")
        return proba_from_pm1_score(self._decision(X))
