"""The privacy budget accountant: a ledger of releases organised in composition scopes.

Composition (Li et al. 2020, Theorems 3 and 4; Fletcher & Islam 2017, Definitions 2-3):

* ``sequential`` scope: mechanisms run on the same records; costs add up
  (epsilon_1 + ... + epsilon_m, and delta_1 + ... + delta_m: basic composition).
* ``parallel`` scope: every direct child (a nested scope or a release) runs on a
  *disjoint* set of records; the scope costs the maximum of its children (max epsilon,
  max delta). This is only valid when adding/removing one record changes one child's
  data only -- split records with :func:`dpexp.privacy.record_partition`.

The root scope is sequential. Example (DPBoost: sequential over ensembles, parallel over
the trees of an ensemble, sequential over the depths of a tree, parallel over the nodes
of one depth)::

    acc = Accountant(epsilon=1.0)
    for e in range(n_ensembles):
        with acc.sequential(f"ensemble {e}"), acc.parallel(f"trees of ensemble {e}"):
            for t in range(trees_per_ensemble):
                with acc.sequential(f"tree {t}"):
                    for depth in range(max_depth):
                        with acc.parallel(f"depth {depth}"):
                            for node in nodes_at(depth):
                                split = acc.exponential(gains[node], epsilon=eps_node,
                                                        sensitivity=3 * g_max**2, rng=rng,
                                                        what=f"tree {t} depth {depth} node {node} split")

Noise is drawn only through the accountant's mechanism methods (``laplace``,
``discrete_laplace``, ``gaussian``, ``exponential``, ``noisy_max_one_sided``, or
``release`` around a compiled sampler): each checks the budget, draws and charges in one
call, and raises :class:`~dpexp.errors.BudgetExceededError` before drawing when the
composed total would exceed the budget by more than a relative 1e-9. A charge is
O(depth of the open scopes), so millions of releases are fine.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np

from dpexp.errors import BudgetExceededError, check_epsilon
from dpexp.privacy import mechanisms
from dpexp.privacy.randomness import Rng

__all__ = ["Accountant", "BudgetExceededError", "PARALLEL", "Round", "SEQUENTIAL",
           "compact_ledger"]

_NUMBER = re.compile(r"\d+(\.\d+)?")

SEQUENTIAL = "sequential"
PARALLEL = "parallel"
REL_TOL = 1e-9
#: The keys of a ledger entry that are not the release's own ``info``.
_ENTRY_KEYS = frozenset({"index", "what", "epsilon", "delta", "scope", "scope_kinds", "releases"})
_INTEGER = (int, np.integer)  # the types a release count may have (bool excluded apart)
T = TypeVar("T")


@dataclass(frozen=True)
class _Charge:
    """A validated charge that fits the budget, not yet recorded (``depth``: the scope
    stack's height when it was checked)."""

    epsilon: float
    delta: float
    what: str
    releases: int
    depth: int


@dataclass(frozen=True)
class Round:
    """One round of :meth:`Accountant.exponential_rounds`: ``releases`` selections on
    pairwise disjoint records (one ledger entry, as ``exponential(..., releases=...)``),
    described by ``what``; ``info``: extra keys of its entry (``nodes``, ...)."""

    what: str
    releases: int = 1
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class _Scope:
    kind: str
    label: str
    epsilon: float = 0.0
    delta: float = 0.0
    n_children: int = 0
    path: tuple[str, ...] = field(default_factory=tuple)
    kinds: tuple[str, ...] = field(default_factory=tuple)


def _check_delta_spend(delta: Any) -> float:
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}") from None
    if not (0.0 <= value < 1.0):
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}")
    return value


