"""The end-to-end audit targets of the boosting families (dpboost_audit, xgbdp_audit,
gaussian_bdt_audit): every registered private algorithm of these modules has one, and the
audit tells the declared-classes release from the classes-from-y one."""

from __future__ import annotations

import pytest

from dpexp.audit.run import run_target
from dpexp.papers.dpboost import audit as dpboost_audit
from dpexp.papers.gaussian_bdt import audit as gaussian_bdt_audit
from dpexp.papers.xgbdp import audit as xgbdp_audit
from dpexp.registry import all_algorithms

MODULES = (dpboost_audit, xgbdp_audit, gaussian_bdt_audit)
FAMILIES = ("dpexp.papers.dpboost.estimators", "dpexp.papers.xgbdp.estimators",
            "dpexp.papers.xgbdp.comparators", "dpexp.papers.gaussian_bdt.estimators")


def _targets(broken: bool = False):
    attr = "BROKEN_AUDIT_TARGETS" if broken else "AUDIT_TARGETS"
    return {t.name: t for m in MODULES for t in getattr(m, attr)}


def test_every_private_boosting_algorithm_has_an_end_to_end_target():
    private = {
        name for name, info in all_algorithms().items()
        if info.private and any(t.startswith(FAMILIES) for t in info.targets.values())
    }
    assert {"dpboost", "seq", "para", "xgboost_dp", "xgboost_dp_paper", "dp_rf_xgbdp",
            "dp_adaboost", "gaussian_bdt"} <= private
    covered = {t.algorithm for t in _targets().values() if t.kind == "end-to-end"}
    assert private <= covered
    # a variant registered as never DP is audited as known unprivate
    for t in _targets().values():
        assert t.expected_to_pass == (all_algorithms()[t.algorithm].not_dp is None)
    assert all(not t.expected_to_pass for t in _targets(broken=True).values())


@pytest.mark.parametrize(("name", "broken", "passes"), [
    ("gaussian_bdt_last_record_of_class", False, True),
    ("gaussian_bdt_classes_from_y", True, False),
])
def test_audit_separates_declared_classes_from_classes_read_from_y(name, broken, passes):
    result = run_target(_targets(broken)[name], samples=200)
    assert result.passed is passes, result.summary_line()
