"""The registry: papers, their algorithms, procedures and audit targets -- discovered.

Every method lives in a *paper package* that exports one :class:`PaperManifest` (attribute
``MANIFEST`` of the package, usually written in its ``__init__.py``). Manifests are found,
never listed by hand, in two places (:func:`paper_manifests`):

* every subpackage of :mod:`dpexp.papers` (found with :func:`pkgutil.iter_modules`; names
  starting with ``_`` are skipped), and
* every entry point of the group ``dpexp.papers``
  (``importlib.metadata.entry_points(group="dpexp.papers")``): a pip package of your own
  declares ``[project.entry-points."dpexp.papers"] mymethod = "mypkg"`` (a module with a
  ``MANIFEST``) or ``"mypkg.manifest:MANIFEST"`` (the manifest object itself).

Algorithms, procedures and end-to-end audit targets are all read from the manifests by
this one loader. A manifest stays cheap to import: an :class:`AlgorithmInfo` names its
estimator classes as ``"module:Class"`` strings, procedures and audit targets are
``"module:attribute"`` strings resolved on first use, so listing algorithms imports no
numba-heavy module. For the same reason an :class:`AlgorithmInfo` declares
``param_names``, the names of the parameters its estimator classes accept (the union of
their ``get_params()`` over its tasks): applying a spec's scale overrides (and so
``dpexp list``) reads them from the manifest instead of importing every estimator, and with
it scikit-learn, numba and scipy. An algorithm that declares none (a plugin may leave them
out) has them read from its classes by :func:`accepted_params`; ``tests/test_registry.py``
checks every declaration against the classes, so one cannot drift from them.

An estimator used by the runner must follow scikit-learn conventions (``fit(X, y)``,
``predict``, ``get_params``), accept ``random_state`` and, when ``private`` is true,
``epsilon``. After ``fit`` a private estimator exposes ``accountant_`` (see
:mod:`dpexp.privacy`) so the runner can record ``epsilon_spent``/``delta_spent`` and the
ledger. An estimator may also expose ``diagnostics_``: a dict of extra per-fit numbers
(e.g. ``n_filtered``, ``empty_leaf_fraction``) that the runner records as metrics.

Public dataset metadata is injected into estimator parameters of the same name when the
spec does not set them (see :data:`PUBLIC_PARAMS`): this is how candidate split points
come from the public feature domain rather than from the private data.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from dpexp import optional_packages
from dpexp.errors import DpexpError, UnknownNameError
from dpexp.side_envs import SIDE_ENVS, how_to_get, side_python

#: The package whose subpackages are papers.
PAPERS_PACKAGE = "dpexp.papers"
#: The entry-point group of paper packages installed separately.
ENTRY_POINT_GROUP = "dpexp.papers"
#: Extra manifests (objects, or module paths / ``"module:attr"`` strings) added after the
#: discovered ones; tests monkeypatch it to register a fake paper.
EXTRA_PAPERS: list[Any] = []

#: Estimator parameters the runner fills from the dataset's public metadata.
PUBLIC_PARAMS = (
    "feature_domain", "categorical_features", "n_categories", "label_domain", "classes",
)


@dataclass(frozen=True)
class TreeParams:
    """Which estimator parameters count an algorithm's trees and set their depth (None: it
    has no such parameter). Declared in the manifest, read by the runner's warm-up and the
    plan, so neither guesses parameter names."""

    #: The number of trees (``n_trees``, ``n_estimators``).
    trees: str | None = None
    #: Trees per ensemble when the trees come in ensembles (DPBoost's ``trees_per_ensemble``).
    per_ensemble: str | None = None
    #: The depth of a tree (``max_depth``, ``depth``).
    depth: str | None = None

    @property
    def counts(self) -> tuple[str, ...]:
        """The parameters that count trees."""
        return tuple(p for p in (self.trees, self.per_ensemble) if p)

    def tree_count(self, params: dict[str, Any]) -> int | None:
        """The number of trees ``params`` grow (None when not a positive integer given)."""
        n = params.get(self.trees) if self.trees else None
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


@dataclass(frozen=True)
class AlgorithmInfo:
    """One registered algorithm.

    ``targets`` maps a task (``"classification"``/``"regression"``) to
    ``"module:Class"``; a task missing from it is not supported by the algorithm.
    """

    name: str
    targets: dict[str, str]
    private: bool
    paper: str
    description: str
    default_params: dict[str, Any] = field(default_factory=dict)
    #: Why the algorithm, although it takes an epsilon, gives no DP guarantee (None: it
    #: does). Parameter-dependent cases mark the fit's accountant instead
    #: (``Accountant.mark_not_dp``).
    not_dp: str | None = None
    #: Optional packages the estimator imports at fit time (checked before a run starts).
    requires: tuple[str, ...] = ()
    #: Its tree-count and depth parameters.
    tree_params: TreeParams = field(default_factory=TreeParams)
    #: The names of the parameters its estimator classes accept, over every task (the union
    #: of their ``get_params()``), so that :func:`accepted_params` imports no estimator
    #: module; empty: read from the classes (see the module docstring).
    param_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.param_names, str):  # a bare string would read as its letters
            raise DpexpError(f"Algorithm {self.name!r}: param_names must be a tuple of names, "
                             f"not the string {self.param_names!r}.")

    def estimator_class(self, task: str):
        if task not in self.targets:
            raise DpexpError(
                f"Algorithm {self.name!r} does not support {task} tasks "
                f"(it supports: {', '.join(self.targets)})."
            )
        module, _, attr = self.targets[task].partition(":")
        return getattr(importlib.import_module(module), attr)


#: A reference resolved on first use: ``"module:attribute"`` (or ``"module"``), or the object.
Ref = Any


@dataclass(frozen=True)
class PaperManifest:
    """What one paper package contributes (its ``MANIFEST``).

    * ``paper``: the paper's id (e.g. ``"dpboost-li-2020"``), the ``paper`` of its specs.
    * ``algorithms``: its :class:`AlgorithmInfo` entries (estimators as ``"module:Class"``).
    * ``procedures``: ``{name: "module:function"}`` (or the function); see
      :mod:`dpexp.experiments.procedures` for the procedure contract.
    * ``audit_targets`` / ``broken_audit_targets``: references (``"module:ATTR"``, resolved
      on first use) to lists of :class:`dpexp.audit.targets.AuditTarget` -- the end-to-end
      audit of its private estimators, and the deliberately broken variants the audit
      must flag.
    * ``common_test_params``: ``{algorithm name: small params}`` for the common estimator
      tests (``tests/test_common_estimators.py``); an algorithm left out is tested with its
      ``default_params``; private ones need an ``epsilon`` there.
    * ``expected_failed_checks``: ``{algorithm name: {sklearn check name: reason}}``, the
      scikit-learn checks that cannot pass for a DP estimator (marked expected-to-fail).
    """

    paper: str
    algorithms: Sequence[AlgorithmInfo] = ()
    procedures: Mapping[str, Ref] = field(default_factory=dict)
    audit_targets: Sequence[Ref] = ()
    broken_audit_targets: Sequence[Ref] = ()
    common_test_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    expected_failed_checks: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: Where the manifest was found (filled by the loader).
    source: str = ""


def resolve(ref: Ref) -> Any:
    """``"module:attribute"`` -> the attribute, ``"module"`` -> the module; else ``ref``."""
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def _as_manifest(obj: Any, source: str) -> PaperManifest:
    if isinstance(obj, ModuleType):
        obj = getattr(obj, "MANIFEST", None)
        if obj is None:
            raise DpexpError(f"paper package {source} has no MANIFEST (a dpexp.registry.PaperManifest)")
    if callable(obj) and not isinstance(obj, PaperManifest):
        obj = obj()
    if not isinstance(obj, PaperManifest):
        raise DpexpError(f"{source} is not a dpexp.registry.PaperManifest (got {type(obj).__name__})")
    return obj if obj.source else _with_source(obj, source)


def _with_source(manifest: PaperManifest, source: str) -> PaperManifest:
    from dataclasses import replace

    return replace(manifest, source=source)


def in_tree_paper_modules() -> list[str]:
    """Every paper package under :mod:`dpexp.papers` (pkgutil; ``_private`` ones skipped)."""
    package = importlib.import_module(PAPERS_PACKAGE)
    return sorted(
        f"{PAPERS_PACKAGE}.{info.name}"
        for info in pkgutil.iter_modules(package.__path__)
        if info.ispkg and not info.name.startswith("_")
    )


def _entry_point_manifests() -> list[PaperManifest]:
    out = []
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
        except Exception as exc:
            raise DpexpError(
                f"paper entry point {ep.name!r} ({ep.value}) failed to import: {exc}"
            ) from exc
        out.append(_as_manifest(obj, f"entry point {ep.name} = {ep.value}"))
    return out


_discovered: list[PaperManifest] | None = None


def refresh() -> None:
    """Forget the discovered manifests (after changing ``sys.path`` or installing a paper)."""
    global _discovered
    _discovered = None
    importlib.invalidate_caches()


def paper_manifests() -> list[PaperManifest]:
    """Every paper's manifest: ``dpexp.papers.*``, then entry points, then :data:`EXTRA_PAPERS`.

    The discovered ones are cached for the process (:func:`refresh` forgets them).
    """
    global _discovered
    if _discovered is None:
        found = [_as_manifest(importlib.import_module(m), m) for m in in_tree_paper_modules()]
        _discovered = found + _entry_point_manifests()
    extra = [
        _as_manifest(resolve(ref), ref if isinstance(ref, str) else repr(ref)) for ref in EXTRA_PAPERS
    ]
    return [*_discovered, *extra]


def all_algorithms() -> dict[str, AlgorithmInfo]:
    """Every registered algorithm by name."""
    return dict(_algorithms_by_name())


#: :func:`_algorithms_by_name`'s last table and the manifests it was made from: the
#: discovered manifests are kept for the process, so asking again (a grid asks 5,000
#: times) reuses the table until :func:`refresh` or :data:`EXTRA_PAPERS` changes them.
_algorithms_memo: list[tuple[tuple[PaperManifest, ...], dict[str, AlgorithmInfo]]] = []


def _algorithms_by_name() -> dict[str, AlgorithmInfo]:
    manifests = tuple(paper_manifests())
    if _algorithms_memo:
        made_from, table = _algorithms_memo[0]
        if len(made_from) == len(manifests) and all(
                a is b for a, b in zip(made_from, manifests, strict=True)):
            return table
    out: dict[str, AlgorithmInfo] = {}
    where: dict[str, str] = {}
    for manifest in manifests:
        for info in manifest.algorithms:
            if info.name in out:
                raise RuntimeError(
                    f"algorithm {info.name!r} registered twice ({where[info.name]} and {manifest.source})"
                )
            out[info.name] = info
            where[info.name] = manifest.source
    _algorithms_memo[:] = [(manifests, out)]
    return out


def manifest_procedures() -> dict[str, Ref]:
    """Every paper's procedures, unresolved: name -> ``"module:function"`` (or function)."""
    out: dict[str, Ref] = {}
    for manifest in paper_manifests():
        for name, ref in manifest.procedures.items():
            if name in out:
                raise RuntimeError(f"procedure {name!r} registered twice")
            out[name] = ref
    return out


