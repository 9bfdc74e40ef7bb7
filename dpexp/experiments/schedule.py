"""The order in which a run hands its cells to the workers: longest first.

A run of ``--jobs k`` ends when its last cell ends. Handed out in the spec's order, the
slowest cells of an experiment often come last (DPBoost Table 2 lists synthetic_reg, whose
NP cells take about 40 minutes each, after every other dataset), and the run then ends
with one worker busy and the others idle for most of a cell. Handing the longest cells out
first (the LPT rule) bounds that tail by the shortest cells instead.

A cell's expected time is the median measured time of the finished cells of its
(dataset, algorithm label) group in the same experiment and scale: the cached cells' if
there are any (a re-timing run's), else the committed ones' (the first tier of
:mod:`dpexp.experiments.plan`). Cells of a group without a measurement
keep the spec's order, ahead of the measured ones (their time is unknown, so they are
not assumed short). The order never changes a cell's numbers: those depend only on its
key.
"""

from __future__ import annotations

from pathlib import Path

from dpexp.experiments.cells import Cell
from dpexp.experiments.timings import Measurements, own_cells, own_median


def group_seconds(measurements: Measurements, experiment: str) -> dict[tuple[str, str], float]:
    """(dataset key, label) -> the plan's measured seconds per cell of that group
    (:func:`~dpexp.experiments.plan.own_median`: cached cells first, then committed)."""
    medians = {}
    for group, by_source in own_cells(measurements, experiment).items():
        found = own_median(by_source)
        if found is not None:
            medians[group] = found[0]
    return medians


def longest_first(cells: list[Cell], results_dir: Path, scale: str) -> list[Cell]:
    """``cells`` with the unmeasured groups first (in the given order), then the measured
    ones by decreasing expected seconds (ties in the given order)."""
    measurements = Measurements(Path(results_dir), scale)
    medians: dict[str, dict[tuple[str, str], float]] = {}
    expected: list[float] = []
    for cell in cells:
        if cell.experiment not in medians:
            medians[cell.experiment] = group_seconds(measurements, cell.experiment)
        seconds = medians[cell.experiment].get((cell.dataset.key, cell.label))
        expected.append(float("inf") if seconds is None else seconds)
    order = sorted(range(len(cells)), key=lambda i: -expected[i])  # stable: ties keep order
    return [cells[i] for i in order]
