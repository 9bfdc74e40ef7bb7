"""The catalog of experiment specs: the shipped ones (``experiments/``) and a user's
(``$DPEXP_EXPERIMENTS_DIR``), by id and alias; a broken file breaks only itself."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dpexp.errors import SpecError, UnknownNameError
from dpexp.experiments.shared_cells import cells_from_problem
from dpexp.experiments.spec import ExperimentSpec
from dpexp.experiments.spec_checks import reprint_target, spec_error
from dpexp.experiments.spec_parse import load_spec_file
from dpexp.paths import project_root


@dataclass
class SpecCatalog:
    """The loadable specs, and the files that failed to load (stem -> error).

    A broken file breaks only itself: ``dpexp list`` and every other spec still work, and
    using it (``dpexp run NAME``) reports its error, naming the file.
    """

    specs: dict[str, ExperimentSpec]
    errors: dict[str, SpecError]


def builtin_experiments_dir() -> Path:
    """The shipped specs: ``experiments/`` of the project."""
    return project_root() / "experiments"


def user_experiments_dir() -> Path | None:
    """``$DPEXP_EXPERIMENTS_DIR``: specs of your own, added to the built-in ones."""
    env = os.environ.get("DPEXP_EXPERIMENTS_DIR")
    return Path(env).expanduser() if env else None


def _add_spec(catalog: SpecCatalog, spec: ExperimentSpec, taken: dict[str, str]) -> None:
    """Add ``spec`` unless its id or an alias is already used (then record the error)."""
    clash = [n for n in (spec.id, *spec.aliases) if n in taken]
    if clash:
        catalog.errors[spec.path.stem] = SpecError(
            f"{spec.path}: {clash[0]!r} is already used by {taken[clash[0]]}; rename it."
        )
        return
    catalog.specs[spec.id] = spec
    for n in (spec.id, *spec.aliases):
        taken[n] = str(spec.path)


def load_catalog(directory: Path | None = None) -> SpecCatalog:
    """Specs of ``directory``, or the built-in ones plus ``$DPEXP_EXPERIMENTS_DIR``'s."""
    dirs = [directory] if directory else [builtin_experiments_dir(), user_experiments_dir()]
    catalog = SpecCatalog({}, {})
    taken: dict[str, str] = {}
    for d in dirs:
        if d is None:
            continue
        if not d.is_dir():
            catalog.errors[str(d)] = SpecError(f"DPEXP_EXPERIMENTS_DIR={d} is not a directory.")
            continue
        for p in sorted(d.glob("*.yaml")):
            try:
                spec = load_spec_file(p)
            except SpecError as exc:
                catalog.errors[p.stem] = SpecError(f"{p}: {str(exc).removeprefix(p.name + ': ')}")
                continue
            _add_spec(catalog, spec, taken)
    _check_cells_from(catalog)
    _check_reprints(catalog)
    return catalog


def _check_reprints(catalog: SpecCatalog) -> None:
    """Move every spec whose ``same_as`` names another spec's value wrongly (no such spec,
    not exactly one original, another number) to the catalog's errors."""
    for spec in list(catalog.specs.values()):
        for i, v in enumerate(spec.paper_values.get("values") or []):
            link = v.get("same_as")
            if not link or link.get("experiment", spec.id) == spec.id:
                continue
            other = catalog.specs.get(link["experiment"])
            try:
                if other is None:
                    raise spec_error(spec.path, f"key paper_values.values[{i}].same_as names "
                                          f"experiment {link['experiment']!r}, which does not load.")
                target = reprint_target(spec.path, f"paper_values.values[{i}]", link,
                                        other.paper_values.get("values") or [])
                if float(target["value"]) != float(v["value"]):
                    raise spec_error(spec.path, f"key paper_values.values[{i}].same_as names a value "
                                          "that is not the same number.")
            except SpecError as exc:
                del catalog.specs[spec.id]
                catalog.errors[spec.path.stem] = SpecError(f"{spec.path}: {str(exc).removeprefix(spec.path.name + ': ')}")
                break


def _check_cells_from(catalog: SpecCatalog) -> None:
    """Move every spec whose ``cells_from`` is not a superset grid to the catalog's errors."""
    for spec in [s for s in catalog.specs.values() if s.cells_from]:
        problem = cells_from_problem(spec, catalog.specs.get(spec.cells_from))
        if problem:
            del catalog.specs[spec.id]
            catalog.errors[spec.path.stem] = SpecError(f"{spec.path}: key 'cells_from': {problem}")


def cells_source(spec: ExperimentSpec) -> ExperimentSpec:
    """The spec that holds ``spec``'s cells: the one ``cells_from`` names, else ``spec``."""
    if not spec.cells_from:
        return spec
    try:
        return resolve(spec.cells_from)
    except SpecError:  # a spec loaded from a folder of its own: look beside it
        return resolve(spec.cells_from, spec.path.parent)


def all_specs(directory: Path | None = None) -> dict[str, ExperimentSpec]:
    """Every loadable spec by id (see :func:`load_catalog`; broken files are left out)."""
    return load_catalog(directory).specs


def alias_map(specs: dict[str, ExperimentSpec]) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in specs.values():
        for a in s.aliases:
            if a in out or a in specs:
                raise SpecError(f"{s.path.name}: alias {a!r} is already used by {out.get(a, a)!r}.")
            out[a] = s.id
    return out


def _looks_like_path(name: str) -> bool:
    return name.endswith((".yaml", ".yml")) or "/" in name or os.sep in name


def resolve(name: str, directory: Path | None = None) -> ExperimentSpec:
    """The spec named ``name``: an id, an alias, or a path to a spec file.

    Suggests close names if unknown; a broken spec file named ``name`` reports its error.
    """
    if _looks_like_path(name):
        path = Path(name).expanduser()
        if not path.is_file():
            raise SpecError(f"spec file {path} does not exist.")
        return load_spec_file(path)
    catalog = load_catalog(directory)
    specs = catalog.specs
    if name in specs:
        return specs[name]
    aliases = alias_map(specs)
    if name in aliases:
        return specs[aliases[name]]
    if name in catalog.errors:
        raise catalog.errors[name]
    raise UnknownNameError("experiment", name, [*specs, *aliases])
