"""How many workers this machine's memory allows: ``min(cores, floor(available memory /
measured per-worker peak))``, the peak being the largest one measured among the planned
(dataset, algorithm) pairs.

The peaks are measured by ``bench/bench_memory.py`` (the peak resident memory, VmHWM, of a
child process that loads the dataset through the registry, splits it and fits one cell's
estimator, as a worker does) and recorded in ``<data dir>/worker-peaks.json``. A peak
measured at another row count is scaled to the planned rows: the interpreter and its
libraries (``base_gib``, measured before loading) do not grow with the rows, the rest is
taken to grow in proportion to them (the data, its folds and its binned codes do).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from dpexp.datasets.registry import get_dataset_info
from dpexp.errors import DpexpError
from dpexp.experiments.spec import ExperimentSpec
from dpexp.paths import data_dir

#: The script that measures the peaks (named in the plan's line when none is recorded).
BENCH = "bench/bench_memory.py"


def worker_peaks_path() -> Path:
    """Where the measured per-worker peaks are recorded."""
    return data_dir() / "worker-peaks.json"


@dataclass(frozen=True)
class WorkerPeak:
    """The peak resident memory of a worker fitting ``algorithm`` on ``rows`` rows of
    ``dataset`` (GiB), and its memory before loading the data (``base_gib``)."""

    dataset: str
    algorithm: str
    rows: int
    base_gib: float
    peak_gib: float

    def at_rows(self, rows: int) -> float:
        """The peak scaled to ``rows`` rows (the base fixed, the rest in proportion)."""
        return self.base_gib + max(self.peak_gib - self.base_gib, 0.0) * rows / self.rows


@dataclass(frozen=True)
class WorkerAdvice:
    """The worker count a plan recommends and what it rests on."""

    cores: int
    available_gib: float
    workers: int
    #: The largest peak among the planned pairs at their rows; None when none is measured.
    peak_gib: float | None = None
    peak: WorkerPeak | None = None
    peak_rows: int | None = None

    def text(self) -> str:
        if self.peak is None or self.peak_gib is None:
            return (f"workers: {self.workers} ({self.cores} cores; {self.available_gib:.1f} GiB "
                    f"available, no measured per-worker peak for these cells: {BENCH} records one)")
        p = self.peak
        measured = f", measured at {p.rows:,}" if p.rows != self.peak_rows else ""
        return (f"workers: {self.workers} recommended (min of {self.cores} cores and "
                f"{self.available_gib:.1f} GiB available / {self.peak_gib:.2f} GiB peak per worker: "
                f"{p.algorithm} on {p.dataset}, {self.peak_rows:,} rows{measured}; {BENCH})")

    def to_dict(self) -> dict:
        return {"cores": self.cores, "available_gib": self.available_gib,
                "workers": self.workers, "peak_gib": self.peak_gib,
                "peak": asdict(self.peak) if self.peak else None, "peak_rows": self.peak_rows}


def recommended_workers(cores: int, available_gib: float, peak_gib: float | None) -> int:
    """``min(cores, floor(available_gib / peak_gib))``, at least one worker (a run with
    less memory than one worker's peak can only run one cell at a time, if at all)."""
    if cores < 1:
        raise DpexpError(f"cores must be >= 1, got {cores}")
    if peak_gib is None:
        return cores
    if not peak_gib > 0:
        raise DpexpError(f"a worker's peak memory must be > 0 GiB, got {peak_gib}")
    return max(1, min(cores, math.floor(available_gib / peak_gib)))


def available_memory_gib() -> float:
    """Memory available to new processes (``MemAvailable`` of /proc/meminfo: free memory
    plus the page cache the kernel can drop), else the physical memory."""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20  # kB
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def read_worker_peaks(path: Path | None = None) -> list[WorkerPeak]:
    """The recorded peaks ([] when none is recorded); a file that is not a list of peaks is
    an error naming it."""
    path = path or worker_peaks_path()
    if not path.exists():
        return []
    try:
        return [WorkerPeak(**entry) for entry in json.loads(path.read_text())]
    except (ValueError, TypeError) as exc:
        raise DpexpError(f"{path}: not a list of worker peaks ({exc}); measure again with "
                         f"{BENCH}.") from None


def record_worker_peaks(peaks: Iterable[WorkerPeak], path: Path | None = None) -> Path:
    """Add ``peaks`` to the record, replacing those of the same (dataset, algorithm, rows)."""
    path = path or worker_peaks_path()
    kept = {(p.dataset, p.algorithm, p.rows): p for p in read_worker_peaks(path)}
    kept.update({(p.dataset, p.algorithm, p.rows): p for p in peaks})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([asdict(p) for p in sorted(kept.values(), key=lambda p: (p.dataset, p.algorithm, p.rows))], indent=1))
    tmp.replace(path)
    return path


def loaded_rows(spec: ExperimentSpec, dataset: str, scale: str) -> int | None:
    """Rows a worker loads of ``dataset`` for ``spec`` at ``scale`` (None if not declared)."""
    declared = get_dataset_info(dataset).rows
    cap = spec.max_rows(scale)
    if declared is None:
        return cap
    return min(int(declared), int(cap)) if cap is not None else int(declared)


def worker_advice(specs: Iterable[ExperimentSpec], scale: str,
                  peaks: list[WorkerPeak] | None = None, cores: int | None = None,
                  available_gib: float | None = None) -> WorkerAdvice:
    """The workers recommended for running ``specs`` at ``scale`` on this machine."""
    peaks = read_worker_peaks() if peaks is None else peaks
    cores = cores or os.cpu_count() or 1
    available = available_memory_gib() if available_gib is None else available_gib
    largest: tuple[float, WorkerPeak, int] | None = None
    for spec in specs:
        names = {a.name for a in spec.algorithms if a.name}
        for ref in spec.datasets:
            rows = loaded_rows(spec, ref.name, scale)
            for name in names:
                matching = [p for p in peaks if p.dataset == ref.name and p.algorithm == name]
                if not matching:
                    continue
                # the measurement nearest the planned rows: the least scaled
                p = min(matching, key=lambda q: abs(math.log(q.rows / (rows or q.rows))))
                at = p.at_rows(rows or p.rows)
                if largest is None or at > largest[0]:
                    largest = (at, p, rows or p.rows)
    if largest is None:
        return WorkerAdvice(cores, available, recommended_workers(cores, available, None))
    gib, peak, rows = largest
    return WorkerAdvice(cores, available, recommended_workers(cores, available, gib), gib, peak, rows)
