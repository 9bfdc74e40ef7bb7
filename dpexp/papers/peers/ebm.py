"""InterpretML's differentially private explainable boosting (DP-EBM) as a dpexp peer.

DP-EBM (Nori, Caruana et al., "Accuracy, Interpretability, and Differential Privacy via
Explainable Boosting", ICML 2021) boosts one shallow tree per feature in cyclic rounds,
bins every feature privately first (``bin_budget_frac`` of epsilon) and composes its
Gaussian noise with Gaussian DP (``composition="gdp"``): an (epsilon, delta)-DP release.
These wrappers run ``interpret.privacy.DPExplainableBoosting{Classifier,Regressor}``
(``pip install "dpexp[leaderboard]"``, interpret-core 0.7.8) on dpexp's folds with:

* interpret's own defaults for every DP-EBM setting (``max_bins=32``,
  ``learning_rate=0.01``, ``max_rounds=300``, ``max_leaves=3``, ``bin_budget_frac=0.1``,
  GDP composition) except ``delta``, stated as 1e-6 (interpret's default is 1e-5) so every
  (epsilon, delta) entry of the leaderboard is compared at one delta, and ``n_jobs=1``
  (cells already run in parallel);
* the public ``feature_domain`` as interpret's ``privacy_bounds`` and every feature typed
  ``continuous`` (interpret's type auto-detection reads the data: not DP); a categorical
  code is binned as a number within its declared range. Records are clipped to the
  declared domain before the fit, so a value outside it cannot break the sensitivity;
* the public ``classes`` (binary only, interpret's limit) and, for regression, the public
  ``label_domain`` as ``privacy_target_min``/``privacy_target_max``;
* interpret's seed drawn from dpexp's noise stream (``noise_rng``; None: fresh OS
  entropy), never from ``random_state``: every random draw of DP-EBM (bins, bags, noise)
  is a noise draw that nothing else publishes.

Without a declared input (``feature_domain``, ``classes``, ``label_domain``) interpret
falls back on the data; the fit is then marked not DP (``Accountant.mark_not_dp``) and
the runner records ``private = false`` with the reason, as for dpexp's own estimators.
dpexp charges the whole fit as one (epsilon, delta) release of interpret's own accounting:
its internals are interpret's, audited by dpexp only end to end on a tiny case
(:mod:`dpexp.papers.peers.audit`).
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.errors import DpexpError, check_epsilon
from dpexp.privacy import Accountant
from dpexp.privacy.budget import charges_budget
from dpexp.privacy.public import DataDependentDomainWarning, public_classes, warn_outside_package
from dpexp.privacy.randomness import estimator_streams

#: The extra that installs the peers of the leaderboard.
EXTRA = "leaderboard"
#: The delta every (epsilon, delta) entry of the leaderboard states.
DELTA = 1e-6
#: interpret's warning when its seed is fixed: here the seed is a draw of the noise stream.
_FIXED_SEED_WARNING = "Privacy violation: using a fixed random_state"


def _interpret_privacy() -> Any:
    """interpret's DP module, or a one-line error naming the extra that installs it."""
    try:
        # lazy: interpret is an optional package (the leaderboard extra); listing algorithms must not need it
        import interpret.privacy as dp_ebm
    except ImportError as exc:
        raise DpexpError(
            f"dp_ebm needs the optional package interpret-core: pip install \"dpexp[{EXTRA}]\" "
            f"(importing interpret failed: {exc})") from None
    return dp_ebm


