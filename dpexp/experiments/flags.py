"""The ``private`` flag of a result row: True only when every input that shaped the release
was declared public or paid for.

A fit's accountant can only vouch for the mechanisms it charged. The harness adds what it
fed the estimator as public input: the feature/label domain (declared in datasets.yaml, or
observed from the data: not DP, or paid for with part of the budget: ``dp_domain_share``)
and ``n_records`` (from the registry's row count and the CV arithmetic, or read from the
data: not DP, :mod:`dpexp.experiments.design`). The runner and the rewrite of committed
tables (:func:`dpexp.experiments.committed.reflag_rows`) use the same functions, so a
recomputed cell and its committed row say the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable

from dpexp.experiments.harness_params import PAID

__all__ = ["join_reasons", "public_input_reasons", "split_reasons"]

#: ``domain_source`` of a dataset whose every public value is declared (dpexp.datasets.core).
_DECLARED = "declared"


def split_reasons(text: str) -> list[str]:
    """The reasons of a ``not_dp_reason`` cell ("a; b" -> ["a", "b"])."""
    return [r for r in str(text or "").split("; ") if r]


def join_reasons(reasons: Iterable[str]) -> str:
    """Reasons as one ``not_dp_reason`` cell, each once, in order."""
    return "; ".join(dict.fromkeys(r for r in reasons if r))


def public_input_reasons(domain_source: str, n_not_public: str = "") -> list[str]:
    """Why the harness's public input makes a release not DP ([] when it is all public).

    ``domain_source`` is the row's (``declared``, ``paid (...)`` or ``observed (not DP:
    ...)``; "" for a procedure without data); ``n_not_public`` the reason ``n_records`` is not public
    (:data:`dpexp.experiments.design.N_FROM_DATA`) or "".
    """
    out = []
    if domain_source and not domain_source.startswith((_DECLARED, PAID)):  # paid: released under DP
        out.append(f"domain {domain_source}")
    if n_not_public:
        out.append(n_not_public)
    return out
