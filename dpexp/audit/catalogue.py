"""Which targets the audit knows: collected from declarations, never registered.

Two kinds of declaration, both lists of :class:`~dpexp.audit.targets.AuditTarget` named by
``"module:ATTR"`` references and imported on first use:

* :data:`BUILTIN_TARGET_LISTS`, the audit package's own targets:
  :mod:`dpexp.audit.mechanism_targets` (mechanisms, demo forest),
  :mod:`dpexp.audit.domain_targets` (the DP feature-domain estimate of
  :mod:`dpexp.privacy.bounds`) and :mod:`dpexp.audit.broken_targets` (deliberately broken
  fixtures that test the audit itself);
* every paper's manifest (:func:`dpexp.registry.paper_manifests`: the ``dpexp.papers``
  packages, the ``dpexp.papers`` entry points and ``registry.EXTRA_PAPERS``) names its
  ``audit_targets`` -- the end-to-end targets of its real estimators, known-unprivate
  variants with ``expected_to_pass=False`` -- and ``broken_audit_targets`` (the estimator
  deliberately broken, e.g. a data-derived domain, which the audit must flag).

:func:`catalogue_entries` reads them all afresh on every call (importing a module twice
is free), so nothing is registered at import time and no list is kept here: a paper
added to ``registry.EXTRA_PAPERS`` is seen by the next call. A reference that fails to
import is an error, not a skipped module: a silently missing audit is exactly how a
privacy break goes unnoticed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dpexp.audit.targets import AuditTarget
from dpexp.errors import UnknownNameError
from dpexp.registry import all_algorithms, manifest_audit_refs, package_unavailable, resolve

__all__ = [
    "BUILTIN_TARGET_LISTS",
    "CatalogueEntry",
    "audit_sources",
    "audit_targets",
    "catalogue_entries",
    "get_audit_target",
    "missing_requirements",
    "paper_audit_sources",
    "target_source",
]

#: ``("module:ATTR", broken)`` of the audit package's own target lists, in the order the
#: audit runs them (before every paper's targets).
BUILTIN_TARGET_LISTS: tuple[tuple[str, bool], ...] = (
    ("dpexp.audit.mechanism_targets:AUDIT_TARGETS", False),
    ("dpexp.audit.domain_targets:AUDIT_TARGETS", False),
    ("dpexp.audit.domain_targets:BROKEN_AUDIT_TARGETS", True),
    ("dpexp.audit.broken_targets:BROKEN_AUDIT_TARGETS", True),
)


@dataclass(frozen=True)
class CatalogueEntry:
    """One declared target, the module that declares it and whether it is a broken one."""

    target: AuditTarget
    source: str
    broken: bool


def paper_audit_sources() -> list[tuple[str, Any, bool]]:
    """``(source module, reference, broken)`` of every paper manifest's audit-target lists."""
    return [
        (source, ref, broken)
        for broken in (False, True)
        for source, ref in manifest_audit_refs(broken=broken)
    ]


def audit_sources(*, include_algorithms: bool = True) -> list[tuple[str, Any, bool]]:
    """``(source module, reference, broken)`` of every target list: the built-in ones, then
    (``include_algorithms``) the paper manifests'."""
    builtin = [(ref.partition(":")[0], ref, broken) for ref, broken in BUILTIN_TARGET_LISTS]
    return builtin + (paper_audit_sources() if include_algorithms else [])


def _targets_of(targets: Any, where: str) -> list[AuditTarget]:
    if callable(targets) and not isinstance(targets, AuditTarget):
        targets = targets()
    if isinstance(targets, AuditTarget | str | Mapping) or not isinstance(targets, Sequence):
        raise TypeError(f"{where} must be a list of AuditTarget")
    for target in targets:
        if not isinstance(target, AuditTarget):
            raise TypeError(f"{where} must be a list of AuditTarget, got {type(target).__name__}")
    return list(targets)


def _declared_targets(source: str, ref: Any) -> list[AuditTarget]:
    """Resolve one reference (``"module:ATTR"``) to its list of targets."""
    try:
        targets = resolve(ref)
    except Exception as exc:
        raise ImportError(f"audit module {source} failed to import: {exc}") from exc
    return _targets_of(targets, ref if isinstance(ref, str) else source)


def catalogue_entries(*, include_algorithms: bool = True) -> tuple[CatalogueEntry, ...]:
    """Every declared target in audit order: the correct ones, then the broken ones.

    ``include_algorithms`` also reads every paper manifest's targets (which imports the
    estimators); without it only the built-in targets (mechanisms, demo, domain estimate,
    broken fixtures). A name declared twice (by any two lists) is an error.
    """
    seen: dict[str, CatalogueEntry] = {}
    for source, ref, broken in audit_sources(include_algorithms=include_algorithms):
        for target in _declared_targets(source, ref):
            earlier = seen.get(target.name)
            if earlier is not None:
                if earlier.target is target and earlier.broken == broken:
                    continue
                raise ValueError(
                    f"audit target {target.name!r} is already registered (by {earlier.source})"
                )
            seen[target.name] = CatalogueEntry(target, source, broken)
    entries = list(seen.values())
    return tuple([e for e in entries if not e.broken] + [e for e in entries if e.broken])


def audit_targets(
    *, broken: bool = False, include_algorithms: bool = True
) -> dict[str, AuditTarget]:
    """The declared targets by name (the broken ones when ``broken``).

    ``include_algorithms`` also loads every paper manifest's audit targets (which
    imports the estimators); without it only the mechanisms and the demo are loaded.
    """
    return {
        e.target.name: e.target
        for e in catalogue_entries(include_algorithms=include_algorithms)
        if e.broken == broken
    }


def _find(name: str, broken: bool | None) -> tuple[CatalogueEntry | None, list[str]]:
    """The entry of ``name`` (the estimators are imported only if needed) and every name."""
    known: list[str] = []
    for include_algorithms in (False, True):
        entries = [
            e for e in catalogue_entries(include_algorithms=include_algorithms)
            if broken is None or e.broken == broken
        ]
        for entry in entries:
            if entry.target.name == name:
                return entry, []
        known = [e.target.name for e in entries]
    return None, known


def get_audit_target(name: str, *, broken: bool | None = None) -> AuditTarget:
    """Look a target up by name (correct and broken ones when ``broken`` is None)."""
    entry, known = _find(name, broken)
    if entry is None:
        raise UnknownNameError("audit target", name, known)
    return entry.target


def target_source(name: str) -> str | None:
    """The module that declares target ``name`` (None if no list declares it)."""
    entry, _ = _find(name, None)
    return None if entry is None else entry.source


def missing_requirements(target: AuditTarget) -> list[str]:
    """Optional packages the audited algorithm needs (``AlgorithmInfo.requires``) that
    cannot be used here (absent, or installed but failing on import, and no side
    environment provides them); such a target cannot run on this machine."""
    if target.algorithm is None:
        return []
    info = all_algorithms().get(target.algorithm)
    return [r for r in (info.requires if info else ()) if package_unavailable(r) is not None]
