"""Aggregate result rows over folds/repeats into one row per setting, series and metric."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dpexp.experiments.schema import (
    REPLICATE_COLUMNS,
    RUN_COLUMNS,
    cell_columns,
    param_column,
    param_columns,
)
from dpexp.experiments.spec import ExperimentSpec
from dpexp.render.frame import normalise, not_dp_mask, with_not_dp_mark

#: What one aggregated entry is: a cell without its replicates (pooled), the columns
#: constant in one experiment at one scale, and the algorithm (its label names it).
SETTING_COLUMNS = cell_columns(without=[*RUN_COLUMNS, "algorithm", *REPLICATE_COLUMNS])
GROUP = [*SETTING_COLUMNS, "metric", "step"]


def series_name(label: str, params: Mapping[str, Any], grid_keys: list[str]) -> str:
    """Legend/column name: the label plus the grid parameters that vary (``params`` maps a
    parameter name to its value; absent names show as None)."""
    if not grid_keys:
        return label
    inner = ", ".join(f"{k}={params.get(k)}" for k in grid_keys)
    return f"{label} ({inner})"


def series_names(agg: pd.DataFrame, grid_keys: dict[str, list[str]]) -> list[str]:
    """The series name of every row of ``agg`` (a raw or an aggregated frame with ``label``
    and ``p_<name>`` columns), see :func:`series_name`."""
    values = {c: agg[c].tolist() for c in param_columns(agg.columns)}
    out = []
    for i, label in enumerate(agg["label"]):
        keys = grid_keys.get(label, [])
        params = {k: values[param_column(k)][i] for k in keys if param_column(k) in values}
        out.append(series_name(label, params, keys))
    return out


def grid_keys_by_label(spec: ExperimentSpec) -> dict[str, list[str]]:
    """Grid parameters that distinguish series (not those already on an axis)."""
    axes = {spec.plot.get("x")}
    for key in ("rows", "columns"):
        v = (spec.table or {}).get(key)
        axes |= set(v) if isinstance(v, list) else {v}
    return {a.label: sorted(k for k in a.grid if f"param:{k}" not in axes) for a in spec.algorithms}


AGG_COLUMNS = [*GROUP, "series", "display", "mean", "std", "n", "epsilon_spent", "not_dp",
               "not_dp_reason", "diagnostic"]


def aggregate(frame: pd.DataFrame, spec: ExperimentSpec) -> pd.DataFrame:
    """Mean, std and count of each (dataset, algorithm, params, epsilon, metric, step),
    with the entry's ``p_<name>`` parameter columns.

    Rows of different seeds, folds and repeats are pooled as independent replicates
    (``n`` counts them). ``not_dp`` marks a group with any row whose release is not DP
    (:func:`dpexp.render.frame.not_dp_mask`), ``diagnostic`` one whose values come from an
    estimator's ``diagnostics_`` (exact quantities of the run, not DP releases);
    ``display`` is the series name marked "(not DP)" for legends and table columns, while
    ``series`` stays the spec's name (paper values and claims refer to it).
    """
    if frame.empty:
        return pd.DataFrame(columns=AGG_COLUMNS)
    f = normalise(frame)
    f["step"] = f["step"].fillna(-1).astype(int)
    # float whatever the source: cell files give NaN, a committed table's rows None (object),
    # and the figures' inputs digest must not tell a cache from a fresh clone by a dtype
    f["epsilon_spent"] = pd.to_numeric(f["epsilon_spent"], errors="coerce").astype(float)
    f["_not_dp"] = not_dp_mask(f)
    f["_diag"] = f["metric_kind"] == "diagnostic"
    # The greatest reason of a group is taken as the greatest of its codes in sorted order
    # (pandas takes the max of strings in Python, group by group: a tenth of the report).
    reason_codes, reasons = pd.factorize(f["not_dp_reason"], sort=True)
    f["_reason"] = reason_codes
    agg = (
        f.groupby(GROUP, dropna=False)
        .agg(mean=("value", "mean"), std=("value", "std"), n=("value", "size"),
             epsilon_spent=("epsilon_spent", "max"), not_dp=("_not_dp", "any"),
             not_dp_reason=("_reason", "max"), diagnostic=("_diag", "any"))
        .reset_index()
    )
    agg["not_dp_reason"] = pd.Series(reasons.take(agg["not_dp_reason"].to_numpy()),
                                     index=agg.index, dtype=f["not_dp_reason"].dtype)
    agg["std"] = agg["std"].fillna(0.0)
    # The parameter columns are functions of ``params`` (grouped on): one row per params.
    pcols = param_columns(f.columns)
    if pcols:
        agg = agg.merge(f[["params", *pcols]].drop_duplicates("params"), on="params", how="left",
                        sort=False, validate="many_to_one")
    agg["series"] = series_names(agg, grid_keys_by_label(spec))
    agg["display"] = [with_not_dp_mark(s) if bad else s
                      for s, bad in zip(agg["series"], agg["not_dp"], strict=True)]
    agg["step"] = agg["step"].replace(-1, np.nan)
    return agg[[*AGG_COLUMNS, *pcols]]
