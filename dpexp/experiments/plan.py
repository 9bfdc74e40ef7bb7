"""``dpexp plan``: how many cells a run has, how many are done, what the done ones took, and
how long the rest takes.

Planning only reads the results directory (cache and committed tables) and the data
directory, and writes only its calibrations into the data directory
(:class:`~dpexp.experiments.calibration.CalibrationStore`). It never downloads, and never
loads or generates more of a dataset than a calibration sample.

A cell's measured time is its ``wall_seconds`` (the whole cell: loading, split, warm-up,
fit and evaluation; in the cache file and, since it was added to the results schema, on
every row of the committed table), else its ``fit_seconds`` (the fit only: an
underestimate; tables committed before ``wall_seconds`` existed have only that).
:class:`Measurements` reads every experiment's cache and committed table at most once per
process, keeping only each cell's key, what it ran and its time.

The wall-time estimate is per (dataset, algorithm label) group, by the first method that
applies, and says which one it used (``GroupPlan.method``, and its kind ``GroupPlan.kind``):

1. measured -- ``cached``: the median time of that group's cells in the cache (any seed
   or override at this scale); else ``committed``: the median time of the group's cells in
   the experiment's committed results table;
2. measured-other -- for a group with no cell of its own: the median time of the finished
   cells of any experiment at this scale with the same dataset, algorithm and parameters
   as each cell to compute (experiments share many such settings, e.g. Fletcher Figs. 12,
   13 and Fig. 11); else of those differing only in their tree counts, each scaled
   linearly to the cell's trees (DPBoost Figs. 5 and 6 grow 20 and 40 trees, Fig. 2 50);
   only when every cell to compute of the group has such a match;
3. extrapolated -- ``calibrated``: fits on ``CALIBRATION_ROWS`` and half as many rows of a
   calibration sample (at most ``CALIBRATION_ROWS`` rows loaded, synthetic data generated
   at that size) with at most ``CALIBRATION_TREES`` trees, extrapolated linearly in rows
   (fixed cost + slope from the two sizes) to the training-fold size the registry and the
   CV scheme give, and scaled by trees (the histogram growers are linear in rows per tree,
   and ensembles in trees). Only for datasets that are synthetic or already downloaded.
   A :class:`Calibrator` calibrates each (dataset, algorithm, private or not, depth) once
   per process, across experiments, and spends at most ``CALIBRATION_BUDGET_SECONDS``
   (``OVERVIEW_BUDGET_SECONDS`` for a plan of several experiments, ``dpexp plan --all``,
   which calibrates no algorithm that fits in a side environment: seconds a fit);
   each calibration is stored for this machine and code, so a later plan reuses it at no
   cost (its method says when it was measured) and calibrates groups not stored yet;
4. unknown -- procedures, datasets not downloaded, datasets without a registered row
   count, a failed calibration, groups left when the calibration budget is spent (the
   next plan calibrates them), side-environment groups in an overview.

Each worker process fits every (algorithm, dataset) once, untimed, before its first timed
fit (the runner's warm-up on at most ``WARMUP_ROWS`` rows): the plan adds one such fit per
group and worker. The total is divided by the number of parallel jobs.

The done cells' measured times, summed and divided by the jobs, are what the campaign so
far took (``Plan.done_seconds``); with the estimate of the rest, what a whole run at this
scale takes (issue 19: ``make reproduce-all`` within 6 hours on 2 cores).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dpexp.experiments.calibration import OVERVIEW_BUDGET_SECONDS, Calibrator
from dpexp.experiments.cells import Cell, expand
from dpexp.experiments.completion import Completion
from dpexp.experiments.environment import optional_unavailable
from dpexp.experiments.spec import ExperimentSpec
from dpexp.experiments.timings import (
    CellTime,
    Measurements,
    own_cells,
    own_median,
    setting_of,
    setting_shape,
)
from dpexp.registry import get_algorithm

#: How a group's estimate was obtained, by the prefix of its method.
KINDS = {"cached": "measured", "committed": "measured", "measured-other": "measured-other",
         "calibrated": "extrapolated", "unavailable": "unavailable"}
#: The estimate kinds, in the order of the tiers (module docstring); ``unavailable``: cells
#: of a dataset this machine cannot load (not downloaded, not in the data mirror, and the
#: mirror is a folder: no network) or of an algorithm whose optional package does not
#: import here (``dpexp run`` skips those), left out of every total and listed by name.
KIND_ORDER = ("measured", "measured-other", "extrapolated", "unknown", "unavailable")


@dataclass
class GroupPlan:
    """One (dataset, algorithm label) group of cells."""

    dataset: str
    label: str
    cells: int
    cached: int
    seconds_per_cell: float | None = None
    method: str = "unknown"
    #: Seconds of one untimed warm-up fit (done once per worker that runs the group).
    warmup_seconds: float = 0.0
    #: The optional package the group's algorithm needs and this machine lacks ("" if none).
    missing_package: str = ""

    @property
    def todo(self) -> int:
        return self.cells - self.cached

    @property
    def kind(self) -> str:
        """measured, measured-other, extrapolated or unknown (from the method; ``KIND_ORDER``)."""
        return KINDS.get(self.method.split(":")[0], "unknown")

    def seconds_with(self, jobs: int) -> float | None:
        """Work of the group's missing cells plus its warm-ups on up to ``jobs`` workers."""
        if self.seconds_per_cell is None:
            return None
        workers = min(max(jobs, 1), self.todo)
        return self.todo * self.seconds_per_cell + workers * self.warmup_seconds

    @property
    def seconds(self) -> float | None:
        return self.seconds_with(1)


