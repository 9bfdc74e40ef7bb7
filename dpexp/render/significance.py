"""Paired significance tests between algorithms (Fletcher & Islam, Section 5.2).

Results are paired by (dataset, epsilon, seed, fold, repeat): every algorithm of a run
sees the same folds, so the differences are paired (rows of different seeds are further
independent pairs) and the Wilcoxon signed-rank test applies without
assuming normality, as the paper does.
"""

from __future__ import annotations

import pandas as pd

from dpexp.experiments.schema import REPLICATE_COLUMNS
from dpexp.render.markup import md_escape


def wilcoxon_table(frame: pd.DataFrame, reference: str, metric: str = "accuracy") -> pd.DataFrame:
    """One row per (dataset, epsilon, comparator): mean difference, pairs, two-sided p."""
    from scipy.stats import wilcoxon

    df = frame[(frame["metric"] == metric) & frame["step"].isna()]
    rows = []
    for (ds, eps), sub in df.groupby(["dataset", "epsilon"], dropna=False):
        pair_by = [c for c in REPLICATE_COLUMNS if c in sub]
        wide = sub.pivot_table(index=pair_by, columns="label", values="value")
        if reference not in wide:
            continue
        for other in wide.columns:
            if other == reference:
                continue
            pair = wide[[reference, other]].dropna()
            diff = pair[reference] - pair[other]
            p = float(wilcoxon(pair[reference], pair[other]).pvalue) if (diff != 0).any() else 1.0
            rows.append({"dataset": ds, "epsilon": eps, "reference": reference, "comparator": other,
                         "mean_difference": float(diff.mean()), "n_pairs": int(len(pair)),
                         "p_value": p})
    return pd.DataFrame(rows)


def wilcoxon_markdown(table: pd.DataFrame, reference: str, metric: str) -> str:
    if table.empty:
        return f"No paired results for {md_escape(repr(reference))} yet."
    lines = [f"Wilcoxon signed-rank tests of **{md_escape(reference)}** vs each comparator "
             f"({md_escape(metric)}, paired by seed, fold and repeat; two-sided p-values):", "",
             "| dataset | ε | comparator | mean difference | pairs | p-value |", "|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        lines.append(f"| {md_escape(r['dataset'])} | {r['epsilon']:g} | {md_escape(r['comparator'])} | "
                     f"{r['mean_difference']:+.4f} | {r['n_pairs']} | {r['p_value']:.3g} |")
    return "\n".join(lines)