def manifest_audit_refs(*, broken: bool) -> list[tuple[str, Ref]]:
    """``(source, reference)`` of every paper's (broken) audit-target lists."""
    out = []
    for manifest in paper_manifests():
        for ref in (manifest.broken_audit_targets if broken else manifest.audit_targets):
            out.append((ref.partition(":")[0] if isinstance(ref, str) else manifest.source, ref))
    return out


def common_test_params(name: str) -> dict[str, Any]:
    """The small parameters a paper declares for the common tests of algorithm ``name``."""
    for manifest in paper_manifests():
        if name in manifest.common_test_params:
            return dict(manifest.common_test_params[name])
    return {}


def import_failure(package: str) -> str | None:
    """Why the optional ``package`` does not import here, or None when it does. Installed
    but broken counts as not importable (diffprivlib 0.6 next to scikit-learn >= 1.6
    fails on import, not on lookup); the import is tried once per installed version, in
    a child interpreter (:mod:`dpexp.optional_packages`), so asking loads nothing here."""
    return optional_packages.import_failure(package)


def package_unavailable(package: str) -> str | None:
    """Why the optional ``package`` cannot be used here, or None when it can: it imports
    in this process, or a side environment provides it (:mod:`dpexp.side_envs`; only
    diffprivlib, whose estimator fits there when the import here fails).
    :func:`install_hint` says how to get it."""
    why = import_failure(package)
    if why is None or (package in SIDE_ENVS and side_python(package) is not None):
        return None
    return why


