"""The tidy results schema: one row per (cell, metric, step). See README.md, "Results schema"."""

from __future__ import annotations

#: Columns of the tidy results table, in order.
RESULT_COLUMNS = [
    "experiment", "scale", "dataset", "algorithm", "label", "params", "epsilon",
    "epsilon_spent", "delta_spent", "private", "not_dp_reason", "domain_source",
    "fold", "repeat", "seed", "metric", "metric_kind", "step", "value",
    "fit_seconds", "n_train", "n_test", "dpexp_version", "git_revision", "timestamp",
]

#: ``metric_kind`` of a value computed from the test predictions (a result of the release).
METRIC = "metric"
#: ``metric_kind`` of a value from an estimator's ``diagnostics_``: exact internal counts
#: (n_filtered, tree sizes, ...) reported to explain a result, not part of the release.
DIAGNOSTIC = "diagnostic"
