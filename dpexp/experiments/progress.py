"""Progress of a run where no terminal shows a bar (issue 42): a line on stderr at least
every :data:`INTERVAL` seconds — cells done of the total, elapsed time and an ETA — so a
run under ``nohup``, CI or a pipe is never silent.

It has the part of :class:`rich.progress.Progress`'s interface the runner uses
(``add_task``, ``advance``, a context manager), so the runner picks one or the other.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TextIO

#: Most seconds between two progress lines.
INTERVAL = 30.0


def _duration(seconds: float) -> str:
    """``42 s``, ``7 min``, ``2.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class LineProgress:
    """Cells done / total as a line every ``interval`` seconds (and when the run ends)."""

    interval: float = INTERVAL
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    description: str = ""
    total: int = 0
    completed: int = 0
    _started_with: int = 0
    _t0: float = field(default_factory=time.monotonic)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add_task(self, description: str, total: int, completed: int = 0) -> int:
        """Start counting (one task per run); returns its id (always 0)."""
        with self._lock:
            self.description, self.total = description, total
            self.completed = self._started_with = completed
            self._t0 = time.monotonic()
        return 0

    def advance(self, task: int = 0, amount: int = 1) -> None:  # noqa: ARG002 - rich's signature
        with self._lock:
            self.completed += amount

    def line(self) -> str:
        """``fig2 (paper): 12/40 cells, 3 min elapsed, ETA 9 min``."""
        with self._lock:
            done, total, start = self.completed, self.total, self._started_with
        elapsed = time.monotonic() - self._t0
        rate = (done - start) / elapsed if elapsed > 0 else 0.0
        eta = _duration((total - done) / rate) if rate > 0 and done < total else (
            "—" if done < total else "done")
        return f"{self.description}: {done}/{total} cells, {_duration(elapsed)} elapsed, ETA {eta}"

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            print(self.line(), file=self.stream, flush=True)

    def __enter__(self) -> LineProgress:
        self._thread = threading.Thread(target=self._loop, name="dpexp-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.total:
            print(self.line(), file=self.stream, flush=True)
