"""What every command module of the CLI shares: consoles, error reporting, option types and
the parsing of list-valued options. No command lives here."""

from __future__ import annotations

import functools
import math
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from dpexp.cli.interrupts import INTERRUPTED, TERMINATED, Terminated, signals_as_interrupts
from dpexp.errors import DpexpError, DpexpWarning
from dpexp.paths import default_figures_dir, default_results_dir

DEFAULT_EXPERIMENT = "quickstart"
SCALES = ("smoke", "paper")
BACKENDS = ("loky", "threading", "dask")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])


def print_error(message: str) -> None:
    """One ``error:`` line on stderr; ``escape``: messages hold literal brackets
    (pip install 'dpexp[peers]') that rich would otherwise read as markup and drop."""
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def guarded(fn: F) -> F:
    """Report user errors as one paragraph (no traceback) and exit non-zero."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings(), signals_as_interrupts():
            warnings.showwarning = _one_line_warnings(warnings.showwarning)
            try:
                return fn(*args, **kwargs)
            except DpexpError as exc:
                print_error(str(exc))
                raise typer.Exit(exc.exit_code) from None
            except KeyboardInterrupt as exc:
                again = "the same command without --force" if kwargs.get("force") else "the same command"
                how = "terminated" if isinstance(exc, Terminated) else "interrupted"
                err.print(f"{how}: every finished cell is cached; run {again} to resume.")
                raise typer.Exit(TERMINATED if isinstance(exc, Terminated) else INTERRUPTED) from None

    return wrapper  # type: ignore[return-value]


def _one_line_warnings(default: Callable) -> Callable:
    """dpexp's own warnings (:class:`~dpexp.errors.DpexpWarning`: a corrupt cached cell, a
    worker that died, a run waiting for another) as one ``warning:`` line; other warnings
    as Python shows them."""

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, DpexpWarning):
            err.print(f"warning: {message}", highlight=False, markup=False)
        else:
            default(message, category, filename, lineno, file, line)

    return show


def _flags_without_type(cmd) -> None:
    """Show a boolean flag as a flag (``--force``), not ``--force <bool>``: typer's help
    prints a metavar for every option, so a flag's is set to nothing (``--help`` too,
    which click builds afresh for each context)."""
    for param in cmd.params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    if not getattr(cmd, "_dpexp_flags", False):
        cmd.get_help_option = _typeless(cmd.get_help_option)
        cmd._dpexp_flags = True
    for sub in getattr(cmd, "commands", {}).values():
        _flags_without_type(sub)


def _typeless(get_help_option: Callable) -> Callable:
    def wrapped(ctx):
        option = get_help_option(ctx)
        if option is not None and option.metavar is None:
            option.metavar = ""
        return option

    return wrapped


class OneLineErrors(TyperGroup):
    """The root group: typer's own validation errors (a value out of range, an unknown
    option or choice) print as one ``error:`` line, like a :class:`DpexpError`, instead of
    a usage box; exit codes stay typer's (2 for bad usage, 1 for an abort)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        _flags_without_type(self)
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except KeyboardInterrupt:  # Ctrl-C outside a guarded command (e.g. while importing)
            err.print("interrupted")
            sys.exit(INTERRUPTED)
        except typer.Abort as exc:
            if isinstance(exc.__cause__, KeyboardInterrupt):  # click's own Ctrl-C handling
                err.print("interrupted")
                sys.exit(INTERRUPTED)
            err.print("Aborted!")
            sys.exit(1)
        except typer.TyperException as exc:  # typer's (vendored click's) usage errors
            message, ctx = exc.format_message(), getattr(exc, "ctx", None)
            if message:  # empty when the help was printed instead (no arguments given)
                hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
                print_error(f"{message}{hint}")
            sys.exit(getattr(exc, "exit_code", 2))
        # non-standalone, typer returns the code of a typer.Exit, else the command's value
        sys.exit(rv if isinstance(rv, int) else 0)


