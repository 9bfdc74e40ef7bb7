"""Check a paper's qualitative claims against our aggregated results.

A claim in a spec is either plain text (reported, not machine-checked) or a mapping::

    - text: "DPBoost beats PARA and SEQ at epsilon = 1"
      better: DPBoost               # series label
      than: [PARA, SEQ]
      metric: {classification: error, regression: rmse}   # or one name
      direction: lower              # lower | higher is better
      epsilon: 1                    # optional: only this epsilon
      mode: mean                    # mean over datasets (default) | each (every dataset)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

CLAIM_KEYS = {"text", "better", "than", "metric", "direction", "epsilon", "mode", "datasets"}


@dataclass
class ClaimResult:
    text: str
    status: str  # "pass" | "fail" | "not checked" | "no data"
    detail: str


def _metric_rows(agg: pd.DataFrame, metric, tasks: dict[str, str]) -> pd.DataFrame:
    if isinstance(metric, dict):
        keep = [m == metric.get(tasks.get(d, ""), None) for d, m in zip(agg["dataset"], agg["metric"], strict=True)]
        return agg[keep]
    return agg[agg["metric"] == metric]


def check_claim(claim, agg: pd.DataFrame, tasks: dict[str, str]) -> ClaimResult:
    if isinstance(claim, str):
        return ClaimResult(claim, "not checked", "plain-text claim")
    text = claim.get("text", str(claim))
    sub = _metric_rows(agg, claim["metric"], tasks)
    sub = sub[sub["step"].isna()] if "step" in sub else sub
    if "datasets" in claim:
        sub = sub[sub["dataset"].isin(claim["datasets"])]
    if "epsilon" in claim:
        eps = float(claim["epsilon"])
        finite = sub["epsilon"].astype(float)
        sub = sub[(finite == eps) | finite.map(math.isinf)]
    lower = claim.get("direction", "lower") == "lower"
    mode = claim.get("mode", "mean")
    a = sub[sub["series"] == claim["better"]].groupby("dataset")["mean"].mean()
    if a.empty:
        return ClaimResult(text, "no data", f"no results for {claim['better']!r}")
    details, ok = [], True
    for other in claim["than"]:
        b = sub[sub["series"] == other].groupby("dataset")["mean"].mean()
        common = a.index.intersection(b.index)
        if common.empty:
            return ClaimResult(text, "no data", f"no results for {other!r} on the same datasets")
        diff = (a[common] - b[common]) if lower else (b[common] - a[common])
        holds = bool((diff < 0).all()) if mode == "each" else bool(diff.mean() < 0)
        ok &= holds
        details.append(
            f"{claim['better']} {a[common].mean():.4g} vs {other} {b[common].mean():.4g} "
            f"(mean over {len(common)} dataset(s); {'holds' if holds else 'does not hold'})"
        )
    return ClaimResult(text, "pass" if ok else "fail", "; ".join(details))
