"""Paper-like figures, designed for the report's page (issue 42; look in
:mod:`dpexp.render.style`).

One panel per dataset (at most four a row, each plotting area at least 300 page pixels
tall), mean with error bars over folds/repeats clipped to the metric's range. Private
algorithms are lines over the x axis; non-private ones (epsilon = inf) horizontal dashed
lines. An algorithm has one colour and marker in every figure; the paper's printed values,
where the spec has them, are hollow markers of the series' marker and colour. A panel whose
series span more than 10x gets a log y axis. One legend, below the panels, never over them.

The title is short (artefact, paper, "smoke — not the paper's setting" at smoke scale);
the caveats (feature-domain source, issue 16 item 5) are the figure's caption, written
under it in the report and the results table and into the PNG's and PDF's metadata,
never into the title.

Panels follow the paper's dataset order, then any dataset run outside the spec's grid;
the x axis shows whatever epsilons are cached. Series whose release is not DP are named
"(not DP)" in the legend.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from dpexp.experiments.cache import atomic_write_bytes
from dpexp.experiments.spec import ExperimentSpec
from dpexp.render import style
from dpexp.render.figure_inputs import (
    FORMATS,
    current_sha,
    figure_path,
    inputs_digest,
    record_file,
)
from dpexp.render.frame import RenderContext, param_values
from dpexp.render.markup import SMOKE_LABEL

#: The formats the report shows (it draws no PDF; ``dpexp render`` draws both, and a PDF on
#: disk is kept in step with its PNG whoever draws).
REPORT_FORMATS = ("png",)
#: The legend entry of the paper's printed values (one for every series).
PAPER_LABEL = "hollow: the paper's printed value"
#: Prefix of the gid of an artist that draws an algorithm's series (:func:`_tag`).
SERIES_GID = "series:"


def _legend_names(agg: pd.DataFrame) -> pd.DataFrame:
    """Use the display names ("... (not DP)") as series names: paper values are attached."""
    return agg.assign(series=agg["display"]) if "display" in agg else agg


def figure_title(spec: ExperimentSpec, ctx: RenderContext) -> str:
    """The figure's one-line title: the artefact and paper (and the smoke label)."""
    return style.short_title(spec.artefact, spec.paper,
                             f" [{SMOKE_LABEL}]" if ctx.scale == "smoke" else "")


def figure_caption(ctx: RenderContext) -> str:
    """The caveats a reader needs under the figure (the feature-domain source)."""
    return ctx.note


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
        return param_values(sub, x[6:]).astype(float)
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


def _save(fig, out_base: Path, caption: str, formats: Sequence[str]) -> dict[str, str]:
    """Write ``formats`` (of :data:`FORMATS`) of the figure; format -> sha256 of the bytes
    written."""
    # lazy: pyplot only after build_figure has selected the Agg backend
    import matplotlib.pyplot as plt

    out_base.parent.mkdir(parents=True, exist_ok=True)
    written = {}
    # The caption travels with the file (a figure seen outside the report keeps it).
    meta = {"png": {"Title": fig.get_suptitle(), "Description": caption},
            "pdf": {"Title": fig.get_suptitle(), "Subject": caption}}
    # Every format is drawn, in one order, even one not written: constrained layout may
    # move things between draws, so a PNG is the same bytes whatever else is stale.
    for ext in FORMATS:
        buffer = io.BytesIO()  # written whole and renamed: a killed render leaves the old file
        fig.savefig(buffer, format=ext, dpi=style.DPI, metadata=meta[ext])
        if ext not in formats:
            continue
        data = buffer.getvalue()
        atomic_write_bytes(figure_path(out_base, ext), data)
        written[ext] = hashlib.sha256(data).hexdigest()
    plt.close(fig)
    return written


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


def series_keys(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext) -> dict[str, str]:
    """Series name -> the algorithm it is coloured by (:func:`style.algorithm_key`): the
    results' algorithm of its label, else the spec's."""
    names = {a.label: a.name for a in spec.algorithms} | ctx.algorithms
    first_label = dict(zip(agg["series"], agg["label"], strict=True))
    return {s: style.algorithm_key(names.get(str(lab)), str(lab)) for s, lab in first_label.items()}


