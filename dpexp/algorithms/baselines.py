"""Non-private reference algorithms the papers compare against.

* ``breiman_rf``: Breiman's random forest (scikit-learn), the non-private reference of
  Fletcher & Islam (Section 5, Figs. 10-14).
"""

from __future__ import annotations

from dpexp.algorithms.registry import AlgorithmInfo

ALGORITHMS = [
    AlgorithmInfo(
        name="breiman_rf",
        targets={
            "classification": "sklearn.ensemble:RandomForestClassifier",
            "regression": "sklearn.ensemble:RandomForestRegressor",
        },
        private=False,
        paper="fletcher-islam-2017",
        description="Breiman's random forest (scikit-learn), non-private reference.",
        default_params={"n_estimators": 100, "n_jobs": 1},
    ),
]
