"""GridSearchCV over a DP estimator with one shared privacy budget.

Run: python docs/examples/gridsearch_budget.py

Every fit of the search -- n_candidates x n_splits fits plus the refit -- spends its own
epsilon on the same data, so the privacy cost of the whole search is their sum (basic
sequential composition). A shared ``BudgetAccountant`` passed as ``accountant=`` records
each fit (``clone`` keeps the same accountant) and refuses, before any work, a fit that
would exceed its total. Use ``n_jobs=1``: fits in worker processes cannot charge the
parent's accountant (they raise instead).

Randomness: ``random_state=0`` fixes the public structure only. With the default
``noise_rng=None`` every fit draws its noise from fresh OS entropy, never from
``random_state``: the scores vary from run to run, and nobody can recompute a released
model's noise from its seed. Reproducible noise is an explicit choice --
``noise_rng=dpexp.privacy.seeded_noise(0)`` -- and then every fit of the search draws the
*same* noise (a seed, re-spawned by each fit), which makes the search a research result,
not a release.
"""

from __future__ import annotations

from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV

from dpexp.papers.fletcher.forest import FletcherForestClassifier
from dpexp.preprocessing import PublicMinMaxScaler, make_public_pipeline
from dpexp.privacy import BudgetAccountant

X, y = make_classification(1000, n_features=5, n_informative=3, random_state=0)
budget = BudgetAccountant(epsilon=20.0)  # the total the whole search may spend

pipe = make_public_pipeline(
    PublicMinMaxScaler(feature_domain=[[-6.0, 6.0]] * 5),   # declared bounds, not the data's
    # random_state: structure only; noise_rng=None (default): fresh noise in every fit
    FletcherForestClassifier(epsilon=1.0, n_trees=20, classes=[0, 1], random_state=0,
                             accountant=budget),
)
grid = GridSearchCV(pipe, {"fletcherforestclassifier__n_trees": [10, 20],
                           "fletcherforestclassifier__max_depth": [2, 3]},
                    cv=3, scoring="roc_auc", n_jobs=1)
grid.fit(X, y)

eps, delta = budget.total_spent
print(f"best params: {grid.best_params_}, ROC AUC {grid.best_score_:.3f}")
print(f"fits charged: {len(budget.fits)} (4 candidates x 3 splits + 1 refit)")
print(f"total epsilon spent: {eps:g}")
print(f"remaining epsilon: {budget.remaining()[0]:g}")
