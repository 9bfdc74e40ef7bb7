"""A privacy budget across fits (scikit-learn/diffprivlib style): :class:`BudgetAccountant`.

Each fit of a private estimator has its own per-fit ledger, ``accountant_``
(:class:`dpexp.privacy.Accountant`). A :class:`BudgetAccountant` is the budget of a
*sequence* of fits on the same data: pass it as ``accountant=`` to any private
estimator and every ``fit`` first checks that the fit's promised ``(epsilon, delta)``
still fits in what remains (raising :class:`dpexp.errors.BudgetExceededError` before any
work is done, and spending nothing), then, after the fit, charges what the fit's own
``accountant_`` actually spent (``epsilon_spent``, ``delta_spent``). Composition across
fits is basic sequential composition: epsilons add up, deltas add up.

The fit-begin/fit-end logic lives here, once: :func:`charges_budget` decorates the
``fit`` of every private estimator family.

scikit-learn's ``clone`` (used by ``GridSearchCV``, ``cross_val_score``, ...) deep-copies
parameters; ``copy.deepcopy`` of a :class:`BudgetAccountant` returns the same object,
so all the clones charge one budget (and a refit charges again). Process parallelism
(``n_jobs > 1`` with joblib's default loky/multiprocessing backends) pickles the
estimator into worker processes, where spends cannot reach the parent's object: a
budget accountant used from another process than the one that created it raises
:class:`dpexp.errors.BudgetExceededError` before the fit. Use ``n_jobs=1`` (or the
threading backend: spends are serialised by a lock) with a shared budget.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from dataclasses import dataclass
from typing import Any

from dpexp.errors import BudgetExceededError
from dpexp.privacy.public import check_enclosing_pipeline

#: Relative slack for floating-point sums (a budget of 1 split in ten 0.1 fits is met).
_TOL = 1e-9


@dataclass(frozen=True)
class FitSpend:
    """One charged fit: the estimator's class name and what its ``accountant_`` spent."""

    estimator: str
    epsilon: float
    delta: float


