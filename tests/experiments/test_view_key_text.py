"""A row key written into its template (:func:`dpexp.experiments.cells.view_key_text`,
issue 43: ``dpexp list`` makes 70,000 of them, a report 200,000) is the text
``canonical_json`` gives for the same key, whatever the values; so are the keys of a grid's
cells and of a committed table's rows."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from dpexp.experiments.catalog import load_catalog, resolve
from dpexp.experiments.cells import (
    canonical_json,
    expand,
    expand_points,
    n_folds_of,
    view_key_text,
)
from dpexp.experiments.committed import row_key

BASE = {"experiment": "dpboost-fig2", "scale": "paper", "dataset": "adult",
        "algorithm": "dpboost", "label": "DPBoost", "params": {"n_trees": 50, "lr": 0.1},
        "epsilon": "1.0", "fold": 3, "repeat": 2, "seed": 0, "data": "0f3a"}


def _canonical(values: dict) -> str:
    named = {k: v for k, v in values.items() if k != "data"}
    if values["data"]:
        named["data"] = values["data"]
    return canonical_json(named)


@pytest.mark.parametrize("change", [
    {},
    {"data": ""},  # no data version: no "data" key
    {"label": 'Fletcher "smooth" \\ é ≥ 1\n'},  # escaped, non-ASCII as \\u
    {"params": {"b": [1, 2.5, None, True], "a": {"z": "ü", "y": 1e-300}}},
    {"params": {}},
    {"epsilon": "inf", "algorithm": "procedure:fletcher_table2"},
    {"label": 7},  # a label a table read back as a number
    {"fold": np.int64(3)},  # a numpy integer
    {"fold": True},  # not an int: as canonical_json writes it
    {"seed": 12, "repeat": 0, "experiment": "x" * 300},
])
def test_the_template_writes_the_canonical_text(change):
    values = {**BASE, **change}
    text = view_key_text(**values, params_json=canonical_json(values["params"]))
    assert text == _canonical(values)
    assert json.loads(text)["params"] == json.loads(canonical_json(values["params"]))


@pytest.mark.parametrize("experiment", ["dpboost-fig2", "fletcher-fig13", "inprivate-fig4",
                                        "dpboost-table1"])
def test_grid_and_row_keys_are_the_canonical_text(experiment):
    for cell in expand(resolve(experiment).at_scale("smoke"), "smoke")[:400]:
        values = {"experiment": cell.experiment, "scale": cell.scale, "dataset": cell.dataset.key,
                  "algorithm": cell.algorithm or f"procedure:{cell.procedure}", "label": cell.label,
                  "params": cell.params, "epsilon": "inf" if cell.epsilon == float("inf") else repr(float(cell.epsilon)),
                  "fold": cell.fold, "repeat": cell.repeat, "seed": cell.seed, "data": cell.data_version}
        assert cell.params_json == canonical_json(cell.params)
        assert cell.view_key == _canonical(values)
        # a committed row of the cell (params spelt with spaces and unsorted keys)
        row = {**values, "params": json.dumps(dict(reversed(list(cell.params.items())))),
               "data_version": cell.data_version}
        assert row_key(row) == cell.view_key


def test_grid_points_give_the_digests_of_the_cells_of_every_spec():
    """``dpexp list`` counts by grid point (:meth:`GridPoint.view_digests`), never making
    the cells: the same digests, in the same order, as the cells of the whole catalogue."""
    for spec in load_catalog().specs.values():
        for scale in ("smoke", "paper"):
            scaled = spec.at_scale(scale)
            cells = expand(scaled, scale)
            points = expand_points(scaled, scale)
            digests = [d for p in points for d in p.view_digests(scaled.cv.repeats, n_folds_of(scaled))]
            assert digests == [c.view_digest for c in cells], (spec.id, scale)


def test_a_point_without_a_template_gives_the_canonical_text():
    point = expand_points(resolve("dpboost-fig2").at_scale("smoke"), "smoke")[0]
    plain = dataclasses.replace(point, view_parts=None)
    assert plain.view_key(3, 1) == point.view_key(3, 1)
    weird = dataclasses.replace(point, experiment=7, view_parts=None)  # not a plain string
    assert json.loads(weird.view_key(3, 1))["experiment"] == 7
