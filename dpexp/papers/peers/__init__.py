"""Peers of the leaderboard (issue 44): DP tree models people install today, and
non-private references at their library defaults, registered like the papers' methods.

* ``dp_ebm``: InterpretML's DP explainable boosting (:mod:`dpexp.papers.peers.ebm`),
  (epsilon, delta)-DP with delta = 1e-6, interpret's defaults otherwise;
* ``lightgbm_default``, ``hgb_default``: LightGBM and scikit-learn's
  HistGradientBoosting at library defaults (one thread: cells run in parallel), the
  price of privacy measured against what a user would run. scikit-learn's RandomForest at
  its defaults is ``breiman_rf`` of :mod:`dpexp.papers.baselines` (100 trees, its defaults
  otherwise), reused rather than registered twice.

Optional packages: ``pip install "dpexp[leaderboard]"`` (interpret-core, autorank);
lightgbm comes with the ``test`` and ``bench`` extras.
"""

from dpexp.registry import AlgorithmInfo, PaperManifest, TreeParams

_LIBRARY = "library defaults; not DP (a non-private reference of the leaderboard)"

MANIFEST = PaperManifest(
    paper="peers",
    algorithms=[
        AlgorithmInfo(
            name="dp_ebm",
            targets={
                "classification": "dpexp.papers.peers.ebm:DPEBMClassifier",
                "regression": "dpexp.papers.peers.ebm:DPEBMRegressor",
            },
            private=True,
            paper="peers",
            description="InterpretML DP explainable boosting (interpret-core 0.7.8, Nori et "
                        "al. 2021), its defaults, (epsilon, delta)-DP with delta 1e-6; binary "
                        "classification and regression.",
            requires=("interpret",),
            tree_params=TreeParams(trees="max_rounds"),
        ),
        AlgorithmInfo(
            name="lightgbm_default",
            targets={"classification": "dpexp.papers.peers.libraries:LightGBMDefaultClassifier",
                     "regression": "dpexp.papers.peers.libraries:LightGBMDefaultRegressor"},
            private=False,
            paper="peers",
            description=f"LightGBM, {_LIBRARY}.",
            requires=("lightgbm",),
            tree_params=TreeParams(trees="n_estimators", depth="max_depth"),
        ),
        AlgorithmInfo(
            name="hgb_default",
            targets={"classification": "sklearn.ensemble:HistGradientBoostingClassifier",
                     "regression": "sklearn.ensemble:HistGradientBoostingRegressor"},
            private=False,
            paper="peers",
            description=f"scikit-learn HistGradientBoosting, {_LIBRARY}.",
            tree_params=TreeParams(trees="max_iter", depth="max_depth"),
        ),
    ],
    audit_targets=["dpexp.papers.peers.audit:AUDIT_TARGETS"],
    broken_audit_targets=["dpexp.papers.peers.audit:BROKEN_AUDIT_TARGETS"],
    # a short, strong-signal fit (the checks ask regressors for R^2 > 0.5)
    common_test_params={"dp_ebm": {"max_rounds": 50, "learning_rate": 0.1, "epsilon": 50.0}},
    expected_failed_checks={"lightgbm_default": {
        "check_no_attributes_set_in_init": "LightGBM keeps verbose (a **kwargs parameter of "
                                           "its scikit-learn classes) as an attribute",
        "check_all_zero_sample_weights_error": "LightGBM fits all-zero sample weights "
                                               "without raising (library behaviour)",
    }},
)
