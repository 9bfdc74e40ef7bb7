"""Tables (Markdown, CSV, LaTeX) with our mean ± std beside the paper's values.

Rows follow the paper's dataset order (then datasets run outside the spec's grid) and the
spec's algorithm order; columns are named with the display names ("... (not DP)"). Beside
a paper value, at paper scale, its verdict marker (:func:`dpexp.render.paper_values.verdict_mark`:
✓ reproduced by its kind's rule, "✗ (explained: shown|plausible)", ✗ unexplained;
:func:`dpexp.render.paper_values.judge_value`). The footer counts the paper's printed values
once each, calibration values apart (:class:`dpexp.render.value_status.ComparisonSummary`):
at smoke scale none is judged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpexp.experiments.cache import write_text_if_changed
from dpexp.experiments.spec import ExperimentSpec
from dpexp.render.frame import RenderContext, param_values, row_param
from dpexp.render.markup import SMOKE_LABEL, md_escape
from dpexp.render.numbers import mean_std, plain
from dpexp.render.value_status import comparison_summary


def _axis_value(row: Mapping[str, Any], axis: str, ds_display: dict[str, str]):
    if axis == "dataset":
        return ds_display.get(row["dataset"], row["dataset"])
    if axis == "algorithm":
        return row["display"] if "display" in row else row["series"]
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
        return row_param(row, axis[6:])
    raise ValueError(f"unknown table axis {axis!r}")


def _sort_key(v) -> tuple[int, float, str]:
    """Numbers first in numeric order, then anything else by its text."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return (0, float(v), "")
    return (1, 0.0, str(v))


def _fmt(v: float, fmt: str | None = None) -> str:
    """A number of a table cell: 4 significant digits in positional notation (800,000, not
    8e+05, :mod:`dpexp.render.numbers`) unless a format is given."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return plain(v, 4) if fmt is None else fmt.format(v)


def build_table(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext) -> pd.DataFrame:
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
        sub = agg[[metric.get(ctx.tasks.get(d, ""), None) == m for d, m in zip(agg["dataset"], agg["metric"], strict=True)]]
        metric = None
    else:
        sub = agg if metric is None else agg[agg["metric"] == metric]
    if metric is None and "step" in sub:
        sub = sub[sub["step"].isna()] if sub["step"].isna().any() else sub
    ds_display = ctx.display
    rank = {a.label: i for i, a in enumerate(spec.algorithms)}
    ds_rank = {d: i for i, d in enumerate(ctx.order)}
    sub = sub.assign(_a=sub["label"].map(rank).fillna(len(rank)), _d=sub["dataset"].map(ds_rank))
    # Parameter rows in numeric order (j = 1, 5, 10, not the JSON strings' order).
    param_keys = [f"_{a}" for a in rows_axis if a.startswith("param:")]
    for a in rows_axis:
        if a.startswith("param:"):
            sub = sub.assign(**{f"_{a}": param_values(sub, a[6:]).map(_sort_key)})
    sub = sub.sort_values(["_d", *param_keys, "_a", "epsilon", "step"], kind="stable")
    records = sub.to_dict("records")  # rows as dicts: iterrows builds a Series a row
    out = pd.DataFrame(
        {
            "row": [" · ".join(str(_axis_value(r, a, ds_display)) for a in rows_axis) for r in records],
            "column": [_axis_value(r, cols_axis, ds_display) for r in records],
            "metric": sub["metric"].to_numpy(),
            "ours_mean": sub["mean"].to_numpy(),
            "ours_std": sub["std"].to_numpy(),
            "n": sub["n"].to_numpy(),
            "ci_low": sub["ci_low"].to_numpy(),
            "ci_high": sub["ci_high"].to_numpy(),
            "paper": sub["paper_value"].to_numpy(),
            "paper_std": sub["paper_std"].to_numpy(),
            "diff": sub["diff"].to_numpy(),
            "paper_kind": sub["paper_kind"].to_numpy(),
            "tolerance": sub["tolerance"].to_numpy(),
            "eq_low": sub["eq_low"].to_numpy(),
            "eq_high": sub["eq_high"].to_numpy(),
            "equivalent": sub["equivalent"].to_numpy(),
            "value_verdict": sub["value_verdict"].to_numpy(),
            "explanation": sub["explanation"].to_numpy(),
            "explanation_status": sub["explanation_status"].to_numpy(),
            "post_hoc": sub["post_hoc"].to_numpy(),
            "calibration": sub["calibration"].to_numpy(),
            "reprint_of": sub["reprint_of"].to_numpy(),
            "verdict": sub["verdict"].to_numpy(),
            "kind": ["diagnostic" if d else "metric" for d in sub["diagnostic"]],
            "not_dp": sub["not_dp"].to_numpy(),
            "epsilon_spent": sub["epsilon_spent"].to_numpy(),
        }
    )
    return out


def _paper_text(r: pd.Series) -> str:
    """" (paper V ✓)": the paper's value and, where judged, its verdict marker (the
    ``verdict`` column: a marker, or why there is none), flagged when the value was used
    for calibration or is a reprint counted at its original."""
    if pd.isna(r["paper"]):
        return ""
    mark = str(r["verdict"]) if isinstance(r["verdict"], str) and r["verdict"].startswith(("✓", "✗")) else ""
    flags = (["calibration"] if r.get("calibration") else []) + (["reprint"] if r.get("reprint_of") else [])
    flag = f" [{', '.join(flags)}]" if flags else ""
    return f" (paper {_fmt(r['paper'])}{' ' + mark if mark else ''}{flag})"


def _numeric_column_order(long: pd.DataFrame) -> pd.DataFrame:
    """Columns that are all numbers (a parameter such as the tree count) in numeric order,
    not the text order of the parameters' JSON (1, 10, 100, 30); others as they come."""
    numbers = pd.to_numeric(long["column"].astype(str), errors="coerce")
    if numbers.isna().any():
        return long
    return long.iloc[numbers.to_numpy().argsort(kind="stable")]


