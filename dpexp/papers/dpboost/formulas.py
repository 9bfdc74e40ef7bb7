"""The formulas of DPBoost (Li et al. 2020, "Privacy-Preserving Gradient Boosting Decision
Trees"), of its baselines SEQ and PARA (Section 4) and of the authors' code's options
(issue 20); see :mod:`dpexp.papers.dpboost.estimators` for the algorithm."""

from __future__ import annotations

import math

import numpy as np

MODES = ("dpboost", "seq", "para")

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