def choice(kind: str, choices: tuple[str, ...]) -> Callable[[str | None], str | None]:
    """An option callback accepting one of ``choices`` (or no value); the error names the
    kind of value, in the library's words (``Unknown scale 'huge'; use one of smoke, paper.``)."""

    def check(value: str | None) -> str | None:
        if value is not None and value not in choices:
            raise typer.BadParameter(f"Unknown {kind} {value!r}; use one of {', '.join(choices)}.")
        return value

    return check


def parse_list(value: str | None, option: str = "the list") -> list[str] | None:
    """Comma-separated items; an empty item (``1,,2``, a trailing comma) is an error."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",")]
    if not any(items):
        raise DpexpError(f"{option}: expected a comma-separated list, got an empty value.")
    if not all(items):
        raise DpexpError(f"{option}: empty item in {value!r} (a stray comma?).")
    return items


def parse_epsilons(value: str | None) -> list[float] | None:
    """``--epsilons``: finite numbers > 0 (a privacy budget of 0, inf or NaN is no budget)."""
    items = parse_list(value, "--epsilons")
    if items is None:
        return None
    eps = []
    for v in items:
        try:
            f = float(v)
        except ValueError:
            raise DpexpError(f"--epsilons: {v!r} is not a number.") from None
        if math.isnan(f) or f <= 0 or math.isinf(f):
            raise DpexpError(f"--epsilons: epsilon must be a finite number > 0, got {v!r}.")
        eps.append(f)
    return eps


def start_optional_probes(specs: Iterable[Any] | None = None) -> None:
    """Start the import probes of the optional packages of ``specs``' algorithms (default:
    every registered algorithm's), all at once and in the background
    (:func:`dpexp.optional_packages.start_probes`): ``list``, ``plan`` and ``report`` count
    what this machine can run, which asks about each of them, so on a fresh machine the
    probes cost about the slowest import, overlapped with the command's own work, instead
    of their sum one after another (issue 43)."""
    # lazy: the registry reads the papers' manifests, which `dpexp --help` does not need
    from dpexp.optional_packages import start_probes
    from dpexp.registry import all_algorithms

    names = None if specs is None else {a.name for s in specs for a in s.algorithms if a.name}
    start_probes(p for name, info in all_algorithms().items() if names is None or name in names
                 for p in info.requires)


def dirs(results_dir: Path | None, figures_dir: Path | None) -> tuple[Path, Path]:
    """The results and figures directories, defaulting to the project's."""

    return (results_dir or default_results_dir(), figures_dir or default_figures_dir())


def filters(dataset: list[str] | None, algorithms: str | None, epsilons: str | None,
            seeds: list[int] | None):
    """The run-style selection options as a ResultFilter (None where not given)."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.results import ResultFilter

    algos = parse_list(algorithms, "--algorithms")
    eps = parse_epsilons(epsilons)
    return ResultFilter(
        datasets=tuple(dataset) if dataset else None, algorithms=tuple(algos) if algos else None,
        epsilons=tuple(eps) if eps else None, seeds=tuple(seeds) if seeds else None,
    )


# Help texts avoid [square brackets]: rich reads them as markup and prints " ." instead.
ResultsDir = Annotated[Path | None, typer.Option("--results-dir", help="Results and cache directory (default: results/).")]
FiguresDir = Annotated[Path | None, typer.Option("--figures-dir", help="Figures directory (default: figures/).")]
Scale = Annotated[str, typer.Option("--scale", callback=choice("scale", SCALES),
                                    help="smoke (seconds, subsampled) or paper (full).")]
DatasetOpt = Annotated[list[str] | None, typer.Option("--dataset", "-d", help="Dataset(s) (repeatable).")]
AlgorithmsOpt = Annotated[str | None, typer.Option("--algorithms", help="Comma-separated labels or names.")]
EpsilonsOpt = Annotated[str | None, typer.Option("--epsilons", help="Comma-separated epsilons > 0.")]
SeedFilter = Annotated[list[int] | None, typer.Option("--seed", min=0, help="Only these run seeds (repeatable; default: all).")]
RunSeed = Annotated[int, typer.Option("--seed", min=0, help="Run seed; part of every cell (cached per seed).")]
