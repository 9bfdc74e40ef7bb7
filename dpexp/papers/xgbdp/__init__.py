"""XGBoost-DP (Shi et al. 2021), its Table 2 comparators (DP random forest, DP AdaBoost
of XGBoost-DP trees) and their non-private twins.

Modules: :mod:`.estimators` (XGBoost-DP), :mod:`.comparators`, :mod:`.libraries` (the
real XGBoost / scikit-learn models for the no_noise row), :mod:`.procedures` (feature
importance, ROC), :mod:`.audit`.
"""

from dpexp.registry import AlgorithmInfo, PaperManifest, TreeParams

_PAPER = "xgboost-dp-shi-2021"
_MOD = "dpexp.papers.xgbdp.estimators"
_COMP = "dpexp.papers.xgbdp.comparators"
_LIB = "dpexp.papers.xgbdp.libraries"
#: Why ``xgboost_dp_paper`` is not DP (also what its fits' accountants say).
PAPER_NOT_DP = ("Table 1 step 5 selects features by the importance of a non-private model "
                "fitted on the private training data (no noise)")

#: Parameter names (``AlgorithmInfo.param_names``). The non-private XGBoost-DP tree's, as
#: the AdaBoost of such trees takes them:
_NP_TREE_PARAMS = (
    "binning", "categorical_features", "classes", "feature_domain", "max_bins", "max_depth",
    "min_samples_leaf", "n_categories", "n_trees", "random_state", "reg_lambda",
)
#: The DP tree's (noisy counts instead of a minimum leaf size), as DP AdaBoost takes them.
_DP_TREE_PARAMS = (
    "accountant", "binning", "categorical_features", "classes", "count_share", "epsilon",
    "feature_domain", "max_bins", "max_depth", "min_noisy_count", "n_categories", "n_trees",
    "noise_rng", "noiseless", "random_state", "reg_lambda",
)
#: XGBoost-DP's (both variants) and its non-private twin's: boosting adds a learning rate.
_XGBOOST_DP_PARAMS = _DP_TREE_PARAMS + ("grad_clip", "learning_rate", "n_selected_features", "variant")
_NP_XGBOOST_PARAMS = _NP_TREE_PARAMS + ("learning_rate",)
#: The library wrappers' (:mod:`.libraries`): random forest and AdaBoost, then XGBoost.
_LIBRARY_PARAMS = ("categorical_features", "classes", "encoding", "max_depth", "n_categories",
                   "n_estimators", "random_state")
_LIB_XGBOOST_PARAMS = _LIBRARY_PARAMS + ("learning_rate", "max_bin", "objective")


def _info(name: str, cls: str, private: bool, description: str,
          param_names: tuple[str, ...]) -> AlgorithmInfo:
    return AlgorithmInfo(name=name, targets={"classification": f"{_COMP}:{cls}"},
                         private=private, paper=_PAPER, description=description,
                         tree_params=TreeParams(trees="n_trees", depth="max_depth"),
                         param_names=param_names)


def _library(name: str, cls: str, description: str, requires: tuple[str, ...] = (),
             param_names: tuple[str, ...] = _LIBRARY_PARAMS) -> AlgorithmInfo:
    return AlgorithmInfo(name=name, targets={"classification": f"{_LIB}:{cls}"}, private=False,
                         paper=_PAPER, description=description, requires=requires,
                         tree_params=TreeParams(trees="n_estimators", depth="max_depth"),
                         param_names=param_names)


_SMALL = {"n_trees": 3, "max_depth": 3}
_SMALL_LIB = {"n_estimators": 5, "max_depth": 3}