class _DPEBM(BaseEstimator):
    """The fit both tasks share: public inputs, the accountant, interpret's model."""

    def _dp_fit(self, X, y, model_name: str, **task_params) -> None:
        epsilon = check_epsilon(self.epsilon)
        if not 0.0 < float(self.delta) < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {self.delta!r}")
        self.accountant_ = Accountant(epsilon=epsilon, delta=float(self.delta))
        m = X.shape[1]
        if self.feature_domain is None:
            warn_outside_package(
                "feature_domain not given: interpret reads each feature's bounds from the "
                "training data (not differentially private); pass feature_domain (the runner "
                "passes the dataset's declared domain)", DataDependentDomainWarning)
            self.accountant_.mark_not_dp("feature_domain read from the training data")
            bounds = None  # interpret then reads each feature's min/max from the data
        else:
            bounds = np.asarray(self.feature_domain, dtype=np.float64).reshape(m, 2)
            X = np.clip(X, bounds[:, 0], bounds[:, 1])
        # the seed of every DP-EBM draw comes from the noise stream (see the module docstring)
        seed = int(estimator_streams(self.random_state, self.noise_rng).noise_generator()
                   .integers(2**31 - 1))
        model = getattr(_interpret_privacy(), model_name)(
            feature_types=["continuous"] * m, max_bins=self.max_bins,
            learning_rate=self.learning_rate, max_rounds=self.max_rounds,
            max_leaves=self.max_leaves, n_jobs=1, random_state=seed, epsilon=epsilon,
            delta=float(self.delta), composition=self.composition,
            bin_budget_frac=self.bin_budget_frac, privacy_bounds=bounds, **task_params)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_FIXED_SEED_WARNING)
            self.model_ = self.accountant_.release(
                partial(model.fit, X, y), epsilon=epsilon, delta=float(self.delta),
                what=f"InterpretML {model_name} (its own GDP accounting, binning included)")

    def _features(self, X) -> np.ndarray:
        check_is_fitted(self, "model_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if self.feature_domain is not None:
            bounds = np.asarray(self.feature_domain, dtype=np.float64).reshape(X.shape[1], 2)
            X = np.clip(X, bounds[:, 0], bounds[:, 1])
        return X


class DPEBMClassifier(ClassifierMixin, _DPEBM):
    """InterpretML's ``DPExplainableBoostingClassifier`` on declared public input (binary)."""

    def __init__(self, epsilon: float = 1.0, delta: float = DELTA, max_bins: int = 32,
                 learning_rate: float = 0.01, max_rounds: int = 300, max_leaves: int = 3,
                 bin_budget_frac: float = 0.1, composition: str = "gdp", feature_domain=None,
                 classes=None, random_state=None, noise_rng=None, accountant=None):
        self.epsilon = epsilon
        self.delta = delta
        self.max_bins = max_bins
        self.learning_rate = learning_rate
        self.max_rounds = max_rounds
        self.max_leaves = max_leaves
        self.bin_budget_frac = bin_budget_frac
        self.composition = composition
        self.feature_domain = feature_domain
        self.classes = classes
        self.random_state = random_state
        self.noise_rng = noise_rng
        self.accountant = accountant

    @charges_budget
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_ = public_classes(y, self.classes, binary=True)
        codes = np.searchsorted(self.classes_, y).astype(np.int64)
        self._dp_fit(X, codes, "DPExplainableBoostingClassifier")
        if self.classes is None:
            self.accountant_.mark_not_dp("classes read from the training labels")
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # interpret's DP-EBM is binary only
        return tags

    def predict_proba(self, X) -> np.ndarray:
        """One column per declared class (interpret's columns are the codes 0 and 1)."""
        X = self._features(X)
        proba = self.model_.predict_proba(X)
        out = np.zeros((X.shape[0], 2))
        out[:, np.asarray(self.model_.classes_, dtype=np.int64)] = proba
        return out

    def predict(self, X) -> np.ndarray:
        proba = self.predict_proba(X)  # first: it checks the model is fitted
        return self.classes_[np.argmax(proba, axis=1)]


class DPEBMRegressor(RegressorMixin, _DPEBM):
    """InterpretML's ``DPExplainableBoostingRegressor``; labels clipped to the public
    ``label_domain`` (interpret's ``privacy_target_min``/``privacy_target_max``)."""

    def __init__(self, epsilon: float = 1.0, delta: float = DELTA, max_bins: int = 32,
                 learning_rate: float = 0.01, max_rounds: int = 300, max_leaves: int = 3,
                 bin_budget_frac: float = 0.1, composition: str = "gdp", feature_domain=None,
                 label_domain=None, random_state=None, noise_rng=None, accountant=None):
        self.epsilon = epsilon
        self.delta = delta
        self.max_bins = max_bins
        self.learning_rate = learning_rate
        self.max_rounds = max_rounds
        self.max_leaves = max_leaves
        self.bin_budget_frac = bin_budget_frac
        self.composition = composition
        self.feature_domain = feature_domain
        self.label_domain = label_domain
        self.random_state = random_state
        self.noise_rng = noise_rng
        self.accountant = accountant

    @charges_budget
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        if self.label_domain is None:
            warn_outside_package(
                "label_domain not given: taking the label bounds from the training labels "
                "(not differentially private); pass label_domain (the runner passes the "
                "dataset's declared one)", DataDependentDomainWarning)
            low, high = float(np.min(y)), float(np.max(y))
            data_label_domain = True
        else:
            low, high = (float(v) for v in self.label_domain)
            data_label_domain = False
        self._dp_fit(X, np.clip(y, low, high), "DPExplainableBoostingRegressor",
                     privacy_target_min=low, privacy_target_max=high)
        if data_label_domain:
            self.accountant_.mark_not_dp("label domain taken from the private labels")
        return self

    def predict(self, X) -> np.ndarray:
        X = self._features(X)  # first: it checks the model is fitted
        return np.asarray(self.model_.predict(X), dtype=np.float64)
