"""A row key written into its template (:func:`dpexp.experiments.cells.view_key_text`,
issue 43: ``dpexp list`` makes 70,000 of them, a report 200,000) is the text
``canonical_json`` gives for the same key, whatever the values; so are the keys of a grid's
cells and of a committed table's rows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import canonical_json, expand, view_key_text
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