def _variants(series: Sequence[str], keys: dict[str, str]) -> dict[str, int]:
    """Series -> its index among the figure's series of the same algorithm (0 for the first)."""
    seen: dict[str, int] = {}
    out = {}
    for s in series:
        out[s] = seen.get(keys[s], 0)
        seen[keys[s]] = out[s] + 1
    return out


def _clipped_yerr(mean: pd.Series, std: pd.Series, metric: str | None) -> np.ndarray:
    """Asymmetric error bars (mean ± std) clipped to the metric's range (an error rate
    never goes below 0, an accuracy never above 1)."""
    lo, hi = style.metric_range(metric)
    m = mean.astype(float).to_numpy()
    s = np.nan_to_num(std.astype(float).to_numpy())
    return np.vstack([m - np.maximum(m - s, lo), np.minimum(m + s, hi) - m])


def _panel_values(sub: pd.DataFrame) -> list[float]:
    vals = list(sub["mean"].astype(float))
    if "paper_value" in sub:
        vals += list(sub["paper_value"].dropna().astype(float))
    return vals


def _legend(fig, handles: dict, ncols_hint: float) -> None:
    """One legend below the panels (constrained layout keeps it off them)."""
    if not handles:
        return
    labels = list(handles)
    fig.legend([handles[k] for k in labels], labels, loc="outside lower center",
               ncol=style.legend_columns(labels, ncols_hint), frameon=False)


def _paper_handle():
    return Line2D([], [], ls="none", marker="o", mfc="none", mec="black", ms=7)


def _new_figure(rows: int, cols: int, width: float, n_legend: int, legend_cols: int):
    # lazy: pyplot only after build_figure has selected the Agg backend
    import matplotlib.pyplot as plt

    legend_rows = math.ceil(n_legend / max(legend_cols, 1))
    height = (rows * style.ROW_HEIGHT_IN + style.TITLE_HEIGHT_IN
              + legend_rows * style.LEGEND_ROW_IN + 0.2)
    return plt.subplots(rows, cols, figsize=(width, height), squeeze=False, layout="constrained")


def _series_labels(spec: ExperimentSpec, sub: pd.DataFrame, with_paper: bool) -> list[str]:
    names = _ordered_series(spec, sub)
    return names + ([PAPER_LABEL] if with_paper else [])


