"""The steps of one cell, in a worker: load the data and the fold, fit (after an untimed
warm-up) or run the procedure, evaluate, check the privacy spend against the promised
epsilon, and return the cell's rows.

Seeds come from ``seed_sequence(cell.seed, cell.seed_key)`` (the run seed is part of the
cell and its key), so results do not depend on ``--jobs``, on the backend, or on which
cells were already cached. Every estimator gets ``noise_rng=seeded_noise(random_state)``:
reproducible noise is the runner's explicit choice (the estimators' default is fresh
entropy), and every row says so in its ``noise`` column (a research result, not a
release). ``n_records`` is the declared training size (:mod:`dpexp.experiments.design`),
never ``len(X)``, and ``private`` also honours the harness's public input
(:mod:`dpexp.experiments.flags`). Before timing, each worker fits every (algorithm,
dataset) once untimed (``_warm_up``), so ``fit_seconds`` excludes numba's compilation.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpexp.datasets import load_dataset
from dpexp.errors import BudgetExceededError, SpecError
from dpexp.experiments.cells import Cell, canonical_json
from dpexp.experiments.config import RunConfig
from dpexp.experiments.design import TrainingSize, declares_size, training_size, with_n_records
from dpexp.experiments.flags import join_reasons, public_input_reasons
from dpexp.experiments.harness_params import DP_DOMAIN_SHARE, domain_share, estimator_params
from dpexp.experiments.metrics import METRICS, Evaluation
from dpexp.experiments.noise import noise_source
from dpexp.experiments.paid_domains import PaidDomains, domain_noise, pay_for_domains
from dpexp.experiments.procedures import CellContext, ProcedureFlags, get_procedure, procedure_flags
from dpexp.experiments.rows import CellOutcome, result_rows, write_cell_rows
from dpexp.experiments.spec import CVScheme, DatasetRef, ExperimentSpec
from dpexp.privacy.accountant import Accountant, compact_ledger
from dpexp.privacy.randomness import seeded_noise
from dpexp.registry import get_algorithm, make_estimator
from dpexp.seeding import seed_int, seed_sequence


@functools.lru_cache(maxsize=4)
def _load(name: str, params_json: str, max_rows: int | None, subsample_seed: int, mirror: str | None):
    import json

    return load_dataset(
        name, json.loads(params_json), max_rows=max_rows, subsample_seed=subsample_seed,
        mirror=mirror, progress=False,
    )


def load_for_cell(ref: DatasetRef, max_rows: int | None, seed: int, mirror: str | None):
    sub_seed = seed_int(seed_sequence(seed, f"subsample|{ref.key}"))
    return _load(ref.name, canonical_json(ref.params), max_rows, sub_seed, mirror)


def split_indices(ds, cv: CVScheme, fold: int, repeat: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train/test row indices of (fold, repeat); identical for every algorithm and epsilon."""
    from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

    n = ds.n_rows
    rs = seed_int(seed_sequence(seed, f"folds|{ds.name}|{canonical_json(ds.params)}|{repeat}"))
    if cv.scheme == "kfold":
        strat = cv.stratified and ds.task == "classification"
        if strat and np.min(np.unique(ds.y, return_counts=True)[1]) < cv.folds:
            strat = False  # a class rarer than the folds (e.g. nursery 'recommend')
        splitter = (StratifiedKFold if strat else KFold)(n_splits=cv.folds, shuffle=True, random_state=rs)
        for i, (tr, te) in enumerate(splitter.split(np.zeros(n), ds.y if strat else None)):
            if i == fold:
                return tr, te
        raise AssertionError("fold out of range")
    if cv.scheme == "holdout":
        strat = ds.y if ds.task == "classification" and cv.stratified else None
        tr, te = train_test_split(np.arange(n), test_size=cv.test_size, random_state=rs, stratify=strat)
        return np.sort(tr), np.sort(te)
    raise AssertionError(cv.scheme)


@dataclass
class _Split:
    """The data a cell fits and evaluates on (all None for procedures without data)."""

    dataset: Any = None
    X_train: Any = None
    y_train: Any = None
    X_test: Any = None
    y_test: Any = None

    @property
    def n_train(self) -> int | None:
        return None if self.X_train is None else int(self.X_train.shape[0])

    @property
    def n_test(self) -> int | None:
        return None if self.X_test is None else int(self.X_test.shape[0])


