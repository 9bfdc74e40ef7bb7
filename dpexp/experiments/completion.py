"""How far an experiment is: one definition for ``dpexp list``, ``plan`` and ``report``.

Three numbers, always in this order and always with the same meaning:

* **done**: cells of the spec's grid that are finished (a cached cell or a committed row);
* **here**: cells of the grid this machine can have: the done ones, and the others whose
  dataset is here (synthetic, downloaded, or in a data-mirror folder) and whose algorithm's
  optional package imports;
* **grid**: every cell of the spec's grid, as the paper ran it.

"done = here" is complete *for this machine*; it is complete for the paper only when
"here = grid". What keeps a cell off this machine is named: the datasets and the packages.
Finished cells outside the grid (other seeds, override runs, a peer's column) are counted
apart ("+N"), never as done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from dpexp.experiments.cells import Cell
from dpexp.experiments.environment import dataset_available, optional_unavailable
from dpexp.experiments.spec import ExperimentSpec
from dpexp.registry import get_algorithm

__all__ = [
    "COMPLETION_HEADER", "Availability", "Completion", "Tally", "completion", "missing_packages",
    "tally_completion",
]

#: The column header every command uses for :meth:`Completion.text`.
COMPLETION_HEADER = "done / here / grid"


class Availability:
    """Whether a dataset can be had on this machine, asked once per name
    (:func:`dpexp.experiments.environment.dataset_available`)."""

    def __init__(self, check: Callable[[str], bool] | None = None) -> None:
        self._check = check
        self._known: dict[str, bool] = {}

    def __call__(self, name: str) -> bool:
        if name not in self._known:
            self._known[name] = (self._check or dataset_available)(name)
        return self._known[name]


@dataclass(frozen=True)
class Completion:
    """Cells done / that can be had here / in the grid (module docstring)."""

    done: int
    here: int
    grid: int
    #: finished cells outside the grid (other seeds, overrides, peers' columns)
    outside: int = 0
    #: datasets of the grid this machine cannot load (none of their cells done)
    datasets_missing: tuple[str, ...] = ()
    #: "label (package)" of series whose optional package does not import here
    packages_missing: tuple[str, ...] = ()

    def text(self) -> str:
        """``"750 / 750 / 1250"`` (and ``" +360"`` for cells outside the grid)."""
        extra = f" +{self.outside}" if self.outside else ""
        return f"{self.done} / {self.here} / {self.grid}{extra}"

    def why_not_here(self) -> str:
        """What keeps cells of the grid off this machine ("" when nothing does)."""
        parts = []
        if self.datasets_missing:
            parts.append("datasets not here: " + ", ".join(self.datasets_missing))
        if self.packages_missing:
            parts.append("packages not installed: " + ", ".join(self.packages_missing))
        return "; ".join(parts)

    def __add__(self, other: Completion) -> Completion:
        return Completion(
            self.done + other.done, self.here + other.here, self.grid + other.grid,
            self.outside + other.outside,
            tuple(dict.fromkeys((*self.datasets_missing, *other.datasets_missing))),
            tuple(dict.fromkeys((*self.packages_missing, *other.packages_missing))))


@dataclass(frozen=True)
class Tally:
    """Cells of one dataset and series: how many the grid has and how many are done (a
    grid point's, or a single cell's)."""

    dataset: str
    label: str
    cells: int
    done: int


def tally_completion(tallies: Iterable[Tally], available: Callable[[str], bool],
                     lacking: Mapping[str, str] | None = None, outside: int = 0) -> Completion:
    """The :class:`Completion` of a grid given as :class:`Tally` groups: ``available``
    says which datasets load here, ``lacking`` maps a series label to the optional package
    it needs and lacks."""
    lacking = lacking or {}
    done = here = grid = 0
    missing: dict[str, None] = {}
    with_data: set[str] = set()
    for t in tallies:
        grid += t.cells
        done += t.done
        here += t.done
        if t.done:
            with_data.add(t.dataset)
        if t.cells == t.done:
            continue
        if available(t.dataset):
            here += (t.cells - t.done) * (t.label not in lacking)
        else:
            missing[t.dataset] = None
    datasets = tuple(sorted(n for n in missing if n not in with_data))
    packages = tuple(sorted({f"{label} ({pkg})" for label, pkg in lacking.items()}))
    return Completion(done, here, grid, outside, datasets, packages)


def completion(cells: Iterable[Cell], is_done: Callable[[Cell], bool],
               available: Callable[[str], bool], lacking: Mapping[str, str] | None = None,
               outside: int = 0) -> Completion:
    """The :class:`Completion` of the grid ``cells``: ``is_done`` says which are finished
    (:func:`tally_completion`, a cell at a time)."""
    return tally_completion(
        (Tally(c.dataset.name, c.label, 1, int(bool(is_done(c)))) for c in cells),
        available, lacking, outside)


def missing_packages(spec: ExperimentSpec, labels: set[str] | None = None) -> dict[str, str]:
    """Series of ``spec`` (those of ``labels``, default all) whose algorithm needs an
    optional package that does not import here: label -> package (``dpexp run`` skips
    them, so their cells are not "here")."""
    out = {}
    for a in spec.algorithms:
        if (labels is None or a.label in labels) and a.name and get_algorithm(a.name).requires:
            why = optional_unavailable(get_algorithm(a.name).requires)
            if why:
                out[a.label] = why.split(" ")[0]
    return out
