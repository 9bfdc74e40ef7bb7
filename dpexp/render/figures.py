"""Paper-like figures: one panel per dataset, mean with error bars over folds/repeats.

Private algorithms are lines over the x axis; non-private ones (epsilon = inf) are
horizontal dashed lines. The paper's reported values, where the spec has them, are drawn
as hollow markers labelled "(paper)".
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpexp.experiments.spec import ExperimentSpec


def _metric_for(spec: ExperimentSpec, task: str) -> str | None:
    y = spec.plot.get("y")
    if isinstance(y, dict):
        return y.get(task)
    if isinstance(y, str):
        return y
    names = spec.metrics_for(task)
    return names[0] if names else None


def _x_values(sub: pd.DataFrame, x: str) -> pd.Series:
    if x == "epsilon":
        return sub["epsilon"].astype(float)
    if x == "step":
        return sub["step"].astype(float)
    if x.startswith("param:"):
        key = x[6:]
        return sub["params"].map(lambda p: json.loads(p).get(key)).astype(float)
    if x.startswith("dataset_param:"):
        key = x[len("dataset_param:"):]
        return sub["dataset"].map(lambda d: _dataset_param(d, key)).astype(float)
    raise ValueError(f"unknown plot.x {x!r}")


def _dataset_param(key: str, name: str):
    if "[" not in key:
        return np.nan
    inner = key[key.index("[") + 1 : -1]
    for part in inner.split(","):
        k, _, v = part.partition("=")
        if k == name:
            return float(v)
    return np.nan


def render_figure(spec: ExperimentSpec, agg: pd.DataFrame, tasks: dict[str, str], out_base: Path) -> list[Path]:
    """Draw the figure; returns the written files (PDF and PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = spec.plot.get("x", "epsilon")
    panel_by = spec.plot.get("panels", "dataset")
    panels = list(dict.fromkeys(agg["dataset"])) if panel_by == "dataset" else [None]
    n = max(len(panels), 1)
    ncols = min(n, 5)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 2.9 * nrows + 0.6), squeeze=False)
    ds_display = {d.key: d.display for d in spec.datasets}
    handles = {}
    for i, panel in enumerate(panels):
        ax = axes[i // ncols][i % ncols]
        sub = agg if panel is None else agg[agg["dataset"] == panel]
        metric = _metric_for(spec, tasks.get(panel, "classification"))
        sub = sub[sub["metric"] == metric]
        if x != "step":
            sub = sub[sub["step"].isna()]
        for series, s in sub.groupby("series", sort=False):
            private = np.isfinite(s["epsilon"].astype(float)).any() or x != "epsilon"
            if private:
                s = s.assign(_x=_x_values(s, x).to_numpy()).sort_values("_x")
                h = ax.errorbar(s["_x"], s["mean"], yerr=s["std"], marker="o", ms=3.5,
                                capsize=2, lw=1.2, label=series)
                color = h[0].get_color()
                pv = s.dropna(subset=["paper_value"]) if "paper_value" in s else s.iloc[0:0]
                if len(pv):
                    ax.plot(pv["_x"], pv["paper_value"], ls=":", marker="s", mfc="none",
                            color=color, ms=5, lw=0.8, label=f"{series} (paper)")
            else:
                h = ax.axhline(float(s["mean"].iloc[0]), ls="--", lw=1.2, label=series)
                color = h.get_color()
                if "paper_value" in s and s["paper_value"].notna().any():
                    ax.axhline(float(s["paper_value"].dropna().iloc[0]), ls=":", lw=0.8,
                               color=color, label=f"{series} (paper)")
        if spec.plot.get("logx"):
            ax.set_xscale("log")
        if spec.plot.get("logy"):
            ax.set_yscale("log")
        title = ds_display.get(panel, panel) if panel is not None else spec.artefact
        ax.set_title(f"({chr(97 + i)}) {title}" if len(panels) > 1 else title, fontsize=9)
        ax.set_xlabel(spec.plot.get("xlabel") or {"epsilon": "ε (total privacy budget)",
                                                   "step": "number of trees"}.get(x, x), fontsize=8)
        ax.set_ylabel(spec.plot.get("ylabel") or (metric or ""), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        for hh, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, hh)
    for j in range(len(panels), nrows * ncols):
        axes[j // ncols][j % ncols].axis("off")
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center",
               ncol=min(len(handles), 6), fontsize=7, frameon=False)
    fig.suptitle(f"{spec.artefact} — {spec.paper}", fontsize=10)
    fig.tight_layout(rect=(0, 0.06 + 0.02 * (len(handles) // 6), 1, 0.95))
    out_base.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("pdf", "png"):
        p = out_base.with_suffix(f".{ext}")
        fig.savefig(p, dpi=130)
        paths.append(p)
    plt.close(fig)
    return paths
