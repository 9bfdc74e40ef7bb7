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
#: Parameter names (``AlgorithmInfo.param_names``). The DP-EBM wrappers' (classifier and
#: regressor):
_DP_EBM_PARAMS = (
    "accountant", "bin_budget_frac", "classes", "composition", "delta", "epsilon",
    "feature_domain", "label_domain", "learning_rate", "max_bins", "max_leaves", "max_rounds",
    "noise_rng", "random_state",
)
#: LightGBM's scikit-learn parameters (4.x) and the ``verbose`` its subclasses here set.
_LIGHTGBM_PARAMS = (
    "boosting_type", "class_weight", "colsample_bytree", "importance_type", "learning_rate",
    "max_depth", "min_child_samples", "min_child_weight", "min_split_gain", "n_estimators",
    "n_jobs", "num_leaves", "objective", "random_state", "reg_alpha", "reg_lambda", "subsample",
    "subsample_for_bin", "subsample_freq", "verbose",
)
#: scikit-learn's HistGradientBoosting parameters (>= 1.4, classifier and regressor).
_HGB_PARAMS = (
    "categorical_features", "class_weight", "early_stopping", "interaction_cst",
    "l2_regularization", "learning_rate", "loss", "max_bins", "max_depth", "max_features",
    "max_iter", "max_leaf_nodes", "min_samples_leaf", "monotonic_cst", "n_iter_no_change",
    "quantile", "random_state", "scoring", "tol", "validation_fraction", "verbose", "warm_start",
)

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
            tree_params=TreeParams(trees="max_rounds"), param_names=_DP_EBM_PARAMS,
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
            param_names=_LIGHTGBM_PARAMS,
        ),
        AlgorithmInfo(
            name="hgb_default",
            targets={"classification": "sklearn.ensemble:HistGradientBoostingClassifier",
                     "regression": "sklearn.ensemble:HistGradientBoostingRegressor"},
            private=False,
            paper="peers",
            description=f"scikit-learn HistGradientBoosting, {_LIBRARY}.",
            tree_params=TreeParams(trees="max_iter", depth="max_depth"), param_names=_HGB_PARAMS,
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
