"""Paid DP domains: the harness parameter ``dp_domain_share`` (issues 38 and 44).

A row is ``private`` only when every input that shaped the release is declared public or
paid for (:mod:`dpexp.experiments.flags`). Where datasets.yaml declares no feature domain
or label range, the loader falls back on the observed min/max (not DP). A cell whose
params hold ``dp_domain_share = s`` (a float in (0, 1)) pays for them instead: on the
training fold only, :func:`dpexp.privacy.bounds.dp_feature_domain` releases one range per
observed feature column, plus the label as one more column for a regression dataset with
an observed label range (one Laplace histogram release, sensitivity = the number of
columns), with ``s * epsilon`` of the cell's budget, charged to an accountant of its own
and drawn from a noise stream of its own (:func:`domain_noise`). The estimator then gets
``(1 - s) * epsilon`` and the public metadata with the observed entries replaced by the DP
ones; declared entries stay as they are.

``dp_domain_share`` is a *harness* parameter: part of the cell's params (its content key,
its ``p_dp_domain_share`` column) but never passed to the estimator
(:func:`estimator_params`). ``expand`` adds it to the private cells of a spec with
``dp_domains: s`` on the datasets whose registry entry leaves a domain undeclared
(:attr:`dpexp.datasets.registry.DatasetInfo.declares_every_domain`), so the cells of
declared datasets and non-private series keep their keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpexp.datasets.core import OBSERVED, Dataset, observed_parts
from dpexp.errors import DatasetError, SpecError
from dpexp.experiments.harness_params import DP_DOMAIN_SHARE, PAID, check_share
from dpexp.privacy.accountant import Accountant
from dpexp.privacy.bounds import dp_feature_domain
from dpexp.seeding import seed_sequence

__all__ = ["PaidDomains", "domain_noise", "pay_for_domains"]


def domain_noise(seed: int, seed_key: str) -> np.random.Generator:
    """The noise stream of a cell's domain release: keyed by the cell's run seed and content
    (``Cell.seed_key``) under a name of its own, so it is neither the structure stream
    (``random_state``) nor the estimator's noise (``seeded_noise(random_state)``)."""
    return np.random.default_rng(seed_sequence(seed, f"dp_feature_domain|{seed_key}"))


@dataclass(frozen=True)
class PaidDomains:
    """What the domain release gives the estimator, and what it cost."""

    #: ``ds.public_metadata()`` with the observed entries replaced by the DP ones.
    public: dict[str, Any]
    #: The estimator's budget: ``(1 - share) * epsilon``.
    estimator_epsilon: float
    #: The release's own accountant (budget ``share * epsilon``, one ledger entry).
    accountant: Accountant
    #: The row's ``domain_source``, e.g. ``paid (dp_feature_domain, epsilon 0.1 of 1: 2 of 8 features)``.
    domain_source: str


def _observed_columns(ds: Dataset) -> list[int]:
    cols = [j for j, src in enumerate(ds.feature_domain_sources) if src == OBSERVED]
    categorical = [ds.feature_names[j] for j in cols if ds.categorical_features[j]]
    if categorical:  # a range does not pay for a category count read from the data
        raise DatasetError(
            f"Dataset {ds.name!r}: {DP_DOMAIN_SHARE} cannot pay for the observed category "
            f"count of {', '.join(categorical)}; declare its categories in datasets.yaml.")
    return cols


def pay_for_domains(ds: Dataset, X_train: Any, y_train: Any, *, share: float, epsilon: float,
                    rng: np.random.Generator) -> PaidDomains | None:
    """Release the observed domains of ``ds`` on the training fold (module docstring);
    None when ``ds`` declares every domain (nothing to pay for: the budget stays whole)."""
    share = check_share(share, f"parameter {DP_DOMAIN_SHARE!r}")
    if not math.isfinite(epsilon):
        raise SpecError(f"{DP_DOMAIN_SHARE} needs a finite epsilon (a private algorithm), got {epsilon}.")
    cols = _observed_columns(ds)
    label = ds.task == "regression" and ds.label_domain_source == OBSERVED
    if not cols and not label:
        return None
    parts = []
    if cols:  # a dense slice of the observed columns (implicit zeros of CSR data are values)
        sub = X_train[:, cols]
        parts.append(sub.toarray() if sp.issparse(sub) else np.asarray(sub, dtype=np.float64))
    if label:
        parts.append(np.asarray(y_train, dtype=np.float64).reshape(-1, 1))
    paid_epsilon = share * epsilon
    acc = Accountant(epsilon=paid_epsilon)
    with acc.sequential(DP_DOMAIN_SHARE):
        released = dp_feature_domain(np.hstack(parts), paid_epsilon, rng, accountant=acc)
    public = dict(ds.public_metadata())
    if cols:
        domain = np.array(public["feature_domain"], dtype=np.float64, copy=True)
        domain[cols] = released[:len(cols)]
        public["feature_domain"] = domain
    if label:
        public["label_domain"] = (float(released[-1, 0]), float(released[-1, 1]))
    what = observed_parts(ds.feature_domain_sources, ds.label_domain_source)
    source = f"{PAID} (dp_feature_domain, epsilon {paid_epsilon:g} of {epsilon:g}: {what})"
    return PaidDomains(public, (1.0 - share) * epsilon, acc, source)
