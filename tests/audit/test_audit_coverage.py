"""The audit covers what users run: every private registered algorithm, end to end.

End-to-end targets come from the paper manifests (``audit_targets`` /
``broken_audit_targets`` of every discovered paper package, never listed by hand). Each names the registered algorithm it audits; this file
checks that every private algorithm has one, that the broken variants of the estimators
are flagged and the real ones pass in quick (CI) mode.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from pathlib import Path

import pytest

import dpexp.papers
from dpexp import registry
from dpexp.audit.catalogue import (
    audit_targets,
    catalogue_entries,
    get_audit_target,
    missing_requirements,
    paper_audit_sources,
    target_source,
)
from dpexp.audit.paths import (
    CANARY_POSITIONS,
    EXEMPTIONS,
    PARTITION_ALGORITHMS,
    ReleasePath,
    coverage,
    required_paths,
    uncovered_paths,
)
from dpexp.audit.run import run_target
from dpexp.audit.targets import AuditTarget
from dpexp.registry import accepted_params, all_algorithms


def _algorithm_targets(broken: bool) -> list[AuditTarget] | Exception:
    """Targets registered by the paper manifests (or the import error)."""
    try:
        targets = audit_targets(broken=broken).values()
    except Exception as exc:  # reported by the tests below, not as a collection error
        return exc
    # the paper manifests' targets, dpexp's and plugins' (not the primitives of dpexp.audit)
    return [t for t in targets
            if not (target_source(t.name) or "dpexp.audit.").startswith("dpexp.audit.")]


def _params(broken: bool) -> list:
    targets = _algorithm_targets(broken)
    if isinstance(targets, Exception):
        return [pytest.param(targets, id="audit-modules-import")]
    return [pytest.param(t, id=t.name) for t in targets]


def _skip_without_requirements(target: AuditTarget) -> None:
    """An estimator built on an optional package (``AlgorithmInfo.requires``) cannot be
    fitted without it: its target is still required to exist, but runs only where the
    package imports (installed and working with this scikit-learn)."""
    missing = missing_requirements(target)
    if missing:
        pytest.skip(f"{target.algorithm} needs the optional package(s) {', '.join(missing)}")


def _private_algorithms() -> list[str]:
    return sorted(
        name for name, info in all_algorithms().items() if info.private and info.not_dp is None
    )


def test_every_audit_module_of_a_paper_is_in_its_manifest():
    folder = Path(dpexp.papers.__file__).parent
    on_disk = {f"dpexp.papers.{p.parent.name}.audit" for p in folder.glob("*/audit.py")}
    named = {source for source, _, _ in paper_audit_sources()}
    assert on_disk <= named


def test_discovered_targets_are_collected_with_their_module():
    entries = {e.target.name: e for e in catalogue_entries()}
    for source, ref, broken in paper_audit_sources():
        for target in registry.resolve(ref):
            entry = entries[target.name]
            assert entry.target is target and entry.broken == broken
            assert entry.source == source == target_source(target.name)


@pytest.mark.parametrize("algorithm", _private_algorithms())
def test_every_private_algorithm_has_an_end_to_end_target(algorithm):
    targets = _algorithm_targets(broken=False)
    if isinstance(targets, Exception):
        raise targets
    covering = [t.name for t in targets if t.kind == "end-to-end" and t.algorithm == algorithm]
    assert covering, (
        f"no end-to-end audit target names the private algorithm {algorithm!r}: add one to "
        f"the audit_targets of its paper manifest (end_to_end_target(..., algorithm={algorithm!r}))"
    )


def test_end_to_end_targets_name_registered_algorithms():
    registered = set(all_algorithms())
    offenders = sorted(
        f"{target.name} (algorithm={target.algorithm!r}, from {target_source(target.name)})"
        for broken in (False, True)
        for target in audit_targets(broken=broken).values()
        if (target.kind == "end-to-end" or target.algorithm is not None)
        and target.algorithm not in registered
    )
    assert not offenders, (
        "end-to-end targets must name the registered algorithm they audit "
        f"(end_to_end_target(..., algorithm=NAME)): {offenders}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("target", _params(broken=True))
def test_broken_estimator_targets_are_flagged(target):
    if isinstance(target, Exception):
        raise target
    _skip_without_requirements(target)
    result = run_target(target, quick=True, seed=3)
    assert not result.passed, result.summary_line()
    assert result.epsilon_lower_bound > result.claimed_epsilon
    assert result.as_expected, result.summary_line()


def test_broken_estimator_targets_exist():
    targets = _algorithm_targets(broken=True)
    if isinstance(targets, Exception):
        raise targets
    if not targets:
        pytest.skip("no BROKEN_AUDIT_TARGETS registered yet by any paper manifest")
    assert all(not t.expected_to_pass for t in targets)


@pytest.mark.slow
@pytest.mark.parametrize("target", _params(broken=False))
def test_estimator_targets_behave_as_expected(target):
    if isinstance(target, Exception):
        raise target
    _skip_without_requirements(target)
    result = run_target(target, quick=True, seed=4)
    assert result.as_expected, result.summary_line()


# ----------------------------------------------------------------- release paths (issue #38)

#: The broken twin of every finding of issue #38, item 7 (the audit must flag each).
PATH_TWINS = (
    "fletcher_forest_defaults_noise_from_random_state", "jpw_defaults_noise_from_random_state",
    "jpw_runner_n_from_len_x", "inprivate_runner_n_from_len_x",
    "jpw_two_fits_noise_from_random_state", "fletcher_forest_row_keyed_partition",
    "jpw_float_laplace_counts", "jpw_float_laplace_counts_secure",
    "fletcher_forest_observed_domain_is_dp",
)


def _class_sources(algorithm: str) -> str:
    """The source of every dpexp module defining a class of ``algorithm``'s estimators."""
    info = all_algorithms()[algorithm]
    modules = {k.__module__ for task in info.targets for k in info.estimator_class(task).__mro__
               if k.__module__.startswith("dpexp.")}
    return "".join(inspect.getsource(importlib.import_module(m)) for m in sorted(modules))


