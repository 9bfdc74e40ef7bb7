"""The fit of every boosted estimator, written once (shaped like scikit-learn's
``BaseHistGradientBoosting``: ``fit`` does the preamble and the boosting loop, the papers
supply hooks).

:meth:`BoostingEstimator.fit` validates the input, codes the labels (``_fit_targets``,
from :mod:`dpexp.boosting.labels` or :class:`~dpexp.boosting.gbdt.ScaledScoreRegressorMixin`),
bins the features on the public grid, creates the fit's :class:`~dpexp.privacy.Accountant`
with the promised budget, marks it not DP for every public input read from the private data,
derives the structure and noise streams (:func:`~dpexp.privacy.randomness.estimator_streams`),
times the boosting and records the diagnostics. The boosting itself (:meth:`_boost`) runs
:func:`boosting_loop`: the paper's :class:`TreeStep` grows one tree per :class:`TreeSlot` of
its schedule (which rows the tree reads, inside which accountant scopes), each inside its
own sequential scope ``"tree t"``, and adds it to the scores.

A paper supplies:

* ``_check_params()``: its parameter checks;
* ``_tree_step(fit)``: a :class:`TreeStep` prepared for this fit (its policies, per-tree
  generators, budget per tree, initial score);
* ``_tree_slots(fit)`` (optional): the schedule; the default is every tree on every row,
  one after the other (sequential composition);
* ``_not_dp_reasons(leaked)``, ``_fit_diagnostics(boosted, leaked)``, ``_bin(X)``,
  ``_budget()`` (optional): what differs in the preamble;
* or ``_boost(fit)`` as a whole when the paper's protocol is not a loop over trees
  (InPrivate's participants, the XGBoost-DP comparators' ensembles).
"""

from __future__ import annotations

import math
import time
from collections.abc import Generator, Iterator
from contextlib import closing, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from sklearn.base import BaseEstimator, is_regressor
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.boosting.gbdt import (
    apply_tree,
    make_bin_mapper,
    not_dp_reasons,
    prepare_predict_matrix,
    raw_predict,
    staged_raw_predict,
)
from dpexp.errors import check_epsilon
from dpexp.privacy import Accountant
from dpexp.privacy.budget import charges_budget
from dpexp.privacy.randomness import NOT_PRIVATE, EstimatorStreams, estimator_streams
from dpexp.trees.binned_data import BinnedData
from dpexp.trees.binning import BinMapper
from dpexp.trees.grower import GrownTree
from dpexp.trees.tree import ArrayTree

__all__ = [
    "Boosted",
    "BoostingEstimator",
    "BoostingFit",
    "TreeSlot",
    "TreeStep",
    "add_tree_to_scores",
    "all_rows_slots",
    "boosting_loop",
    "store_params",
]


@dataclass(frozen=True)
class BoostingFit:
    """What the preamble of :meth:`BoostingEstimator.fit` prepared for the boosting."""

    X: Any  #: validated training features (dense ndarray or CSR)
    target: np.ndarray  #: the labels as the paper codes them (``_fit_targets``)
    mapper: BinMapper | None  #: the public candidate grid (None: the paper bins itself)
    data: BinnedData | None  #: the binned training table
    accountant: Accountant  #: the fit's accountant, created with the promised budget
    streams: EstimatorStreams  #: structure (``random_state``) and noise (``noise_rng``)
    epsilon: float  #: the promised epsilon (``inf`` for a non-private estimator)
    private: bool  #: whether the estimator releases under differential privacy
    grid_from_data: bool  #: whether the candidate splits depend on the private data

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])


@dataclass(frozen=True)
class TreeSlot:
    """One tree of the schedule: its 0-based ``index`` in the fit, the ``label`` of its
    accountant scope and releases, the ``rows`` it reads, the rows ``read_later`` by later
    trees (None: every row; the only scores the update must keep current), its 1-based
    ``position`` in its ensemble (None: not in an ensemble) and the ``round`` (group of
    trees on disjoint records) it belongs to."""

    index: int
    label: str
    rows: np.ndarray
    read_later: np.ndarray | None = None
    position: int | None = None
    round: int = 0


