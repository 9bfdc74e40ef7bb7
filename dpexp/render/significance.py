"""Paired significance tests between algorithms (Fletcher & Islam, Section 5.2).

The paper tests "the differences between our technique and JPW, our technique and FS"
with the Wilcoxon signed-rank test "since we cannot assume that the results are normally
distributed", and reports every difference significant (the weakest p = 0.000057, FS on
GammaTele). Results are paired by (dataset, epsilon, seed, fold, repeat): every algorithm
of a run sees the same folds, so the differences are paired (rows of different seeds are
further independent pairs). Fold results of repeated cross-validation share training
rows, so the pairs are not fully independent and p-values are somewhat optimistic, as
they are in the paper's own test.

For the report: :func:`significance_table` (a DataFrame, :data:`SIGNIFICANCE_COLUMNS`)
and :func:`significance_markdown` (the Markdown to embed), both from a spec and its raw
per-fold frame (the aggregated frame has no pairs left).
"""

from __future__ import annotations

import math

import pandas as pd
from scipy.stats import wilcoxon

from dpexp.experiments.schema import REPLICATE_COLUMNS
from dpexp.experiments.spec import ExperimentSpec
from dpexp.render.aggregate import grid_keys_by_label, series_names
from dpexp.render.markup import SMOKE_LABEL, md_escape

#: Two-sided level at which a difference is called significant.
ALPHA = 0.05
SIGNIFICANCE_COLUMNS = ["dataset", "epsilon", "reference", "comparator", "mean_difference",
                        "n_pairs", "p_value", "significant"]


def _pvalue(a: pd.Series, b: pd.Series) -> float:
    """Two-sided Wilcoxon signed-rank p of the paired a - b (1.0 when every pair ties)."""
    if not ((a - b) != 0).any():
        return 1.0
    return float(wilcoxon(a, b).pvalue)


def wilcoxon_table(frame: pd.DataFrame, reference: str, metric: str = "accuracy",
                   alpha: float = ALPHA) -> pd.DataFrame:
    """One row per (dataset, epsilon, comparator): mean difference (reference - comparator),
    pairs, two-sided p and whether p < ``alpha``.

    Series are the frame's ``series`` column when present (grid variants apart), else its
    ``label``; a comparator without a common pair is left out.
    """
    name = "series" if "series" in frame else "label"
    df = frame[(frame["metric"] == metric) & frame["step"].isna()]
    rows = []
    for (ds, eps), sub in df.groupby(["dataset", "epsilon"], dropna=False):
        pair_by = [c for c in REPLICATE_COLUMNS if c in sub]
        wide = sub.pivot_table(index=pair_by, columns=name, values="value")
        if reference not in wide:
            continue
        for other in wide.columns:
            pair = wide[[reference, other]].dropna()
            if other == reference or pair.empty:
                continue
            p = _pvalue(pair[reference], pair[other])
            rows.append({"dataset": ds, "epsilon": eps, "reference": reference, "comparator": other,
                         "mean_difference": float((pair[reference] - pair[other]).mean()),
                         "n_pairs": int(len(pair)), "p_value": p, "significant": bool(p < alpha)})
    return pd.DataFrame(rows, columns=SIGNIFICANCE_COLUMNS)


def _eps_text(eps: float) -> str:
    return "no noise" if math.isinf(float(eps)) else f"{float(eps):g}"


def wilcoxon_markdown(table: pd.DataFrame, reference: str, metric: str,
                      display: dict[str, str] | None = None) -> str:
    """The table in Markdown, with a count of significant differences (``display`` maps a
    dataset key to its name)."""
    if table.empty:
        return f"No paired results for {md_escape(repr(reference))} yet."
    display = display or {}
    n_sig = int(table["significant"].sum()) if "significant" in table else 0
    lines = [f"Wilcoxon signed-rank tests of **{md_escape(reference)}** vs each comparator "
             f"({md_escape(metric)}, paired by seed, fold and repeat; two-sided p-values; "
             f"{n_sig} of {len(table)} differences significant at α = {ALPHA:g}):", "",
             "| dataset | ε | comparator | mean difference | pairs | p-value |", "|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        ds = display.get(r["dataset"], r["dataset"])
        lines.append(f"| {md_escape(ds)} | {_eps_text(r['epsilon'])} | {md_escape(r['comparator'])} | "
                     f"{r['mean_difference']:+.4f} | {r['n_pairs']} | {r['p_value']:.3g} |")
    return "\n".join(lines)


def significance_table(spec: ExperimentSpec, frame: pd.DataFrame) -> pd.DataFrame:
    """The spec's ``significance`` tests on ``frame`` (raw per-fold rows, as rendered):
    :data:`SIGNIFICANCE_COLUMNS`; empty when the spec asks for none. Diagnostics are left out
    (exact quantities of the run, not results the paper tests)."""
    if not spec.significance:
        return pd.DataFrame(columns=SIGNIFICANCE_COLUMNS)
    kept = frame[frame["metric_kind"] != "diagnostic"] if "metric_kind" in frame else frame
    kept = kept.assign(series=series_names(kept, grid_keys_by_label(spec))) if len(kept) else kept
    return wilcoxon_table(kept, spec.significance["reference"], spec.significance.get("metric", "accuracy"))


def significance_markdown(spec: ExperimentSpec, frame: pd.DataFrame, scale: str,
                          display: dict[str, str] | None = None) -> str:
    """Markdown of :func:`significance_table` for the report ("" when the spec asks for no
    test); at smoke scale it is labelled a pipeline check."""
    if not spec.significance:
        return ""
    text = wilcoxon_markdown(significance_table(spec, frame), spec.significance["reference"],
                             spec.significance.get("metric", "accuracy"), display)
    if scale == "smoke":
        text = (f"**Significance ({SMOKE_LABEL}):** a pipeline check, too few pairs to test "
                f"the paper's claim.\n\n{text}")
    return text
