"""Registered procedures: artefacts that are not a fit/predict of an estimator.

A procedure is a function ``f(ctx: CellContext) -> dict[str, float | dict[int, float]]``
(metric name -> value or {step: value}). Optional function attributes, read only through
:func:`procedure_flags` so every reader agrees: ``uses_epsilon`` (default True: run once
per epsilon of the grid, else once with epsilon = inf), ``needs_data`` (default True: the
dataset is loaded; False: ``ctx.dataset`` is None, e.g. formula tables) and
``needs_split`` (default True: the data is split into train/test folds).
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


@dataclass(frozen=True)
class ProcedureFlags:
    """What a procedure needs from the runner (see the module docstring)."""

    uses_epsilon: bool = True
    needs_data: bool = True
    needs_split: bool = True


def procedure_flags(fn: Callable) -> ProcedureFlags:
    """The flags of ``fn``; a procedure without data has no split either."""
    needs_data = bool(getattr(fn, "needs_data", True))
    return ProcedureFlags(
        uses_epsilon=bool(getattr(fn, "uses_epsilon", True)),
        needs_data=needs_data,
        needs_split=needs_data and bool(getattr(fn, "needs_split", True)),
    )


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
