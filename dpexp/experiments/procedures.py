"""Registered procedures: artefacts that are not a fit/predict of an estimator.

A procedure is a function ``f(ctx: CellContext) -> dict[str, float | dict[int, float]]``
(metric name -> value or {step: value}). Optional function attributes, read only through
:func:`procedure_flags` so every reader agrees: ``uses_epsilon`` (default True: run once
per epsilon of the grid, else once with epsilon = inf), ``needs_data`` (default True: the
dataset is loaded; False: ``ctx.dataset`` is None, e.g. formula tables) and
``needs_split`` (default True: the data is split into train/test folds).
The shared procedures live in :mod:`dpexp.experiments.builtin_procedures`; a paper's
procedures are declared in its manifest (:class:`dpexp.registry.PaperManifest`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpexp.errors import UnknownNameError
from dpexp.experiments.builtin_procedures import PROCEDURES as BUILTIN
from dpexp.registry import manifest_procedures, resolve


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

    @property
    def seeded_noise(self) -> np.random.SeedSequence:
        """``noise_rng=`` for an estimator the procedure fits with ``random_state``: the
        runner's reproducible noise (:func:`dpexp.privacy.randomness.seeded_noise`), as in
        its own fits; without it the estimator draws fresh OS entropy (its default)."""
        # Procedures run in a worker; `dpexp list` and `plan` import this module only for the flags.
        # lazy: the privacy streams load scipy (~0.2 s), which `dpexp list` must not wait for
        from dpexp.privacy.randomness import seeded_noise

        return seeded_noise(self.random_state)


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


def _procedure_refs() -> dict[str, Any]:

    out: dict[str, Any] = dict(BUILTIN)
    for name, ref in manifest_procedures().items():
        if name in out:
            raise RuntimeError(f"procedure {name!r} registered twice")
        out[name] = ref
    return out


def all_procedures() -> dict[str, Callable]:
    """Every procedure by name (imports every paper's procedure modules)."""
    return {name: resolve(ref) for name, ref in _procedure_refs().items()}


def get_procedure(name: str) -> Callable:
    """Procedure ``name`` (imports only its own module)."""
    refs = _procedure_refs()
    if name not in refs:
        raise UnknownNameError("procedure", name, refs)
    return resolve(refs[name])
