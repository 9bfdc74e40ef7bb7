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

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.boosting.gbdt import (
    apply_tree,
    make_bin_mapper,
    not_dp_reasons,
    prepare_predict_matrix,
    raw_predict,
    resolve_label_domain,
    scale_labels,
    unscale_labels,
)
from dpexp.boosting.labels import (
    binary_classes,
    labels_from_score,
    pm1_targets,
    proba_from_pm1_score,
)
from dpexp.errors import check_epsilon
from dpexp.privacy import Accountant, analytic_gaussian_sigma, gaussian_sigma_classic
from dpexp.privacy.budget import charges_budget
from dpexp.privacy.mechanisms import check_delta
from dpexp.privacy.randomness import estimator_streams
from dpexp.trees.grower import LeafContext, SplitContext, grow_tree

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


class _GaussianBDTBase(BaseEstimator):
    """Fit loop shared by the regressor and the classifier (dense input)."""

    _private = True

    def _targets(self, y):  # pragma: no cover - overridden
        raise NotImplementedError

    def _public_input_reasons(self, leaked: bool) -> list[str]:
        """Why this fit is not DP (public input read from the private data), if it is not."""
        quantile = self.binning == "quantile"
        return not_dp_reasons(
            classes=getattr(self, "_classes_from_data", False),
            label_domain=getattr(self, "_label_domain_from_data", False),
            feature_domain=leaked and not quantile, quantile=quantile,
        )

    def _check(self) -> tuple[float, float]:
        eps = check_epsilon(self.epsilon, name="epsilon")
        delta = check_delta(self.delta)
        if int(self.n_trees) < 1:
            raise ValueError(f"n_trees must be >= 1, got {self.n_trees!r}")
        if int(self.max_depth) < 0:
            raise ValueError(f"max_depth must be >= 0, got {self.max_depth!r}")
        if not float(self.clip) > 0:
            raise ValueError(f"clip must be > 0, got {self.clip!r}")
        if not float(self.learning_rate) > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        return eps, delta

    @charges_budget
    def fit(self, X, y):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                             ensure_all_finite=True,
                             y_numeric=not isinstance(self, ClassifierMixin))
        eps, delta = self._check()
        target = self._targets(y)
        T, D, L = int(self.n_trees), int(self.max_depth), float(self.clip)
        eps_r, delta_r = release_budgets(eps, delta, T)
        sigma_s, analytic = leaf_sigma(epsilon=eps_r, delta=delta_r, sensitivity=L,
                                       calibration=self.calibration)
        sigma_c, _ = leaf_sigma(epsilon=eps_r, delta=delta_r, sensitivity=1.0,
                                calibration=self.calibration)
        self.mapper_, leaked = make_bin_mapper(
            X, binning=self.binning, feature_domain=self.feature_domain,
            categorical_features=self.categorical_features, n_categories=self.n_categories,
            max_bins=int(self.max_bins), private=True,
        )
        data = self.mapper_.transform(X)
        acc = Accountant(epsilon=eps, delta=delta)
        self.accountant_ = acc
        for reason in self._public_input_reasons(leaked):
            acc.mark_not_dp(reason)
        streams = estimator_streams(self.random_state, self.noise_rng)
        # random splits: structure (data-independent, may be published); leaf noise: noise
        split_rngs = [np.random.default_rng(c) for c in streams.structure.spawn(T)]
        noise_rngs = streams.noise_generators(T)
        n = data.n_rows
        F = np.zeros(n)
        stats = np.empty((n, 2))
        stats[:, 1] = 1.0
        rows = np.arange(n)
        lr = float(self.learning_rate)
        leaf = GaussianLeaf(L, eps_r, delta_r, "analytic" if analytic else "classic")
        t0 = time.perf_counter()
        self.trees_ = []
        for t in range(T):
            stats[:, 0] = np.clip(target - F, -L, L)
            with acc.sequential(f"tree {t}"):
                grown = grow_tree(data, stats, rows, self.mapper_, max_depth=D,
                                  split_policy=RandomSplit(split_rngs[t]),
                                  leaf_policy=leaf, rng=noise_rngs[t],
                                  accountant=acc, label=f"tree {t}")
            if data.is_sparse:
                F += lr * grown.tree.value[apply_tree(grown.tree, prepare_predict_matrix(X)), 0]
            else:  # serial walk for small tables (apply_binned always starts the pool)
                grown.add_to_scores(F, lr, data)
            self.trees_.append(grown.tree)
        self.diagnostics_ = {
            "sigma_sum": sigma_s, "sigma_count": sigma_c, "analytic_calibration": float(analytic),
            "epsilon_per_release": eps_r, "delta_per_release": delta_r,
            "seconds_per_tree": (time.perf_counter() - t0) / T, "domain_from_data": float(leaked),
        }
        return self

    def _staged_raw(self, X) -> Iterator[np.ndarray]:
        check_is_fitted(self, "trees_")
        X = prepare_predict_matrix(validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                                                 reset=False))
        F = np.zeros(X.shape[0])
        for t in self.trees_:
            F = F + float(self.learning_rate) * t.value[apply_tree(t, X), 0]
            yield F

    def _raw(self, X) -> np.ndarray:
        # the last of _staged_raw's scores, bit for bit (0 + the trees' additions in order)
        check_is_fitted(self, "trees_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return raw_predict(self.trees_, float(self.learning_rate), X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _init(self, kw: dict) -> None:
    for k, v in kw.items():
        if k not in ("self", "__class__"):
            setattr(self, k, v)


class GaussianBDTRegressor(RegressorMixin, _GaussianBDTBase):
    """Gaussian-mechanism BDT regressor (slides); see the module docstring."""

    def __init__(self, *, epsilon=1.0, delta=1e-5, n_trees=10, max_depth=4, learning_rate=0.3,
                 clip=1.0, calibration="auto", binning="domain", max_bins=32,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, random_state=None, noise_rng=None, accountant=None):
        _init(self, locals())

    def _targets(self, y):
        y = np.asarray(y, dtype=np.float64)
        (lo, hi), leaked = resolve_label_domain(self.label_domain, y, private=True)
        self._label_domain_from_data = leaked
        self.label_domain_ = (lo, hi)
        return scale_labels(y, lo, hi)

    def predict(self, X) -> np.ndarray:
        return unscale_labels(self._raw(X), *self.label_domain_)

    def staged_predict(self, X) -> Iterator[np.ndarray]:
        for F in self._staged_raw(X):
            yield unscale_labels(F, *self.label_domain_)


class GaussianBDTClassifier(ClassifierMixin, _GaussianBDTBase):
    """Gaussian-mechanism BDT binary classifier on labels ``{-1, +1}`` (slides' algorithm
    with the error-corrected labels of a +-1 coding). ``classes``: the public label set
    (exactly two labels); ``classes_`` is it whatever labels the training fold holds."""

    def __init__(self, *, epsilon=1.0, delta=1e-5, n_trees=10, max_depth=4, learning_rate=0.3,
                 clip=1.0, calibration="auto", binning="domain", max_bins=32,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 classes=None, random_state=None, noise_rng=None, accountant=None):
        _init(self, locals())

    def _targets(self, y):
        self._classes_from_data = self.classes is None
        self.classes_ = binary_classes(y, self.classes)
        return pm1_targets(y, self.classes_)

    def decision_function(self, X) -> np.ndarray:
        return self._raw(X)

    def predict_proba(self, X) -> np.ndarray:
        """``p = clip((1 + F) / 2, 0, 1)``: F estimates ``E[y]`` for ``y = +-1`` (leaves are
        mean clipped residuals), so ``E[y] = 2p - 1``; columns in ``classes_`` order."""
        return proba_from_pm1_score(self._raw(X))

    def _label(self, F):
        return labels_from_score(self.classes_, F)

    def predict(self, X) -> np.ndarray:
        return self._label(self._raw(X))

    def staged_predict(self, X) -> Iterator[np.ndarray]:
        for F in self._staged_raw(X):
            yield self._label(F)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
