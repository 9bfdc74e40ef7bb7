"""A run outside a terminal says how far it is (issue 42): a line at least every 30 s
with the cells done, the elapsed time and an ETA, and a last line when it ends."""

from __future__ import annotations

import io
import time

from dpexp.experiments.progress import INTERVAL, LineProgress


def test_a_line_every_interval_and_at_the_end():
    stream = io.StringIO()
    with LineProgress(interval=0.05, stream=stream) as progress:
        progress.add_task("fig2 (paper)", total=4, completed=1)
        progress.advance(0)
        time.sleep(0.2)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3  # periodic lines, then the last one
    assert lines[0].startswith("fig2 (paper): 2/4 cells, ") and "ETA" in lines[0]
    assert lines[-1].endswith("ETA —") or "ETA " in lines[-1]


def test_eta_from_the_rate_of_this_run_and_done_at_the_end():
    progress = LineProgress(stream=io.StringIO())
    progress.add_task("x", total=10, completed=5)  # cached before the run: not in the rate
    progress._t0 -= 60  # one minute in
    progress.advance(0, 1)
    assert "6/10 cells, 60 s elapsed, ETA 4 min" in progress.line()
    progress.advance(0, 4)
    assert progress.line().endswith("ETA done")
    assert INTERVAL <= 30
