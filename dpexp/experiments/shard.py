"""``dpexp run --shard K/N``: one of N machines computes its share of an experiment's cells.

Every shard computes the same assignment on its own, with no coordination, so the
assignment may depend only on what every machine has identically, for the same dpexp
commit and the same ``dpexp run`` options:

* the experiment's grid (:func:`dpexp.experiments.cells.expand` of the spec as selected,
  before any series is dropped for a missing optional package), not what this machine has
  cached;
* each cell's expected seconds: the median measured time (wall, else fit) of the committed
  table's cells of its (dataset, label) group, as the first tier of ``dpexp plan`` reads
  them from the table only (:func:`dpexp.experiments.timings.committed_group_seconds`);
  a group without committed times counts as the slowest measured group of the experiment
  (a cell of unknown time is not assumed short), and an experiment without any as one
  second per cell (an even split by count). Cached cells and calibration fits are left
  out: they differ from machine to machine.

Cells with one content key (the same cell asked by two series) go to one shard; the rest
are dealt longest first onto the least-loaded shard (the LPT rule; ties: the spec's order,
then the lowest shard): no shard's expected total exceeds another's by more than the
longest cell.

A shard run caches its cells and writes no union table (the committed table stays as it
was, so the shards run after it in one results directory still agree). After the last
shard, ``dpexp run EXP`` on the union of the shards' caches (README, "Paper scale on
several machines") finds every cell cached and writes the table and figures: the same, bit
for bit, as one run's, since a cell's numbers depend only on its key.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dpexp.experiments.cells import Cell
from dpexp.experiments.config import Shard
from dpexp.experiments.timings import committed_group_seconds

#: Expected seconds of a cell when its experiment has no committed time at all.
UNTIMED_SECONDS = 1.0


def deal_longest_first(weights: Sequence[float], count: int) -> list[int]:
    """The shard (0-based) of each item: longest first onto the least-loaded shard; ties
    between items keep their order, ties between shards go to the lowest."""
    loads = [0.0] * count
    out = [0] * len(weights)
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):  # stable
        target = min(range(count), key=lambda s: loads[s])
        out[i] = target
        loads[target] += weights[i]
    return out


def expected_seconds(cells: Sequence[Cell], results_dir: Path, scale: str) -> list[float]:
    """Each cell's expected seconds from the committed tables only (module docstring)."""
    medians: dict[str, dict[tuple[str, str], float]] = {}
    out = []
    for cell in cells:
        if cell.experiment not in medians:
            medians[cell.experiment] = committed_group_seconds(results_dir, cell.experiment, scale)
        known = medians[cell.experiment]
        fallback = max(known.values()) if known else UNTIMED_SECONDS
        out.append(known.get((cell.dataset.key, cell.label), fallback))
    return out


def shard_digests(cells: Sequence[Cell], shard: Shard, results_dir: Path, scale: str) -> set[str]:
    """The content keys (:attr:`Cell.digest`) of ``cells`` that ``shard`` computes."""
    first: dict[str, int] = {}
    for i, cell in enumerate(cells):
        first.setdefault(cell.digest, i)
    unique = [cells[i] for i in first.values()]
    owner = deal_longest_first(expected_seconds(unique, results_dir, scale), shard.count)
    return {c.digest for c, s in zip(unique, owner, strict=True) if s == shard.index - 1}
