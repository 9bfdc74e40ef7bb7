"""DP-aware preprocessing: public metadata through a scikit-learn Pipeline.

A private estimator needs *public* input (a feature domain for its candidate splits, see
:mod:`dpexp.privacy.public`). An ordinary scaler breaks that twice: it computes
statistics of the private data (``MinMaxScaler``'s min/max, ``StandardScaler``'s
mean/std -- released, uncharged, through the model) and it changes the features, so the
declared domain no longer describes what the estimator sees.

* :class:`PublicMinMaxScaler` scales with **declared** bounds (``feature_domain``),
  never the data's, clips to them, and exposes the output domain as
  ``feature_domain_out_`` (``feature_range`` for every feature). Free: it reads no data.
* :class:`DPFeatureDomain` (alias :class:`DPBoundsEstimator`) estimates the bounds under
  epsilon-DP (:func:`dpexp.privacy.bounds.dp_feature_domain`), charges its ``epsilon``
  to its own ledger ``accountant_`` and to a shared
  :class:`~dpexp.privacy.BudgetAccountant` (``accountant=``), clips ``X`` to them and
  exposes them as ``feature_domain_out_``.
* :class:`PublicDomainPipeline` (or :func:`make_public_pipeline`) is a ``Pipeline`` that
  hands the last transformer's ``feature_domain_out_`` to the final estimator's
  ``feature_domain`` (when that parameter is unset).

**The warning path.** A transformer without ``feature_domain_out_`` (``StandardScaler``,
``MinMaxScaler``, ``PCA``, ...) computes statistics of the private data that no
accountant charges. :class:`PublicDomainPipeline` then warns with
:class:`DataDependentPreprocessingWarning` (a :class:`~dpexp.privacy.DataDependentWarning`,
so ``warnings.simplefilter("error", DataDependentWarning)`` turns it into an error), does
not pass a domain on (the estimator falls back on the data's, with its own warning), and
marks the final estimator's ledger not DP (``accountant_.is_dp`` is False, with the
reason). A plain ``sklearn.pipeline.Pipeline`` around a dpexp DP estimator gets the same
warning and mark from the estimator's own ``fit``
(:func:`dpexp.privacy.public.check_enclosing_pipeline`), but passes no domain on: use
:class:`PublicDomainPipeline` for DP estimators. Stateless transformers that read nothing
from the data can declare it with the attribute ``dp_stateless = True`` (their output
domain is then unknown, so no domain is passed on, but nothing is marked).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.privacy.accountant import Accountant
from dpexp.privacy.bounds import dp_feature_domain
from dpexp.privacy.budget import charges_budget
from dpexp.privacy.public import DataDependentPreprocessingWarning
from dpexp.privacy.randomness import estimator_streams

__all__ = [
    "DPBoundsEstimator",
    "DPFeatureDomain",
    "DataDependentPreprocessingWarning",
    "PublicDomainPipeline",
    "PublicMinMaxScaler",
    "make_public_pipeline",
]


def _domain(feature_domain, n_features: int | None = None) -> np.ndarray:
    dom = np.asarray(feature_domain, dtype=np.float64)
    if dom.ndim != 2 or dom.shape[1] != 2:
        raise ValueError(f"feature_domain must be a (n_features, 2) array of [low, high], "
                         f"got shape {dom.shape}")
    if not (np.isfinite(dom).all() and (dom[:, 1] >= dom[:, 0]).all()):
        raise ValueError("feature_domain must hold finite [low, high] rows with low <= high")
    if n_features is not None and dom.shape[0] != n_features:
        raise ValueError(f"feature_domain has {dom.shape[0]} rows but X has {n_features} features")
    return dom


class PublicMinMaxScaler(TransformerMixin, BaseEstimator):
    """Scale each feature from its **declared** ``[low, high]`` to ``feature_range``.

    ``fit`` reads only the number of features (public), never the values: the scaling is
    post-processing of public input and costs no budget. Values outside the declared
    domain are clipped (``clip=True``), so ``feature_domain_out_`` -- ``feature_range``
    for every feature -- is a true domain of the output. A constant feature
    (``low == high``) maps to the middle of ``feature_range``.
    """

    def __init__(self, feature_domain=None, feature_range=(0.0, 1.0), clip=True):
        self.feature_domain = feature_domain
        self.feature_range = feature_range
        self.clip = clip

    def fit(self, X, y=None):
        if self.feature_domain is None:
            raise ValueError("PublicMinMaxScaler needs feature_domain= (the declared bounds); "
                             "estimate them privately with DPFeatureDomain instead")
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan")
        self.domain_ = _domain(self.feature_domain, X.shape[1])
        a, b = map(float, self.feature_range)
        if not a < b:
            raise ValueError(f"feature_range must be (min, max) with min < max, got {self.feature_range!r}")
        self.feature_domain_out_ = np.tile([a, b], (X.shape[1], 1))
        return self

    def transform(self, X):
        check_is_fitted(self, "domain_")
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=False)
        lo, hi = self.domain_[:, 0], self.domain_[:, 1]
        if self.clip:
            X = np.clip(X, lo, hi)
        a, b = map(float, self.feature_range)
        width = hi - lo
        unit = np.divide(X - lo, width, out=np.full_like(X, 0.5), where=width > 0)
        return a + unit * (b - a)


class DPFeatureDomain(TransformerMixin, BaseEstimator):
    """Estimate each feature's ``[low, high]`` under ``epsilon``-DP, then clip ``X`` to it.

    ``fit`` releases ``feature_domain_`` with :func:`dpexp.privacy.bounds.dp_feature_domain`
    (Laplace noisy log2-histogram; exactly ``epsilon``, recorded in ``accountant_``, and
    charged to ``accountant``, a :class:`~dpexp.privacy.BudgetAccountant`, when given:
    checked before the data is read). ``feature_domain_out_`` is the same array, for the
    next step (:class:`PublicDomainPipeline`). ``transform`` clips to it
    (post-processing). The noise comes from ``noise_rng`` (None: fresh OS entropy; a
    SeedSequence for reproducible experiments; ``dpexp.privacy.secure_generator()`` for a
    published model).

    Basic composition: a pipeline ``DPFeatureDomain(epsilon=e1)`` ->
    estimator(``epsilon=e2``) on the same data is ``(e1 + e2)``-DP; a shared
    ``BudgetAccountant`` records both fits.
    """

    def __init__(self, epsilon=0.1, *, min_exponent=-10, max_exponent=40, beta=1e-3,
                 random_state=None, noise_rng=None, accountant=None):
        self.epsilon = epsilon
        self.min_exponent = min_exponent
        self.max_exponent = max_exponent
        self.beta = beta
        self.random_state = random_state
        self.noise_rng = noise_rng
        self.accountant = accountant

    @charges_budget
    def fit(self, X, y=None):
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan")
        acc = Accountant(epsilon=float(self.epsilon))
        rng = estimator_streams(self.random_state, self.noise_rng).noise_generator()
        self.feature_domain_ = dp_feature_domain(
            X, self.epsilon, rng, accountant=acc, min_exponent=int(self.min_exponent),
            max_exponent=int(self.max_exponent), beta=float(self.beta))
        self.accountant_ = acc
        self.feature_domain_out_ = self.feature_domain_
        return self

    def transform(self, X):
        check_is_fitted(self, "feature_domain_")
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=False)
        return np.clip(X, self.feature_domain_[:, 0], self.feature_domain_[:, 1])


#: The name the issue uses; the same class.
DPBoundsEstimator = DPFeatureDomain


def _is_dp_aware(step) -> bool:
    return hasattr(step, "feature_domain_out_") or getattr(step, "dp_stateless", False)


class PublicDomainPipeline(Pipeline):
    """A ``Pipeline`` that passes public metadata to its final (DP) estimator.

    After fitting the transformers (in order, as ``Pipeline`` does), the domain of the
    data the final estimator receives is the last transformer's ``feature_domain_out_``;
    it is the final estimator's ``feature_domain`` for the fit when that parameter exists
    and is None (a domain you set explicitly is kept; the parameter is set back to None
    after the fit, so ``clone`` and refits start afresh; ``passed_feature_domain_`` holds
    what was passed). A transformer without
    ``feature_domain_out_`` (and without ``dp_stateless = True``) read the private data
    uncharged: a :class:`DataDependentPreprocessingWarning`, no domain passed on, and the
    final estimator's ``accountant_`` marked not DP. Fit parameters are not routed
    (``fit(X, y)`` only).
    """

    #: It warns about (and marks) its leaking steps itself; the check every private fit
    #: makes of a plain ``Pipeline`` around it leaves it alone (one warning, not two).
    reports_preprocessing_leaks = True

    def fit(self, X, y=None, **params):
        if params:
            raise TypeError("PublicDomainPipeline.fit takes no fit parameters")
        final = self._final_estimator
        self.passed_feature_domain_ = None
        Xt, domain, leaks = X, None, []
        for _, name, step in self._iter(with_final=False, filter_passthrough=True):
            Xt = step.fit_transform(Xt, y) if hasattr(step, "fit_transform") else step.fit(Xt, y).transform(Xt)
            if hasattr(step, "feature_domain_out_"):
                domain = step.feature_domain_out_
            elif getattr(step, "dp_stateless", False):
                domain = None
            else:
                domain = None
                leaks.append(f"{name} ({type(step).__name__})")
        if leaks:
            warnings.warn(
                f"pipeline step(s) {', '.join(leaks)} computed statistics of the private data "
                "that no accountant charges (not differentially private); use "
                "PublicMinMaxScaler(feature_domain=...) or DPFeatureDomain(epsilon=...)",
                DataDependentPreprocessingWarning, stacklevel=2)
        if final is not None and final != "passthrough":
            accepted = final.get_params() if hasattr(final, "get_params") else {}
            passes = (domain is not None and not leaks and "feature_domain" in accepted
                      and accepted["feature_domain"] is None)
            if passes:  # set for this fit only: the parameter stays None (clone-safe)
                final.set_params(feature_domain=domain)
                self.passed_feature_domain_ = domain
            try:
                final.fit(Xt, y)
            finally:
                if passes:
                    final.set_params(feature_domain=None)
            acc = getattr(final, "accountant_", None)
            if leaks and acc is not None and hasattr(acc, "mark_not_dp"):
                acc.mark_not_dp("preprocessing read the private data uncharged: " + ", ".join(leaks))
        return self


def make_public_pipeline(*steps, memory=None, verbose=False) -> PublicDomainPipeline:
    """:func:`sklearn.pipeline.make_pipeline`, returning a :class:`PublicDomainPipeline`."""
    from sklearn.pipeline import make_pipeline

    plain = make_pipeline(*steps, memory=memory, verbose=verbose)
    return PublicDomainPipeline(plain.steps, memory=memory, verbose=verbose)
