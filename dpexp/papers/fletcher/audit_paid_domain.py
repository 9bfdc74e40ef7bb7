"""Audit targets of the runner's paid domain (``dp_domain_share``, issues 38 and 44), with
the Fletcher-Islam forest as the estimator (collected by :mod:`dpexp.papers.fletcher.audit`).

A cell on a dataset without a declared domain may pay part of its epsilon for one
(:mod:`dpexp.experiments.paid_domains`). These targets fit through the runner's own steps
(:func:`dpexp.audit.runner_path.runner_fit`, a test-registered dataset whose feature
domain is ``observed``) with ``dp_domain_share = 0.5``, on neighbours that move the
observed domain or sit at the release threshold:

* base: 22 records at x = 0.75 (the log2 bin [0.5, 1), whose count sits at the release
  threshold ``(d / epsilon) ln(d K / (2 beta))`` ~ 21.6 for epsilon 0.5), alternating labels;
* base + one record in that bin (the bin is released about half of the time);
* base + an extreme canary at x = 10 (what an observed min/max would publish).

Release: the row's verdict and, when it says DP, the exact bytes of the feature domain the
estimator was given (public metadata it publishes with the model).

* ``fletcher_forest_runner_paid_domain``: the runner's path; the domain release is the only
  thing read from the data, at ``0.5 * epsilon``: must pass the claimed epsilon;
* ``fletcher_forest_runner_observed_as_paid`` (broken, must be flagged): charged and said
  ``paid``, but the estimator gets the observed min/max, which the canary moves
  deterministically.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dpexp.audit.paths import exact_code
from dpexp.audit.runner_path import RunnerCase, runner_fit, tiny_info
from dpexp.audit.targets import AuditTarget

__all__ = ["BROKEN_PAID_DOMAIN_TARGETS", "PAID_DOMAIN_TARGETS"]

#: Output of a fit whose row says not DP: no DP claim is made, one symbol for all.
NOT_DP = 0
#: Quick (CI) draws per dataset: a deterministic leak still bounds near 2.8 > 1.
QUICK = 300
#: The cell's parameters: one small tree; half of epsilon pays for the domain.
PARAMS = {"n_trees": 1, "max_depth": 1, "dp_domain_share": 0.5}
CASE = RunnerCase("fletcher_forest", tiny_info("audit_paid_domain", rows=None, features=1,
                                               classes=(0, 1), domain=None), PARAMS, 0)

_BASE_X = np.full((22, 1), 0.75)
_BASE_Y = np.arange(22) % 2
DATASETS = (
    (_BASE_X, _BASE_Y),
    (np.vstack([_BASE_X, [[0.75]]]), np.r_[_BASE_Y, 1]),
    (np.vstack([_BASE_X, [[10.0]]]), np.r_[_BASE_Y, 1]),
)
PAIRS = ((0, 1), (0, 2))


def _release(observed_as_paid: bool):
    def release(data: tuple[np.ndarray, np.ndarray], *, epsilon: float, delta: float,
                rng: np.random.Generator, size: int) -> np.ndarray:
        del delta
        rows = []
        for seed in rng.integers(0, 2**63, size=int(size)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = runner_fit(CASE, *data, epsilon=epsilon, noise_seed=int(seed),
                                 observed_as_paid=observed_as_paid)
            if not fit.private:
                rows.append([NOT_DP, 0])
                continue
            domain: Any = fit.estimator.get_params()["feature_domain"]
            rows.append([1, exact_code(np.asarray(domain, dtype=np.float64))])
        return np.asarray(rows, dtype=np.int64)

    return release


def _target(broken: bool) -> AuditTarget:
    what = ("Fletcher forest through the runner with dp_domain_share 0.5 on a dataset without "
            "a declared domain: a record at the release threshold, an extreme canary at x = 10; "
            "release: the row's verdict and, when it says DP, the feature domain the estimator got")
    return AuditTarget(
        name=("fletcher_forest_runner_observed_as_paid" if broken
              else "fletcher_forest_runner_paid_domain"),
        description=what + (" -- BROKEN: the observed min/max passed while the row says paid"
                            if broken else ""),
        release=_release(broken), datasets=DATASETS, pairs=PAIRS, epsilon=1.0,
        output="discrete", expected_to_pass=not broken, kind="end-to-end", samples=20_000,
        quick_samples=QUICK, algorithm="fletcher_forest")


PAID_DOMAIN_TARGETS: list[AuditTarget] = [_target(broken=False)]
BROKEN_PAID_DOMAIN_TARGETS: list[AuditTarget] = [_target(broken=True)]
