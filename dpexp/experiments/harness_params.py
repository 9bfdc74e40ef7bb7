"""The harness's own cell parameters: part of a cell's params (its content key, its ``p_``
columns), read by the runner and never passed to the estimator.

``dp_domain_share`` (a float in (0, 1)): the share of a private cell's epsilon that pays
for the domains its dataset does not declare (:mod:`dpexp.experiments.paid_domains`).
Light on purpose (no numpy): :mod:`dpexp.experiments.cells` reads it to expand a grid.
"""

from __future__ import annotations

from typing import Any

from dpexp.datasets.registry import DatasetInfo
from dpexp.errors import SpecError

__all__ = ["DEFAULT_SHARE", "DP_DOMAIN_SHARE", "HARNESS_PARAMS", "PAID", "check_share", "domain_share",
           "estimator_params", "pays_on"]

#: The harness parameter: the share of a cell's epsilon that pays for its domains.
DP_DOMAIN_SHARE = "dp_domain_share"
#: Parameters of a cell that the runner reads and never passes to the estimator.
HARNESS_PARAMS = frozenset({DP_DOMAIN_SHARE})
#: ``domain_source`` prefix of a row whose observed domains were released under DP.
PAID = "paid"
#: Default share of ``dpexp run --dp-domains`` without a value.
DEFAULT_SHARE = 0.1


def check_share(value: Any, where: str) -> float:
    """``value`` as a share in (0, 1); else a :class:`SpecError` naming ``where``."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0.0 < float(value) < 1.0
    if not ok:
        raise SpecError(f"{where} must be a number strictly between 0 and 1 (the share of each "
                        f"DP cell's epsilon paid for its domains), got {value!r}.")
    return float(value)


def domain_share(params: dict[str, Any]) -> float | None:
    """The cell's ``dp_domain_share`` (checked), or None when it has none."""
    if DP_DOMAIN_SHARE not in params:
        return None
    return check_share(params[DP_DOMAIN_SHARE], f"parameter {DP_DOMAIN_SHARE!r}")


def estimator_params(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` without the harness's own parameters (a copy)."""
    return {k: v for k, v in params.items() if k not in HARNESS_PARAMS}


def pays_on(info: DatasetInfo | None) -> bool:
    """Whether a private cell on the dataset of ``info`` would pay for a domain (from the
    registry alone: some domain its task needs is not declared)."""
    return info is not None and not info.declares_every_domain