def _load_split(cell: Cell, spec: ExperimentSpec, cfg: RunConfig, proc) -> _Split:
    """Step 1: load the cell's dataset (unless a procedure needs none) and split it."""

    flags = procedure_flags(proc) if proc is not None else ProcedureFlags()
    needs_data, needs_split = flags.needs_data, flags.needs_split
    if not needs_data:
        return _Split()
    ds = load_for_cell(cell.dataset, spec.max_rows(cell.scale), cell.seed, cfg.mirror)
    if not needs_split:
        return _Split(dataset=ds)
    if spec.cv.scheme == "given":
        if ds.X_test is None:
            raise SpecError(
                f"{spec.path.name}: cv.scheme 'given' needs a dataset with a fixed test split; "
                f"{ds.name!r} has none."
            )
        return _Split(ds, ds.X, ds.y, ds.X_test, ds.y_test)
    tr, te = split_indices(ds, spec.cv, cell.fold, cell.repeat, cell.seed)
    return _Split(ds, ds.X[tr], ds.y[tr], ds.X[te], ds.y[te])


def _run_procedure(cell: Cell, proc, data: _Split, ss: np.random.SeedSequence) -> CellOutcome:

    ctx = CellContext(
        dataset=data.dataset, params=dict(cell.params), epsilon=cell.epsilon,
        rng=np.random.default_rng(ss.spawn(1)[0]), random_state=seed_int(ss),
        X_train=data.X_train, y_train=data.y_train, X_test=data.X_test, y_test=data.y_test,
    )
    t0 = time.perf_counter()
    values = proc(ctx)
    # A procedure releases no fitted model through an accountant: not a DP release.
    return CellOutcome(values=values, fit_seconds=time.perf_counter() - t0,
                    not_dp_reason=f"procedure {cell.procedure}: computed, not a DP release",
                    noise=noise_source(f"procedure:{cell.procedure}", bool(np.isfinite(cell.epsilon))))


#: (algorithm, task, dataset key) already fitted once in this worker process.
_WARMED: set[tuple[str, str, str]] = set()
#: Rows of the untimed warm-up fit (enough for every row-count-dependent code path of the
#: histogram kernels to be compiled: the largest parallel threshold is 2**17 rows).
WARMUP_ROWS = 1 << 17
#: Trees of the warm-up fit, at most (two whole ensembles when the cell has ensembles):
#: every kernel is compiled by then, and a 5,000-tree warm-up took as long as the cell.
WARMUP_MAX_TREES = 100


def _warm_up(cell: Cell, data: _Split, random_state: int, n_train: int) -> None:
    """Fit the cell's estimator once, untimed, so fit_seconds excludes numba compilation.

    Once per worker process and (algorithm, task, dataset): numba compiles (or loads from
    its disk cache) each kernel specialisation on first call, which made the first fold of
    a timing table (DPBoost Table 2) up to 1000x slower than the others. The warm-up fit
    uses the first ``WARMUP_ROWS`` training rows and the cell's own parameters, with at
    most :func:`warm_up_trees` trees; its model is discarded (nothing of it is released or
    recorded). ``n_train`` is the cell's declared training size (:func:`_training_size`).
    """

    ds = data.dataset
    key = (cell.algorithm, ds.task, cell.dataset.key)
    if key in _WARMED:
        return
    _WARMED.add(key)
    m = min(n_train, WARMUP_ROWS)
    info = get_algorithm(cell.algorithm)
    params = cell_params(cell, m)
    trees = info.tree_params
    if trees.trees in params:
        per = params.get(trees.per_ensemble) if trees.per_ensemble else None
        params[trees.trees] = warm_up_trees(params[trees.trees], per)
    est = make_estimator(cell.algorithm, ds.task, params,
                         epsilon=cell.epsilon if info.private else None,
                         random_state=random_state, public=ds.public_metadata(),
                         noise_rng=seeded_noise(random_state))
    with contextlib.suppress(Exception):  # the timed fit raises any real error itself
        est.fit(data.X_train[:m], data.y_train[:m])


