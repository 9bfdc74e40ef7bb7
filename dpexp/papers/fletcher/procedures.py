"""Procedures for the formula/structure artefacts of Fletcher & Islam (2017) + 2021 addendum.

Each is ``f(ctx) -> dict[str, float]`` (see :mod:`dpexp.experiments.procedures`):

* ``fletcher_table2``: Table 2, smooth sensitivity S*(u, x) = exp(-j epsilon) (Theorem 1,
  Eq. 8) for ``params['j']`` at the cell's epsilon.
* ``fletcher_table4``: Table 4, the tree depth of Theorem 2 (+ r/2) from the dataset's
  public schema (numbers of continuous and discrete features).
* ``fletcher_table5``: Table 5 / Eqs. 17-20, the unnormalised exponential-mechanism weights
  of the two labels under the 2017 and the updated (ROSNAM) formulas.
* ``fletcher_table6``: addendum Table 6, Pr(B) under the 2017 rule
  (exp(eps u / (2 exp(-j eps)))) and under ROSNAM (exp(eps f_c)), for counts
  ``params['f_a']``, ``params['f_b']`` at the cell's epsilon (0.1 in the addendum).

* ``fletcher_fs_as_discrete``: ablation for Fig. 11 (issue 21): FS run with every feature
  treated as discrete (each distinct value of train and test a category), i.e. FS's own
  discrete-only algorithm applied to continuous data, beside the train-majority rate. The
  categories come from the data: an ablation, not a DP release.

The table procedures are exact closed forms, not simulations; ``tests/papers/fletcher`` checks them against the
printed values and checks the closed forms against simulations of the mechanisms.
"""

from __future__ import annotations

import math

import numpy as np


def smooth_sensitivity(j: float, epsilon: float) -> float:
    """Theorem 1, Eq. 8: S*(u, x) = exp(-j epsilon)."""
    return math.exp(-float(j) * float(epsilon))


def label_probabilities_2017(counts, epsilon: float) -> np.ndarray:
    """P(c) of the 2017 rule: ∝ exp(eps u_c / (2 exp(-j eps))), u_c = 1 for the majority."""
    c = np.asarray(counts, dtype=np.float64)
    top = c.max()
    j = top - (np.sort(c)[-2] if c.size > 1 else 0.0)
    u = (c == top).astype(np.float64)
    logits = u * epsilon / (2.0 * smooth_sensitivity(j, epsilon))
    w = np.exp(logits - logits.max())
    return w / w.sum()


def label_probabilities_rosnam(counts, epsilon: float) -> np.ndarray:
    """P(c) of Report One-Sided Noisy Arg-Max (addendum Section 2): ∝ exp(eps f_c)."""
    c = np.asarray(counts, dtype=np.float64) * float(epsilon)
    w = np.exp(c - c.max())
    return w / w.sum()


def fletcher_table2(ctx) -> dict[str, float]:
    return {"smooth_sensitivity": smooth_sensitivity(ctx.params["j"], ctx.epsilon)}


def fletcher_table4(ctx) -> dict[str, float]:
    # lazy: the trees package compiles its routing kernels (numba); `dpexp list` and `plan` import this module only to read the procedures' flags
    from dpexp.papers.fletcher.trees import theorem2_depth

    ds = ctx.dataset
    cat = np.asarray(ds.categorical_features, dtype=bool)
    r = int(cat.sum())
    s = int(cat.size - r)
    return {
        "depth": float(theorem2_depth(s, r)),
        "continuous_features": float(s),
        "discrete_features": float(r),
        "n_records": float(np.asarray(ds.y).shape[0]),
    }


def fletcher_table5(ctx) -> dict[str, float]:
    f_a, f_b, eps = float(ctx.params["f_a"]), float(ctx.params["f_b"]), float(ctx.epsilon)
    s = smooth_sensitivity(abs(f_b - f_a), eps)
    return {
        "weight_a_original": math.exp(eps * float(f_a >= f_b) / (2.0 * s)),
        "weight_b_original": math.exp(eps * float(f_b >= f_a) / (2.0 * s)),
        "weight_a_updated": math.exp(eps * f_a),
        "weight_b_updated": math.exp(eps * f_b),
    }


def fletcher_table6(ctx) -> dict[str, float]:
    counts = [float(ctx.params["f_a"]), float(ctx.params["f_b"])]
    return {
        "pr_b_original": float(label_probabilities_2017(counts, ctx.epsilon)[1]),
        "pr_b_updated": float(label_probabilities_rosnam(counts, ctx.epsilon)[1]),
    }


def _rank_codes(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every column coded 0..k-1 over the distinct values of train and test together."""
    both = np.vstack([np.asarray(X_train, np.float64), np.asarray(X_test, np.float64)])
    codes = np.empty_like(both)
    sizes = np.empty(both.shape[1], dtype=np.int64)
    for j in range(both.shape[1]):
        values, codes[:, j] = np.unique(both[:, j], return_inverse=True)
        sizes[j] = values.size
    n = np.asarray(X_train).shape[0]
    return codes[:n], codes[n:], sizes


def fletcher_fs_as_discrete(ctx) -> dict[str, float]:
    """FS (Friedman & Schuster, Section 5.2 of the paper) with continuous features as categories.

    Tests the explanation of the paper's FS values on continuous data (Fig. 11): with a
    feature's every value a category, the largest domain ``t`` makes FS's stopping rule
    ``N / (t |C|) < sqrt(2) / epsilon'`` fire at the root, so the tree predicts one label
    and its accuracy is about the majority rate. Returns that accuracy, the accuracy of the
    training fold's majority label, and the largest domain size.
    """

    # lazy: the comparators load scikit-learn and numba; `dpexp list` and `plan` import this module only to read the procedures' flags
    from dpexp.papers.fletcher.comparators import FSTreeClassifier

    Xtr, Xte, sizes = _rank_codes(ctx.X_train, ctx.X_test)
    classes = ctx.dataset.public_metadata().get("classes")
    fs = FSTreeClassifier(
        epsilon=ctx.epsilon, max_depth=int(ctx.params.get("max_depth", 5)),
        feature_domain=[[0.0, float(k - 1)] for k in sizes],
        categorical_features=np.ones(sizes.size, bool),
        n_categories=sizes, classes=classes, random_state=ctx.random_state,
        noise_rng=ctx.rng,
    )
    fs.fit(Xtr, ctx.y_train)
    y_test = np.asarray(ctx.y_test)
    values, counts = np.unique(ctx.y_train, return_counts=True)
    return {
        "accuracy": float(np.mean(fs.predict(Xte) == y_test)),
        "majority_accuracy": float(np.mean(y_test == values[np.argmax(counts)])),
        "largest_domain": float(sizes.max()),
    }


for _fn in (fletcher_table2, fletcher_table5, fletcher_table6):
    _fn.needs_data = False
fletcher_table4.uses_epsilon = False

PROCEDURES = {
    "fletcher_table2": fletcher_table2,
    "fletcher_table4": fletcher_table4,
    "fletcher_table5": fletcher_table5,
    "fletcher_table6": fletcher_table6,
    "fletcher_fs_as_discrete": fletcher_fs_as_discrete,
}