def test_every_release_path_has_a_target_or_an_exemption():
    missing = uncovered_paths(_private_algorithms(), audit_targets().values())
    assert not missing, (
        "release paths users run with no audit target (dpexp.audit.paths.covering) and "
        f"no exemption (audit_paths.EXEMPTIONS, with its reason): {[str(p) for p in missing]}"
    )


def test_a_new_private_algorithm_fails_the_coverage_until_audited():
    missing = uncovered_paths(["zz_new_algorithm"], audit_targets().values())
    assert [p.path for p in missing] == ["defaults", "runner"]


def test_path_targets_are_correct_end_to_end_targets_of_their_algorithm():
    for broken in (False, True):
        for name, paths in coverage(audit_targets(broken=broken).values()).items():
            target = get_audit_target(name)
            assert not broken, f"{name} covers {paths} but is a broken target"
            assert target.kind == "end-to-end" and target.expected_to_pass
        assert all(p.algorithm == target.algorithm for p in paths)


def test_every_finding_has_a_registered_broken_twin():
    broken = audit_targets(broken=True)
    for name in PATH_TWINS:
        assert name in broken and not broken[name].expected_to_pass, name


def test_exemptions_are_required_and_not_covered():
    required = set(required_paths(_private_algorithms()))
    covered = {p for paths in coverage(audit_targets().values()).values() for p in paths}
    assert set(EXEMPTIONS) <= required, sorted(map(str, set(EXEMPTIONS) - required))
    assert not set(EXEMPTIONS) & covered, "an exempt path has a target: remove its exemption"
    assert all(len(reason) > 40 for reason in EXEMPTIONS.values())


@pytest.mark.parametrize("algorithm", _private_algorithms())
def test_partition_users_are_listed(algorithm):
    source = _class_sources(algorithm)
    if "record_partition(" in source or "record_ids(" in source:
        assert algorithm in PARTITION_ALGORITHMS


@pytest.mark.parametrize("path", sorted(EXEMPTIONS, key=str), ids=str)
def test_each_exemption_premise_holds(path: ReleasePath):
    """The reason of an exemption names a property of the code: check it."""
    source = _class_sources(path.algorithm)
    if path.path == "defaults":
        assert "estimator_streams(" in source
    elif path.path == "runner":
        assert "n_records" not in accepted_params(path.algorithm)
    elif path.path in CANARY_POSITIONS:
        assert "record_ids(" in source  # content ids, never row positions
    elif path.path == "float bits":
        assert "discrete_laplace(" in source
    else:
        pytest.fail(f"no premise check for an exemption of path {path.path!r}")


# ----------------------------------------------------------------- discovery mechanics


def _fake_module(monkeypatch, name: str, **attributes) -> str:
    """A fake paper whose manifest names ``name``'s AUDIT_TARGETS / BROKEN_AUDIT_TARGETS."""
    module = types.ModuleType(f"zz_fake_paper.{name}")
    for key, value in attributes.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    _fake_manifest(monkeypatch, module.__name__, broken="BROKEN_AUDIT_TARGETS" in attributes)
    return module.__name__


def _fake_manifest(monkeypatch, module_name: str, *, broken: bool = False) -> None:
    manifest = registry.PaperManifest(
        paper="fake",
        audit_targets=[f"{module_name}:AUDIT_TARGETS"],
        broken_audit_targets=[f"{module_name}:BROKEN_AUDIT_TARGETS"] if broken else [],
    )
    monkeypatch.setattr(registry, "EXTRA_PAPERS", [manifest])


def _copy(name: str, **changes) -> AuditTarget:
    from dataclasses import replace

    return replace(get_audit_target("laplace"), name=name, **changes)


def test_a_new_audit_module_is_discovered_with_both_lists(monkeypatch):
    good = _copy("_fake_e2e", kind="end-to-end", algorithm="dpboost")
    bad = _copy("_fake_e2e_broken", kind="end-to-end", algorithm="dpboost",
                expected_to_pass=False)
    name = _fake_module(monkeypatch, "zz_fake_audit", AUDIT_TARGETS=[good],
                        BROKEN_AUDIT_TARGETS=[bad])
    assert audit_targets()["_fake_e2e"] is good
    assert audit_targets(broken=True)["_fake_e2e_broken"] is bad
    assert target_source("_fake_e2e") == name
    assert get_audit_target("_fake_e2e_broken") is bad


def test_an_audit_module_that_fails_to_import_is_an_error(monkeypatch):
    _fake_manifest(monkeypatch, "zz_fake_paper.zz_missing_audit")
    with pytest.raises(ImportError, match="zz_missing_audit"):
        audit_targets()


def test_audit_targets_must_be_a_list_of_targets(monkeypatch):
    _fake_module(monkeypatch, "zz_bad_audit", AUDIT_TARGETS=_copy("_fake_single"))
    with pytest.raises(TypeError, match="zz_bad_audit.AUDIT_TARGETS"):
        audit_targets()


def test_two_modules_cannot_register_one_name(monkeypatch):
    _fake_module(monkeypatch, "zz_dup_audit", AUDIT_TARGETS=[_copy("laplace")])
    with pytest.raises(ValueError, match="already registered"):
        audit_targets()
