"""Committed rows the current code would compute differently are marked stale."""

from __future__ import annotations

import pandas as pd

from dpexp.experiments.stale import NUMBER_CHANGES, _row_times, stale_rows, stale_summary

BEFORE = "2026-11-23T10:00:00+00:00"
AFTER = "2030-01-01T00:00:00+00:00"


def _frame(rows):
    return pd.DataFrame(rows, columns=["algorithm", "timestamp"])


def test_private_rows_computed_before_the_samplers_changed_are_stale():
    frame = _frame([
        ("dpboost", BEFORE),            # private, old code: stale
        ("dpboost", AFTER),             # recomputed since: fresh
        ("np_gbdt", BEFORE),            # non-private: its numbers did not change
        ("jpw", None),                  # no timestamp counts as before
        ("procedure:fig1_curves", BEFORE),
        ("diffprivlib_rf", BEFORE),     # the library's own sampler: unchanged
    ])
    assert stale_rows(frame, NUMBER_CHANGES[:1]).tolist() == [True, False, False, True, True, False]


def test_every_algorithms_rows_from_before_content_addressed_seeds_are_stale():
    rekeyed = NUMBER_CHANGES[1]
    frame = _frame([
        ("np_gbdt", BEFORE),            # non-private: its seeds changed too
        ("np_gbdt", AFTER),
        ("diffprivlib_rf", BEFORE),     # its random_state comes from the cell's seed
        ("dpboost_original", BEFORE),   # the peer's own seeding: unchanged
    ])
    assert stale_rows(frame, (rekeyed,)).tolist() == [True, False, True, False]


def test_the_summary_names_the_latest_change_and_the_command():
    frame = _frame([("dpboost", BEFORE), ("dpboost", AFTER), ("dpboost_original", BEFORE)])
    line = stale_summary(frame)
    assert line.startswith("1 of 3 rows stale")
    assert f"--recompute-before {NUMBER_CHANGES[-1].since}" in line
    assert stale_summary(_frame([("np_gbdt", AFTER)])) == ""


def test_each_distinct_timestamp_parsed_once_gives_the_rows_times():
    """Parsing the distinct stamps (a cell's rows share one) gives every row's own parse:
    repeats, missing values, a stamp that does not parse and other offsets included."""
    stamps = [BEFORE, None, BEFORE, "not a time", "2026-11-23T12:00:00+02:00", AFTER, None]
    frame = _frame([("dpboost", s) for s in stamps])
    expected = pd.to_datetime(frame["timestamp"], utc=True, errors="coerce", format="ISO8601")
    assert _row_times(frame).equals(expected)
    assert _row_times(frame.iloc[[1, 6]]).isna().all()  # no stamp at all
    mask = stale_rows(frame)
    assert stale_summary(frame, mask) == stale_summary(frame)
