"""The empirical privacy audit: passes correct mechanisms, flags broken ones (quick sizes)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from dpexp import registry
from dpexp.audit.catalogue import (
    BUILTIN_TARGET_LISTS,
    audit_targets,
    get_audit_target,
    target_source,
)
from dpexp.audit.run import run_audit, run_target
from dpexp.audit.statistics import clopper_pearson_lower, clopper_pearson_upper, gdp_epsilon
from dpexp.audit.targets import AuditResult, AuditTarget
from dpexp.cli.audit import AuditUsageError, cli_audit
from dpexp.errors import UnknownNameError
from dpexp.privacy.calibration import analytic_gaussian_sigma

REAL = sorted(audit_targets(include_algorithms=False))
BROKEN = sorted(audit_targets(broken=True, include_algorithms=False))


def test_registries_hold_the_required_targets():
    for name in [
        "laplace",
        "gaussian_classic",
        "gaussian_analytic",
        "exponential",
        "rosnam",
        "smooth_sensitivity_2017",
        "forest_disjoint",
        "forest_disjoint_ledger",
    ]:
        assert name in REAL
    for name in [
        "laplace_half_scale",
        "gaussian_half_sigma",
        "forest_position_blocks",
        "forest_leaf_half_noise_ledger",
    ]:
        assert name in BROKEN
    assert not set(REAL) & set(BROKEN)
    assert get_audit_target("smooth_sensitivity_2017").expected_to_pass is False
    # the stand-in forest is labelled a demo, never an end-to-end audit of an estimator
    for name in ["forest_disjoint", "forest_position_blocks"]:
        target = get_audit_target(name)
        assert target.kind == "demo" and target.algorithm is None
    assert get_audit_target("forest_disjoint_ledger").kind == "ledger-entry"
    builtin = {ref.partition(":")[0] for ref, _ in BUILTIN_TARGET_LISTS}
    assert not any(t.kind == "end-to-end" for t in audit_targets(include_algorithms=False).values()
                   if target_source(t.name) in builtin)


@pytest.mark.parametrize("name", REAL)
def test_registered_targets_behave_as_expected(name):
    result = run_audit(name, quick=True, seed=1)
    assert result.as_expected, result.summary_line()
    assert result.confidence == pytest.approx(1 - 1e-6)


@pytest.mark.parametrize("name", BROKEN)
def test_broken_fixtures_are_flagged(name):
    result = run_audit(name, quick=True, seed=2)
    assert not result.passed, result.summary_line()
    assert result.epsilon_lower_bound > result.claimed_epsilon
    assert result.outcome == "known unprivate, flagged as expected"


@pytest.mark.parametrize("eps", [1.0, 0.1])
def test_laplace_half_scale_flagged_and_laplace_passes(eps):
    bad = run_audit("laplace_half_scale", epsilon=eps, quick=True, seed=3)
    good = run_audit("laplace", epsilon=eps, quick=True, seed=3)
    assert not bad.passed and bad.epsilon_lower_bound > 1.4 * eps
    assert good.passed and 0.5 * eps < good.epsilon_lower_bound <= eps


def test_smooth_sensitivity_true_epsilon_about_twice_the_claim():
    result = run_audit("smooth_sensitivity_2017", quick=True, seed=4)
    assert result.epsilon_lower_bound > 1.8  # exact value for (1,0) vs (2,0) is ~2.14


def test_gaussian_curve_test_catches_half_sigma_and_reports_mu():
    bad = run_audit("gaussian_half_sigma", quick=True, seed=5)
    assert bad.details["mu_lower_bound"] > bad.details["mu_claim"]
    good = run_audit("gaussian_classic", quick=True, seed=5)
    assert good.details["mu_lower_bound"] <= good.details["mu_claim"]


def test_gdp_epsilon_inverts_the_analytic_calibration():
    for eps, delta in [(0.5, 1e-5), (1.0, 1e-6), (3.0, 1e-3)]:
        mu = 1.0 / analytic_gaussian_sigma(epsilon=eps, delta=delta, sensitivity=1.0)
        assert gdp_epsilon(mu, delta) == pytest.approx(eps, rel=1e-6)
    assert gdp_epsilon(-0.1, 1e-5) == 0.0


def test_clopper_pearson_matches_scipy_exact_interval():
    for k, n in [(0, 50), (3, 50), (25, 50), (50, 50), (1234, 100_000)]:
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2e-3, method="exact")
        assert float(clopper_pearson_lower(k, n, 1e-3)) == pytest.approx(ci.low, abs=1e-12)
        assert float(clopper_pearson_upper(k, n, 1e-3)) == pytest.approx(ci.high, abs=1e-12)


def test_result_to_dict_is_json_and_unknown_names_are_clean_errors():
    result = run_audit("rosnam", quick=True, samples=2000)
    d = result.to_dict()
    json.dumps(d)
    for key in [
        "name",
        "claimed_epsilon",
        "claimed_delta",
        "epsilon_lower_bound",
        "confidence",
        "passed",
        "expected_to_pass",
        "samples",
        "details",
    ]:
        assert key in d
    assert d["samples"] == 2000
    with pytest.raises(UnknownNameError, match="laplace"):
        run_audit("laplac")
    with pytest.raises(ValueError, match="samples"):
        run_audit("laplace", samples=10)
    with pytest.raises(ValueError, match="epsilon"):
        run_audit("laplace", epsilon=-1)


def test_custom_target_of_a_paper_manifest_and_duplicates(monkeypatch):
    def release(data, *, epsilon, delta, rng, size):
        return data + rng.laplace(0.0, 1.0 / epsilon, size=size)

    target = AuditTarget(
        name="_test_custom",
        description="test",
        release=release,
        datasets=(0.0, 1.0),
        pairs=((0, 1),),
        quick_samples=20_000,
    )
    paper = registry.PaperManifest(paper="custom", audit_targets=[[target]])
    monkeypatch.setattr(registry, "EXTRA_PAPERS", [paper])
    assert get_audit_target("_test_custom") is target
    assert run_audit("_test_custom", quick=True).passed
    clone = AuditTarget(
        name="_test_custom",
        description="x",
        release=release,
        datasets=(0.0, 1.0),
        pairs=((0, 1),),
    )
    twin = registry.PaperManifest(paper="twin", audit_targets=[[clone]])
    monkeypatch.setattr(registry, "EXTRA_PAPERS", [paper, twin])
    with pytest.raises(ValueError, match="already registered"):
        audit_targets()
    monkeypatch.setattr(registry, "EXTRA_PAPERS", [])
    with pytest.raises(UnknownNameError):
        get_audit_target("_test_custom")  # nothing was registered: collected afresh


def test_audit_is_reproducible_for_a_seed():
    a = run_target(get_audit_target("exponential"), quick=True, seed=9, samples=5000)
    b = run_target(get_audit_target("exponential"), quick=True, seed=9, samples=5000)
    assert a.epsilon_lower_bound == b.epsilon_lower_bound
    assert np.isfinite(a.epsilon_lower_bound)


def test_cli_glue_exit_codes_and_json():
    lines: list[str] = []
    assert cli_audit("laplace", quick=True, samples=20_000, echo=lines.append) == 0
    assert "pass" in lines[0]
    lines.clear()
    # One NAME: exit 1 whenever the bound exceeds the claim, even for a broken fixture
    # whose failure is expected (the same contract as the CLI: one implementation).
    assert (
        cli_audit(
            "laplace_half_scale", broken=True, quick=True, as_json=True, echo=lines.append
        )
        == 1
    )
    data = json.loads(lines[0])
    assert data["passed"] is False and data["as_expected"] is True
    assert data["kind"] == "mechanism" and data["algorithm"] is None
    assert data["source"] == "dpexp.audit.broken_targets"
    # a broken fixture wrongly marked as expected-to-pass is an unexpected outcome
    t = get_audit_target("laplace_half_scale", broken=True)
    from dataclasses import replace

    assert run_target(replace(t, expected_to_pass=True), quick=True).as_expected is False
    with pytest.raises(ValueError, match="NAME"):
        cli_audit(None)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 0.0}, "--epsilon"),
        ({"epsilon": float("nan")}, "--epsilon"),
        ({"samples": 99}, "--samples"),
        ({"samples": 1.5}, "--samples"),
        ({"seed": -1}, "--seed"),
    ],
)
def test_cli_glue_validates_its_numbers(kwargs, message):
    with pytest.raises(AuditUsageError, match=message):
        cli_audit("laplace", echo=lambda _: None, **kwargs)


def test_epsilon_override_is_for_one_target_only():
    with pytest.raises(AuditUsageError, match="--epsilon"):
        cli_audit(all_targets=True, epsilon=1.0, echo=lambda _: None)


def test_non_finite_bounds_are_strict_json():
    result = AuditResult(
        name="x", claimed_epsilon=1.0, claimed_delta=0.0, epsilon_lower_bound=-np.inf,
        confidence=0.9, passed=True, expected_to_pass=True, samples=100,
        details={"stage1_bound": np.float64(np.inf)},
    )
    text = json.dumps(result.to_dict(), allow_nan=False)
    assert json.loads(text)["epsilon_lower_bound"] == "-inf"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("kind", "estimator", "kind"),
        ("algorithm", "", "algorithm"),
        ("pairs", ((0, 0),), "pairs"),
        ("pairs", ((0, 5),), "pairs"),
        ("quick_samples", 10, "quick_samples"),
    ],
)
def test_audit_target_rejects_bad_fields(field, value, message):
    base = get_audit_target("laplace", broken=False)
    from dataclasses import replace

    with pytest.raises(ValueError, match=message):
        replace(base, **{field: value})
