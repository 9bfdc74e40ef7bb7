"""Shared pieces of the boosted-tree estimators: label scaling, binning setup, prediction.

Square loss throughout (Li et al. 2020, Section 4): ``l(y, F) = (F - y)^2 / 2`` so the
gradient is ``g = F - y`` and the hessian ``h = 1``. Classification labels are mapped to
``{-1, +1}`` (so ``y in [-1, 1]`` as Section 3 assumes and ``g*_l = max |d l/dF at F=0| =
1``); regression labels are scaled to ``[-1, 1]`` with the public ``label_domain`` and
predictions are mapped back, so RMSE is reported on the original scale.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from dpexp.privacy.public import DataDependentDomainWarning, warn_outside_package
from dpexp.trees.binning import BinMapper, fit_bin_mapper
from dpexp.trees.parallel import use_parallel
from dpexp.trees.predict import add_forest_dense, apply_csr, apply_dense, apply_dense_serial
from dpexp.trees.tree import ArrayTree

__all__ = [
    "DataDependentDomainWarning",  # re-exported: defined in dpexp.privacy.public
    "check_reg_lambda",
    "not_dp_reasons",
]

#: Why a fit is not DP, keyed by the data-dependent input it fell back on.
NOT_DP_REASONS = {
    "classes": "label set (classes_) taken from the private training labels (classes not given)",
    "label_domain": "label domain taken from the private labels (label_domain not given)",
    "feature_domain": "candidate splits from the private feature range (feature_domain not given)",
    "quantile": "candidate splits from quantiles of the private data (binning='quantile')",
    # the behaviours of the authors' DPBoost code beyond the paper's text (ablation options
    # of dpexp.papers.dpboost.estimators; Li et al. 2020 Section 4 states h = 1)
    "exact_hessian": "logistic loss with exact hessians p(1-p) while the split and leaf "
                     "sensitivities (Lemmas 1-2) assume h = 1 (objective='authors')",
    "exact_growth": "tree shape from exact gains of the private data: a node stops when no "
                    "candidate beats its parent, candidates with a child under "
                    "min_child_samples rows are dropped, num_leaves kept by exact gain "
                    "(exact_growth=True)",
    "mean_init": "initial score from the exact mean of the private labels "
                 "(init_score='mean', or 'authors' for regression)",
}


def split_sensitivity(g_star: float) -> float:
    """Delta G = 3 g*^2 (DPBoost, Li et al. 2020, Lemma 1 and Corollary 1);
    also the split sensitivity of XGBoost-DP."""
    return 3.0 * g_star**2


def check_reg_lambda(reg_lambda) -> float:
    """``lambda > 0`` as a float, else a ``ValueError`` naming ``reg_lambda``.

    The leaf value ``-G/(H + lambda)`` and the split score ``G^2/(H + lambda)`` (DPBoost
    Eqs. 3-4, XGBoost-DP Eq. 9) divide by ``H + lambda``; an empty node has ``H = 0``, so
    ``lambda = 0`` fails (ZeroDivisionError in the compiled kernels) only on some data --
    a data-dependent crash, which would itself leak. Lemma 2's ``Delta V = g*/(1+lambda)``
    also assumes the empty-leaf value is defined. Refused up front instead.
    """
    try:
        lam = float(reg_lambda)
    except (TypeError, ValueError):
        raise ValueError(f"reg_lambda must be a number > 0, got {reg_lambda!r}") from None
    if not (lam > 0 and np.isfinite(lam)):
        raise ValueError(
            f"reg_lambda must be > 0 and finite, got {reg_lambda!r} (an empty node's "
            "leaf value -G/(H + lambda) divides by lambda alone)"
        )
    return lam


def not_dp_reasons(*, classes: bool = False, label_domain: bool = False,
                   feature_domain: bool = False, quantile: bool = False,
                   exact_hessian: bool = False, exact_growth: bool = False,
                   mean_init: bool = False) -> list[str]:
    """Reasons (for :meth:`Accountant.mark_not_dp`) a fit that read the flagged public
    input from the private data, or used a flagged non-private step, is not DP, whatever
    its spends add up to."""
    flags = {"classes": classes, "label_domain": label_domain,
             "feature_domain": feature_domain, "quantile": quantile,
             "exact_hessian": exact_hessian, "exact_growth": exact_growth,
             "mean_init": mean_init}
    return [NOT_DP_REASONS[k] for k, on in flags.items() if on]


def scale_labels(y: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Map ``[lo, hi]`` linearly onto ``[-1, 1]`` (clipping values outside the domain)."""
    if not hi > lo:
        return np.zeros_like(y, dtype=np.float64)
    return np.clip(2.0 * (np.asarray(y, dtype=np.float64) - lo) / (hi - lo) - 1.0, -1.0, 1.0)