def build_bars(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext):
    """Grouped bars: datasets on x, one bar per algorithm (Fletcher & Islam Figs. 4-6,
    11-14), the datasets split over rows so that every bar stays readable.

    Non-private series are outlined bars, as in the paper; the paper's printed values are
    hollow markers on the matching bar.
    """
    agg = _legend_names(agg)
    present = set(agg["dataset"])
    datasets = [d for d in ctx.order if d in present]
    metric_of = {d: _metric_for(spec, ctx.tasks.get(d, "classification"),
                                set(agg.loc[agg["dataset"] == d, "metric"])) for d in datasets}
    sub = agg[[m == metric_of.get(d) for d, m in zip(agg["dataset"], agg["metric"], strict=True)]]
    sub = sub[sub["step"].isna()]
    series = _ordered_series(spec, sub)
    keys = series_keys(spec, sub, ctx)
    variant = _variants(series, keys)
    has_paper = "paper_value" in sub and sub["paper_value"].notna().any()
    labels = _series_labels(spec, sub, bool(has_paper))
    # ~14 page pixels a bar: how many dataset groups fit in one row of the page's width.
    fit = max(1, int((style.FIG_WIDTH_IN * style.DPI - 80) // (len(series) * 14 / 0.8 + 10)))
    per_row = math.ceil(len(datasets) / math.ceil(len(datasets) / fit)) if datasets else 1
    chunks = [datasets[i:i + per_row] for i in range(0, len(datasets), per_row)] or [[]]
    width = style.figure_width(style.MAX_COLUMNS if len(datasets) > 2 else 2)
    lcols = style.legend_columns(labels, width)
    fig, axes = _new_figure(len(chunks), 1, width, len(labels), lcols)
    metric = next(iter(sorted(set(metric_of.values()) - {None})), None)
    handles: dict = {}
    for ax, chunk in zip(axes[:, 0], chunks, strict=True):
        _bar_row(ax, spec, sub, chunk, series, keys, variant, ctx, handles)
        ax.set_ylabel(_ylabel(spec, [metric or ""], sub))
        ax.set_xlim(-0.5, per_row - 0.5 if len(chunks) > 1 else len(chunk) - 0.5)
        if style.wants_log(_panel_values(sub[sub["dataset"].isin(chunk)])):
            ax.set_yscale("log")
    if has_paper:
        handles[PAPER_LABEL] = _paper_handle()
    fig.suptitle(figure_title(spec, ctx))
    _legend(fig, handles, width)
    return fig


def _bar_row(ax, spec, sub, chunk, series, keys, variant, ctx, handles) -> None:
    """One row of grouped bars over the datasets of ``chunk``."""
    width = 0.8 / max(len(series), 1)
    xs = np.arange(len(chunk))
    for k, name in enumerate(series):
        s = sub[sub["series"] == name].groupby("dataset").agg(
            mean=("mean", "mean"), std=("std", "mean"), paper=("paper_value", "first"),
            eps=("epsilon", "first"), metric=("metric", "first"))
        s = s.reindex(chunk)
        if s["mean"].isna().all():
            continue
        st = style.style_of(keys[name])
        colour = style.variant_color(keys[name], variant[name])
        off = xs - 0.4 + width * (k + 0.5)
        private = np.isfinite(s["eps"].astype(float)).any()
        metric = s["metric"].dropna().iloc[0] if s["metric"].notna().any() else None
        bars = ax.bar(off, s["mean"], width * 0.92, yerr=_clipped_yerr(s["mean"], s["std"], metric),
                      capsize=1.5, color=colour if private else "none", edgecolor=colour,
                      hatchcolor="white" if private else colour,
                      linewidth=1.2, hatch=style.HATCHES[variant[name] % len(style.HATCHES)],
                      error_kw={"elinewidth": 0.8, "ecolor": "#333333"}, label=name)
        handles.setdefault(name, bars)
        _tag(bars.patches, keys[name], variant[name])
        if s["paper"].notna().any():
            ax.plot(off, s["paper"], ls="none", marker=st.marker, mfc="white", mec="black",
                    mew=1.1, ms=6, zorder=4)
    ax.set_xticks(xs, [ctx.display.get(d, d) for d in chunk], rotation=25, ha="right")
    ax.grid(axis="x", visible=False)


def build_metric_bars(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext):
    """Horizontal bars over a family of metrics (``plot: {x: metric, y: "importance:*"}``).

    One panel per dataset; the ``plot.top`` (default 10) metrics with the largest mean in
    the first series are shown, grouped by series (e.g. XGBoost-DP Fig. 1, feature
    importance), with error bars over folds/repeats.
    """
    agg = _legend_names(agg)
    pattern = spec.plot.get("y", "*")
    top = int(spec.plot.get("top", 10))
    sub = agg[np.array([fnmatch.fnmatch(m, pattern) for m in agg["metric"]], dtype=bool)
              & agg["step"].isna().to_numpy()]
    panels = [d for d in ctx.order if d in set(sub["dataset"])]
    series = _ordered_series(spec, sub) if len(sub) else []
    keys = series_keys(spec, sub, ctx) if len(sub) else {}
    variant = _variants(series, keys)
    rows, cols = style.grid_shape(len(panels))
    width = style.figure_width(cols)
    lcols = style.legend_columns(series, width)
    fig, axes = _new_figure(rows, cols, width, len(series), lcols)
    handles: dict = {}
    for i, panel in enumerate(panels):
        ax = axes[i // cols][i % cols]
        p = sub[sub["dataset"] == panel]
        order = (p[p["series"] == series[0]].sort_values("mean", ascending=False)["metric"]
                 .head(top).tolist())
        ys = np.arange(len(order))[::-1]
        h = 0.8 / max(len(series), 1)
        for k, name in enumerate(series):
            s = p[p["series"] == name].set_index("metric").reindex(order)
            colour = style.variant_color(keys[name], variant[name])
            bars = ax.barh(
                ys + 0.4 - h * (k + 0.5), s["mean"], h * 0.92, xerr=s["std"].fillna(0), capsize=1.5,
                color=colour, edgecolor=colour, hatchcolor="white", hatch=style.HATCHES[variant[name] % len(style.HATCHES)],
                error_kw={"elinewidth": 0.8}, label=name)
            handles.setdefault(name, bars)
            _tag(bars.patches, keys[name], variant[name])
        ax.set_yticks(ys, [m.split(":", 1)[-1] for m in order])
        ax.set_xlabel(spec.plot.get("xlabel") or pattern)
        ax.set_title(_panel_title(ctx, panel, i, len(panels)))
        ax.grid(axis="y", visible=False)
    _hide_unused(axes, len(panels), cols)
    fig.suptitle(figure_title(spec, ctx))
    _legend(fig, handles, width)
    return fig


def _tag(artists, key: str, variant: int) -> None:
    """Name the algorithm an artist draws (its gid, ``series:<key>#<variant>``; SVG keeps
    it as the element id): the test of one colour per algorithm across figures reads it."""
    for a in artists:
        a.set_gid(f"{SERIES_GID}{key}#{variant}")


def _panel_title(ctx: RenderContext, panel: str | None, i: int, n: int) -> str:
    """"(a) name", wrapped to the panel's width (a long stand-in name never runs into
    the next panel's title)."""
    title = ctx.display.get(panel, panel) if panel is not None else ""
    text = f"({chr(97 + i)}) {title}" if n > 1 else str(title)
    return "\n".join(textwrap.wrap(text, style.PANEL_TITLE_CHARS)) or text


def _hide_unused(axes, used: int, cols: int) -> None:
    for j in range(used, axes.shape[0] * cols):
        axes[j // cols][j % cols].axis("off")


def _draw_series(ax, s: pd.DataFrame, name: str, x: str, metric: str | None,
                 key: str, variant: int, handles: dict) -> bool:
    """One series of a line panel; True when it drew a paper value."""
    st = style.style_of(key)
    colour = style.variant_color(key, variant)
    ls = style.LINE_STYLES[variant % len(style.LINE_STYLES)]
    private = np.isfinite(s["epsilon"].astype(float)).any() or x != "epsilon"
    pv = s.dropna(subset=["paper_value"]) if "paper_value" in s else s.iloc[0:0]
    if not private:
        line = ax.axhline(float(s["mean"].iloc[0]), ls="--" if variant == 0 else ls, lw=1.4,
                          color=colour, label=name)
        handles.setdefault(name, line)
        _tag([line], key, variant)
        if len(pv):  # a hollow marker at each end (axes x, data y): the paper's level
            ax.plot([0.03, 0.97], [float(pv["paper_value"].iloc[0])] * 2, ls="none",
                    marker=st.marker, mfc="none", mec=colour, mew=1.3, ms=8,
                    transform=ax.get_yaxis_transform())
        return bool(len(pv))
    s = s.assign(_x=_x_values(s, x).to_numpy()).sort_values("_x")
    cont = ax.errorbar(s["_x"], s["mean"], yerr=_clipped_yerr(s["mean"], s["std"], metric),
                       marker=st.marker, ms=4.5, capsize=2, lw=1.4, ls=ls, color=colour,
                       label=name)
    handles.setdefault(name, cont)
    _tag([cont.lines[0]], key, variant)
    if len(pv):
        pv = pv.assign(_x=_x_values(pv, x).to_numpy())
        ax.plot(pv["_x"], pv["paper_value"], ls="none", marker=st.marker, mfc="none",
                mec=colour, mew=1.3, ms=8, zorder=4)
    return bool(len(pv))


def build_lines(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext):
    """Lines over epsilon, trees or a parameter, one panel per dataset."""
    x = spec.plot.get("x", "epsilon")
    agg = _legend_names(agg)
    if x != "epsilon":
        agg = _split_series_by_epsilon(agg)
    panel_by = spec.plot.get("panels", "dataset")
    panels = ([d for d in ctx.order if d in set(agg["dataset"])] if panel_by == "dataset"
              else [None])  # "none": one panel, x across the datasets
    rows, cols = style.grid_shape(len(panels))
    width = style.figure_width(cols)
    all_series = _ordered_series(spec, agg)
    keys = series_keys(spec, agg, ctx)
    variant = _variants(all_series, keys)
    has_paper = "paper_value" in agg and agg["paper_value"].notna().any()
    labels = all_series + ([PAPER_LABEL] if has_paper else [])
    lcols = style.legend_columns(labels, width)
    fig, axes = _new_figure(rows, cols, width, len(labels), lcols)
    handles: dict = {}
    for i, panel in enumerate(panels):
        ax = axes[i // cols][i % cols]
        sub = agg if panel is None else agg[agg["dataset"] == panel]
        metric = _metric_for(spec, ctx.tasks.get(panel, "classification"), set(sub["metric"]))
        sub = sub[sub["metric"] == metric]
        if x != "step":
            sub = sub[sub["step"].isna()]
        _axes_scales(ax, spec, sub)
        for name in _ordered_series(spec, sub):
            _draw_series(ax, sub[sub["series"] == name], name, x, metric, keys[name],
                         variant[name], handles)
        ax.set_title(_panel_title(ctx, panel, i, len(panels)) if panel is not None else spec.artefact)
        ax.set_xlabel(spec.plot.get("xlabel") or _x_label(x))
        ax.set_ylabel(_ylabel(spec, [metric or ""], sub))
    _hide_unused(axes, len(panels), cols)
    if has_paper:
        handles[PAPER_LABEL] = _paper_handle()
    fig.suptitle(figure_title(spec, ctx))
    _legend(fig, {k: handles[k] for k in labels if k in handles}, width)
    return fig


def _x_label(x: str) -> str:
    """The x axis's words: ``param:n_trees`` reads "number of trees"."""
    fixed = {"epsilon": "ε (total privacy budget)", "step": "number of trees"}
    if x in fixed:
        return fixed[x]
    name = x.split(":", 1)[-1]
    return ("number of " + name[2:] if name.startswith("n_") else name).replace("_", " ")


def _axes_scales(ax, spec: ExperimentSpec, sub: pd.DataFrame) -> None:
    """Log x where the spec asks; log y where it asks or the panel's values span > 10x."""
    if spec.plot.get("logx"):
        ax.set_xscale("log")
    if spec.plot.get("logy") or (spec.plot.get("logy") is None and style.wants_log(_panel_values(sub))):
        ax.set_yscale("log")


def build_figure(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext):
    """The matplotlib Figure of an experiment (not saved), in the house style."""
    matplotlib.use("Agg")
    # lazy: importing pyplot picks a backend, so only after use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(style.apply_rc()):
        x = spec.plot.get("x", "epsilon")
        if x == "dataset":
            return build_bars(spec, agg, ctx)
        if x == "metric":
            return build_metric_bars(spec, agg, ctx)
        return build_lines(spec, agg, ctx)


def render_figure(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext, out_base: Path,
                  *, redraw: bool = False, formats: Sequence[str] = FORMATS) -> list[Path]:
    """The figure's files of ``formats`` (PDF and PNG by default) and any other format
    already on disk (a stale PDF is never left beside a current PNG), drawn only where they
    are not current: a file drawn from the same inputs and unchanged since is kept as it is
    (:mod:`dpexp.render.figure_inputs`; ``redraw`` draws them anyway)."""
    digest = inputs_digest(spec, agg, ctx)
    wanted = [ext for ext in FORMATS if ext in formats or figure_path(out_base, ext).exists()]
    stale = [ext for ext in wanted
             if redraw or current_sha(figure_path(out_base, ext), digest) is None]
    if stale:
        written = _save(build_figure(spec, agg, ctx), out_base, figure_caption(ctx), stale)
        for ext in stale:  # each sidecar after its file
            record_file(figure_path(out_base, ext), digest, written[ext])
    return [figure_path(out_base, ext) for ext in wanted]
