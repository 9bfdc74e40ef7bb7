"""Check a paper's qualitative claims against our aggregated results.

A claim in a spec is either plain text (reported, not machine-checked) or a mapping::

    - text: "DPBoost beats PARA and SEQ at epsilon = 1"
      better: DPBoost               # series label
      than: [PARA, SEQ]
      metric: {classification: error, regression: rmse}   # or one name
      direction: lower              # lower | higher is better
      epsilon: 1                    # optional: only this epsilon
      mode: mean                    # mean over datasets (default) | each (every dataset)

In ``mean`` mode the mean is taken per task: a claim over classification and regression
datasets averages errors with errors and RMSEs with RMSEs (never the two together, whose
scales differ by orders of magnitude) and holds only if it holds for each task.

or a trend of one series along an axis::

    - text: "Accuracy increases with the number of participants"
      series: InPrivate
      metric: {classification: accuracy, regression: mae}
      trend: {classification: increasing, regression: decreasing}   # or one word
      over: param:n_participants    # or epsilon, or step (a staged curve; ``after: N``
                                    # keeps its steps >= N: "keeps improving")
      mode: mean                    # the Spearman correlation of the per-dataset means
                                    # with the axis must have the trend's sign (mean over
                                    # datasets) | each (on every dataset)

On staged curves (metrics per tree count) ``at_step: last`` compares the curves' end
points. A ``better`` claim may ask for a ``margin`` (the mean difference must exceed it, in the
metric's units: "10% lower test errors" is ``margin: 0.10`` on the error).

Closeness of one series to another, in a share of the (dataset, epsilon) cases::

    - text: "DPBoost and NP are quite close in many cases"
      close: DPBoost
      to: NP                        # a non-private reference is taken at every epsilon
      metric: {classification: error, regression: rmse}
      within: 0.10                  # relative: |a - b| <= within * |b|
      share: 0.5                    # of the cases (default 0.5: "in many cases")
      by: param:n_participants      # optional: cases also per value of this axis

and the spread of one series over its replicates (the std of the folds and repeats)::

    - text: "The variance of DPBoost is usually close to zero"
      spread: DPBoost
      metric: {classification: error, regression: rmse}
      max_std: {classification: 0.01, regression: "2%"}  # or one number; "N%": of the mean
      share: 0.5                    # of the (dataset, epsilon) cases ("usually")

Every form may carry ``explained: <evidence>`` (the ablation or experiment and its numbers
that account for a failure; returned as :attr:`ClaimResult.explanation`, it applies only
when the claim fails), with ``shown: {experiment: ID}`` when a committed experiment shows
it (else it is only plausible) and ``post_hoc: <text>`` when it rests on a choice made
after seeing the failure, and ``note: <context>`` (shown with the verdict whatever it is, e.g.
why a claim that holds in form says little).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd
from scipy.stats import spearmanr

from dpexp.render.frame import param_values


@dataclass
class ClaimResult:
    text: str
    status: str  # "pass" | "fail" | "not checked" | "no data" | NOT_EVALUATED_SMOKE
    detail: str
    #: The spec's ``explained:`` evidence for this claim ("" if none); it accounts for a
    #: "fail" (the report shows it there), never turns a fail into a pass.
    explanation: str = ""
    #: ``shown`` when the explanation names a committed experiment that shows it (``shown:
    #: {experiment: ID}``), ``plausible`` for any other explanation, "" without one.
    explanation_status: str = ""
    #: The experiment a shown explanation names ("" if none).
    shown_by: str = ""
    #: The choice made after seeing the failure that the explanation rests on ("" if none).
    post_hoc: str = ""


#: The status of every machine-checkable claim at smoke scale: a pipeline check, never a
#: pass or fail (2 folds of subsampled data cannot support or refute a paper's claim).
NOT_EVALUATED_SMOKE = "not evaluated (smoke)"


def _metric_rows(agg: pd.DataFrame, metric, tasks: dict[str, str]) -> pd.DataFrame:
    if isinstance(metric, dict):
        keep = [m == metric.get(tasks.get(d, ""), None) for d, m in zip(agg["dataset"], agg["metric"], strict=True)]
        return agg[keep]
    return agg[agg["metric"] == metric]


def _axis(sub: pd.DataFrame, over: str) -> pd.Series:
    if over == "step":
        return sub["step"].astype(float)
    if over == "epsilon":
        return sub["epsilon"].astype(float)
    if over.startswith("param:"):
        return param_values(sub, over[6:]).astype(float)
    raise ValueError(f"claim 'over' must be epsilon, step or param:NAME, got {over!r}")


def check_trend(claim: dict, agg: pd.DataFrame, tasks: dict[str, str]) -> ClaimResult:
    text = claim.get("text", str(claim))
    sub = _metric_rows(agg, claim["metric"], tasks)
    if claim["over"] == "step":  # a staged curve: its points from step ``after`` on
        sub = sub[(sub["label"] == claim["series"]) & sub["step"].notna()]
        sub = sub[sub["step"].astype(float) >= float(claim.get("after", 0))]
    else:
        sub = sub[(sub["label"] == claim["series"]) & sub["step"].isna()]
    if "epsilon" in claim:
        sub = sub[sub["epsilon"].astype(float) == float(claim["epsilon"])]
    sub = sub[sub["epsilon"].astype(float).map(math.isfinite)] if claim["over"] == "epsilon" else sub
    if sub.empty:
        return ClaimResult(text, "no data", f"no results for {claim['series']!r}")
    trend = claim["trend"]
    rhos, details = [], []
    for ds, part in sub.groupby("dataset"):
        x = _axis(part, claim["over"])
        want = trend.get(tasks.get(ds, ""), "increasing") if isinstance(trend, dict) else trend
        if x.nunique() < 2:
            continue
        rho = float(spearmanr(x, part["mean"]).statistic)
        rho = rho if want == "increasing" else -rho
        rhos.append(rho)
        means = part["mean"].groupby(x.to_numpy()).mean().sort_index()
        details.append(f"{ds}: {'holds' if rho > 0 else 'does not hold'} (rank corr. {rho:+.2f}; "
                       f"{means.iloc[0]:.4g} at {means.index[0]:g} to {means.iloc[-1]:.4g} at {means.index[-1]:g})")
    if not rhos:
        return ClaimResult(text, "no data", f"fewer than 2 values of {claim['over']}")
    ok = all(r > 0 for r in rhos) if claim.get("mode", "mean") == "each" else sum(rhos) / len(rhos) > 0
    return ClaimResult(text, "pass" if ok else "fail", "; ".join(details))


def check_claim(claim, agg: pd.DataFrame, tasks: dict[str, str]) -> ClaimResult:
    """One claim's result, with the spec's ``explained:`` text attached (see ClaimResult)."""
    if isinstance(claim, str):
        return ClaimResult(claim, "not checked", "plain-text claim")
    check = (check_trend if "trend" in claim else _check_close if "close" in claim
             else _check_spread if "spread" in claim else _check_better)
    result = check(claim, agg, tasks)
    if claim.get("note") and result.status in ("pass", "fail"):
        result = replace(result, detail=f"{result.detail}. Note: {claim['note']}")
    explanation = str(claim.get("explained") or "")
    shown_by = str((claim.get("shown") or {}).get("experiment") or "") if explanation else ""
    status = ("shown" if shown_by else "plausible") if explanation else ""
    return replace(result, explanation=explanation, explanation_status=status, shown_by=shown_by,
                   post_hoc=str(claim.get("post_hoc") or "") if explanation else "")


def _selected(claim: dict, agg: pd.DataFrame, tasks: dict[str, str]) -> pd.DataFrame:
    """The claim's metric rows (final step only), restricted to its datasets and epsilon
    (non-private rows are kept at any epsilon: they stand beside every budget)."""
    sub = _metric_rows(agg, claim["metric"], tasks)
    if claim.get("at_step") == "last" and "step" in sub:  # a staged curve's end point
        sub = sub[sub["step"].notna()]
        sub = sub[sub["step"] == sub.groupby(["dataset", "series"])["step"].transform("max")]
    elif "step" in sub:
        sub = sub[sub["step"].isna()]
    if "datasets" in claim:
        sub = sub[sub["dataset"].isin(claim["datasets"])]
    if "epsilon" in claim:
        finite = sub["epsilon"].astype(float)
        sub = sub[(finite == float(claim["epsilon"])) | finite.map(math.isinf)]
    return sub


def _per_task(value, task: str):
    return value.get(task) if isinstance(value, dict) else value


def _share_verdict(text: str, hits: int, cases: int, share: float, what: str,
                   examples: list[str]) -> ClaimResult:
    ok = hits >= share * cases
    detail = (f"{hits} of {cases} cases {what} (needed: {share:.0%}; "
              f"{'holds' if ok else 'does not hold'}): " + "; ".join(examples))
    return ClaimResult(text, "pass" if ok else "fail", detail)


def _check_close(claim: dict, agg: pd.DataFrame, tasks: dict[str, str]) -> ClaimResult:
    """A ``close``/``to`` claim: |a - b| <= within * |b| in at least ``share`` of the cases."""
    text = claim.get("text", str(claim))
    sub = _selected(claim, agg, tasks)
    a = sub[sub["series"] == claim["close"]]
    b = sub[sub["series"] == claim["to"]]
    if a.empty or b.empty:
        return ClaimResult(text, "no data", f"no results for {claim['close']!r} or {claim['to']!r}")
    by = claim.get("by")
    a, b = a.assign(_by=_axis(a, by) if by else 0.0), b.assign(_by=_axis(b, by) if by else 0.0)
    public_ref = bool(b["epsilon"].astype(float).map(math.isinf).all())
    within = float(claim["within"])
    hits, cases, examples = 0, 0, []
    for (ds, eps, at), part in a.groupby(["dataset", "epsilon", "_by"]):
        match = b[(b["dataset"] == ds) & (b["_by"] == at) & (public_ref | (b["epsilon"] == eps))]
        if match.empty or pd.isna(match["mean"].mean()):
            continue
        target = float(match["mean"].mean())
        value = float(part["mean"].mean())
        close = abs(value - target) <= within * abs(target)
        hits += close
        cases += 1
        where = f"{ds} eps {float(eps):g}" + (f" {by.removeprefix('param:')} {at:g}" if by else "")
        examples.append(f"{where}: {value:.4g} vs {target:.4g}{'' if close else ' (not close)'}")
    if not cases:
        return ClaimResult(text, "no data", f"no common datasets of {claim['close']!r} and {claim['to']!r}")
    return _share_verdict(text, hits, cases, float(claim.get("share", 0.5)),
                          f"within {within:.0%} of {claim['to']}", examples)


def _std_bound(limit, mean: float) -> float:
    """``max_std``: a number in the metric's units, or ``"N%"`` of the mean's magnitude
    (for metrics whose scale is the dataset's, such as RMSE)."""
    if isinstance(limit, str) and limit.strip().endswith("%"):
        return float(limit.strip()[:-1]) / 100.0 * abs(mean)
    return float(limit)


def _check_spread(claim: dict, agg: pd.DataFrame, tasks: dict[str, str]) -> ClaimResult:
    """A ``spread`` claim: replicate std <= max_std in at least ``share`` of the cases."""
    text = claim.get("text", str(claim))
    sub = _selected(claim, agg, tasks)
    a = sub[sub["series"] == claim["spread"]]
    if a.empty:
        return ClaimResult(text, "no data", f"no results for {claim['spread']!r}")
    hits, cases, examples = 0, 0, []
    for (ds, eps), part in a.groupby(["dataset", "epsilon"]):
        limit = _per_task(claim["max_std"], tasks.get(ds, ""))
        if limit is None:
            continue
        std, mean = float(part["std"].mean()), float(part["mean"].mean())
        bound = _std_bound(limit, mean)
        small = std <= bound
        hits += small
        cases += 1
        examples.append(f"{ds} eps {float(eps):g}: std {std:.3g}{'' if small else f' (> {bound:.3g})'}")
    if not cases:
        return ClaimResult(text, "no data", "no dataset with a max_std for its task")
    return _share_verdict(text, hits, cases, float(claim.get("share", 0.5)),
                          "with a std at most max_std", examples)


def _check_better(claim: dict, agg: pd.DataFrame, tasks: dict[str, str]) -> ClaimResult:
    """A ``better``/``than`` claim (see the module docstring)."""
    text = claim.get("text", str(claim))
    sub = _selected(claim, agg, tasks)
    margin = float(claim.get("margin", 0.0))
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
        by = f", by more than {margin:g}" if margin else ""
        for task, names in _by_task(common, tasks):
            diff = (a[names] - b[names]) if lower else (b[names] - a[names])
            holds = bool((diff < -margin).all()) if mode == "each" else bool(diff.mean() < -margin)
            ok &= holds
            over = f"{task} " if task else ""
            details.append(
                f"{claim['better']} {a[names].mean():.4g} vs {other} {b[names].mean():.4g} "
                f"(mean over {len(names)} {over}dataset(s){by}; {'holds' if holds else 'does not hold'})"
            )
    return ClaimResult(text, "pass" if ok else "fail", "; ".join(details))


def _by_task(datasets: pd.Index, tasks: dict[str, str]) -> list[tuple[str, list[str]]]:
    """``datasets`` grouped by task, each group named only when there is more than one."""
    groups: dict[str, list[str]] = {}
    for name in datasets:
        groups.setdefault(tasks.get(name, ""), []).append(name)
    if len(groups) == 1:
        return [("", next(iter(groups.values())))]
    return sorted(groups.items())


def check_claims(claims: list, agg: pd.DataFrame, tasks: dict[str, str], scale: str) -> list[ClaimResult]:
    """Every claim of a spec; at smoke scale none gets a verdict (see NOT_EVALUATED_SMOKE).

    At smoke scale the check still runs, as a pipeline check: it says whether the claim's
    series have results, without the numbers' verdict.
    """
    results = [check_claim(c, agg, tasks) for c in claims]
    if scale != "smoke":
        return results
    out = []
    for r in results:
        if r.status in ("pass", "fail"):
            out.append(replace(r, status=NOT_EVALUATED_SMOKE,
                               detail="pipeline check: the claim's series have smoke results; "
                                      "smoke is not the paper's setting"))
        elif r.status == "no data":
            out.append(replace(r, status=NOT_EVALUATED_SMOKE, detail=f"pipeline check: {r.detail}"))
        else:
            out.append(r)
    return out