@dataclass
class Plan:
    experiment: str
    scale: str
    seed: int
    jobs: int
    groups: list[GroupPlan] = field(default_factory=list)
    #: Measured seconds of the done cells (wall time, else fit time), summed over the cells.
    done_cell_seconds: float = 0.0
    #: Done cells with a measured time, and how many of them have only their fit time.
    done_timed: int = 0
    done_fit_only: int = 0
    #: The same cells at each group's median time (a suspended or loaded-machine cell
    #: counts at its group's typical time): what an undisturbed run would have taken.
    done_typical_cell_seconds: float = 0.0
    #: The experiment whose cells these are (the spec's ``cells_from``; "" for its own).
    cells_of: str = ""

    @property
    def cells(self) -> int:
        return sum(g.cells for g in self.groups)

    @property
    def cached(self) -> int:
        return sum(g.cached for g in self.groups)

    @property
    def todo(self) -> int:
        return self.cells - self.cached

    @property
    def done_seconds(self) -> float:
        """What the done cells took, divided by the jobs (the campaign so far)."""
        return self.done_cell_seconds / max(self.jobs, 1)

    @property
    def estimated_seconds(self) -> float:
        """Sum over the groups with an estimate (warm-ups included), divided by the jobs."""
        return sum(g.seconds_with(self.jobs) or 0.0 for g in self.groups) / max(self.jobs, 1)

    @property
    def unestimated_cells(self) -> int:
        """Cells to compute without an estimate (those of unavailable datasets excepted)."""
        return sum(g.todo for g in self.groups
                   if g.seconds_per_cell is None and g.kind != "unavailable")

    @property
    def unavailable_cells(self) -> int:
        """Cells to compute on datasets this machine cannot load (not in the totals)."""
        return sum(g.todo for g in self.groups if g.kind == "unavailable")

    def unavailable_datasets(self) -> list[str]:
        return sorted({g.dataset for g in self.groups
                       if g.todo and g.kind == "unavailable" and not g.missing_package})

    def unavailable_algorithms(self) -> list[str]:
        """``label (package)`` of the series left out for a missing optional package."""
        return sorted({f"{g.label} ({g.missing_package})" for g in self.groups
                       if g.todo and g.missing_package})

    @property
    def completion(self) -> Completion:
        """Done / here / grid, as ``list`` and ``report`` count them."""
        return Completion(done=self.cached, here=self.cells - self.unavailable_cells,
                          grid=self.cells, datasets_missing=tuple(self.unavailable_datasets()),
                          packages_missing=tuple(self.unavailable_algorithms()))

    def todo_by_kind(self) -> dict[str, int]:
        """Cells to compute per estimate kind (``KIND_ORDER``)."""
        counts = dict.fromkeys(KIND_ORDER, 0)
        for g in self.groups:
            counts[g.kind] += g.todo
        return counts

    def basis(self) -> str:
        """The estimate's basis in words, e.g. ``to compute: 20 measured, 4 extrapolated``."""
        return "to compute: " + kinds_text(self.todo_by_kind())

    def slowest(self, k: int = 3) -> list[GroupPlan]:
        timed = [g for g in self.groups if g.seconds]
        return sorted(timed, key=lambda g: -g.seconds)[:k]

    def unknown_groups(self) -> list[GroupPlan]:
        return [g for g in self.groups if g.todo and g.kind == "unknown"]

    def to_dict(self) -> dict:
        return {
            "experiment": self.experiment, "scale": self.scale, "seed": self.seed, "jobs": self.jobs,
            "cells_of": self.cells_of, "cells": self.cells, "cached": self.cached, "todo": self.todo,
            "done_cell_seconds": self.done_cell_seconds, "done_seconds": self.done_seconds,
            "done_typical_seconds": self.done_typical_cell_seconds / max(self.jobs, 1),
            "done_timed": self.done_timed, "done_fit_only": self.done_fit_only,
            "estimated_seconds": self.estimated_seconds, "unestimated_cells": self.unestimated_cells,
            "unavailable_cells": self.unavailable_cells,
            "unavailable_datasets": self.unavailable_datasets(),
            "unavailable_algorithms": self.unavailable_algorithms(),
            "todo_by_kind": self.todo_by_kind(),
            "completion": asdict(self.completion),
            "groups": [{**asdict(g), "todo": g.todo, "seconds": g.seconds, "kind": g.kind}
                       for g in self.groups],
        }


