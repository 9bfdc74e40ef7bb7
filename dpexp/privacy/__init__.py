"""Privacy core: mechanisms, the budget accountant, record-stable partitions, the audit.

See ``docs/PRIVACY.md`` for the neighbour relation (add/remove one record), the
sensitivities with their paper citations, composition scopes and the empirical audit.
The audit (:mod:`dpexp.privacy.audit`) is imported lazily by the CLI, not here.
"""

from dpexp.errors import BudgetExceededError
from dpexp.privacy.accountant import Accountant
from dpexp.privacy.mechanisms import (
    analytic_gaussian_sigma,
    exponential_mechanism,
    gaussian_delta,
    gaussian_mechanism,
    gaussian_sigma_classic,
    laplace_mechanism,
    report_noisy_max_one_sided,
    smooth_sensitivity_leaf_2017,
)
from dpexp.privacy.partition import record_partition, record_partition_batch
from dpexp.privacy.randomness import (
    SecureGenerator,
    make_generator,
    secure_generator,
    spawn_generators,
)

__all__ = [
    "Accountant",
    "BudgetExceededError",
    "SecureGenerator",
    "analytic_gaussian_sigma",
    "exponential_mechanism",
    "gaussian_delta",
    "gaussian_mechanism",
    "gaussian_sigma_classic",
    "laplace_mechanism",
    "make_generator",
    "record_partition",
    "record_partition_batch",
    "report_noisy_max_one_sided",
    "secure_generator",
    "smooth_sensitivity_leaf_2017",
    "spawn_generators",
]
