"""The algorithm registry: names used in experiment specs -> estimator classes.

Each algorithm module exports ``ALGORITHMS``, a list of :class:`AlgorithmInfo`. To add a
module, append its dotted path to ``ALGORITHM_MODULES``. Targets are imported lazily, so
listing algorithms does not import numba-heavy modules.

An estimator used by the runner must follow scikit-learn conventions (``fit(X, y)``,
``predict``, ``get_params``), accept ``random_state`` and, when ``private`` is true,
``epsilon``. After ``fit`` a private estimator exposes ``accountant_`` (see
:mod:`dpexp.privacy`) so the runner can record ``epsilon_spent``/``delta_spent`` and the
ledger. An estimator may also expose ``diagnostics_``: a dict of extra per-fit numbers
(e.g. ``n_filtered``, ``empty_leaf_fraction``) that the runner records as metrics.

Public dataset metadata is injected into estimator parameters of the same name when the
spec does not set them (see :data:`PUBLIC_PARAMS`): this is how candidate split points
come from the public feature domain rather than from the private data.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from dpexp.errors import DpexpError, UnknownNameError

ALGORITHM_MODULES = [
    "dpexp.algorithms.baselines",
    "dpexp.algorithms.dpboost",
    "dpexp.algorithms.fletcher",
    "dpexp.algorithms.fletcher_comparators",
    "dpexp.algorithms.xgboost_dp",
    "dpexp.algorithms.xgbdp_comparators",
    "dpexp.algorithms.gaussian_bdt",
    "dpexp.algorithms.inprivate",
]

#: Estimator parameters the runner fills from the dataset's public metadata.
PUBLIC_PARAMS = (
    "feature_domain", "categorical_features", "n_categories", "label_domain", "classes",
)


@dataclass(frozen=True)
class AlgorithmInfo:
    """One registered algorithm.

    ``targets`` maps a task (``"classification"``/``"regression"``) to
    ``"module:Class"``; a task missing from it is not supported by the algorithm.
    """

    name: str
    targets: dict[str, str]
    private: bool
    paper: str
    description: str
    default_params: dict[str, Any] = field(default_factory=dict)
    #: Why the algorithm, although it takes an epsilon, gives no DP guarantee (None: it
    #: does). Parameter-dependent cases mark the fit's accountant instead
    #: (``Accountant.mark_not_dp``).
    not_dp: str | None = None
    #: Optional packages the estimator imports at fit time (checked before a run starts).
    requires: tuple[str, ...] = ()

    def estimator_class(self, task: str):
        if task not in self.targets:
            raise DpexpError(
                f"Algorithm {self.name!r} does not support {task} tasks "
                f"(it supports: {', '.join(self.targets)})."
            )
        module, _, attr = self.targets[task].partition(":")
        return getattr(importlib.import_module(module), attr)


def all_algorithms() -> dict[str, AlgorithmInfo]:
    """Every registered algorithm by name."""
    out: dict[str, AlgorithmInfo] = {}
    for mod in ALGORITHM_MODULES:
        for info in importlib.import_module(mod).ALGORITHMS:
            if info.name in out:
                raise RuntimeError(f"algorithm {info.name!r} registered twice")
            out[info.name] = info
    return out


def get_algorithm(name: str) -> AlgorithmInfo:
    algos = all_algorithms()
    if name not in algos:
        raise UnknownNameError("algorithm", name, algos)
    return algos[name]


def accepted_params(name: str) -> set[str]:
    """Parameter names any of ``name``'s estimator classes accepts."""
    info = get_algorithm(name)
    out: set[str] = set()
    for task in info.targets:
        out |= set(info.estimator_class(task)().get_params())
    return out


def make_estimator(
    name: str,
    task: str,
    params: dict[str, Any],
    *,
    epsilon: float | None,
    random_state: int,
    public: dict[str, Any] | None = None,
):
    """Instantiate algorithm ``name`` for ``task`` with ``params``.

    ``epsilon`` is passed only to private algorithms; ``public`` metadata fills the
    estimator's :data:`PUBLIC_PARAMS` that ``params`` leaves unset.
    """
    info = get_algorithm(name)
    cls = info.estimator_class(task)
    kwargs = {**info.default_params, **params}
    accepted = set(cls().get_params())
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise DpexpError(
            f"Algorithm {name!r} has no parameter(s) {', '.join(unknown)}; "
            f"its parameters are: {', '.join(sorted(accepted))}."
        )
    if info.private:
        kwargs["epsilon"] = epsilon
    if "random_state" in accepted:
        kwargs["random_state"] = random_state
    for key in PUBLIC_PARAMS:
        if public and key in accepted and kwargs.get(key) is None and key in public:
            kwargs[key] = public[key]
    return cls(**kwargs)
