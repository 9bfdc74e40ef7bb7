"""Paper-like figures: one panel per dataset, mean with error bars over folds/repeats.

Private algorithms are lines over the x axis; non-private ones (epsilon = inf) are
horizontal dashed lines. The paper's reported values, where the spec has them, are drawn
as hollow markers labelled "(paper)".

Panels follow the paper's dataset order, then any dataset run outside the spec's grid;
the x axis shows whatever epsilons are cached. Series whose release is not DP are named
"(not DP)" in the legend; a smoke-scale figure says "smoke — not the paper's setting" in its
title, and the second title line states the feature-domain source (issue 16, item 5).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpexp.experiments.spec import ExperimentSpec
from dpexp.render.frame import RenderContext, param_values


def _legend_names(agg: pd.DataFrame) -> pd.DataFrame:
    """Use the display names ("... (not DP)") as series names: paper values are attached."""
    return agg.assign(series=agg["display"]) if "display" in agg else agg


def _ylabel(spec: ExperimentSpec, metrics: list[str], rows: pd.DataFrame) -> str:
    label = spec.plot.get("ylabel") or ", ".join(m for m in metrics if m)
    if len(rows) and "diagnostic" in rows and rows["diagnostic"].astype(bool).all():
        label += " (diagnostic)"  # an exact quantity of the run, not a DP release
    return label


def _metric_for(spec: ExperimentSpec, task: str, present: set[str] | None = None) -> str | None:
    """The plotted metric for a task; with ``present``, a dict-valued y falls back to the
    first of its metrics that the panel has (a dataset outside the spec, unknown task)."""
    y = spec.plot.get("y")
    if isinstance(y, dict):
        if y.get(task) is None and present:
            return next((m for m in y.values() if m in present), None)
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
        return param_values(sub, key).astype(float)
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


def _save(fig, out_base: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    out_base.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("pdf", "png"):
        p = out_base.parent / f"{out_base.name}.{ext}"  # the name may contain dots
        fig.savefig(p, dpi=130)
        paths.append(p)
    plt.close(fig)
    return paths


def _split_series_by_epsilon(agg: pd.DataFrame) -> pd.DataFrame:
    """When epsilon is not the x axis, a series with several epsilons becomes one line each."""
    agg = agg.copy()
    finite = agg[np.isfinite(agg["epsilon"].astype(float))]
    multi = finite.groupby("series")["epsilon"].nunique()
    split = set(multi[multi > 1].index)
    agg["series"] = [
        f"{s} (ε={float(e):g})" if s in split and np.isfinite(float(e)) else s
        for s, e in zip(agg["series"], agg["epsilon"], strict=True)
    ]
    return agg


def _ordered_series(spec: ExperimentSpec, sub: pd.DataFrame) -> list[str]:
    """Series in the order the spec lists its algorithms (then grid order)."""
    rank = {a.label: i for i, a in enumerate(spec.algorithms)}
    names = list(dict.fromkeys(sub["series"]))
    first_label = dict(zip(sub["series"], sub["label"], strict=True))
    return sorted(names, key=lambda n: (rank.get(first_label[n], len(rank)), names.index(n)))


def render_bars(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext, out_base: Path) -> list[Path]:
    """Grouped bars: datasets on x, one bar per algorithm (Fletcher & Islam Figs. 4-6, 11-14).

    Non-private series are drawn as outlined bars, as in the paper; the paper's printed
    values as black hollow diamonds on top of the matching bar.
    """
    import matplotlib.pyplot as plt

    agg = _legend_names(agg)
    present = set(agg["dataset"])
    datasets = [d for d in ctx.order if d in present]
    metric_of = {d: _metric_for(spec, ctx.tasks.get(d, "classification"),
                                set(agg.loc[agg["dataset"] == d, "metric"])) for d in datasets}
    sub = agg[[m == metric_of.get(d) for d, m in zip(agg["dataset"], agg["metric"], strict=True)]]
    sub = sub[sub["step"].isna()]
    series = _ordered_series(spec, sub)
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(datasets) * max(1, len(series)) / 2.5), 3.6))
    xs = np.arange(len(datasets))
    paper_labelled = False
    for k, name in enumerate(series):
        s = sub[sub["series"] == name].groupby("dataset").agg(
            mean=("mean", "mean"), std=("std", "mean"), paper=("paper_value", "first"),
            eps=("epsilon", "first"))
        s = s.reindex(datasets)
        off = xs - 0.4 + width * (k + 0.5)
        private = np.isfinite(s["eps"].astype(float)).any()
        bars = ax.bar(off, s["mean"], width * 0.95, yerr=s["std"], capsize=1.5, label=name,
                      fill=private, edgecolor="black" if not private else None, linewidth=0.8)
        if s["paper"].notna().any():
            ax.scatter(off, s["paper"], marker="D", facecolors="none", edgecolors="black", s=14,
                       zorder=3, label=None if paper_labelled else "paper's value")
            paper_labelled = True
        del bars
    ax.set_xticks(xs, [ctx.display.get(d, d) for d in datasets], rotation=35, ha="right", fontsize=7)
    metrics = sorted(set(metric_of.values()) - {None})
    ax.set_ylabel(_ylabel(spec, metrics, sub), fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=min(len(series) + 1, 4), frameon=False, loc="upper center",
              bbox_to_anchor=(0.5, -0.28))
    ax.set_title(ctx.title(spec), fontsize=9)
    fig.tight_layout()
    return _save(fig, out_base)


def render_metric_bars(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext, out_base: Path) -> list[Path]:
    """Horizontal bars over a family of metrics (``plot: {x: metric, y: "importance:*"}``).

    One panel per dataset; the ``plot.top`` (default 10) metrics with the largest mean in
    the first series are shown, grouped by series (e.g. XGBoost-DP Fig. 1, feature
    importance), with error bars over folds/repeats.
    """
    import fnmatch

    import matplotlib.pyplot as plt

    agg = _legend_names(agg)
    pattern = spec.plot.get("y", "*")
    top = int(spec.plot.get("top", 10))
    sub = agg[np.array([fnmatch.fnmatch(m, pattern) for m in agg["metric"]], dtype=bool) & agg["step"].isna().to_numpy()]
    present = set(sub["dataset"])
    panels = [d for d in ctx.order if d in present]
    series = _ordered_series(spec, sub) if len(sub) else []
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(6.4 * max(len(panels), 1), 0.35 * top + 1.6),
                             squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=False):
        p = sub[sub["dataset"] == panel]
        order = (p[p["series"] == series[0]].sort_values("mean", ascending=False)["metric"].head(top).tolist())
        ys = np.arange(len(order))[::-1]
        h = 0.8 / max(len(series), 1)
        for k, name in enumerate(series):
            s = p[p["series"] == name].set_index("metric").reindex(order)
            ax.barh(ys + 0.4 - h * (k + 0.5), s["mean"], h * 0.95, xerr=s["std"], capsize=1.5,
                    label=name, color=f"C{k % 10}")
        labels = [m.split(":", 1)[-1] for m in order]
        ax.set_yticks(ys, labels, fontsize=7)
        ax.set_xlabel(spec.plot.get("xlabel") or pattern, fontsize=8)
        ax.set_title(ctx.display.get(panel, panel), fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=7, frameon=False, loc="lower right")
    fig.suptitle(ctx.title(spec), fontsize=10)
    fig.tight_layout()
    return _save(fig, out_base)


def render_figure(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext, out_base: Path) -> list[Path]:
    """Draw the figure; returns the written files (PDF and PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = spec.plot.get("x", "epsilon")
    if x == "dataset":
        return render_bars(spec, agg, ctx, out_base)
    if x == "metric":
        return render_metric_bars(spec, agg, ctx, out_base)
    agg = _legend_names(agg)
    if x != "epsilon":
        agg = _split_series_by_epsilon(agg)
    panel_by = spec.plot.get("panels", "dataset")
    present = set(agg["dataset"])
    panels = [d for d in ctx.order if d in present] if panel_by == "dataset" else [None]
    n = max(len(panels), 1)
    ncols = min(n, 5)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(3.4 * ncols, 6.4), 2.9 * nrows + 0.8), squeeze=False)
    all_series = _ordered_series(spec, agg)
    colour = {name: f"C{i % 10}" for i, name in enumerate(all_series)}
    handles = {}
    for i, panel in enumerate(panels):
        ax = axes[i // ncols][i % ncols]
        sub = agg if panel is None else agg[agg["dataset"] == panel]
        metric = _metric_for(spec, ctx.tasks.get(panel, "classification"), set(sub["metric"]))
        sub = sub[sub["metric"] == metric]
        if x != "step":
            sub = sub[sub["step"].isna()]
        for series in _ordered_series(spec, sub):
            s = sub[sub["series"] == series]
            private = np.isfinite(s["epsilon"].astype(float)).any() or x != "epsilon"
            if private:
                s = s.assign(_x=_x_values(s, x).to_numpy()).sort_values("_x")
                color = colour[series]
                ax.errorbar(s["_x"], s["mean"], yerr=s["std"], marker="o", ms=3.5,
                            capsize=2, lw=1.2, label=series, color=color)
                pv = s.dropna(subset=["paper_value"]) if "paper_value" in s else s.iloc[0:0]
                if len(pv):
                    ax.plot(pv["_x"], pv["paper_value"], ls=":", marker="s", mfc="none",
                            color=color, ms=5, lw=0.8, label=f"{series} (paper)")
            else:
                color = colour[series]
                ax.axhline(float(s["mean"].iloc[0]), ls="--", lw=1.2, label=series, color=color)
                if "paper_value" in s and s["paper_value"].notna().any():
                    ax.axhline(float(s["paper_value"].dropna().iloc[0]), ls=":", lw=0.8,
                               color=color, label=f"{series} (paper)")
        if spec.plot.get("logx"):
            ax.set_xscale("log")
        if spec.plot.get("logy"):
            ax.set_yscale("log")
        title = ctx.display.get(panel, panel) if panel is not None else spec.artefact
        ax.set_title(f"({chr(97 + i)}) {title}" if len(panels) > 1 else title, fontsize=9)
        ax.set_xlabel(spec.plot.get("xlabel") or {"epsilon": "ε (total privacy budget)",
                                                   "step": "number of trees"}.get(x, x), fontsize=8)
        ax.set_ylabel(_ylabel(spec, [metric or ""], sub), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        for hh, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, hh)
    for j in range(len(panels), nrows * ncols):
        axes[j // ncols][j % ncols].axis("off")
    longest = max((len(k) for k in handles), default=10)
    ncol = max(1, min(len(handles), int(fig.get_figwidth() * 11 // max(longest, 8))))
    legend_rows = math.ceil(len(handles) / ncol)
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center",
               ncol=ncol, fontsize=7, frameon=False)
    title = ctx.title(spec, width=int(fig.get_figwidth() * 14))
    fig.suptitle(title, fontsize=10)
    bottom = min(0.45, (0.2 * legend_rows + 0.1) / fig.get_figheight())  # legend height, inches
    fig.tight_layout(rect=(0, bottom, 1, 0.99))  # tight_layout makes room for the suptitle
    return _save(fig, out_base)