def kinds_text(counts: dict[str, int]) -> str:
    """``20 measured, 4 extrapolated`` (kinds with cells only), or ``nothing``."""
    parts = [f"{n} {k}" for k, n in counts.items() if n]
    return ", ".join(parts) if parts else "nothing"


def kinds_total(plans: list[Plan]) -> dict[str, int]:
    """Cells to compute per estimate kind, summed over plans."""
    total = dict.fromkeys(KIND_ORDER, 0)
    for p in plans:
        for k, n in p.todo_by_kind().items():
            total[k] += n
    return total


def counted(plans: list[Plan]) -> list[Plan]:
    """``plans`` without those of specs showing another's cells (``cells_from``) when that
    experiment is planned too: its plan holds the same cells, which run once."""
    names = {p.experiment for p in plans}
    return [p for p in plans if p.cells_of not in names]


def totals(plans: list[Plan]) -> dict[str, Any]:
    """The sums over ``plans`` (one run's jobs): cells, done, to do, what the done cells
    took (per cell summed, and divided by the jobs) and the estimate of the rest. Each cell
    counts once: see :func:`counted`."""
    shared = len(plans) - len(counted(plans))
    plans = counted(plans)
    done_cell_seconds = sum(p.done_cell_seconds for p in plans)
    jobs = max(plans[0].jobs, 1) if plans else 1
    estimated = sum(p.estimated_seconds for p in plans)
    return {
        "experiments": len(plans) + shared, "views": shared, "jobs": jobs,
        "cells": sum(p.cells for p in plans), "cached": sum(p.cached for p in plans),
        "todo": sum(p.todo for p in plans),
        "done_cell_seconds": done_cell_seconds, "done_seconds": done_cell_seconds / jobs,
        "done_typical_seconds": sum(p.done_typical_cell_seconds for p in plans) / jobs,
        "done_timed": sum(p.done_timed for p in plans),
        "done_fit_only": sum(p.done_fit_only for p in plans),
        "estimated_seconds": estimated, "unestimated_cells": sum(p.unestimated_cells for p in plans),
        "unavailable_cells": sum(p.unavailable_cells for p in plans),
        "unavailable_datasets": sorted({d for p in plans for d in p.unavailable_datasets()}),
        "unavailable_algorithms": sorted({a for p in plans for a in p.unavailable_algorithms()}),
        "total_seconds": done_cell_seconds / jobs + estimated,
        "todo_by_kind": kinds_total(plans),
    }


