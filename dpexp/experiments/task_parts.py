"""A spec as one part per task, each with only the algorithms that support the task.

A spec whose algorithms do not all support every task of its datasets (the leaderboard:
the Fletcher-Islam forest, JPW, FS and the XGBoost-DP family are classification only) runs
as these parts, one after the other, under the spec's own id: the cells and their keys are
the spec's, so the union results table holds both tasks.
"""

from __future__ import annotations

from dataclasses import replace

from dpexp.datasets import get_dataset_info
from dpexp.experiments.spec import ExperimentSpec
from dpexp.registry import get_algorithm

TASKS = ("classification", "regression")


def supports(algorithm: str | None, task: str) -> bool:
    """Whether a registered ``algorithm`` has an estimator for ``task`` (a procedure: yes)."""
    return algorithm is None or task in get_algorithm(algorithm).targets


def task_parts(spec: ExperimentSpec) -> list[tuple[str, ExperimentSpec, list[str]]]:
    """(task, the spec restricted to its datasets of that task and the algorithms that
    support it, the labels left out) for each task the spec's datasets have."""
    out = []
    for task in TASKS:
        datasets = tuple(d for d in spec.datasets if get_dataset_info(d.name).task == task)
        if not datasets:
            continue
        keep = tuple(a for a in spec.algorithms if supports(a.name, task))
        left = [a.label for a in spec.algorithms if a not in keep]
        if keep:
            out.append((task, replace(spec, datasets=datasets, algorithms=keep), left))
    return out
