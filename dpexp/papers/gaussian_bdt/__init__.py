"""Gaussian-mechanism boosted decision trees (Peinemann, slides): random splits, Gaussian
noisy clipped-sum/count leaves, (epsilon, delta) accounting.

Modules: :mod:`.estimators`, :mod:`.audit`.
"""

from dpexp.registry import PUBLIC_PARAMS, AlgorithmInfo, PaperManifest, TreeParams

_MOD = "dpexp.papers.gaussian_bdt.estimators"
_PAPER = "gaussian-bdt-peinemann-slides"
#: The estimators' parameters (classifier and regressor), the public metadata's among them.
_PARAMS = PUBLIC_PARAMS + (
    "accountant", "binning", "calibration", "clip", "delta", "epsilon", "learning_rate",
    "max_bins", "max_depth", "n_trees", "noise_rng", "random_state",
)

MANIFEST = PaperManifest(
    paper=_PAPER,
    algorithms=[
        AlgorithmInfo(
            name="gaussian_bdt",
            targets={"classification": f"{_MOD}:GaussianBDTClassifier",
                     "regression": f"{_MOD}:GaussianBDTRegressor"},
            private=True, paper=_PAPER,
            description="Gaussian-mechanism boosted decision trees: random splits, Gaussian "
                        "noisy clipped-sum/count leaves, (eps, delta) accounting (Peinemann).",
            tree_params=TreeParams(trees="n_trees", depth="max_depth"),
            param_names=_PARAMS,
        ),
    ],
    audit_targets=["dpexp.papers.gaussian_bdt.audit:AUDIT_TARGETS"],
    broken_audit_targets=["dpexp.papers.gaussian_bdt.audit:BROKEN_AUDIT_TARGETS"],
    common_test_params={"gaussian_bdt": {"epsilon": 50.0, "n_trees": 3, "max_depth": 3}},
    expected_failed_checks={"gaussian_bdt": {
        "check_regressors_train": "differential privacy: random splits and Gaussian "
                                  "leaf noise keep the training R^2 below the check's threshold"}},
)
