"""Procedures for the XGBoost-DP figures that are not "metric vs epsilon" plots
(Shi et al. 2021): Fig. 1 (top-10 feature importance) and Fig. 2 (ROC curve with AUC).

Both fit a registered estimator (``params['algorithm']``, default ``xgboost_dp``; the
other params go to the estimator) on the cell's training split with the cell's epsilon,
then post-process the fitted model, so they cost exactly the estimator's budget; the
accountant's spend is checked against epsilon and returned as ``epsilon_spent``.

* Fig. 1: the importance of a feature is its share of the split nodes of the ensemble
  (XGBoost's "weight" importance). It is computed from the *released* DP trees only, so
  it is post-processing and free of privacy cost; XGBoost's default "gain" importance would
  need the private gradient sums. Returns ``importance:<feature>`` for every feature and
  ``importance_ranked`` as ``{rank: share}`` (ranks 1..10, a curve over ``step``).
* Fig. 2: ``roc_tpr`` as ``{fpr_percent: tpr}`` on the grid 0, 1, ..., 100 % (the ROC
  curve interpolated on the test split, from ``predict_proba``) and ``auc``.
"""

from __future__ import annotations

import numpy as np

from dpexp.errors import BudgetExceededError
from dpexp.registry import get_algorithm, make_estimator

TOP_K = 10


def fit_for_cell(ctx):
    """Fit ``params['algorithm']`` on the cell's training split; returns the estimator."""
    params = dict(ctx.params)
    name = params.pop("algorithm", "xgboost_dp")
    info = get_algorithm(name)
    est = make_estimator(name, ctx.dataset.task, params,
                         epsilon=ctx.epsilon if info.private else None,
                         random_state=ctx.random_state, public=ctx.dataset.public_metadata(),
                         noise_rng=ctx.seeded_noise)
    est.fit(ctx.X_train, ctx.y_train)
    spent = float(est.accountant_.epsilon_spent) if info.private else float("inf")
    if info.private and spent > ctx.epsilon * (1 + 1e-9):
        raise BudgetExceededError(f"{name} spent epsilon {spent} but was given {ctx.epsilon}")
    return est, spent


def _accuracy(est, ctx) -> float:
    return float(np.mean(est.predict(ctx.X_test) == ctx.y_test))


def xgbdp_feature_importance(ctx) -> dict:
    """Fig. 1: split-share importance of every feature and the top-10 ranking."""
    est, spent = fit_for_cell(ctx)
    imp = np.asarray(est.feature_importances_, dtype=np.float64)
    names = list(ctx.dataset.feature_names)
    out: dict = {f"importance:{n}": float(v) for n, v in zip(names, imp, strict=True)}
    order = np.argsort(-imp, kind="stable")[:TOP_K]
    out["importance_ranked"] = {int(r + 1): float(imp[i]) for r, i in enumerate(order)}
    out["accuracy"] = _accuracy(est, ctx)
    out["epsilon_spent"] = spent
    return out


def roc_points(y_true: np.ndarray, score: np.ndarray, grid_size: int = 101) -> dict[int, float]:
    """TPR at FPR = 0, 1, ..., 100 % (upper envelope of the empirical ROC curve)."""
    # lazy: scikit-learn takes ~1 s to load; `dpexp list` and `plan` import this module only to read the procedures' flags
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(y_true, score)
    grid = np.linspace(0.0, 1.0, grid_size)
    idx = np.searchsorted(fpr, grid, side="right") - 1
    return {int(round(100 * g)): float(tpr[i]) for g, i in zip(grid, idx, strict=True)}


def xgbdp_roc(ctx) -> dict:
    """Fig. 2: ROC curve (``roc_tpr`` over FPR percent) and AUC on the test split."""
    # lazy: scikit-learn takes ~1 s to load; `dpexp list` and `plan` import this module only to read the procedures' flags
    from sklearn.metrics import roc_auc_score

    est, spent = fit_for_cell(ctx)
    pos = est.classes_[-1]
    score = est.predict_proba(ctx.X_test)[:, -1]
    y = np.asarray(ctx.y_test) == pos
    return {
        "roc_tpr": roc_points(y, score),
        "auc": float(roc_auc_score(y, score)) if 0 < y.sum() < y.size else float("nan"),
        "accuracy": _accuracy(est, ctx),
        "epsilon_spent": spent,
    }


PROCEDURES = {
    "xgbdp_feature_importance": xgbdp_feature_importance,
    "xgbdp_roc": xgbdp_roc,
}