# --------------------------------------------------------------------------- the plan


def _fit_only_note(times: list[CellTime]) -> str:
    fit_only = sum(not t.wall for t in times)
    if not fit_only:
        return ""
    return " (fit only)" if fit_only == len(times) else f" ({fit_only} of them fit only)"


def _own_estimate(g: GroupPlan, own: dict[str, list[CellTime]]) -> bool:
    """Tier 1 (module docstring, :func:`own_median`) into ``g``."""
    found = own_median(own)
    if found is None:
        return False
    g.seconds_per_cell, source, times = found
    g.warmup_seconds = g.seconds_per_cell  # a warm-up is about one fit
    g.method = f"{source}: median of {len(times)} cells{_fit_only_note(times)}"
    return True


def _setting_seconds(setting: tuple[str, str, str], measurements: Measurements
                     ) -> tuple[float, list[CellTime], bool] | None:
    """(seconds of one cell of ``setting``, the cells measured, whether scaled by trees):
    the median of the cells with the same setting; else of those differing only in their
    tree counts, each scaled linearly to this setting's trees (as the calibration scales:
    ensembles are linear in their trees); else None."""
    same = measurements.same_setting(setting)
    if same:
        return statistics.median(t.seconds for t in same), same, False
    trees = setting_shape(setting)[1]
    others = measurements.other_trees(setting) if trees else []
    if not others:
        return None
    return (statistics.median(t.seconds * trees / n for t, n in others),
            [t for t, _ in others], True)


def _other_estimate(g: GroupPlan, todo: list[Cell], measurements: Measurements) -> bool:
    """Tier 2: cells of any experiment with the setting of each cell to compute; only when
    every such setting has finished cells (mixing measured and guessed cells would hide
    which is which)."""
    found: dict[tuple[str, str, str], tuple[float, list[CellTime], bool]] = {}
    for c in todo:
        setting = setting_of(c)
        if setting not in found:
            match = _setting_seconds(setting, measurements)
            if match is None:
                return False
            found[setting] = match
    g.seconds_per_cell = sum(found[setting_of(c)][0] for c in todo) / len(todo)
    g.warmup_seconds = g.seconds_per_cell
    used = list({t.key: t for _, times, _ in found.values() for t in times}.values())
    experiments = sorted({t.experiment for t in used})
    names = ", ".join(experiments[:2]) + (f" and {len(experiments) - 2} more" if len(experiments) > 2 else "")
    scaled = sum(by_trees for _, _, by_trees in found.values())
    how = (" but other tree counts, scaled linearly in trees" if scaled == len(found) else
           f" (for {scaled} of {len(found)} parameter settings: other tree counts, scaled "
           f"linearly in trees)" if scaled else "")
    g.method = (f"measured-other: median of {len(used)} cells of {names} with the same dataset, "
                f"algorithm and parameters{how}{_fit_only_note(used)}")
    return True


def _missing_package(cell: Cell) -> str:
    """The optional package ``cell``'s algorithm needs that does not import here, or ""."""
    if not cell.algorithm:
        return ""

    requires = get_algorithm(cell.algorithm).requires
    if not requires:
        return ""

    why = optional_unavailable(requires)
    return why.split(" ")[0] if why else ""


def _estimate_group(g: GroupPlan, todo: list[Cell], own: dict[str, list[CellTime]],
                    measurements: Measurements, calibrator: Calibrator | None) -> bool:
    """Fill ``g``'s estimate from measurements, or say why it stays unknown; True when it
    is left for the calibrator (the tiers of the module docstring)."""
    first = todo[0]
    package = _missing_package(first)
    if package:
        g.missing_package = package
        g.method = (f"unavailable: needs the optional package {package}, which does not "
                    f"import here (dpexp run skips the series)")
        return False
    if not measurements.available(first.dataset.name):
        g.method = ("unavailable: dataset neither downloaded nor in a data-mirror folder "
                    "(dpexp datasets download it where there is network)")
        return False
    if _own_estimate(g, own) or _other_estimate(g, todo, measurements):
        return False
    if first.procedure:
        g.method = "unknown: procedure"
    elif calibrator is None:
        g.method = "unknown: not calibrated (--no-calibrate)"
    else:
        g.method = "unknown: not calibrated yet"
        return True
    return False


