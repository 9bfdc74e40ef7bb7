"""Specs that show another spec's cells (``cells_from``).

A paper sometimes prints several metrics of one run as several artefacts (Fletcher &
Islam's Figs. 11, 12 and 13 are accuracy, AUC and F1 of the same forests). Running them as
three experiments computes every cell three times. A spec with ``cells_from: OTHER`` is a
view instead: its cells are OTHER's cells (same keys, so the same numbers), computed,
cached and committed under OTHER's id, and it renders and reports its own subset.

That is sound only when every cell of the view's grid is a cell of OTHER's grid, computed
the same way, at every scale. :func:`cells_from_problem` checks it from the specs alone
(datasets, series, parameter points, epsilons, CV, row cap, ``dp_domains``: the share
that the private cells on undeclared domains carry; the view's metrics among
OTHER's, which a cell computed for the view computes too), so a mismatch is a clear spec
error at load time, never a cell that silently belongs to another run.
"""

from __future__ import annotations

from typing import Any

from dpexp.experiments.cells import grid_points
from dpexp.experiments.spec import SCALES, AlgorithmRef, ExperimentSpec

__all__ = ["cells_from_problem"]


def _points(algo: AlgorithmRef) -> list[dict[str, Any]]:

    return grid_points(algo)


def _series_problem(view: ExperimentSpec, source: ExperimentSpec) -> str:
    """Why a series of ``view`` is not one of ``source``'s ("" when each is)."""
    by_label: dict[str, list[AlgorithmRef]] = {}
    for a in source.algorithms:
        by_label.setdefault(a.label, []).append(a)
    for algo in view.algorithms:
        same = [a for a in by_label.get(algo.label, [])
                if (a.name, a.procedure) == (algo.name, algo.procedure)]
        if not same:
            return f"series {algo.label!r} ({algo.name or algo.procedure}) is not in {source.id}"
        theirs = [p for a in same for p in _points(a)]
        extra = [p for p in _points(algo) if p not in theirs]
        if extra:
            return f"series {algo.label!r} has parameters {extra[0]} that {source.id} does not run"
    return ""


def _scale_problem(view: ExperimentSpec, source: ExperimentSpec, scale: str) -> str:
    """Why ``view``'s grid at ``scale`` is not part of ``source``'s ("" when it is)."""
    v, s = view.at_scale(scale), source.at_scale(scale)
    theirs = {d.key for d in s.datasets}
    extra = [d.key for d in v.datasets if d.key not in theirs]
    if extra:
        return f"dataset {extra[0]!r} is not in {source.id}"
    problem = _series_problem(v, s)
    if problem:
        return problem
    if not set(v.epsilons) <= set(s.epsilons):
        return f"epsilons {sorted(set(v.epsilons) - set(s.epsilons))} are not in {source.id}"
    for what, mine, other in (("cv", v.cv, s.cv), ("max_rows", v.max_rows(scale), s.max_rows(scale)),
                              ("dp_domains", v.dp_domains, s.dp_domains)):
        if mine != other:
            return f"{what} differs from {source.id}'s ({mine} vs {other})"
    for task, names in v.metrics.items():
        extra = [m for m in names if m not in s.metrics_for(task)]
        if extra:
            return f"metric {extra[0]!r} ({task}) is not computed by {source.id}"
    return ""


def cells_from_problem(view: ExperimentSpec, source: ExperimentSpec | None) -> str:
    """Why ``view`` cannot show ``source``'s cells, or "" when it can (see the module)."""
    if source is None:
        return f"no experiment {view.cells_from!r}"
    if source.cells_from:
        return (f"{source.id} shows the cells of {source.cells_from} itself; name "
                f"{source.cells_from} instead")
    for scale in SCALES:
        problem = _scale_problem(view, source, scale)
        if problem:
            return f"at {scale} scale, {problem}"
    return ""
