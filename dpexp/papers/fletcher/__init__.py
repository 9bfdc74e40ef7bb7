"""Fletcher & Islam (2017, with the 2021 addendum): the DP random decision forest, and the
comparators JPW, FS (DiffP-C4.5) and diffprivlib.

Modules: :mod:`.forest` (the forest), :mod:`.trees` (data-independent trees, compiled
routing), :mod:`.comparators`, :mod:`.procedures` (Tables 2, 4, 5, 6; the Fig. 11 FS ablation),
:mod:`.ablations` (the Fig. 11 JPW tree-vote ablation; :mod:`.shared_structure`), :mod:`.audit`.
"""

from dpexp.registry import AlgorithmInfo, PaperManifest, TreeParams

_PAPER = "fletcher-islam-2017-with-2021-addendum"
_FOREST = "dpexp.papers.fletcher.forest"
_COMP = "dpexp.papers.fletcher.comparators"
_PROC = "dpexp.papers.fletcher.procedures"
_ABL = "dpexp.papers.fletcher.ablations"
#: Parameter names (``AlgorithmInfo.param_names``): the public metadata the runner fills
#: in, what a private estimator adds, then each estimator's.
_PUBLIC = ("categorical_features", "classes", "feature_domain", "n_categories")
_DP = ("accountant", "epsilon", "noise_rng")
_FOREST_NP_PARAMS = _PUBLIC + ("max_depth", "n_trees", "random_state")
_FOREST_PARAMS = _FOREST_NP_PARAMS + _DP + ("disjoint", "leaf_rule")
_FS_PARAMS = _PUBLIC + _DP + ("max_depth", "random_state")
_JPW_PARAMS = _FS_PARAMS + ("depth_epsilon_share", "n_records", "n_trees")
_DIFFPRIVLIB_PARAMS = _DP + ("classes", "feature_domain", "max_depth", "n_trees", "random_state")
_NOISY = ("differentially private: on the checks' tiny data sets the privacy noise "
          "(and, for the forest, one disjoint subset of a few records per tree) dominates")

MANIFEST = PaperManifest(
    paper=_PAPER,
    algorithms=[
        AlgorithmInfo(
            name="fletcher_forest",
            targets={"classification": f"{_FOREST}:FletcherForestClassifier"},
            private=True,
            paper=_PAPER,
            description=(
                "DP random decision forest (Fletcher & Islam 2017); leaf labels by the 2021 "
                "addendum's Report One-Sided Noisy Arg-Max (leaf_rule='smooth_2017' reproduces "
                "the unproven 2017 rule)."
            ),
            default_params={"n_trees": 100},
            tree_params=TreeParams(trees="n_trees", depth="max_depth"),
            param_names=_FOREST_PARAMS,
        ),
        AlgorithmInfo(
            name="fletcher_forest_np",
            targets={"classification": f"{_FOREST}:FletcherNonPrivateForestClassifier"},
            private=False,
            paper=_PAPER,
            description="Non-private version of the Fletcher-Islam forest (eps = inf, all data per tree).",
            default_params={"n_trees": 100},
            tree_params=TreeParams(trees="n_trees", depth="max_depth"),
            param_names=_FOREST_NP_PARAMS,
        ),
        AlgorithmInfo(
            name="jpw", targets={"classification": f"{_COMP}:JPWForestClassifier"}, private=True,
            paper=_PAPER, description="JPW DP random decision forest (Jagannathan et al. 2012), 10 trees.",
            default_params={"n_trees": 10},
            tree_params=TreeParams(trees="n_trees", depth="max_depth"), param_names=_JPW_PARAMS,
        ),
        AlgorithmInfo(
            name="fs_c45", targets={"classification": f"{_COMP}:FSTreeClassifier"}, private=True,
            paper=_PAPER, description="Friedman & Schuster (2010) DiffP-C4.5, one greedy DP tree of depth 5.",
            default_params={"max_depth": 5},
            tree_params=TreeParams(depth="max_depth"), param_names=_FS_PARAMS,
        ),
        AlgorithmInfo(
            name="diffprivlib_rf", targets={"classification": f"{_COMP}:DiffprivlibForestClassifier"},
            private=True, paper=_PAPER,
            description="IBM diffprivlib RandomForestClassifier (optional [peers] extra, or its side "
                        "environment: dpexp peers setup diffprivlib).",
            default_params={"n_trees": 100}, requires=("diffprivlib",),
            tree_params=TreeParams(trees="n_trees", depth="max_depth"),
            param_names=_DIFFPRIVLIB_PARAMS,
        ),
    ],
    procedures={name: f"{_PROC}:{name}" for name in
                ("fletcher_table2", "fletcher_table4", "fletcher_table5", "fletcher_table6",
                 "fletcher_fs_as_discrete")}
    | {name: f"{_ABL}:{name}" for name in ("fletcher_jpw_vote", "fletcher_exact_leaf_scores",
                                                     "fletcher_shared_structure")},
    audit_targets=["dpexp.papers.fletcher.audit:AUDIT_TARGETS"],
    broken_audit_targets=["dpexp.papers.fletcher.audit:BROKEN_AUDIT_TARGETS"],
    # the estimators' own defaults (100 trees; JPW 10; FS depth 5), as the checks always ran
    common_test_params={
        "fletcher_forest": {"epsilon": 1.0, "n_trees": 100},
        "fletcher_forest_np": {"n_trees": 100},
        "jpw": {"epsilon": 1.0, "n_trees": 10},
        "fs_c45": {"epsilon": 1.0, "max_depth": 5},
    },
    expected_failed_checks={name: {"check_classifiers_train": _NOISY}
                            for name in ("fletcher_forest", "jpw", "fs_c45")},
)
