"""Cells handed to the workers longest first (:mod:`dpexp.experiments.schedule`): the
order of a run with several jobs, from the measured times of each (dataset, label) group."""

from __future__ import annotations

import json

import pandas as pd

from dpexp.experiments.catalog import load_catalog
from dpexp.experiments.cells import expand
from dpexp.experiments.committed import table_path
from dpexp.experiments.schedule import longest_first


def _cells():
    spec = load_catalog().specs["dpboost-table2"].at_scale("smoke")
    return expand(spec, "smoke", 0)


def _commit(results_dir, cells, seconds):
    """A committed smoke table with one row per cell whose (dataset, label) is in
    ``seconds``, timed at that group's seconds."""
    rows = [{"experiment": c.experiment, "scale": c.scale, "dataset": c.dataset.key,
             "algorithm": c.algorithm, "label": c.label, "params": json.dumps(c.params),
             "epsilon": c.epsilon, "fold": c.fold, "repeat": c.repeat, "seed": c.seed,
             "wall_seconds": seconds[(c.dataset.key, c.label)]}
            for c in cells if (c.dataset.key, c.label) in seconds]
    path = table_path(results_dir, cells[0].experiment, "smoke")
    path.parent.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(path, index=False)


def test_measured_groups_run_longest_first_and_unmeasured_ones_before_them(tmp_path):
    cells = _cells()
    groups = list(dict.fromkeys((c.dataset.key, c.label) for c in cells))
    assert len(groups) == 4  # adult and abalone, DPBoost and NP
    unmeasured = groups[0]
    seconds = {g: s for g, s in zip(groups[1:], (1.0, 30.0, 5.0), strict=True)}
    _commit(tmp_path, cells, seconds)

    order = [(c.dataset.key, c.label) for c in longest_first(cells, tmp_path, "smoke")]

    per_group = len(cells) // 4
    slowest_first = sorted(seconds, key=seconds.get, reverse=True)
    expected = [g for g in [unmeasured, *slowest_first] for _ in range(per_group)]
    assert order == expected


def test_ties_and_unmeasured_cells_keep_the_spec_order(tmp_path):
    cells = _cells()
    assert longest_first(cells, tmp_path, "smoke") == cells  # nothing measured
    _commit(tmp_path, cells, {(c.dataset.key, c.label): 2.0 for c in cells})
    assert longest_first(cells, tmp_path, "smoke") == cells  # all equal
