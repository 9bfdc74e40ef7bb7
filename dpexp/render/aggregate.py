"""Aggregate result rows over folds/repeats and attach the paper's reported values."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from dpexp.experiments.spec import ExperimentSpec

GROUP = ["dataset", "label", "params", "epsilon", "metric", "step"]


def series_name(label: str, params_json: str, grid_keys: list[str]) -> str:
    """Legend/column name: the label plus the grid parameters that vary."""
    if not grid_keys:
        return label
    params = json.loads(params_json)
    inner = ", ".join(f"{k}={params.get(k)}" for k in grid_keys)
    return f"{label} ({inner})"


def grid_keys_by_label(spec: ExperimentSpec) -> dict[str, list[str]]:
    """Grid parameters that distinguish series (not those already on an axis)."""
    axes = {spec.plot.get("x")}
    for key in ("rows", "columns"):
        v = (spec.table or {}).get(key)
        axes |= set(v) if isinstance(v, list) else {v}
    return {a.label: sorted(k for k in a.grid if f"param:{k}" not in axes) for a in spec.algorithms}


def aggregate(frame: pd.DataFrame, spec: ExperimentSpec) -> pd.DataFrame:
    """Mean, std and count of each (dataset, algorithm, params, epsilon, metric, step)."""
    if frame.empty:
        return pd.DataFrame(columns=[*GROUP, "series", "mean", "std", "n", "epsilon_spent"])
    f = frame.copy()
    f["step"] = f["step"].fillna(-1).astype(int)
    agg = (
        f.groupby(GROUP, dropna=False)
        .agg(mean=("value", "mean"), std=("value", "std"), n=("value", "size"),
             epsilon_spent=("epsilon_spent", "max"))
        .reset_index()
    )
    agg["std"] = agg["std"].fillna(0.0)
    gk = grid_keys_by_label(spec)
    agg["series"] = [series_name(lab, p, gk.get(lab, [])) for lab, p in zip(agg["label"], agg["params"], strict=True)]
    agg["step"] = agg["step"].replace(-1, np.nan)
    return agg


def _matches(entry: dict, row: pd.Series, ds_display: dict[str, str]) -> bool:
    for key, want in entry.items():
        if key in ("value", "std", "note"):
            continue
        if key == "dataset":
            if want not in (row["dataset"], ds_display.get(row["dataset"])):
                return False
        elif key == "algorithm":
            if want not in (row["label"], row["series"]):
                return False
        elif key == "epsilon":
            w = float("inf") if str(want) in ("inf", "no_noise") else float(want)
            e = float(row["epsilon"])
            if not (w == e or (math.isinf(w) and math.isinf(e)) or abs(w - e) < 1e-12):
                return False
        elif key == "metric":
            if want != row["metric"]:
                return False
        elif key == "step":
            if pd.isna(row["step"]) or int(want) != int(row["step"]):
                return False
        elif key.startswith("param:") and json.loads(row["params"]).get(key[6:]) != want:
            return False
    return True


def attach_paper_values(agg: pd.DataFrame, spec: ExperimentSpec) -> pd.DataFrame:
    """Add ``paper_value``, ``paper_std``, ``diff`` and ``within_tolerance`` columns."""
    agg = agg.copy()
    entries = spec.paper_values.get("values") or []
    tol = spec.paper_values.get("tolerance")
    ds_display = {d.key: d.display for d in spec.datasets}
    pv, ps = [], []
    for _, row in agg.iterrows():
        hit = next((e for e in entries if _matches(e, row, ds_display)), None)
        pv.append(np.nan if hit is None else float(hit["value"]))
        ps.append(np.nan if hit is None or "std" not in hit else float(hit["std"]))
    agg["paper_value"] = pv
    agg["paper_std"] = ps
    agg["diff"] = agg["mean"] - agg["paper_value"]
    if tol is not None:
        agg["within_tolerance"] = np.where(
            agg["paper_value"].isna(), None, (agg["diff"].abs() <= float(tol))
        )
    else:
        agg["within_tolerance"] = None
    return agg