def unscale_labels(z: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Inverse of :func:`scale_labels` (without the clipping)."""
    return (np.asarray(z, dtype=np.float64) + 1.0) / 2.0 * (hi - lo) + lo


def resolve_label_domain(label_domain, y, *, private: bool) -> tuple[tuple[float, float], bool]:
    """The public label domain, or the data range (with a warning when ``private``)."""
    if label_domain is not None:
        lo, hi = (float(v) for v in label_domain)
        return (lo, hi), False
    if private:
        warn_outside_package(
            "label_domain not given: scaling labels with the private data range "
            "(not differentially private; the runner passes the public domain)",
            DataDependentDomainWarning,
        )
    return (float(np.min(y)), float(np.max(y))), True



class ScaledScoreRegressorMixin:
    """Regression on labels scaled to [-1, 1] by the public label domain; predictions are
    mapped back to the original scale (Li et al. 2020, Section 4; Zhao et al. 2018, VII-A).

    The estimator provides ``label_domain``, ``_private``, ``_decision(X)``,
    ``_staged_decision(X)`` and a fitted ``trees_``.
    """

    def _fit_targets(self, X, y):  # noqa: ARG002 - X kept for subclasses' signatures
        y = np.asarray(y, dtype=np.float64)
        (lo, hi), leaked = resolve_label_domain(self.label_domain, y, private=self._private)
        # True when the scale came from the private labels (not DP): fit marks it
        self._label_domain_from_data = leaked
        self.label_domain_ = (lo, hi)
        return scale_labels(y, lo, hi)

    def predict(self, X) -> np.ndarray:
        """Predictions on the original label scale."""
        check_is_fitted(self, "trees_")
        return unscale_labels(self._decision(X), *self.label_domain_)

    def staged_predict(self, X) -> Iterator[np.ndarray]:
        """Predictions on the original label scale after each tree."""
        check_is_fitted(self, "trees_")
        for F in self._staged_decision(X):
            yield unscale_labels(F, *self.label_domain_)


def make_bin_mapper(
    X, *, binning, feature_domain, categorical_features, n_categories, max_bins, private
) -> tuple[BinMapper, bool]:
    """Bin mapper from the public domain (default) or data quantiles.

    Returns ``(mapper, leaked)``: ``leaked`` is True when the candidate splits depend on
    the private data (``binning="quantile"``, or no ``feature_domain``), which makes the
    fit not DP (see :func:`not_dp_reasons`).
    """
    leaked = binning == "quantile"
    if binning == "domain" and feature_domain is None:
        if private:
            warn_outside_package(
                "feature_domain not given: using the private data range for candidate "
                "splits (not differentially private; the runner passes the public domain)",
                DataDependentDomainWarning,
            )
        if sp.issparse(X):
            lo = np.asarray(X.min(axis=0).todense()).ravel()
            hi = np.asarray(X.max(axis=0).todense()).ravel()
        else:
            lo, hi = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
        feature_domain = np.column_stack([lo, hi]).astype(np.float64)
        leaked = True
    mapper = fit_bin_mapper(
        X, strategy=binning, feature_domain=feature_domain,
        categorical_features=categorical_features, n_categories=n_categories,
        max_bins=max_bins,
    )
    return mapper, leaked


def apply_tree(tree: ArrayTree, X) -> np.ndarray:
    """Leaf ids of the rows of ``X`` (dense ndarray or CSR) with compiled code."""
    feat = tree.feature.astype(np.int64)
    child = tree.child_start.astype(np.int64)
    if sp.issparse(X):
        return apply_csr(X.indptr, X.indices, X.data, X.shape[0], feat, tree.threshold, child)
    kernel = apply_dense if use_parallel(X.shape[0] * 64) else apply_dense_serial
    return kernel(X, feat, tree.threshold, child)


def prepare_predict_matrix(X):
    """CSR with sorted indices or a C-contiguous dense array, as the kernels need."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if not X.has_sorted_indices:
            X = X.sorted_indices()
        return X
    return np.ascontiguousarray(X)


def raw_predict(trees: list[ArrayTree], learning_rate: float, X, init: float = 0.0
                ) -> np.ndarray:
    """``F(x) = init + sum_t learning_rate * V_t(x)`` (the paper's initial score is 0:
    Section 3.1 bounds g*_l at F = 0)."""
    X = prepare_predict_matrix(X)
    out = np.full(X.shape[0], float(init))
    if sp.issparse(X) or not trees:
        for t in trees:
            out += learning_rate * t.value[apply_tree(t, X), 0]
        return out
    add_forest_dense(X, *pack_trees(trees), float(learning_rate), out)
    return out


def pack_trees(trees: list[ArrayTree]) -> tuple[np.ndarray, ...]:
    """(feature, threshold, child_start, value, roots): the numeric trees' nodes in one
    table, each tree's children offset by its first node (``roots[t]``), for
    :func:`~dpexp.trees.predict.add_forest_dense`; ``value`` is the first output column."""
    sizes = np.array([t.n_nodes for t in trees], dtype=np.int64)
    roots = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    child = np.concatenate([np.where(t.child_start >= 0, t.child_start.astype(np.int64) + r, -1)
                            for t, r in zip(trees, roots, strict=True)])
    feature = np.concatenate([t.feature for t in trees]).astype(np.int64)
    threshold = np.concatenate([t.threshold for t in trees]).astype(np.float64)
    value = np.ascontiguousarray(np.concatenate([t.value[:, 0] for t in trees]), dtype=np.float64)
    return feature, threshold, child, value, roots


def staged_raw_predict(trees: list[ArrayTree], learning_rate: float, X, init: float = 0.0
                       ) -> Iterator[np.ndarray]:
    """``F`` after each tree, computed incrementally and yielded one array at a time
    (a generator: 5000 trees never hold more than the current scores; each yielded array
    is new, so a consumer may keep it)."""
    X = prepare_predict_matrix(X)
    out = np.full(X.shape[0], float(init))
    for t in trees:
        out = out + learning_rate * t.value[apply_tree(t, X), 0]
        yield out
