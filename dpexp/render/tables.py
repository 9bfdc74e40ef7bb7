"""Tables (Markdown, CSV, LaTeX) with our mean ± std beside the paper's values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from dpexp.experiments.cache import atomic_write_text
from dpexp.experiments.spec import ExperimentSpec


def _axis_value(row: pd.Series, axis: str, ds_display: dict[str, str]):
    if axis == "dataset":
        return ds_display.get(row["dataset"], row["dataset"])
    if axis == "algorithm":
        return row["series"]
    if axis == "epsilon":
        e = float(row["epsilon"])
        return "no noise" if math.isinf(e) else f"{e:g}"
    if axis == "metric":
        return row["metric"]
    if axis == "step":
        return "" if pd.isna(row["step"]) else int(row["step"])
    if axis.startswith("dataset_param:"):
        return row["dataset"]
    if axis.startswith("param:"):
        return json.loads(row["params"]).get(axis[6:])
    raise ValueError(f"unknown table axis {axis!r}")


def _fmt(v: float, fmt: str = "{:.4g}") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def build_table(spec: ExperimentSpec, agg: pd.DataFrame) -> pd.DataFrame:
    """Long table: one line per (row, column) with ours, the paper's and the difference."""
    t = spec.table or {}
    default_rows = ["dataset"]
    if not t and spec.plot.get("x", "epsilon") not in ("dataset",):
        default_rows.append(spec.plot.get("x", "epsilon"))  # a figure's x axis
    rows_axis = t.get("rows", default_rows)
    rows_axis = rows_axis if isinstance(rows_axis, list) else [rows_axis]
    cols_axis = t.get("columns", "algorithm")
    metric = t.get("metric")
    if metric is None and not t:
        metric = spec.plot.get("y")  # a figure's table shows the plotted metric
    if isinstance(metric, dict):
        from dpexp.datasets.registry import get_dataset_info

        task = {d.key: get_dataset_info(d.name).task for d in spec.datasets}
        sub = agg[[metric.get(task.get(d, ""), None) == m for d, m in zip(agg["dataset"], agg["metric"], strict=True)]]
        metric = None
    else:
        sub = agg if metric is None else agg[agg["metric"] == metric]
    if metric is None and "step" in sub:
        sub = sub[sub["step"].isna()] if sub["step"].isna().any() else sub
    ds_display = {d.key: d.display for d in spec.datasets}
    rank = {a.label: i for i, a in enumerate(spec.algorithms)}
    ds_rank = {d.key: i for i, d in enumerate(spec.datasets)}
    sub = sub.assign(_a=sub["label"].map(rank), _d=sub["dataset"].map(ds_rank))
    sub = sub.sort_values(["_d", "_a", "epsilon", "step"], kind="stable")
    out = pd.DataFrame(
        {
            "row": [" · ".join(str(_axis_value(r, a, ds_display)) for a in rows_axis) for _, r in sub.iterrows()],
            "column": [_axis_value(r, cols_axis, ds_display) for _, r in sub.iterrows()],
            "metric": sub["metric"].to_numpy(),
            "ours_mean": sub["mean"].to_numpy(),
            "ours_std": sub["std"].to_numpy(),
            "n": sub["n"].to_numpy(),
            "paper": sub["paper_value"].to_numpy(),
            "diff": sub["diff"].to_numpy(),
            "within_tolerance": sub["within_tolerance"].to_numpy(),
            "epsilon_spent": sub["epsilon_spent"].to_numpy(),
        }
    )
    return out


