"""Non-private baselines shared by several papers (Breiman's random forest)."""

from dpexp.registry import AlgorithmInfo, PaperManifest

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
        ),
    ],
    common_test_params={"breiman_rf": {"n_estimators": 10}},
)
