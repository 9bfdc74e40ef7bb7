"""Registered procedures: artefacts that are not a fit/predict of an estimator.

A procedure is a function ``f(ctx: CellContext) -> dict[str, float | dict[int, float]]``
(metric name -> value or {step: value}). Optional function attributes:
``uses_epsilon`` (default True: run once per epsilon of the grid, else once with
epsilon = inf) and ``needs_data`` (default True: the dataset is loaded and split).
Modules listed in ``PROCEDURE_MODULES`` export ``PROCEDURES: dict[str, function]``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpexp.errors import UnknownNameError

PROCEDURE_MODULES = [
    "dpexp.experiments.builtin_procedures",
    "dpexp.algorithms.xgbdp_procedures",
    "dpexp.algorithms.fletcher_procedures",
    "dpexp.algorithms.inprivate_procedures",
]


@dataclass
class CellContext:
    """What a procedure gets: the dataset, its split, parameters, epsilon and randomness."""

    dataset: Any
    params: dict[str, Any]
    epsilon: float
    rng: np.random.Generator
    random_state: int
    X_train: Any = None
    y_train: Any = None
    X_test: Any = None
    y_test: Any = None


def all_procedures() -> dict[str, Callable]:
    out: dict[str, Callable] = {}
    for mod in PROCEDURE_MODULES:
        for name, fn in importlib.import_module(mod).PROCEDURES.items():
            if name in out:
                raise RuntimeError(f"procedure {name!r} registered twice")
            out[name] = fn
    return out


def get_procedure(name: str) -> Callable:
    procs = all_procedures()
    if name not in procs:
        raise UnknownNameError("procedure", name, procs)
    return procs[name]