MANIFEST = PaperManifest(
    paper=_PAPER,
    algorithms=[
        AlgorithmInfo(
            name="xgboost_dp", targets={"classification": f"{_MOD}:XGBoostDPClassifier"},
            private=True, paper=_PAPER,
            description="XGBoost-DP (Shi et al. 2021, Table 1), correctly accounted: trees "
                        "compose sequentially, no feature selection on private data.",
            default_params={"variant": "correct"},
            tree_params=TreeParams(trees="n_trees", depth="max_depth"),
            param_names=_XGBOOST_DP_PARAMS,
        ),
        AlgorithmInfo(
            name="xgboost_dp_paper", targets={"classification": f"{_MOD}:XGBoostDPClassifier"},
            private=True, paper=_PAPER,
            description="XGBoost-DP as published: adds Table 1 step 5 feature selection on the "
                        "private data (NOT differentially private; reproduction only).",
            default_params={"variant": "paper"},
            not_dp=PAPER_NOT_DP,
            tree_params=TreeParams(trees="n_trees", depth="max_depth"),
            param_names=_XGBOOST_DP_PARAMS,
        ),
        AlgorithmInfo(
            name="np_xgboost", targets={"classification": f"{_MOD}:NPXGBoostClassifier"},
            private=False, paper=_PAPER,
            description="Non-private XGBoost on the same engine (Table 2 no_noise row).",
            tree_params=TreeParams(trees="n_trees", depth="max_depth"),
            param_names=_NP_XGBOOST_PARAMS,
        ),
        _info("dp_rf_xgbdp", "DPRandomForestXGBDPClassifier", True,
              "DP random forest of XGBoost-DP trees, eps/n per tree (Shi et al. Table 2 comparator).",
              _DP_TREE_PARAMS + ("max_features",)),
        _info("dp_adaboost", "DPAdaBoostXGBDPClassifier", True,
              "DP AdaBoost (Poisson resampling) of XGBoost-DP trees (Shi et al. Table 2 comparator).",
              _DP_TREE_PARAMS),
        _info("np_xgb_tree_rf", "NPRandomForestXGBDPClassifier", False,
              "Non-private twin of dp_rf_xgbdp (Table 2 no_noise row).", _NP_TREE_PARAMS + ("max_features",)),
        _info("np_xgb_tree_adaboost", "NPAdaBoostXGBDPClassifier", False,
              "Non-private twin of dp_adaboost (Table 2 no_noise row).", _NP_TREE_PARAMS),
        _library("lib_xgboost", "LibraryXGBoostClassifier",
                 "The real XGBoost (xgboost.XGBClassifier), library defaults unless set; "
                 "not DP (Table 2 no_noise row).", requires=("xgboost",),
                 param_names=_LIB_XGBOOST_PARAMS),
        _library("lib_random_forest", "LibraryRandomForestClassifier",
                 "scikit-learn's RandomForestClassifier, library defaults unless set; not DP "
                 "(Table 2 no_noise row)."),
        _library("lib_adaboost", "LibraryAdaBoostClassifier",
                 "scikit-learn's AdaBoostClassifier (decision-tree weak learner of depth "
                 "max_depth, default a stump); not DP (Table 2 no_noise row)."),
    ],
    procedures={
        "xgbdp_feature_importance": "dpexp.papers.xgbdp.procedures:xgbdp_feature_importance",
        "xgbdp_roc": "dpexp.papers.xgbdp.procedures:xgbdp_roc",
    },
    audit_targets=["dpexp.papers.xgbdp.audit:AUDIT_TARGETS"],
    broken_audit_targets=["dpexp.papers.xgbdp.audit:BROKEN_AUDIT_TARGETS"],
    common_test_params={
        "xgboost_dp": {"epsilon": 50.0, **_SMALL},
        "xgboost_dp_paper": {"epsilon": 50.0, "n_selected_features": 2, **_SMALL},
        "dp_rf_xgbdp": {"epsilon": 50.0, **_SMALL},
        "dp_adaboost": {"epsilon": 50.0, **_SMALL},
        "np_xgboost": dict(_SMALL),
        "np_xgb_tree_rf": dict(_SMALL),
        "np_xgb_tree_adaboost": dict(_SMALL),
        "lib_xgboost": dict(_SMALL_LIB),
        "lib_random_forest": dict(_SMALL_LIB),
        "lib_adaboost": dict(_SMALL_LIB),
    },
)