class TreeStep(Protocol):
    """A paper's tree step, prepared for one fit."""

    initial_score: float

    def grow(self, slot: TreeSlot, scores: np.ndarray) -> GrownTree:
        """Grow the tree of ``slot`` from the current ``scores`` (spends go to the fit's
        accountant, inside the slot's scope)."""
        ...

    def add_to_scores(self, grown: GrownTree, scores: np.ndarray, slot: TreeSlot) -> None:
        """``scores += learning_rate * tree(x)`` (in place)."""
        ...

    def diagnostics(self) -> dict[str, float]:
        """The paper's diagnostics of the fit, once every tree is grown."""
        ...


@dataclass(frozen=True)
class Boosted:
    """What :meth:`BoostingEstimator._boost` returns: the trees, the paper's diagnostics and
    the number of trees the timer divides by (trees built, kept or not)."""

    trees: list[ArrayTree]
    diagnostics: dict[str, float]
    n_timed: int


def add_tree_to_scores(grown: GrownTree, scores: np.ndarray, learning_rate: float,
                       data: BinnedData, X, rows: np.ndarray | None = None) -> None:
    """``scores += learning_rate * tree(x)`` in place for every training row, or (dense data)
    for the rows ``rows`` only (those a later tree reads: each of them gets every tree's
    addition in order, as with the full update)."""
    if data.is_sparse:
        leaves = apply_tree(grown.tree, prepare_predict_matrix(X))
        scores += learning_rate * grown.tree.value[leaves, 0]
    else:  # serial walk for small tables (apply_binned always starts the thread pool)
        grown.add_to_scores(scores, learning_rate, data, rows=rows)


def all_rows_slots(n_trees: int, n_rows: int, *, first_label: int = 0
                   ) -> Generator[TreeSlot, None, None]:
    """Every tree on every row, one after the other (sequential composition); labels
    ``"tree {first_label}"``, ``"tree {first_label + 1}"``, ..."""
    rows = np.arange(n_rows)
    for t in range(n_trees):
        yield TreeSlot(t, f"tree {t + first_label}", rows, round=t)


def boosting_loop(step: TreeStep, slots: Generator[TreeSlot, None, None], n_rows: int,
                  accountant: Accountant | None, *, private: bool) -> list[ArrayTree]:
    """The boosting loop: scores start at ``step.initial_score``; for each slot of the
    schedule (whose generator holds the ensemble scopes open around its trees) the step
    grows a tree inside the sequential scope ``slot.label`` (private fits) and adds it to
    the scores."""
    scores = np.full(n_rows, step.initial_score)
    trees = []
    with closing(slots):  # exits the schedule's scopes even when a tree raises
        for slot in slots:
            with accountant.sequential(slot.label) if private else nullcontext():
                grown = step.grow(slot, scores)
            step.add_to_scores(grown, scores, slot)
            trees.append(grown.tree)
    return trees


def store_params(estimator: BaseEstimator, params: dict[str, Any]) -> None:
    """Store the constructor's arguments unchanged (scikit-learn's convention); ``params``
    is the constructor's ``locals()``."""
    for key, value in params.items():
        if key not in ("self", "__class__"):
            setattr(estimator, key, value)