#: Extras that exist for development, not to provide a feature (never suggested).
_DEVELOPMENT_EXTRAS = ("test", "bench")


def extra_providing(package: str) -> tuple[str, str] | None:
    """``(extra, distribution)``: the extra of dpexp's installed metadata whose
    requirements provide the importable ``package`` (a distribution named ``package`` or
    ``package-...``, e.g. ``interpret`` from ``interpret-core``), or None."""
    try:
        requirements = importlib.metadata.requires("dpexp") or []
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return None
    want = package.lower().replace("_", "-")
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", requirement)
        if not (name and extra) or extra.group(1) in _DEVELOPMENT_EXTRAS:
            continue
        dist = name.group(0).lower().replace("_", "-")
        if dist == want or dist.startswith(f"{want}-"):
            return extra.group(1), name.group(0)
    return None


def install_hint(package: str) -> str:
    """How to make the optional ``package`` available (one clause): its side environment,
    else the extra that provides it."""
    if package in SIDE_ENVS:
        return how_to_get(package)
    provided = extra_providing(package)
    if provided is None:
        return f"install it with pip install {package}"
    extra, dist = provided
    return f'install it with pip install "dpexp[{extra}]" (or pip install {dist})'


def get_algorithm(name: str) -> AlgorithmInfo:
    algos = _algorithms_by_name()
    if name not in algos:
        raise UnknownNameError("algorithm", name, algos)
    return algos[name]


