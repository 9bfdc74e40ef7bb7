"""Caches written directly for the render tests: real ``Cell`` objects, rows in the results
schema, synthetic values (nothing is fitted)."""

from __future__ import annotations

import math

import numpy as np

from dpexp.experiments import cache
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import canonical_json, expand
from dpexp.experiments.spec import select

METRIC_OF = {"adult": "error", "cod-rna": "error", "abalone": "rmse"}
NOT_DP = "quantile bins from the private data"


def result_rows(cell, *, metric: str, kind: str, value: float, private: bool, domain: str,
                data_version: bool = False) -> list[dict]:
    """One row of ``cell``; ``data_version``: with the dataset's fingerprint, as the runner
    writes it (a committed table's row then maps back to its grid cell)."""
    eps = cell.epsilon
    version = {"data_version": cell.data_version or ""} if data_version else {}
    return [{**version,
        "experiment": cell.experiment, "scale": cell.scale, "dataset": cell.dataset.key,
        "algorithm": cell.algorithm, "label": cell.label, "params": canonical_json(cell.params),
        "epsilon": eps, "epsilon_spent": eps if private else math.nan, "delta_spent": 0.0,
        "private": private,
        "not_dp_reason": "" if private else ("non-private algorithm" if math.isinf(eps) else NOT_DP),
        "domain_source": domain, "fold": cell.fold, "repeat": cell.repeat, "seed": cell.seed,
        "metric": metric, "metric_kind": kind, "step": None,
        "value": value, "fit_seconds": 0.01, "n_train": 10, "n_test": 10,
        "dpexp_version": "test", "git_revision": "test", "timestamp": "2026-01-01T00:00:00",
    }]


def cache_cells(results_dir, spec_id="fig2", *, datasets, epsilons=None, seed=0, scale="smoke",
                not_dp=("PARA",), metric=None, kind="metric", means=None,
                data_version=False) -> int:
    """Cache every cell of ``spec_id`` at ``scale`` for these datasets/epsilons (as ``dpexp
    run`` with overrides would), one synthetic value each; labels in ``not_dp`` are recorded
    as not DP, ``means`` maps a label to the centre of its values; ``data_version``: rows
    carry the dataset's fingerprint, as the runner's (:func:`result_rows`)."""
    spec = select(resolve(spec_id).at_scale(scale), list(datasets), None,
                  list(epsilons) if epsilons else None)
    cells = expand(spec, scale, seed)
    rng = np.random.default_rng(seed)
    for c in cells:
        private = c.label not in not_dp and not math.isinf(c.epsilon)
        domain = "observed" if c.dataset.name == "abalone" else "declared"
        value = (means or {}).get(c.label, 0.2) + float(rng.uniform(-0.01, 0.01))
        rows = result_rows(c, metric=metric or METRIC_OF[c.dataset.name], kind=kind, value=value,
                     private=private, domain=domain, data_version=data_version)
        cache.write_cell(results_dir, c, {"cell": c.to_dict(), "rows": rows})
    return len(cells)