class BoostingEstimator(BaseEstimator):
    """The fit of a boosted estimator (module docstring) and its predictions from
    ``init_score_`` (0 unless set) plus ``learning_rate`` times each tree of ``trees_``."""

    #: False for the non-private twins (no budget, nothing marked, no warnings)
    _private = True
    #: ``validate_data``'s ``dtype`` and ``accept_sparse`` for the training and test input
    _fit_dtype: Any = np.float64
    _accept_sparse: str | bool = "csr"

    # -- hooks
    def _check_params(self) -> None:
        """Check the paper's parameters (``ValueError`` naming the parameter)."""

    def _fit_targets(self, X, y) -> np.ndarray:  # pragma: no cover - from the label mixins
        raise NotImplementedError

    def _budget(self) -> tuple[float, float]:
        """The promised ``(epsilon, delta)`` of the fit's accountant."""
        if not self._private:
            return math.inf, 0.0
        return check_epsilon(self.epsilon, name="epsilon"), 0.0

    def _bin(self, X) -> tuple[BinMapper | None, BinnedData | None, bool]:
        """``(mapper, binned table, leaked)``: the candidate grid from the public
        ``feature_domain`` (``binning="domain"``) or data quantiles; ``leaked`` when it
        depends on the private data (:func:`~dpexp.boosting.gbdt.make_bin_mapper`)."""
        self.mapper_, leaked = make_bin_mapper(
            X, binning=self.binning, feature_domain=self.feature_domain,
            categorical_features=self.categorical_features, n_categories=self.n_categories,
            max_bins=int(self.max_bins), private=self._private,
        )
        return self.mapper_, self.mapper_.transform(X), leaked

    def _not_dp_reasons(self, leaked: bool) -> list[str]:
        """Why this fit is not DP, whatever its spends add up to (private fits only)."""
        return self._public_input_reasons(leaked)

    def _public_input_reasons(self, leaked: bool) -> list[str]:
        """The public input read from the private data: label set, label domain, feature
        domain, or quantile bins."""
        quantile = self.binning == "quantile"
        return not_dp_reasons(
            classes=getattr(self, "_classes_from_data", False),
            label_domain=getattr(self, "_label_domain_from_data", False),
            feature_domain=leaked and not quantile, quantile=quantile,
        )

    def _tree_step(self, fit: BoostingFit) -> TreeStep:  # pragma: no cover - per paper
        raise NotImplementedError

    def _tree_slots(self, fit: BoostingFit) -> Generator[TreeSlot, None, None]:
        return all_rows_slots(int(self.n_trees), fit.n_rows)

    def _boost(self, fit: BoostingFit) -> Boosted:
        step = self._tree_step(fit)
        trees = boosting_loop(step, self._tree_slots(fit), fit.n_rows, fit.accountant,
                              private=fit.private)
        return Boosted(trees, step.diagnostics(), len(trees))

    def _fit_diagnostics(self, boosted: Boosted, leaked: bool) -> dict[str, float]:  # noqa: ARG002
        """Diagnostics recorded after ``seconds_per_tree``."""
        return {}

    # -- the fit
    def _validate_training_data(self, X, y):
        return validate_data(self, X, y, accept_sparse=self._accept_sparse,
                             dtype=self._fit_dtype, ensure_all_finite=True,
                             y_numeric=is_regressor(self))

    @charges_budget
    def fit(self, X, y):
        X, y = self._validate_training_data(X, y)
        self._check_params()
        target = self._fit_targets(X, y)
        epsilon, delta = self._budget()
        mapper, data, leaked = self._bin(X)
        accountant = Accountant(epsilon=epsilon, delta=delta)
        self.accountant_ = accountant
        if self._private:
            for reason in self._not_dp_reasons(leaked):
                accountant.mark_not_dp(reason)
        streams = estimator_streams(self.random_state, getattr(self, "noise_rng", NOT_PRIVATE))
        fit = BoostingFit(X, target, mapper, data, accountant, streams, epsilon, self._private,
                          leaked)
        t0 = time.perf_counter()
        boosted = self._boost(fit)
        elapsed = time.perf_counter() - t0
        self.trees_ = boosted.trees
        self.diagnostics_ = {
            **boosted.diagnostics,
            "seconds_per_tree": elapsed / max(1, boosted.n_timed),
            **self._fit_diagnostics(boosted, leaked),
        }
        return self

    # -- predictions
    def _predict_matrix(self, X):
        check_is_fitted(self, "trees_")
        return validate_data(self, X, accept_sparse=self._accept_sparse, dtype=self._fit_dtype,
                             reset=False)

    def _decision(self, X) -> np.ndarray:
        X = self._predict_matrix(X)  # NotFittedError before anything reads trees_
        return raw_predict(self.trees_, float(self.learning_rate), X,
                           init=getattr(self, "init_score_", 0.0))

    def _staged_decision(self, X) -> Iterator[np.ndarray]:
        X = self._predict_matrix(X)
        yield from staged_raw_predict(self.trees_, float(self.learning_rate), X,
                                      init=getattr(self, "init_score_", 0.0))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = bool(self._accept_sparse)
        return tags