class Accountant:
    """Budget ledger with nested sequential/parallel composition scopes.

    Parameters
    ----------
    epsilon, delta:
        The budget the run promised (``epsilon`` may be ``inf`` for an unbounded,
        accounting-only run; ``delta`` in [0, 1)).
    keep_outputs:
        Store values passed to :meth:`record_output` (used by the audit of individual
        ledger entries); off by default so fitting keeps no copies.
    fixed_outputs:
        Audit only: ``what -> value`` that :meth:`record_output` hands back *instead of*
        the value actually drawn, so everything computed after a release sees a fixed
        earlier output. This is how the ledger-entry audit conditions every entry on
        fixed earlier releases (adaptive sequential composition needs each mechanism to
        be private for every fixed value of the earlier outputs).
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        keep_outputs: bool = False,
        fixed_outputs: Mapping[str, Any] | None = None,
    ):
        self.epsilon = check_epsilon(epsilon, name="epsilon", allow_inf=True)
        self.delta = _check_delta_spend(delta)
        self.keep_outputs = keep_outputs
        if fixed_outputs is not None and not isinstance(fixed_outputs, Mapping):
            raise TypeError(
                f"fixed_outputs must be a mapping what -> value, got {type(fixed_outputs).__name__}"
            )
        # A read-only copy: the audit hands the same reference to many fits.
        self.fixed_outputs: Mapping[str, Any] | None = (
            None if fixed_outputs is None else MappingProxyType(dict(fixed_outputs))
        )
        self._stack: list[_Scope] = [_Scope(SEQUENTIAL, "")]
        self._entries: list[dict[str, Any]] = []
        self.outputs: dict[str, Any] = {}
        self._not_dp: list[str] = []

    # ------------------------------------------------------------------ guarantee
    def mark_not_dp(self, reason: str) -> None:
        """Record that this fit's release is *not* DP whatever its spends add up to.

        Used by the variants kept only to reproduce a paper (e.g. the 2017
        smooth-sensitivity leaf rule, feature selection on the private data): the runner
        then writes ``private = false`` and no ``epsilon_spent`` for the cell.
        """
        if reason not in self._not_dp:
            self._not_dp.append(str(reason))

    @property
    def is_dp(self) -> bool:
        """False once :meth:`mark_not_dp` was called."""
        return not self._not_dp

    @property
    def not_dp_reasons(self) -> list[str]:
        return list(self._not_dp)

    # ------------------------------------------------------------------ totals
    @property
    def epsilon_spent(self) -> float:
        """The composed epsilon of everything spent so far."""
        return self._root_cost()[0]

    @property
    def delta_spent(self) -> float:
        """The composed delta of everything spent so far."""
        return self._root_cost()[1]

    @property
    def epsilon_remaining(self) -> float:
        return max(0.0, self.epsilon - self.epsilon_spent)

    def _root_cost(self, extra: tuple[float, float] | None = None) -> tuple[float, float]:
        """The root's cost, or what it would be after adding ``extra`` to the top scope.

        Every scope's (epsilon, delta) already includes its open sub-scopes (spends are
        propagated eagerly), so the root holds the composed total.
        """
        if extra is None:
            root = self._stack[0]
            return root.epsilon, root.delta
        return self._propagate(extra[0], extra[1], write=False)

    def _propagate(self, epsilon: float, delta: float, *, write: bool,
                   costs: list[tuple[float, float]] | None = None) -> tuple[float, float]:
        """The open scopes' costs after a charge of (``epsilon``, ``delta``) in the top
        scope, innermost first: a sequential scope adds its child's growth, a parallel one
        keeps the maximum of its children. The root's is returned, and every scope's is
        stored when ``write`` (the charge is then committed). ``costs``: the scopes'
        (epsilon, delta), root first, to start from instead of theirs (and to update in
        place when ``write``): what they would be after earlier charges not yet made."""
        old_e = old_d = 0.0
        new_e, new_d = epsilon, delta
        for i in range(len(self._stack) - 1, -1, -1):
            scope = self._stack[i]
            cur_e, cur_d = (scope.epsilon, scope.delta) if costs is None else costs[i]
            if scope.kind == SEQUENTIAL:
                up_e, up_d = cur_e + (new_e - old_e), cur_d + (new_d - old_d)
            else:
                up_e, up_d = max(cur_e, new_e), max(cur_d, new_d)
            if write and costs is None:
                scope.epsilon, scope.delta = up_e, up_d
            elif write:
                costs[i] = (up_e, up_d)
            old_e, old_d, new_e, new_d = cur_e, cur_d, up_e, up_d
        return new_e, new_d

    # ------------------------------------------------------------------ scopes
    @contextmanager
    def _scope(self, kind: str, label: str) -> Iterator[Accountant]:
        if not isinstance(label, str):
            raise TypeError(f"scope label must be a string, got {label!r}")
        parent = self._stack[-1]
        scope = _Scope(kind, label, path=(*parent.path, label), kinds=(*parent.kinds, kind))
        self._stack.append(scope)
        parent.n_children += 1
        try:
            yield self
        finally:
            # The scope's charges were already propagated to its ancestors (see _commit).
            self._stack.pop()

    def sequential(self, label: str) -> Any:
        """A scope whose children's costs add up (they see the same records)."""
        return self._scope(SEQUENTIAL, label)

    def parallel(self, label: str) -> Any:
        """A scope whose children run on disjoint records: it costs their maximum."""
        return self._scope(PARALLEL, label)

    @property
    def scope_path(self) -> tuple[str, ...]:
        return self._stack[-1].path

    # ------------------------------------------------------------------ releases
    # Every draw of noise goes through one of the methods below: each validates the
    # budget, draws, and charges in one call, so a draw that is not charged cannot be
    # written (as OpenDP's measurements pair a map with its privacy loss).

    def laplace(self, value: Any, *, epsilon: float, sensitivity: float, rng: Rng,
                what: str, releases: int = 1, **info: Any) -> Any:
        """:func:`~dpexp.privacy.mechanisms.laplace_mechanism` of ``value``, charged
        (``epsilon``-DP for L1 ``sensitivity``; Li et al. 2020 Thm 1, Eq. 7)."""
        return self.release(
            lambda: mechanisms.laplace_mechanism(value, epsilon=epsilon, sensitivity=sensitivity,
                                                 rng=rng),
            epsilon=epsilon, what=what, releases=releases, mechanism="laplace",
            sensitivity=float(sensitivity), **info)

    def discrete_laplace(self, counts: Any, *, epsilon: float, rng: Rng, what: str,
                         sensitivity: int = 1, releases: int = 1, **info: Any) -> Any:
        """Integer ``counts`` plus exact discrete Laplace noise, charged
        (:func:`~dpexp.privacy.mechanisms.discrete_laplace_mechanism`)."""
        return self.release(
            lambda: mechanisms.discrete_laplace_mechanism(
                counts, epsilon=epsilon, sensitivity=sensitivity, rng=rng),
            epsilon=epsilon, what=what, releases=releases, mechanism="discrete_laplace",
            sensitivity=sensitivity, **info)

    def gaussian(self, value: Any, *, epsilon: float, delta: float, sensitivity: float,
                 rng: Rng, what: str, calibration: str = "classic", releases: int = 1,
                 **info: Any) -> Any:
        """:func:`~dpexp.privacy.mechanisms.gaussian_mechanism` of ``value``, charged
        ((``epsilon``, ``delta``)-DP for L2 ``sensitivity``)."""
        return self.release(
            lambda: mechanisms.gaussian_mechanism(
                value, epsilon=epsilon, delta=delta, sensitivity=sensitivity, rng=rng,
                calibration=calibration),
            epsilon=epsilon, delta=delta, what=what, releases=releases, mechanism="gaussian",
            sensitivity=float(sensitivity), **info)

    def exponential(self, utility: Any, *, epsilon: float, sensitivity: float, rng: Rng,
                    what: str, size: int | None = None, releases: int = 1, **info: Any) -> Any:
        """:func:`~dpexp.privacy.mechanisms.exponential_mechanism` over ``utility``, charged
        (McSherry & Talwar; Li et al. 2020 Thm 2, Eq. 8)."""
        return self.release(
            lambda: mechanisms.exponential_mechanism(
                utility, epsilon=epsilon, sensitivity=sensitivity, rng=rng, size=size),
            epsilon=epsilon, what=what, releases=releases, mechanism="exponential",
            sensitivity=float(sensitivity), **info)

    def exponential_rounds(self, select: Callable[[float, np.ndarray], T], *,
                           epsilon: float, sensitivity: float, rng: Rng,
                           rounds: Sequence[Round]) -> T:
        """Several rounds of the exponential mechanism (each ``epsilon``-DP for utilities
        of ``sensitivity``, as :meth:`exponential`) whose selections run in one call
        ``select(scale, uniforms)``, a round's utilities depending on the choices of the
        rounds before it (the depths of a tree, grown in one compiled call).

        ``uniforms`` holds one uniform per release, in round order, drawn from ``rng`` in
        one call after the budget check
        (:func:`~dpexp.privacy.mechanisms.exponential_uniforms`): the uniforms
        :meth:`exponential` would draw round by round, so ``select`` must pick release
        ``i`` by :func:`~dpexp.privacy.mechanisms.exponential_mechanism`'s inverse CDF
        (``scale``: its factor of the utilities) from ``uniforms[i]``. Each round is then
        charged as its own ledger entry, exactly as :meth:`exponential` records it
        (``what``, ``releases``, ``mechanism``, ``sensitivity``, the round's ``info``).
        The rounds' composed total is checked before anything is drawn; nothing is
        charged when ``select`` raises."""
        charges, costs = self._checked_charges(
            [(epsilon, 0.0, r.what, r.releases) for r in rounds])
        n_draws = sum(r.releases for r in rounds)
        out = mechanisms.exponential_uniforms(select, epsilon=epsilon, sensitivity=sensitivity,
                                              rng=rng, n_draws=n_draws)
        sens = float(sensitivity)
        self._commit_all(charges, [{"mechanism": "exponential", "sensitivity": sens, **r.info}
                                   for r in rounds], costs)
        return out

    def noisy_max_one_sided(self, counts: Any, *, epsilon: float, rng: Rng, what: str,
                            size: int | None = None, noise: str = "gumbel", releases: int = 1,
                            **info: Any) -> Any:
        """:func:`~dpexp.privacy.mechanisms.report_noisy_max_one_sided` of monotone
        ``counts``, charged (Fletcher & Islam 2021 addendum, Section 2)."""
        return self.release(
            lambda: mechanisms.report_noisy_max_one_sided(
                counts, epsilon=epsilon, rng=rng, size=size, noise=noise),
            epsilon=epsilon, what=what, releases=releases,
            mechanism="report_noisy_max_one_sided", **info)

    def release(self, draw: Callable[[], T], *, epsilon: float, what: str, delta: float = 0.0,
                releases: int = 1, **info: Any) -> T:
        """Draw ``draw()`` and charge (``epsilon``, ``delta``) for it, in one call.

        For mechanisms without a method of their own (a compiled kernel that draws the
        labels of many leaves, a paper's not-DP rule kept for reproduction): ``draw`` is
        called with no argument and must do the sampling. The budget is checked first
        (nothing is drawn when it would be exceeded), the charge is recorded only after
        ``draw`` returns (a draw that raises charges nothing).

        ``releases = k > 1`` records ``k`` releases of (``epsilon``, ``delta``) each on
        pairwise *disjoint* records (e.g. the split of every node of one tree depth) as one
        ledger entry: parallel composition makes them cost (``epsilon``, ``delta``)
        together, exactly as ``k`` releases inside a ``parallel`` scope would (the entry
        carries ``"releases": k``). Extra keyword ``info`` (``mechanism``, ``sensitivity``,
        ``nodes``, ...) is kept in the ledger entry.

        Raises ``BudgetExceededError`` (and records nothing) when the composed total
        would exceed the budget.
        """
        charge = self._checked_charge(epsilon, delta, what, releases)
        out = draw()
        self._commit(charge, info)
        return out

    def absorb_ledger(self, entries: list[dict[str, Any]]) -> None:
        """Compose the ledger of releases drawn and charged by *another* accountant (an
        InPrivate participant's, in another process) into this one, each entry in the
        scopes it was recorded in, nested under the current scope. Budget-checked like a
        release; nothing is drawn here."""
        opened: list[tuple[tuple[str, str], Any]] = []
        try:
            for e in entries:
                path = list(zip(e["scope"], e["scope_kinds"], strict=True))
                k = 0
                while k < min(len(path), len(opened)) and path[k] == opened[k][0]:
                    k += 1
                while len(opened) > k:
                    opened.pop()[1].__exit__(None, None, None)
                for lbl, kind in path[k:]:
                    cm = self.sequential(lbl) if kind == SEQUENTIAL else self.parallel(lbl)
                    cm.__enter__()
                    opened.append(((lbl, kind), cm))
                info = {key: v for key, v in e.items() if key not in _ENTRY_KEYS}
                charge = self._checked_charge(e["epsilon"], e.get("delta", 0.0), e["what"],
                                              int(e.get("releases", 1)))
                self._commit(charge, info)
        finally:
            while opened:
                opened.pop()[1].__exit__(None, None, None)

    def _checked_charge(self, epsilon: float, delta: float, what: str,
                        releases: int) -> _Charge:
        """Validate a charge and check it fits the budget; record nothing yet."""
        charge = self._valid_charge(epsilon, delta, what, releases)
        self._check_fits(charge, self._root_cost((charge.epsilon, charge.delta)))
        return charge

    def _valid_charge(self, epsilon: float, delta: float, what: str,
                      releases: int) -> _Charge:
        """A charge with its arguments validated (the budget not checked)."""
        eps = check_epsilon(epsilon, name="epsilon")
        dlt = _check_delta_spend(delta)
        if not isinstance(what, str) or not what:
            raise ValueError("what must be a non-empty string describing the release")
        if isinstance(releases, bool) or not isinstance(releases, _INTEGER) or releases < 1:
            raise ValueError(f"releases must be an integer >= 1, got {releases!r}")
        return _Charge(eps, dlt, what, int(releases), len(self._stack))

    def _check_fits(self, charge: _Charge, total: tuple[float, float]) -> None:
        """Raise ``BudgetExceededError`` when the composed ``total`` after ``charge``
        exceeds the budget."""
        total_eps, total_delta = total
        if (
            total_eps > self.epsilon * (1 + REL_TOL)
            or total_delta > self.delta * (1 + REL_TOL) + 1e-300
        ):
            raise BudgetExceededError(
                f"Privacy budget exceeded by release {charge.what!r} "
                f"(epsilon={charge.epsilon:g}, delta={charge.delta:g}) "
                f"in scope {'/'.join(self.scope_path) or '<root>'}: composed total would be "
                f"epsilon={total_eps:.12g}, delta={total_delta:.3g} but the budget is "
                f"epsilon={self.epsilon:g}, delta={self.delta:g}."
            )

    def _checked_charges(self, charges: Sequence[tuple[float, float, str, int]]
                         ) -> tuple[list[_Charge], list[tuple[float, float]]]:
        """:meth:`_checked_charge` of ``(epsilon, delta, what, releases)`` charges made
        one after another in the current scope: each is checked against the budget as
        it would be once the ones before it are committed. Also returns the open
        scopes' costs (root first) after all of them, for :meth:`_commit_all`."""
        costs = [(s.epsilon, s.delta) for s in self._stack]
        checked = []
        for eps, dlt, what, releases in charges:
            charge = self._valid_charge(eps, dlt, what, releases)
            self._check_fits(charge, self._propagate(charge.epsilon, charge.delta, write=True,
                                                     costs=costs))
            checked.append(charge)
        return checked, costs

    def _commit(self, charge: _Charge, info: Mapping[str, Any]) -> None:
        """Record a checked charge in the current scope and propagate it upwards.

        The running totals of the open scopes are updated immediately (a scope's cost
        only ever grows, so the max of a parallel scope can be maintained incrementally).
        """
        if len(self._stack) != charge.depth:
            raise RuntimeError(f"release {charge.what!r}: its draw opened or closed a scope")
        self._stack[-1].n_children += 1
        self._propagate(charge.epsilon, charge.delta, write=True)
        self._record(charge, info)

    def _commit_all(self, charges: Sequence[_Charge], infos: Sequence[Mapping[str, Any]],
                    costs: list[tuple[float, float]]) -> None:
        """:meth:`_commit` of every charge of :meth:`_checked_charges`, in order: the
        same entries, and the scopes' costs it computed (what the commits one by one
        would propagate, the same additions and maxima in the same order)."""
        for charge in charges:
            if len(self._stack) != charge.depth:
                raise RuntimeError(f"release {charge.what!r}: its draw opened or closed a "
                                   "scope")
        for charge, info in zip(charges, infos, strict=True):
            self._stack[-1].n_children += 1
            self._record(charge, info)
        for scope, (eps, dlt) in zip(self._stack, costs, strict=True):
            scope.epsilon, scope.delta = eps, dlt

    def _record(self, charge: _Charge, info: Mapping[str, Any]) -> None:
        """The ledger entry of a committed charge."""
        top = self._stack[-1]
        entry = {
            "index": len(self._entries),
            "what": charge.what,
            "epsilon": charge.epsilon,
            "delta": charge.delta,
            "scope": list(top.path),
            "scope_kinds": list(top.kinds),
        }
        if charge.releases > 1:
            entry["releases"] = charge.releases
        entry.update(info)
        self._entries.append(entry)

    def record_output(self, what: str, value: Any) -> Any:
        """Keep the released ``value`` of ledger entry ``what``; return the value to use.

        The value is kept only when ``keep_outputs``. The return value is ``value``,
        unless ``fixed_outputs`` holds ``what``: then it is that fixed value, and code
        after the release must continue with it (``label = acc.record_output(what,
        label)``), so the audit sees every later release conditioned on it.
        """
        if self.keep_outputs:
            self.outputs[what] = value
        if self.fixed_outputs is not None and what in self.fixed_outputs:
            return self.fixed_outputs[what]
        return value

    # ------------------------------------------------------------------ reporting
    def ledger(self) -> list[dict[str, Any]]:
        """Every release so far: ``what``, ``epsilon``, ``delta``, ``scope`` (labels), ``scope_kinds``."""
        return [dict(e) for e in self._entries]

    def summary(self) -> dict[str, Any]:
        return {
            "epsilon_budget": self.epsilon,
            "delta_budget": self.delta,
            "epsilon_spent": self.epsilon_spent,
            "delta_spent": self.delta_spent,
            "n_releases": sum(e.get("releases", 1) for e in self._entries),
        }

    def to_json(self, **kwargs: Any) -> str:
        """The summary and the ledger as JSON (``inf`` budgets are written as strings)."""

        def clean(v: Any) -> Any:
            if isinstance(v, float) and not math.isfinite(v):
                return str(v)
            return v

        data = {k: clean(v) for k, v in self.summary().items()}
        data["ledger"] = [{k: clean(v) for k, v in e.items()} for e in self._entries]
        return json.dumps(data, default=str, **kwargs)

    def __repr__(self) -> str:
        return (
            f"Accountant(epsilon={self.epsilon:g}, delta={self.delta:g}; spent "
            f"epsilon={self.epsilon_spent:.6g}, delta={self.delta_spent:.3g}, "
            f"{self.summary()['n_releases']} releases)"
        )


