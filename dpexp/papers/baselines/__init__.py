"""Non-private baselines shared by several papers (Breiman's random forest)."""

from dpexp.registry import AlgorithmInfo, PaperManifest, TreeParams

#: scikit-learn's random forest parameters (>= 1.4), with the classifier's declared classes.
_BREIMAN_RF_PARAMS = (
    "bootstrap", "ccp_alpha", "class_weight", "classes", "criterion", "max_depth",
    "max_features", "max_leaf_nodes", "max_samples", "min_impurity_decrease",
    "min_samples_leaf", "min_samples_split", "min_weight_fraction_leaf", "monotonic_cst",
    "n_estimators", "n_jobs", "oob_score", "random_state", "verbose", "warm_start",
)

MANIFEST = PaperManifest(
    paper="baselines",
    algorithms=[
        AlgorithmInfo(
            name="breiman_rf",
            targets={
                "classification": "dpexp.papers.baselines.estimators:BreimanForestClassifier",
                "regression": "sklearn.ensemble:RandomForestRegressor",
            },
            private=False,
            paper="fletcher-islam-2017",
            description="Breiman's random forest (scikit-learn), non-private reference.",
            default_params={"n_estimators": 100, "n_jobs": 1},
            tree_params=TreeParams(trees="n_estimators", depth="max_depth"),
            param_names=_BREIMAN_RF_PARAMS,
        ),
    ],
    common_test_params={"breiman_rf": {"n_estimators": 10}},
    # a thin wrapper of scikit-learn's forest over declared classes, kept as it was
    expected_failed_checks={"breiman_rf": {
        **dict.fromkeys(
            ("check_classifier_multioutput", "check_classifiers_multilabel_representation_invariance",
             "check_classifiers_multilabel_output_format_predict",
             "check_classifiers_multilabel_output_format_predict_proba",
             "check_classifiers_multilabel_output_format_decision_function"),
            "the declared-classes wrapper takes one label column (no multi-output/multilabel y)"),
        **dict.fromkeys(
            ("check_sample_weight_equivalence_on_dense_data",
             "check_sample_weight_equivalence_on_sparse_data"),
            "bootstrap resampling: weights are not equivalent to repeated rows"),
        "check_estimators_unfitted": "predict before fit raises AttributeError, not NotFittedError",
    }},
)
