"""Procedures shared by several papers."""

from __future__ import annotations

import numpy as np


def dataset_summary(ctx) -> dict[str, float]:
    """Rows, features, positive-class share / label range of the loaded data (Table 1s)."""
    # lazy: scipy (~0.2 s) loads in the worker that runs the cell, not in `dpexp list`
    import scipy.sparse as sp

    ds = ctx.dataset
    X = ds.X
    out = {
        "rows": float(ds.n_rows),
        "features": float(ds.n_features),
        "density": float(X.nnz / (X.shape[0] * X.shape[1])) if sp.issparse(X) else float(np.mean(X != 0)),
    }
    if ds.task == "classification":
        out["classes"] = float(len(np.unique(ds.y)))
        out["minority_share"] = float(np.min(np.unique(ds.y, return_counts=True)[1]) / len(ds.y))
    else:
        out["label_min"], out["label_max"] = float(np.min(ds.y)), float(np.max(ds.y))
    return out


dataset_summary.uses_epsilon = False
dataset_summary.needs_split = False

PROCEDURES = {"dataset_summary": dataset_summary}