def warm_up_trees(n_trees: Any, trees_per_ensemble: Any = None) -> Any:
    """Trees of the warm-up fit: ``n_trees`` up to :data:`WARMUP_MAX_TREES`, and above it
    ``WARMUP_MAX_TREES`` rounded up to whole ensembles, at least two of them (so the code
    of a later ensemble is compiled too); values that are not integers pass unchanged."""
    if not isinstance(n_trees, int | np.integer) or n_trees <= WARMUP_MAX_TREES:
        return n_trees
    per = trees_per_ensemble
    if not isinstance(per, int | np.integer) or per < 1:
        return WARMUP_MAX_TREES
    return int(min(n_trees, per * max(2, -(-WARMUP_MAX_TREES // per))))


def cell_params(cell: Cell, n_train: int) -> dict[str, Any]:
    """The estimator's parameters: the cell's without the harness's own
    (:data:`~dpexp.experiments.harness_params.HARNESS_PARAMS`, e.g. ``dp_domain_share``),
    plus ``n_records`` = the training-fold size where accepted.

    ``n_train`` is fixed by the experiment's design: the registry's declared row count and
    the CV arithmetic (:func:`_training_size`, never ``len(X)``), so the runner declares it
    as public input, e.g. for InPrivate's participant shares (records_per_participant /
    n_records), instead of letting the estimator read the private number of training records.
    """
    return with_n_records(cell.algorithm, estimator_params(cell.params), n_train)


def _training_size(cell: Cell, spec: ExperimentSpec, data: _Split) -> TrainingSize:
    """The cell's declared training size (:func:`dpexp.experiments.design.training_size`),
    checked against the loaded split; not public only where the registry declares no count."""
    return training_size(cell.dataset, spec.cv, spec.max_rows(cell.scale), cell.fold,
                         data.n_train or 0)


def privacy_of(cell: Cell, info, est, inputs: Sequence[str] = (), paid: Accountant | None = None,
               ) -> tuple[float, float, bool, str, list[dict] | None]:
    """(epsilon_spent, delta_spent, private, not_dp_reason, ledger) of a fitted estimator.

    The budget check runs on every private fit, DP or not; a fit whose mechanisms are not
    DP (the registry's or the accountant's reasons) then reports no epsilon_spent (NaN):
    what it spent is no privacy guarantee. ``inputs`` are the reasons the harness's public
    input was not public (:func:`dpexp.experiments.flags.public_input_reasons`): they make
    the row not DP too, after the model's reasons, while epsilon_spent stays what the
    mechanisms charged. ``paid`` is the accountant of the cell's paid domain release
    (:mod:`dpexp.experiments.paid_domains`): its spend adds to the estimator's (sequential
    composition, checked against the cell's epsilon) and its entries come first in the ledger.
    """
    if not info.private:
        return float("inf"), float("inf"), False, "non-private algorithm", None
    acc = getattr(est, "accountant_", None)
    if acc is None:
        raise RuntimeError(f"private algorithm {cell.algorithm!r} exposes no accountant_ after fit")
    eps_spent = float(acc.epsilon_spent)
    delta_spent = float(getattr(acc, "delta_spent", 0.0))
    if paid is not None:  # two releases on the same records: their costs add up
        eps_spent += float(paid.epsilon_spent)
        delta_spent += float(paid.delta_spent)
    if eps_spent > cell.epsilon * (1 + 1e-9):
        raise BudgetExceededError(
            f"{cell.algorithm} on {cell.dataset.key} spent epsilon {eps_spent} but was "
            f"given {cell.epsilon}: refusing to record this result."
        )
    ledger = acc.ledger() if hasattr(acc, "ledger") else None
    if paid is not None:
        ledger = [*paid.ledger(), *(ledger or [])]
    reasons = [info.not_dp] if info.not_dp else []
    reasons += list(getattr(acc, "not_dp_reasons", []) or [])
    if reasons:  # the registry and the fit may give the same text: join_reasons dedupes
        return float("nan"), float("nan"), False, join_reasons([*reasons, *inputs]), ledger
    if inputs:
        return eps_spent, delta_spent, False, join_reasons(inputs), ledger
    return eps_spent, delta_spent, True, "", ledger


def _fit_estimator(cell: Cell, spec: ExperimentSpec, data: _Split, random_state: int) -> CellOutcome:
    """Step 2 (estimators): warm up, fit (timed), check the spend, evaluate."""

    ds = data.dataset
    info = get_algorithm(cell.algorithm)
    size = _training_size(cell, spec, data)
    _warm_up(cell, data, random_state, size.n)
    paid = paid_domains_of(cell, info, ds, data.X_train, data.y_train,
                           rng=domain_noise(cell.seed, cell.seed_key))
    # Reproducible noise is the runner's explicit choice (every row says so, ``noise``).
    est = make_estimator(
        cell.algorithm, ds.task, cell_params(cell, size.n),
        epsilon=(paid.estimator_epsilon if paid else cell.epsilon) if info.private else None,
        random_state=random_state, public=paid.public if paid else ds.public_metadata(),
        noise_rng=seeded_noise(random_state),
    )
    t0 = time.perf_counter()
    est.fit(data.X_train, data.y_train)
    fit_seconds = time.perf_counter() - t0
    domain_source = paid.domain_source if paid else str(ds.domain_source or "")
    inputs = public_input_reasons(domain_source,
                                  size.not_public if declares_size(cell.algorithm, cell.params) else "")
    eps_spent, delta_spent, private, reason, ledger = privacy_of(
        cell, info, est, inputs, paid.accountant if paid else None)
    classes = ds.public_metadata().get("classes") if ds.task == "classification" else None
    ev = Evaluation(est, data.X_test, data.y_test, data.y_train, classes=classes)
    values: dict[str, Any] = {m: METRICS[m](ev) for m in spec.metrics_for(ds.task)}
    diag = getattr(est, "diagnostics_", None) or {}
    diagnostics = frozenset(k for k in diag if k not in values)
    for k in diag:  # the estimator's order: a set's would vary with each process's hash seed
        if k in diagnostics:
            values[k] = diag[k]
    return CellOutcome(values, fit_seconds, eps_spent, delta_spent, private, reason, diagnostics, ledger,
                    noise=noise_source(cell.algorithm, bool(np.isfinite(cell.epsilon))),
                    domain_source=domain_source)


def paid_domains_of(cell: Cell, info, dataset, X_train, y_train, *,
                    rng: np.random.Generator) -> PaidDomains | None:
    """The cell's paid domain release (``dp_domain_share``) on its training fold, with the
    noise stream ``rng`` (the runner's: :func:`~dpexp.experiments.paid_domains.domain_noise`
    of the cell); None without the parameter or when the dataset declares every domain."""
    share = domain_share(cell.params)
    if share is None:
        return None
    if not info.private:
        raise SpecError(f"{cell.algorithm} is not private: {DP_DOMAIN_SHARE} is for private "
                        "algorithms only (a non-private fit has no epsilon to share).")
    return pay_for_domains(dataset, X_train, y_train, share=share, epsilon=cell.epsilon, rng=rng)


def run_cell(cell: Cell, spec: ExperimentSpec, cfg: RunConfig, provenance: dict[str, str]) -> dict:
    """Compute one cell and write it to the cache. Returns the cached payload.

    Steps: load and split the data, fit (or run the procedure) and evaluate, turn the
    outcome into result rows, write them atomically. Randomness derives from
    ``seed_sequence(cell.seed, cell.seed_key)`` only.
    """

    started = time.perf_counter()
    ss = seed_sequence(cell.seed, cell.seed_key)
    proc = get_procedure(cell.procedure) if cell.procedure else None
    data = _load_split(cell, spec, cfg, proc)
    out = (_run_procedure(cell, proc, data, ss) if proc is not None
           else _fit_estimator(cell, spec, data, seed_int(ss)))
    ledger = out.ledger
    if ledger is not None and not cfg.full_ledger:
        ledger = compact_ledger(ledger)  # a paper-scale campaign's cache stays small
    # wall_seconds: the whole cell (loading, warm-up, fit, evaluation): on every row, so the
    # committed table keeps it for `dpexp plan` on a fresh clone; at the top level as before
    wall_seconds = time.perf_counter() - started
    rows = result_rows(cell, out, n_train=data.n_train, n_test=data.n_test,
                       domain_source=(out.domain_source if out.domain_source is not None
                                      else str(getattr(data.dataset, "domain_source", "") or "")),
                       provenance=provenance, wall_seconds=wall_seconds)
    payload = write_cell_rows(cfg.results_dir, cell, rows, ledger=ledger, wall_seconds=wall_seconds)
    return payload


