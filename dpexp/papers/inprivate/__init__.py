"""InPrivate Digging (Zhao et al. 2018): DP regression trees (Alg. 1) boosted across data
owners (Alg. 2), and the No-Priv twin.

Modules: :mod:`.formulas` (residuals, gains, sensitivities, budget and data shares),
:mod:`.protocol` (config, tree messages, participant node, in-process runner),
:mod:`.schedule` (multi-process round schedules, Eq. 18/19), :mod:`.estimators`
(scikit-learn estimators), :mod:`.procedures`, :mod:`.audit`.
"""

from dpexp.registry import PUBLIC_PARAMS, AlgorithmInfo, PaperManifest, TreeParams

_MOD = "dpexp.papers.inprivate.estimators"
_PAPER = "inprivate-digging-zhao-2018"
_SMALL = {"n_participants": 2, "depth": 4, "n_rounds": 1}
#: No-Priv's parameters (classifier and regressor), the public metadata's among them.
_NP_PARAMS = PUBLIC_PARAMS + (
    "advance_threshold", "backend", "binning", "depth", "final_round", "learning_rate",
    "max_bins", "n_jobs", "n_participants", "n_records", "n_rounds", "quality_control",
    "quality_tolerance", "random_state", "records_per_participant", "residual_clip", "schedule",
)
#: InPrivate's: No-Priv's and its privacy budget, noise and shares.
_PARAMS = _NP_PARAMS + (
    "accountant", "epsilon", "internal_fraction", "leaf_denominator_floor", "noise_rng",
    "quality_fraction",
)

MANIFEST = PaperManifest(
    paper=_PAPER,
    algorithms=[
        AlgorithmInfo(
            name="inprivate",
            targets={"classification": f"{_MOD}:InPrivateClassifier",
                     "regression": f"{_MOD}:InPrivateRegressor"},
            private=True, paper=_PAPER,
            description="InPrivate Digging: DP regression trees (Alg. 1) boosted across data owners "
                        "(Alg. 2, rounds with the halving rule, quality control).",
            tree_params=TreeParams(depth="depth"), param_names=_PARAMS,
        ),
        AlgorithmInfo(
            name="inprivate_np",
            targets={"classification": f"{_MOD}:InPrivateNPClassifier",
                     "regression": f"{_MOD}:InPrivateNPRegressor"},
            private=False, paper=_PAPER,
            description="No-Priv: the InPrivate protocol without noise (greedy splits, exact leaves).",
            tree_params=TreeParams(depth="depth"), param_names=_NP_PARAMS,
        ),
    ],
    procedures={"inprivate_schedule_timing":
                "dpexp.papers.inprivate.procedures:inprivate_schedule_timing"},
    audit_targets=["dpexp.papers.inprivate.audit:AUDIT_TARGETS"],
    broken_audit_targets=["dpexp.papers.inprivate.audit:BROKEN_AUDIT_TARGETS"],
    common_test_params={"inprivate": {"epsilon": 50.0, **_SMALL}, "inprivate_np": dict(_SMALL)},
)
