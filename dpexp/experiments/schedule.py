"""The order in which a run hands its cells to the workers: longest first.

A run of ``--jobs k`` ends when its last cell ends. Handed out in the spec's order, the
slowest cells of an experiment often come last (DPBoost Table 2 lists synthetic_reg, whose
NP cells take about 40 minutes each, after every other dataset), and the run then ends
with one worker busy and the others idle for most of a cell. Handing the longest cells out
first (the LPT rule) bounds that tail by the shortest cells instead.

A cell's expected time is the median measured time of the finished cells of its
(dataset, algorithm label) group in the same experiment and scale, cached or committed (the
measurements of :mod:`dpexp.experiments.plan`). Cells of a group without a measurement
keep the spec's order, ahead of the measured ones (their time is unknown, so they are
not assumed short). The order never changes a cell's numbers: those depend only on its
key (docs/ARCHITECTURE.md, "Reproducibility").
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from dpexp.experiments.cells import Cell
from dpexp.experiments.plan import Measurements


def group_seconds(measurements: Measurements, experiment: str) -> dict[tuple[str, str], float]:
    """(dataset key, label) -> median measured seconds of that group's finished cells."""
    times: dict[tuple[str, str], list[float]] = defaultdict(list)
    for t in measurements.cells(experiment).values():
        if t.seconds is not None:
            times[t.group].append(t.seconds)
    return {group: statistics.median(v) for group, v in times.items()}


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
