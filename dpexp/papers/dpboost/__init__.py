"""DPBoost (Li et al. 2020): GDF + GLC + ensemble of ensembles, with SEQ, PARA and NP.

Modules: :mod:`.estimators` (the estimators on the shared grower), :mod:`.honest`
(DPBoost (clipped): the honestly accounted variant that keeps every row, issue 20),
:mod:`.audit` (end-to-end audit targets).
"""

from dpexp.registry import PUBLIC_PARAMS, AlgorithmInfo, PaperManifest, TreeParams

_MOD = "dpexp.papers.dpboost.estimators"
_PAPER = "dpboost-li-2020"
_DP_TARGETS = {
    "classification": f"{_MOD}:DPBoostClassifier",
    "regression": f"{_MOD}:DPBoostRegressor",
}
_SMALL = {"n_trees": 5, "max_depth": 3, "learning_rate": 0.3}
#: The NP GBDT's parameters (classifier and regressor), the public metadata's among them.
_NP_PARAMS = PUBLIC_PARAMS + (
    "binning", "learning_rate", "loss", "max_bins", "max_depth", "min_samples_leaf", "n_trees",
    "random_state", "reg_lambda",
)
#: DPBoost's and its SEQ / PARA baselines' parameters (one estimator family, ``mode``).
_DP_PARAMS = PUBLIC_PARAMS + (
    "accountant", "binning", "epsilon", "exact_growth", "g_star", "gdf", "glc",
    "glc_per_ensemble", "init_score", "learning_rate", "loss", "max_bins", "max_depth",
    "min_child_samples", "mode", "n_trees", "noise_rng", "num_leaves", "objective",
    "random_state", "reg_lambda", "split_budget_divisor", "trees_per_ensemble",
)
#: DPBoost (clipped)'s parameters.
_HONEST_PARAMS = PUBLIC_PARAMS + (
    "accountant", "binning", "count_fraction", "epsilon", "g_star", "glc", "hessian",
    "init_clip", "init_fraction", "leaf", "learning_rate", "max_bins", "max_depth", "n_trees",
    "noise_rng", "random_state", "reg_lambda", "trees_per_ensemble",
)

MANIFEST = PaperManifest(
    paper=_PAPER,
    algorithms=[
        AlgorithmInfo(
            name="dpboost", targets=_DP_TARGETS, private=True, paper=_PAPER,
            description="DPBoost: GDF + GLC + ensemble of ensembles (Li et al. 2020, Alg. 1-2).",
            default_params={"mode": "dpboost"},
            tree_params=TreeParams(trees="n_trees", per_ensemble="trees_per_ensemble", depth="max_depth"),
            param_names=_DP_PARAMS,
        ),
        AlgorithmInfo(
            name="seq", targets=_DP_TARGETS, private=True, paper=_PAPER,
            description="SEQ baseline: every tree on all data, epsilon/T each (Section 4).",
            default_params={"mode": "seq"},
            tree_params=TreeParams(trees="n_trees", per_ensemble="trees_per_ensemble", depth="max_depth"),
            param_names=_DP_PARAMS,
        ),
        AlgorithmInfo(
            name="para", targets=_DP_TARGETS, private=True, paper=_PAPER,
            description="PARA baseline: each tree on half the unused data, full epsilon (Section 4).",
            default_params={"mode": "para"},
            tree_params=TreeParams(trees="n_trees", per_ensemble="trees_per_ensemble", depth="max_depth"),
            param_names=_DP_PARAMS,
        ),
        AlgorithmInfo(
            name="dpboost_honest",
            targets={
                "classification": "dpexp.papers.dpboost.honest:HonestDPBoostClassifier",
                "regression": "dpexp.papers.dpboost.honest:HonestDPBoostRegressor",
            },
            private=True, paper=_PAPER,
            description="DPBoost (clipped), not in the paper: Algorithm 2 with clipped "
                        "logistic/square gradients instead of GDF, a constant hessian, a noisy "
                        "initial score and noisy sum/count leaves, all charged to epsilon.",
            tree_params=TreeParams(trees="n_trees", per_ensemble="trees_per_ensemble", depth="max_depth"),
            param_names=_HONEST_PARAMS,
        ),
        AlgorithmInfo(
            name="np_gbdt",
            targets={
                "classification": f"{_MOD}:NPGBDTClassifier",
                "regression": f"{_MOD}:NPGBDTRegressor",
            },
            private=False, paper=_PAPER,
            description="NP: non-private GBDT on the same engine (Section 4).",
            tree_params=TreeParams(trees="n_trees", depth="max_depth"),
            param_names=_NP_PARAMS,
        ),
    ],
    audit_targets=["dpexp.papers.dpboost.audit:AUDIT_TARGETS"],
    broken_audit_targets=["dpexp.papers.dpboost.audit:BROKEN_AUDIT_TARGETS"],
    common_test_params={
        "dpboost": {"epsilon": 10.0, "trees_per_ensemble": 5, **_SMALL},
        "dpboost_honest": {"epsilon": 10.0, "trees_per_ensemble": 5, **_SMALL},
        "np_gbdt": {"min_samples_leaf": 1, **_SMALL},
    },
    expected_failed_checks={
        "dpboost": {"check_regressors_train": (
            "differential privacy: Laplace noise on the leaves (epsilon=10, 5 trees) keeps "
            "the training R^2 below the threshold the check demands")},
        "dpboost_honest": {"check_regressors_train": (
            "differential privacy: Laplace noise on the leaf sums and counts and on the "
            "initial mean (epsilon=10, 5 trees on disjoint subsets of the rows) keeps the "
            "training R^2 below the threshold the check demands")},
    },
)