def accepted_params(name: str) -> set[str]:
    """Parameter names any of ``name``'s estimator classes accepts: its declared
    ``param_names`` (no estimator module imported), or, when it declares none, the
    ``get_params()`` of a default instance of each of its classes."""
    info = get_algorithm(name)
    if info.param_names:
        return set(info.param_names)
    out: set[str] = set()
    for task in info.targets:
        out |= set(info.estimator_class(task)().get_params())
    return out


def make_estimator(
    name: str,
    task: str,
    params: dict[str, Any],
    *,
    epsilon: float | None,
    random_state: int,
    public: dict[str, Any] | None = None,
    noise_rng: Any = None,
):
    """Instantiate algorithm ``name`` for ``task`` with ``params``.

    ``epsilon`` is passed only to private algorithms; ``public`` metadata fills the
    estimator's :data:`PUBLIC_PARAMS` that ``params`` leaves unset. ``noise_rng`` goes to
    estimators that take one (None: their default, fresh OS entropy); the runner passes
    :func:`dpexp.privacy.randomness.seeded_noise` of the cell's seed (reproducible noise).
    """
    info = get_algorithm(name)
    cls = info.estimator_class(task)
    kwargs = {**info.default_params, **params}
    accepted = set(cls().get_params())
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise DpexpError(
            f"Algorithm {name!r} has no parameter(s) {', '.join(unknown)}; "
            f"its parameters are: {', '.join(sorted(accepted))}."
        )
    if info.private:
        kwargs["epsilon"] = epsilon
    if "random_state" in accepted:
        kwargs["random_state"] = random_state
    if noise_rng is not None and "noise_rng" in accepted:
        kwargs["noise_rng"] = noise_rng
    for key in PUBLIC_PARAMS:
        if public and key in accepted and kwargs.get(key) is None and key in public:
            kwargs[key] = public[key]
    return cls(**kwargs)
