"""Privacy core: mechanisms, the budget accountant, record-stable partitions.

See ``docs/PRIVACY.md`` for the neighbour relation (add/remove one record), the
sensitivities with their paper citations, composition scopes, public input
(:mod:`dpexp.privacy.public`), structure vs noise randomness
(:func:`estimator_streams`: noise from fresh OS entropy by default; ``noise_rng=secure_generator()``
for a published model, ``noise_rng=seeded_noise(seed)`` for reproducible experiments) and
the empirical audit, which lives in its own package above this one (:mod:`dpexp.audit`,
``dpexp audit``).

The names below are loaded when first used (PEP 562 ``__getattr__``): importing one leaf
module (say :mod:`dpexp.privacy.randomness`) or the package itself does not load numba,
scipy and scikit-learn, so ``dpexp list`` stays fast; ``from dpexp.privacy import
Accountant`` works as before.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from dpexp.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the same names, for type checkers and the import-graph test
    from dpexp.errors import BudgetExceededError
    from dpexp.privacy.accountant import Accountant
    from dpexp.privacy.budget import BudgetAccountant, charges_budget
    from dpexp.privacy.calibration import (
        analytic_gaussian_sigma,
        gaussian_delta,
        gaussian_sigma_classic,
    )
    from dpexp.privacy.mechanisms import (
        discrete_laplace_mechanism,
        exponential_mechanism,
        gaussian_mechanism,
        laplace_mechanism,
        report_noisy_max_one_sided,
        smooth_sensitivity_leaf_2017,
    )
    from dpexp.privacy.partition import (
        RecordIds,
        record_ids,
        record_partition,
        record_partition_batch,
    )
    from dpexp.privacy.public import (
        DataDependentClassesWarning,
        DataDependentDomainWarning,
        DataDependentWarning,
        public_classes,
    )
    from dpexp.privacy.randomness import (
        EstimatorStreams,
        SecureGenerator,
        estimator_streams,
        make_generator,
        random_words,
        secure_generator,
        seeded_noise,
        spawn_generators,
    )

#: Exported name -> the module that defines it (loaded by :func:`__getattr__` on first use).
_HOMES = MappingProxyType({
    "BudgetExceededError": "dpexp.errors",
    "Accountant": "dpexp.privacy.accountant",
    "BudgetAccountant": "dpexp.privacy.budget",
    "charges_budget": "dpexp.privacy.budget",
    **dict.fromkeys(("analytic_gaussian_sigma", "gaussian_delta", "gaussian_sigma_classic"),
                    "dpexp.privacy.calibration"),
    **dict.fromkeys(("discrete_laplace_mechanism", "exponential_mechanism", "gaussian_mechanism",
                     "laplace_mechanism", "report_noisy_max_one_sided",
                     "smooth_sensitivity_leaf_2017"), "dpexp.privacy.mechanisms"),
    **dict.fromkeys(("RecordIds", "record_ids", "record_partition", "record_partition_batch"),
                    "dpexp.privacy.partition"),
    **dict.fromkeys(("DataDependentClassesWarning", "DataDependentDomainWarning",
                     "DataDependentWarning", "public_classes"), "dpexp.privacy.public"),
    **dict.fromkeys(("EstimatorStreams", "SecureGenerator", "estimator_streams", "make_generator",
                     "random_words", "secure_generator", "seeded_noise", "spawn_generators"),
                    "dpexp.privacy.randomness"),
})


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals)


__all__ = [
    "Accountant",
    "BudgetAccountant",
    "BudgetExceededError",
    "DataDependentClassesWarning",
    "DataDependentDomainWarning",
    "DataDependentWarning",
    "EstimatorStreams",
    "RecordIds",
    "SecureGenerator",
    "analytic_gaussian_sigma",
    "charges_budget",
    "estimator_streams",
    "exponential_mechanism",
    "gaussian_delta",
    "gaussian_mechanism",
    "gaussian_sigma_classic",
    "laplace_mechanism",
    "discrete_laplace_mechanism",
    "random_words",
    "make_generator",
    "public_classes",
    "record_ids",
    "record_partition",
    "record_partition_batch",
    "report_noisy_max_one_sided",
    "secure_generator",
    "seeded_noise",
    "smooth_sensitivity_leaf_2017",
    "spawn_generators",
]
