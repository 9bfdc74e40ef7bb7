"""The report's per-distinct-value paths (issue 43) give what the row-by-row code gave:
each is checked against the plain pandas/Python definition on frames with the awkward
values (missing ones, several reasons a group, a label whose rows name two algorithms)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from render.cached_cells import result_rows

from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import expand
from dpexp.render.aggregate import GROUP, aggregate
from dpexp.render.frame import (
    _algorithm_of_label,
    _as_bool,
    normalise,
    procedure_mask,
    render_context,
)

REASONS = ["", "domain observed", "b reason", "a reason; domain observed", "Zed"]


def _frame(n_cells: int = 40) -> tuple[pd.DataFrame, object]:
    spec = resolve("fig2").at_scale("smoke")
    cells = expand(spec, "smoke", 0)[:n_cells]
    rng = np.random.default_rng(1)
    rows, groups = [], {}
    for i, c in enumerate(cells):
        g = groups.setdefault((c.dataset.key, c.label, str(c.params), c.epsilon), len(groups))
        for rep in range(3):  # several rows a group, two reasons each, the pair per group
            row = result_rows(c, metric="error", kind="metric", value=float(rng.uniform()),
                              private=bool(i % 2), domain="declared")[0]
            reason = REASONS[(g + rep % 2) % len(REASONS)]
            rows.append({**row, "repeat": rep, "not_dp_reason": reason})
    return pd.DataFrame(rows), spec


def test_a_groups_reason_is_its_greatest():
    frame, spec = _frame()
    agg = aggregate(frame, spec)
    f = normalise(frame)
    f["step"] = f["step"].fillna(-1).astype(int)
    expected = f.groupby(GROUP, dropna=False)["not_dp_reason"].max().reset_index(drop=True)
    assert agg["not_dp_reason"].tolist() == expected.tolist()
    assert agg["not_dp_reason"].dtype == expected.dtype
    assert len(set(agg["not_dp_reason"])) > 2  # the groups really differ


def test_procedure_rows_and_missing_algorithms():
    frame = pd.DataFrame({"algorithm": ["procedure:f", None, "dp_gbdt", math.nan, "procedure:g"]})
    assert procedure_mask(frame).tolist() == [True, False, False, False, True]
    assert procedure_mask(frame.iloc[:0]).tolist() == []


def test_privacy_flags_per_distinct_value():
    raw = [True, False, None, math.nan, 1, 0, 1.0, "true", "False", "maybe", np.True_]
    frame = pd.DataFrame({"private": pd.Series(raw, dtype=object)})
    for col in ("not_dp_reason", "domain_source", "noise", "data_version", "metric_kind", "epsilon"):
        frame[col] = 1.0 if col == "epsilon" else ""
    got = normalise(frame)["private"].tolist()
    assert got == [_as_bool(v) for v in raw]
    assert [type(v) for v in got] == [type(_as_bool(v)) for v in raw]


def test_label_to_algorithm_is_the_last_rows():
    frame = pd.DataFrame({"label": ["B", "A", "B", "A", "C"],
                          "algorithm": ["x", "y", "z", "y", "w"]})
    row_by_row = dict(zip(frame["label"], frame["algorithm"], strict=True))
    assert _algorithm_of_label(frame) == row_by_row
    assert list(_algorithm_of_label(frame)) == list(row_by_row)  # order of first appearance


def test_render_context_names_each_labels_algorithm():
    frame, spec = _frame(10)
    ctx = render_context(spec, normalise(frame), "smoke")
    assert ctx.algorithms == dict(zip(frame["label"], frame["algorithm"], strict=True))