class BudgetAccountant:
    """A privacy budget ``(epsilon, delta)`` shared by several fits (basic composition).

    ``BudgetAccountant(epsilon=inf, delta=0.0)``; ``spend(epsilon, delta)`` records a
    spend, ``total_spent`` is the ``(epsilon, delta)`` spent so far (sum over fits),
    ``remaining()`` what is left, ``check(epsilon, delta)`` raises
    :class:`dpexp.errors.BudgetExceededError` when a spend of that size would exceed the
    budget, ``fits`` records every charged fit (:class:`FitSpend`: estimator name,
    epsilon, delta).

    ``copy.deepcopy`` returns the **same object** (so do ``sklearn.base.clone`` and
    therefore ``GridSearchCV``/``cross_val_score``: every clone charges this budget).
    Pickling (process parallelism) makes a copy that refuses to be charged from another
    process: use ``n_jobs=1`` with a shared budget.
    """

    def __init__(self, epsilon: float = math.inf, delta: float = 0.0):
        epsilon, delta = float(epsilon), float(delta)
        if not epsilon > 0 or math.isnan(epsilon):
            raise ValueError(f"epsilon must be > 0 (or inf), got {epsilon!r}")
        if not 0.0 <= delta <= 1.0:
            raise ValueError(f"delta must be in [0, 1], got {delta!r}")
        self.epsilon = epsilon
        self.delta = delta
        self.fits: list[FitSpend] = []
        self._pid = os.getpid()
        self._lock = threading.RLock()

    # -- copying and pickling --------------------------------------------------------
    def __deepcopy__(self, memo: dict) -> BudgetAccountant:
        """The same object: clones of an estimator share its budget."""
        return self

    def __copy__(self) -> BudgetAccountant:
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # -- the budget ---------------------------------------------------------------
    @property
    def total_spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent by all recorded fits (sequential composition)."""
        return (math.fsum(f.epsilon for f in self.fits), math.fsum(f.delta for f in self.fits))

    def total(self) -> tuple[float, float]:
        """Alias of :attr:`total_spent` (diffprivlib's name)."""
        return self.total_spent

    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` still available (``inf`` for an unbounded epsilon)."""
        eps, delta = self.total_spent
        return (max(self.epsilon - eps, 0.0), max(self.delta - delta, 0.0))

    def _check_process(self) -> None:
        if os.getpid() != self._pid:
            raise BudgetExceededError(
                "This BudgetAccountant was created in another process (process parallelism, "
                "e.g. GridSearchCV(n_jobs>1)): spends in a worker process cannot reach the "
                "parent's budget. Use n_jobs=1 (or joblib's threading backend) with a shared "
                "BudgetAccountant."
            )

    def check(self, epsilon: float, delta: float = 0.0) -> bool:
        """Raise :class:`BudgetExceededError` unless ``(epsilon, delta)`` fits; else True."""
        self._check_process()
        epsilon, delta = float(epsilon), float(delta)
        if epsilon < 0 or delta < 0 or math.isnan(epsilon) or math.isnan(delta):
            raise ValueError(f"a spend must be >= 0, got epsilon={epsilon!r}, delta={delta!r}")
        with self._lock:
            eps_spent, delta_spent = self.total_spent
            if eps_spent + epsilon > self.epsilon * (1 + _TOL) + 1e-12:
                raise BudgetExceededError(
                    f"privacy budget exceeded: spending epsilon={epsilon:g} would bring the total "
                    f"to {eps_spent + epsilon:g} > {self.epsilon:g} (spent so far: "
                    f"{eps_spent:g} over {len(self.fits)} fit(s))."
                )
            if delta_spent + delta > self.delta * (1 + _TOL) + 1e-15:
                raise BudgetExceededError(
                    f"privacy budget exceeded: spending delta={delta:g} would bring the total "
                    f"to {delta_spent + delta:g} > {self.delta:g}."
                )
        return True

    def spend(self, epsilon: float, delta: float = 0.0, *, estimator: str = "") -> None:
        """Record a spend (after :meth:`check`; raises if it does not fit)."""
        with self._lock:
            self.check(epsilon, delta)
            self.fits.append(FitSpend(estimator, float(epsilon), float(delta)))

    def __repr__(self) -> str:
        eps, delta = self.total_spent
        return (f"BudgetAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}; "
                f"spent epsilon={eps:g}, delta={delta:g} over {len(self.fits)} fit(s))")


def promised_budget(estimator: Any) -> tuple[float, float]:
    """The ``(epsilon, delta)`` a fit of ``estimator`` promises (its parameters)."""
    eps = getattr(estimator, "epsilon", None)
    delta = getattr(estimator, "delta", 0.0) or 0.0
    return (math.inf if eps is None else float(eps)), float(delta)


def charges_budget(fit):
    """Decorate a private estimator's ``fit``: check, fit, charge its ``accountant``.

    With ``estimator.accountant`` a :class:`BudgetAccountant`: before any work, check
    the promised ``(epsilon, delta)`` (:func:`promised_budget`) against what remains;
    after the fit, charge what ``accountant_`` spent (``epsilon_spent``,
    ``delta_spent``). ``accountant=None`` (or no such parameter, e.g. a non-private
    sibling sharing the ``fit``) changes nothing. A fit calling another decorated
    ``fit`` on the same estimator is charged once. Either way, a fit as the last step of a
    plain ``Pipeline`` whose scaler learned from the data warns and is marked not DP
    (:func:`~dpexp.privacy.public.check_enclosing_pipeline`).
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        budget = getattr(self, "accountant", None)
        if getattr(self, "_budget_fit_active", False):
            return fit(self, *args, **kwargs)
        if budget is None:
            out = fit(self, *args, **kwargs)
            check_enclosing_pipeline(self)
            return out
        if not isinstance(budget, BudgetAccountant):
            raise TypeError(f"accountant must be a dpexp.privacy.BudgetAccountant or None, "
                            f"got {type(budget).__name__}")
        budget.check(*promised_budget(self))
        self._budget_fit_active = True
        try:
            out = fit(self, *args, **kwargs)
        finally:
            self._budget_fit_active = False
        check_enclosing_pipeline(self)
        acc = self.accountant_
        budget.spend(acc.epsilon_spent, getattr(acc, "delta_spent", 0.0),
                     estimator=type(self).__name__)
        return out

    return wrapper
