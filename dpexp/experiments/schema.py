"""The tidy results schema: one row per (cell, metric, step). See README.md, "Results schema"."""

from __future__ import annotations

from collections.abc import Iterable

#: Columns of the tidy results table, in order. ``fit_seconds`` times the fit alone;
#: ``wall_seconds`` the whole cell (loading, split, warm-up, fit, evaluation: what a run
#: pays for it, the same on every row of the cell; NaN in tables written before it existed).
#: ``private`` is True only when every input that shaped the release was public or paid
#: for (``not_dp_reason`` says what was not); ``noise`` says how the noise was drawn
#: (:mod:`dpexp.experiments.noise`; derived when reading tables written before it).
#: ``n_train``, ``n_test``, ``fit_seconds`` and ``wall_seconds`` are harness diagnostics,
#: exact and not part of any release, like the ``diagnostic`` metrics.
RESULT_COLUMNS = [
    "experiment", "scale", "dataset", "algorithm", "label", "params", "epsilon",
    "epsilon_spent", "delta_spent", "private", "not_dp_reason", "domain_source", "noise",
    "data_version", "fold", "repeat", "seed", "metric", "metric_kind", "step", "value",
    "fit_seconds", "wall_seconds", "n_train", "n_test", "dpexp_version", "git_revision",
    "timestamp",
]

#: Columns that identify one cell (one fit): the fields of its cache key
#: (:attr:`dpexp.experiments.cells.Cell.key`), in ``RESULT_COLUMNS`` order. ``params`` (the
#: canonical JSON) is the cell's exact identity; the ``p_<name>`` columns only spell it out.
#: The key also holds ``data_version`` (the dataset's registry fingerprint), left out here
#: because it is a function of ``dataset`` within one run and one registry.
CELL_COLUMNS = [
    "experiment", "scale", "dataset", "algorithm", "label", "params", "epsilon",
    "fold", "repeat", "seed",
]

#: Cell columns that are replicates of one setting: every seed re-draws the split and each
#: (fold, repeat) is one split of it. Aggregates pool over them; paired tests pair by them.
REPLICATE_COLUMNS = ["seed", "fold", "repeat"]

#: Cell columns constant within one experiment at one scale (``cached_results``' frame).
RUN_COLUMNS = ["experiment", "scale"]

#: Prefix of the parameter columns: ``p_<name>`` holds the value of the algorithm
#: parameter ``name`` (from ``params``; None where a cell's params lack it). They follow
#: ``RESULT_COLUMNS``, sorted by name.
PARAM_PREFIX = "p_"

#: ``metric_kind`` of a value computed from the test predictions (a result of the release).
METRIC = "metric"
#: ``metric_kind`` of a value from an estimator's ``diagnostics_``: exact internal counts
#: (n_filtered, tree sizes, ...) reported to explain a result, not part of the release.
DIAGNOSTIC = "diagnostic"


def param_column(name: str) -> str:
    """The column of algorithm parameter ``name`` (``n_trees`` -> ``p_n_trees``)."""
    return f"{PARAM_PREFIX}{name}"


def param_columns(columns: Iterable[str]) -> list[str]:
    """The parameter columns among ``columns``, sorted."""
    return sorted(c for c in columns if isinstance(c, str) and c.startswith(PARAM_PREFIX))


def cell_columns(without: Iterable[str] = ()) -> list[str]:
    """``CELL_COLUMNS`` minus ``without`` (columns constant, or pooled, in a context)."""
    drop = set(without)
    unknown = drop - set(CELL_COLUMNS)
    if unknown:
        raise ValueError(f"not cell columns: {sorted(unknown)}")
    return [c for c in CELL_COLUMNS if c not in drop]
