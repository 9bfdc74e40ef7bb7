"""The rules that judge one printed value against ours (issue 41): equality at the printed
precision (descriptors, formulas) and an equivalence test (TOST at 5%: model performance,
diagnostics), with the intervals the report shows beside each value."""

from __future__ import annotations

import functools
import math

from scipy.stats import t as student_t

from dpexp.experiments.spec import ExperimentSpec

#: TOST at 5% on each side: the two one-sided tests at 5% reject together exactly when the
#: 90% two-sided interval of ours - paper lies inside ±tolerance.
EQUIVALENCE_LEVEL = 0.90
#: Two-sided level of our interval of the mean shown beside the value (not used to judge).
CI_LEVEL = 0.95


def paper_runs(spec: ExperimentSpec) -> int:
    """How many runs stand behind each value the paper prints, read from the spec's ``cv``.

    At paper scale the spec's cross-validation is the paper's protocol (e.g. Fletcher &
    Islam, Section 2.4: "repeated ten times, with each test using ten-fold cross
    validation, for a total of 100 results", with "one standard deviation"; Shi et al.,
    Section 5: the given Adult split), so a printed std is taken as the std over
    ``folds x repeats`` runs (k-fold) or ``repeats`` runs (a given split or a holdout),
    the same unit as our ``std``.
    """
    cv = spec.cv
    return int(cv.folds) * int(cv.repeats) if cv.scheme == "kfold" else int(cv.repeats)


@functools.lru_cache(maxsize=4096, typed=True)
def _t_quantile(q: float, dof: float) -> float:
    """Student t's ``q`` quantile with ``dof`` degrees of freedom, computed once per pair:
    a report asks the same few (level, n - 1) for 30,000 rows (issue 43)."""
    return float(student_t.ppf(q, dof))


def mean_interval(mean: float, std: float, n: int, level: float = CI_LEVEL) -> tuple[float, float]:
    """Our ``level`` confidence interval of the mean: Student t with n - 1 degrees of
    freedom over the n fold x repeat values; (nan, nan) for n < 2 (no spread is measured)."""
    if n < 2 or not (math.isfinite(mean) and math.isfinite(std)):
        return (math.nan, math.nan)
    half = _t_quantile(0.5 + level / 2, n - 1) * std / math.sqrt(n)
    return (mean - half, mean + half)


def difference_interval(diff: float, std: float, n: int, paper_std: float, paper_n: int,
                        level: float = EQUIVALENCE_LEVEL) -> tuple[float, float]:
    """The ``level`` interval of ours - paper, the equivalence test's interval.

    Without a printed std (or with fewer than 2 paper runs) the paper's value is taken as
    exact and the interval is ours: t with n - 1 degrees of freedom times std / sqrt(n).
    With one, the standard error of the difference of the two means is
    sqrt(std^2/n + paper_std^2/paper_n), with Welch-Satterthwaite degrees of freedom.
    A noisier run of ours has a wider interval, which makes equivalence *harder*: the
    interval must fit inside ±tolerance. (nan, nan) for n < 2.
    """
    if n < 2 or not (math.isfinite(diff) and math.isfinite(std)):
        return (math.nan, math.nan)
    ours = std**2 / n
    theirs = paper_std**2 / paper_n if math.isfinite(paper_std) and paper_n >= 2 else 0.0
    if ours + theirs == 0:
        return (diff, diff)
    if theirs:
        dof = (ours + theirs) ** 2 / (ours**2 / (n - 1) + theirs**2 / (paper_n - 1))
    else:
        dof = n - 1
    half = _t_quantile(0.5 + level / 2, dof) * math.sqrt(ours + theirs)
    return (diff - half, diff + half)


def equivalent(low: float, high: float, tolerance: float) -> bool:
    """TOST at 5%: the 90% interval of ours - paper lies inside ±tolerance."""
    return bool(-tolerance <= low and high <= tolerance)


def printed_unit(value: float) -> float:
    """One unit of the last digit of ``value`` as printed (and copied into the spec):
    0.90483 -> 1e-05, 1.93e-22 -> 1e-24, 3340 -> 1. The value is first written with 12
    significant digits, so float noise (0.7909999999999999) does not add digits."""
    text = f"{float(value):.12g}"
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def equal_at_precision(ours: float, paper: float) -> bool:
    """Whether ``ours`` printed to the paper's digits gives the paper's value, rounded or
    truncated (papers do both: Fletcher & Islam's Table 2 prints exp(-0.1) = 0.904837 as
    0.90483 and exp(-1) = 0.367879 as 0.36788)."""
    unit = printed_unit(paper)
    diff = ours - paper
    slack = 1e-9 * unit  # binary floats of decimal digits
    low, high = (-unit / 2, unit) if paper >= 0 else (-unit, unit / 2)
    return bool(low - slack <= diff < high - slack or abs(diff) <= unit / 2 + slack)

