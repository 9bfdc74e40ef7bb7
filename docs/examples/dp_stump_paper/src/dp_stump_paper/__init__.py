"""A toy DP tree method packaged as a dpexp paper (the README's worked example)."""

from dpexp.registry import AlgorithmInfo, PaperManifest

MANIFEST = PaperManifest(
    paper="dp-stump-example",
    algorithms=[
        AlgorithmInfo(
            name="dp_stump",
            targets={"classification": "dp_stump_paper.estimators:DPStumpClassifier"},
            private=True,
            paper="dp-stump-example",
            description="Toy: one random split on the public domain, Laplace-noised class counts.",
        ),
    ],
    common_test_params={"dp_stump": {"epsilon": 10.0}},
    # the end-to-end privacy audit `dpexp audit --all` runs (and the coverage test requires)
    audit_targets=["dp_stump_paper.audit:AUDIT_TARGETS"],
    broken_audit_targets=["dp_stump_paper.audit:BROKEN_AUDIT_TARGETS"],
)