def _measured_plan(spec: ExperimentSpec, scale: str, seed: int, jobs: int, measurements: Measurements,
                   calibrator: Calibrator | None) -> tuple[Plan, list[tuple[GroupPlan, Cell]]]:
    """The plan with every estimate but the calibrated ones, and the groups left to
    calibrate (each with its first cell to compute)."""
    plan = Plan(spec.id, scale, seed, jobs, cells_of=spec.cells_from)
    done = measurements.cells(spec.cells_id)
    own = own_cells(measurements, spec.cells_id)
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in expand(spec, scale, seed):
        groups.setdefault((c.dataset.key, c.label), []).append(c)
    pending = []
    for key, cells in groups.items():
        finished = [done[c.view_key] for c in cells if c.view_key in done]
        g = GroupPlan(key[0], key[1], len(cells), len(finished))
        plan.groups.append(g)
        timed = [t for t in finished if t.seconds is not None]
        plan.done_cell_seconds += sum(t.seconds for t in timed)
        if timed:
            plan.done_typical_cell_seconds += len(timed) * statistics.median(t.seconds for t in timed)
        plan.done_timed += len(timed)
        plan.done_fit_only += sum(not t.wall for t in timed)
        todo = [c for c in cells if c.view_key not in done]
        if todo and _estimate_group(g, todo, own.get(key, {}), measurements, calibrator):
            pending.append((g, todo[0]))
    return plan, pending


def make_plans(
    specs: list[ExperimentSpec], scale: str, results_dir: Path, *, seed: int = 0, jobs: int = 1,
    calibrator: Calibrator | None = None, calibrate_fits: bool = True,
    measurements: Measurements | None = None,
) -> list[Plan]:
    """The plans of ``specs`` (each already at ``scale`` and selected) under run seed ``seed``.

    Groups are calibrated after every measurement is read, largest first (most cells to
    compute) across all the specs, so a calibration budget goes where it matters most.
    ``calibrator``: shared across calls to calibrate each fit once (a new one otherwise,
    with the data directory's stored calibrations and, for several specs, the overview's
    budget ``OVERVIEW_BUDGET_SECONDS``);
    ``calibrate_fits=False`` times no fit (groups without measured cells stay unknown).
    ``measurements``: shared across calls to read each experiment's results once (a new
    one for ``results_dir`` and ``scale`` otherwise).
    """
    if not calibrate_fits:
        calibrator = None
    elif calibrator is None:
        overview = len(specs) > 1
        calibrator = Calibrator(OVERVIEW_BUDGET_SECONDS if overview else None,
                                in_process_only=overview)
    if measurements is None:
        measurements = Measurements(results_dir, scale)
    plans, pending = [], []
    for spec in specs:
        plan, left = _measured_plan(spec, scale, seed, jobs, measurements, calibrator)
        plans.append(plan)
        pending += [(g, first, spec) for g, first in left]
    for g, first, spec in sorted(pending, key=lambda item: -item[0].todo):
        g.seconds_per_cell, g.warmup_seconds, g.method = calibrator.estimate(first, spec)
    return plans


def make_plan(
    spec: ExperimentSpec, scale: str, results_dir: Path, *, seed: int = 0, jobs: int = 1,
    calibrator: Calibrator | None = None, calibrate_fits: bool = True,
    measurements: Measurements | None = None,
) -> Plan:
    """The plan of one ``spec`` (see :func:`make_plans`)."""
    return make_plans([spec], scale, results_dir, seed=seed, jobs=jobs, calibrator=calibrator,
                      calibrate_fits=calibrate_fits, measurements=measurements)[0]


def format_seconds(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
