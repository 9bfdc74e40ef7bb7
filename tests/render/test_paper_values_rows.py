"""Judging the printed values against the paper's makes only the rows with a paper value
into dicts (issue 43: most aggregated rows of a large artefact have none), with the same
columns as judging every row did."""

from __future__ import annotations

import pandas as pd

from dpexp.experiments.catalog import resolve
from dpexp.experiments.results import cached_results
from dpexp.paths import project_root
from dpexp.render import paper_values
from dpexp.render.aggregate import aggregate
from dpexp.render.frame import normalise
from dpexp.render.paper_values import RowJudgement, _judge_row, attach_paper_values


def _every_row_judged(agg: pd.DataFrame, spec, scale: str) -> pd.DataFrame:
    """The verdict columns as before: every row a dict, judged where it has an entry."""
    out = attach_paper_values(agg, spec, scale)
    entries = spec.paper_values.get("values") or []
    hit = [entries[i] if i >= 0 else None for i in out["paper_entry"]]
    judged = [RowJudgement() if e is None else _judge_row(row, e, spec, scale)
              for row, e in zip(out.drop(columns=["eq_low", "eq_high", "equivalent", "value_verdict",
                                                  "verdict"]).to_dict("records"), hit, strict=True)]
    out["eq_low"] = [j.eq_low for j in judged]
    out["eq_high"] = [j.eq_high for j in judged]
    out["verdict"] = [j.verdict for j in judged]
    return out


def test_only_rows_with_a_paper_value_are_made_into_dicts(monkeypatch):
    spec = resolve("xgbdp-table2").at_scale("paper")
    frame = cached_results(spec, "paper", project_root() / "results", current_only=True).frame
    agg = aggregate(normalise(frame), spec)
    made = []
    real = paper_values._rows

    def counted(rows: pd.DataFrame):
        made.append(len(rows))
        return real(rows)

    monkeypatch.setattr(paper_values, "_rows", counted)
    got = attach_paper_values(agg, spec, "paper")
    with_value = int((got["paper_entry"] >= 0).sum())
    assert 0 < with_value < len(agg)
    assert made == [len(agg), with_value]  # matching reads every row, judging only those
    monkeypatch.undo()
    want = _every_row_judged(agg, spec, "paper")
    for col in ("eq_low", "eq_high", "verdict"):
        assert got[col].tolist() == want[col].tolist() or got[col].equals(want[col])


def test_a_spec_without_paper_values_makes_no_row_a_dict(monkeypatch):
    spec = resolve("xgbdp-table2").at_scale("paper")
    spec_without = type(spec)(**{**spec.__dict__, "paper_values": {}})
    frame = cached_results(spec, "paper", project_root() / "results", current_only=True).frame
    agg = aggregate(normalise(frame), spec)

    def refuse(rows: pd.DataFrame):
        assert rows.empty, "a row was made into a dict with nothing to judge"
        return []

    monkeypatch.setattr(paper_values, "_rows", refuse)
    got = attach_paper_values(agg, spec_without, "paper")
    assert (got["paper_entry"] == -1).all() and (got["verdict"] == "").all()