def compact_ledger(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A ledger aggregated per scope and mechanism, for caches of whole campaigns.

    Entries whose scope labels and ``what`` agree once their numbers are replaced by ``#``
    (``tree 3 depth 1 node 5 split`` -> ``tree # depth # node # split``) are one row:
    ``count``, the summed ``epsilon`` / ``delta`` of the entries (what they cost if
    composed sequentially) and ``epsilon_max`` (what they cost if they are the parts of
    one parallel scope). The composed total is the accountant's ``epsilon_spent``; the full
    ledger (one row per release) is kept only on request (``dpexp run --ledger``).
    """
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for e in entries:
        scope = " / ".join(_NUMBER.sub("#", str(s)) for s in e.get("scope", ()))
        kinds = " / ".join(e.get("scope_kinds", ()))
        what = _NUMBER.sub("#", str(e.get("what", "")))
        row = rows.setdefault((scope, kinds, what), {
            "scope": scope, "scope_kinds": kinds, "what": what, "count": 0,
            "epsilon": 0.0, "delta": 0.0, "epsilon_max": 0.0,
        })
        n = int(e.get("releases", 1))
        row["count"] += n
        row["epsilon"] += float(e.get("epsilon", 0.0)) * n
        row["delta"] += float(e.get("delta", 0.0)) * n
        row["epsilon_max"] = max(row["epsilon_max"], float(e.get("epsilon", 0.0)))
    return list(rows.values())
