"""Candidate events of the audit's selection stage, and counting them on fresh draws.

For real outputs the events are ``X > t`` and ``X <= t`` with ``t`` at quantiles of the
pooled stage-1 batch; for discrete outputs, sets of outcomes ordered by their empirical
likelihood ratio (prefixes), and the single most likely outcomes (see :mod:`dpexp.audit`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpexp.audit.statistics import clopper_pearson_lower, clopper_pearson_upper, score

__all__ = ["Event", "as_rows", "candidate_events", "codes", "count_event"]


@dataclass(frozen=True)
class Event:
    """A candidate event: ``X > threshold``, ``X <= threshold`` or ``X in outcomes``."""

    kind: str  # "gt" | "le" | "set"
    threshold: float = 0.0
    outcomes: np.ndarray | None = None  # rows of the outcome set (discrete)

    def describe(self) -> str:
        if self.kind == "gt":
            return f"X > {self.threshold:.6g}"
        if self.kind == "le":
            return f"X <= {self.threshold:.6g}"
        assert self.outcomes is not None
        shown = [tuple(int(v) for v in row) if row.ndim else int(row) for row in self.outcomes[:5]]
        more = f" and {len(self.outcomes) - 5} more" if len(self.outcomes) > 5 else ""
        return f"X in {shown}{more}"


def as_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"discrete outputs must have shape (n,) or (n, k), got {x.shape}")
    if not np.issubdtype(x.dtype, np.integer):
        if not np.all(np.equal(np.mod(x, 1), 0)):
            raise ValueError("discrete outputs must be integers")
        x = x.astype(np.int64)
    if x.size and x.min() < 0:
        raise ValueError("discrete outputs must be >= 0")
    return x.astype(np.int64)


def codes(rows: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Encode the rows of several arrays consistently as integers 0..m-1 (joint unique).

    Small non-negative integer rows are packed in mixed radix first (a 1-D unique is far
    faster than a row-wise one); otherwise fall back to ``np.unique(axis=0)``.
    """
    stacked = np.concatenate(rows, axis=0)
    base = int(stacked.max(initial=0)) + 1
    k = stacked.shape[1]
    if k * math.log2(base + 1) < 62:
        packed = stacked @ (base ** np.arange(k, dtype=np.int64))
        _, inverse = np.unique(packed, return_inverse=True)
    else:
        _, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    out, start = [], 0
    for r in rows:
        out.append(inverse[start : start + len(r)])
        start += len(r)
    return out


def count_event(x: np.ndarray, event: Event) -> int:
    if event.kind == "gt":
        return int(np.count_nonzero(x > event.threshold))
    if event.kind == "le":
        return int(np.count_nonzero(x <= event.threshold))
    assert event.outcomes is not None
    rows = as_rows(x)
    if rows.shape[1] != event.outcomes.shape[1]:
        return 0
    code_x, code_e = codes([rows, event.outcomes])
    return int(np.count_nonzero(np.isin(code_x, code_e)))


def candidate_events(
    xa: np.ndarray, xb: np.ndarray, output: str, alpha_side: float, delta: float, gaussian: bool
) -> tuple[float, Event]:
    """Best (score, event) for "A more likely than B" on stage-1 draws."""
    n_a, n_b = len(xa), len(xb)
    if output == "real":
        xa = np.asarray(xa, dtype=np.float64).ravel()
        xb = np.asarray(xb, dtype=np.float64).ravel()
        pooled = np.concatenate([xa, xb])
        qs = np.unique(np.quantile(pooled, np.linspace(0.0005, 0.9995, 400)))
        sa, sb = np.sort(xa), np.sort(xb)
        le_a = np.searchsorted(sa, qs, side="right")
        le_b = np.searchsorted(sb, qs, side="right")
        best: tuple[float, Event] = (-np.inf, Event("gt", float(qs[0])))
        for kind, ka, kb in (("gt", n_a - le_a, n_b - le_b), ("le", le_a, le_b)):
            s = score(
                clopper_pearson_lower(ka, n_a, alpha_side),
                clopper_pearson_upper(kb, n_b, alpha_side),
                delta,
                gaussian,
            )
            i = int(np.argmax(s))
            if s[i] > best[0]:
                best = (float(s[i]), Event(kind, float(qs[i])))
        return best
    ra, rb = as_rows(xa), as_rows(xb)
    ca, cb = codes([ra, rb])
    m = int(max(ca.max(initial=-1), cb.max(initial=-1))) + 1
    cnt_a = np.bincount(ca, minlength=m)
    cnt_b = np.bincount(cb, minlength=m)
    table = np.zeros((m, ra.shape[1]), dtype=np.int64)
    table[ca] = ra
    table[cb] = rb
    order = np.lexsort((-cnt_a, -(cnt_a + 0.5) / (cnt_b + 0.5)))
    pref_a, pref_b = np.cumsum(cnt_a[order]), np.cumsum(cnt_b[order])
    s_pref = score(
        clopper_pearson_lower(pref_a, n_a, alpha_side),
        clopper_pearson_upper(pref_b, n_b, alpha_side),
        delta,
        gaussian,
    )
    likely = np.argsort(-cnt_a, kind="stable")[:20]
    s_single = score(
        clopper_pearson_lower(cnt_a[likely], n_a, alpha_side),
        clopper_pearson_upper(cnt_b[likely], n_b, alpha_side),
        delta,
        gaussian,
    )
    i, j = int(np.argmax(s_pref)), int(np.argmax(s_single))
    if s_pref[i] >= s_single[j]:
        return float(s_pref[i]), Event("set", outcomes=table[order[: i + 1]])
    return float(s_single[j]), Event("set", outcomes=table[likely[j : j + 1]])