def _wide(long: pd.DataFrame, fmt: str | None) -> pd.DataFrame:
    """One column per setting; ``fmt`` the spec's cell format (None: :func:`mean_std`)."""
    def cell(r):
        text = (mean_std(r["ours_mean"], r["ours_std"]) if fmt is None
                else fmt.format(mean=r["ours_mean"], std=r["ours_std"]))
        return text + _paper_text(r)

    long = _numeric_column_order(long.assign(text=long.apply(cell, axis=1)))
    if not (long.groupby("row")["metric"].nunique() > 1).any() and long["metric"].nunique() > 1:
        long = long.assign(row=long["row"].astype(str) + " (" + long["metric"] + ")")
    # Suffix columns with the metric only when a row shows several (not when the metric
    # merely differs by task, e.g. error for classification and RMSE for regression).
    multi_metric = bool((long.groupby("row")["metric"].nunique() > 1).any())
    col = long["column"].astype(str) + ((" · " + long["metric"]) if multi_metric else "")
    long = long.assign(col=col)
    return long.pivot_table(index="row", columns="col", values="text", aggfunc="first", sort=False)


def _markdown(wide: pd.DataFrame, row_name: str) -> str:
    cols = [md_escape(c) for c in wide.columns]
    lines = ["| " + " | ".join([md_escape(row_name), *cols]) + " |", "|" + "---|" * (len(cols) + 1)]
    for idx, r in wide.iterrows():
        cells = [md_escape(idx), *[("" if pd.isna(v) else md_escape(v)) for v in r]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#",
          "$": r"\$", "{": r"\{", "}": r"\}", "^": r"\textasciicircum{}",
          "~": r"\textasciitilde{}", "±": r"$\pm$", "ε": r"$\varepsilon$", "—": "--",
          "✓": r"$\surd$", "✗": r"$\times$"}


#: :data:`_LATEX` as a ``str.translate`` table (every key is one character).
_LATEX_TABLE = str.maketrans(_LATEX)


def _latex_escape(s: str) -> str:
    """Spec text as literal LaTeX (one pass, so no replacement is escaped again)."""
    return s.translate(_LATEX_TABLE)


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


def _verdict_legend(long: pd.DataFrame) -> str:
    """What the markers mean (only when a marker is shown)."""
    if not long["value_verdict"].notna().any():
        return ""
    return ("Markers beside the paper's values: ✓ reproduced by the value's kind's rule "
            "(descriptors and formulas: equal at the printed precision; performance values "
            "and diagnostics: the 90% interval of ours − paper inside ±tolerance, TOST at 5%); "
            "✗ (explained: shown) a miss whose explanation names an experiment and cells that "
            "land (the report checks them); ✗ (explained: plausible) a cause argued with "
            "numbers that do not land; post hoc: a choice made after seeing the miss; ✗ (refuted by "
            "the paper's own numbers) a miss the paper's other printed values exclude; ✗ a miss "
            "without an explanation; [calibration] a value a setting was chosen on; [reprint] "
            "a number counted once, at its original.")


def _diagnostics_note(long: pd.DataFrame) -> str:
    names = sorted(set(long.loc[long["kind"] == "diagnostic", "metric"]))
    if not names:
        return ""
    return ("Diagnostics (exact quantities of the run, not DP releases; judged like the "
            "printed value's kind says, timings never): "
            f"{md_escape(', '.join(names))}.")


def _row_name(spec: ExperimentSpec) -> str:
    row_name = (spec.table or {}).get("rows", "dataset")
    if not spec.table and spec.plot.get("x", "epsilon") != "dataset":
        row_name = f"dataset · {spec.plot.get('x', 'epsilon')}"
    return " · ".join(row_name) if isinstance(row_name, list) else row_name


def render_table(spec: ExperimentSpec, agg: pd.DataFrame, out_base: Path, ctx: RenderContext,
                 header: str) -> list[Path]:
    """Write ``out_base``.md/.csv/.tex; returns the paths.

    ``header`` (Markdown, already escaped) comes first; the footer gives the comparison
    counts, and the diagnostics shown.
    """
    long = build_table(spec, agg, ctx)
    fmt = (spec.table or {}).get("format")
    wide = _wide(long, fmt) if len(long) else pd.DataFrame()
    row_name = _row_name(spec)
    md = [header, "", _markdown(wide, row_name) if len(wide) else "_No cached results for this table's metric._", ""]
    footer = comparison_summary(agg, spec, ctx.scale).text()
    legend = _verdict_legend(long) if len(long) else ""
    md += [x for x in (md_escape(footer) if footer else "", md_escape(legend), _diagnostics_note(long)) if x]
    out_base.parent.mkdir(parents=True, exist_ok=True)
    # Not with_suffix: a filter tag may contain dots (eps=0.5).
    paths = [out_base.parent / f"{out_base.name}.{ext}" for ext in ("md", "csv", "tex")]
    write_text_if_changed(paths[0], "\n".join(md) + "\n")
    write_text_if_changed(paths[1], long.to_csv(index=False))
    scale = SMOKE_LABEL if ctx.scale == "smoke" else f"{ctx.scale} scale"
    write_text_if_changed(paths[2], _latex(wide, row_name, f"{spec.artefact}: {spec.caption} ({scale})")
                      if len(wide) else "% no cached results for this table's metric\n")
    return paths