def _wide(long: pd.DataFrame, fmt: str) -> pd.DataFrame:
    def cell(r):
        s = fmt.format(mean=r["ours_mean"], std=r["ours_std"])
        if not pd.isna(r["paper"]):
            s += f" (paper {_fmt(r['paper'])})"
        return s

    long = long.assign(text=long.apply(cell, axis=1))
    if not (long.groupby("row")["metric"].nunique() > 1).any() and long["metric"].nunique() > 1:
        long = long.assign(row=long["row"].astype(str) + " (" + long["metric"] + ")")
    # Suffix columns with the metric only when a row shows several (not when the metric
    # merely differs by task, e.g. error for classification and RMSE for regression).
    multi_metric = bool((long.groupby("row")["metric"].nunique() > 1).any())
    col = long["column"].astype(str) + ((" · " + long["metric"]) if multi_metric else "")
    long = long.assign(col=col)
    return long.pivot_table(index="row", columns="col", values="text", aggfunc="first", sort=False)


def _markdown(wide: pd.DataFrame, row_name: str) -> str:
    cols = [str(c) for c in wide.columns]
    lines = ["| " + " | ".join([row_name, *cols]) + " |", "|" + "---|" * (len(cols) + 1)]
    for idx, r in wide.iterrows():
        lines.append("| " + " | ".join([str(idx), *[("" if pd.isna(v) else str(v)) for v in r]]) + " |")
    return "\n".join(lines)


def _latex_escape(s: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"),
                 ("#", r"\#"), ("±", r"$\pm$"), ("ε", r"$\varepsilon$"), ("—", "--")):
        s = s.replace(a, b)
    return s


def _latex(wide: pd.DataFrame, row_name: str, caption: str) -> str:
    cols = [str(c) for c in wide.columns]
    body = [
        r"\begin{table}[t]", r"\centering", r"\small",
        r"\begin{tabular}{l" + "r" * len(cols) + "}", r"\toprule",
        " & ".join(_latex_escape(c) for c in [row_name, *cols]) + r" \\", r"\midrule",
    ]
    for idx, r in wide.iterrows():
        vals = [str(idx), *[("" if pd.isna(v) else str(v)) for v in r]]
        body.append(" & ".join(_latex_escape(v) for v in vals) + r" \\")
    body += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{_latex_escape(caption)}}}", r"\end{table}"]
    return "\n".join(body) + "\n"


def render_table(spec: ExperimentSpec, agg: pd.DataFrame, out_base: Path, scale: str,
                 header: str) -> list[Path]:
    """Write ``out_base``.md/.csv/.tex; returns the paths."""
    long = build_table(spec, agg)
    fmt = (spec.table or {}).get("format", "{mean:.4g} ± {std:.2g}")
    wide = _wide(long, fmt) if len(long) else pd.DataFrame()
    row_name = (spec.table or {}).get("rows", "dataset")
    if not spec.table and spec.plot.get("x", "epsilon") != "dataset":
        row_name = f"dataset · {spec.plot.get('x', 'epsilon')}"
    row_name = " · ".join(row_name) if isinstance(row_name, list) else row_name
    md = [header, "", _markdown(wide, row_name) if len(wide) else "_no results yet_", ""]
    if spec.paper_values.get("values"):
        src = spec.paper_values.get("source", "the paper")
        md.append(f"Values marked (paper …) are the numbers printed in {src}, shown beside ours, "
                  f"never in place of ours.")
        if spec.paper_values.get("tolerance") is not None:
            ok = long["within_tolerance"].dropna()
            md.append(f"Within the spec's tolerance ±{spec.paper_values['tolerance']}: "
                      f"{int(sum(bool(v) for v in ok))} of {len(ok)} compared values.")
    out_base.parent.mkdir(parents=True, exist_ok=True)
    paths = [out_base.with_suffix(".md"), out_base.with_suffix(".csv"), out_base.with_suffix(".tex")]
    atomic_write_text(paths[0], "\n".join(md) + "\n")
    atomic_write_text(paths[1], long.to_csv(index=False))
    atomic_write_text(paths[2], _latex(wide, row_name, f"{spec.artefact}: {spec.caption} ({scale} scale)")
                      if len(wide) else "% no results yet\n")
    return paths
