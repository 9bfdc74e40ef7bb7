"""The same cells on loky and on dask (a local cluster), 2 jobs each: is dask within 1.1x?

    python bench/bench_backends.py                       # quickstart at smoke scale, 3 rounds
    python bench/bench_backends.py --experiment fletcher-fig10 --rounds 5 --jobs 2

Each round runs the experiment's cells once per backend (the order alternating between
rounds, so a burst of load on the machine hits both), each time in a fresh results folder
under a temporary directory (nothing is written to the repository's results/), in phases:

* start: the workers' start (for dask the LocalCluster's scheduler, nannies and workers;
  loky starts its processes at the first task, so its start falls in the cold pass);
* cold: every cell once, on new workers: their imports, numba's compilation (or loading
  from its disk cache), each worker's untimed warm-up fit and data loads included;
* warm: the same cells again on the same workers, into another folder: the cells and the
  backend's own cost per cell only;
* close: the workers' shutdown (loky's at the interpreter's exit otherwise).

Prints the median of each phase over the rounds and the ratios dask / loky of the whole
run (start + cold + close, what ``dpexp run`` pays) and of the warm pass, against the 1.1
target of issue 43, and checks that both backends computed the same values. Not part of
the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from joblib.externals.loky import get_reusable_executor  # noqa: E402

from dpexp.experiments.backends import backend  # noqa: E402
from dpexp.experiments.catalog import resolve  # noqa: E402
from dpexp.experiments.cells import Cell, expand  # noqa: E402
from dpexp.experiments.config import RunConfig  # noqa: E402
from dpexp.experiments.execute import run_cell  # noqa: E402
from dpexp.experiments.spec import ExperimentSpec  # noqa: E402

#: Issue 43's target: dask's time at most this multiple of loky's for the same cells.
TARGET_RATIO = 1.1
BACKENDS = ("loky", "dask")
PHASES = ("start", "cold", "warm", "close")
#: The provenance written into the rows (the bench's rows are thrown away).
PROVENANCE = {"dpexp_version": "bench", "git_revision": "bench"}


@dataclass(frozen=True)
class BackendRun:
    """One backend's phases (seconds) in one round, and the values its cells computed."""

    backend: str
    seconds: dict[str, float]
    values: dict[str, list]

    @property
    def total(self) -> float:
        return self.seconds["start"] + self.seconds["cold"] + self.seconds["close"]


def cell_values(payload: dict) -> list:
    """The (metric, step, value) of a cell's rows: what must not depend on the backend.
    Timing metrics (``seconds_per_tree``: any name with "second", as in
    ``bench/compare_values.py``) are left out: they differ between any two runs."""
    return sorted((r["metric"], str(r.get("step")), repr(r["value"])) for r in payload["rows"]
                  if "second" not in str(r["metric"]))


def run_pass(pool, cells: list[Cell], spec: ExperimentSpec, cfg: RunConfig) -> tuple[float, dict]:
    """Every cell once on ``pool``; (seconds, values by cell digest)."""
    t0 = time.perf_counter()
    payloads = list(pool.map_unordered(run_cell, cells, spec, cfg, PROVENANCE))
    seconds = time.perf_counter() - t0
    by_key = {json.dumps(p["cell"], sort_keys=True, default=str): cell_values(p) for p in payloads}
    return seconds, by_key


def run_backend(name: str, spec: ExperimentSpec, cells: list[Cell], jobs: int, folder: Path,
                mirror: str | None) -> BackendRun:
    cold_cfg = RunConfig(results_dir=folder / name / "cold", jobs=jobs, backend=name,
                         progress=False, mirror=mirror)
    warm_cfg = RunConfig(results_dir=folder / name / "warm", jobs=jobs, backend=name,
                         progress=False, mirror=mirror)
    t0 = time.perf_counter()
    with backend(cold_cfg) as pool:
        start = time.perf_counter() - t0
        cold, values = run_pass(pool, cells, spec, cold_cfg)
        warm, warm_values = run_pass(pool, cells, spec, warm_cfg)
        if warm_values != values:
            raise SystemExit(f"{name}: the warm pass computed other values than the cold one")
        t1 = time.perf_counter()
    if name == "loky":  # what the interpreter's exit would do: stop loky's workers
        get_reusable_executor().shutdown(wait=True)
    close = time.perf_counter() - t1
    return BackendRun(name, {"start": start, "cold": cold, "warm": warm, "close": close}, values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", default="quickstart", help="experiment id (default quickstart)")
    ap.add_argument("--scale", default="smoke")
    ap.add_argument("--jobs", type=int, default=2, help="workers of each backend (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (median; default 3)")
    ap.add_argument("--json-out", type=Path,
                    help="also write bench/run_all.py's rows (the rounds in each row's note)")
    # run_all.py hands every benchmark the same extra arguments: ignore the others' flags.
    a, unknown = ap.parse_known_args()
    if unknown:
        print(f"ignoring arguments {unknown}", file=sys.stderr)
    if a.jobs < 2 or a.rounds < 1:
        ap.error("--jobs must be >= 2 and --rounds >= 1")
    mirror = os.environ.get("DPEXP_DATA_MIRROR")
    spec = resolve(a.experiment).at_scale(a.scale)
    cells = list({c.digest: c for c in expand(spec, a.scale, 0)}.values())
    print(f"{spec.id} ({a.scale}): {len(cells)} cells, {a.jobs} jobs, {a.rounds} round(s), "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}", flush=True)
    runs: list[BackendRun] = []
    with tempfile.TemporaryDirectory(prefix="bench-backends-") as tmp:
        for r in range(a.rounds):
            for name in (BACKENDS if r % 2 == 0 else BACKENDS[::-1]):
                run = run_backend(name, spec, cells, a.jobs, Path(tmp) / f"round{r}", mirror)
                runs.append(run)
                s = run.seconds
                print(f"  round {r + 1} {name:<5} start {s['start']:6.2f}  cold {s['cold']:6.2f}  "
                      f"warm {s['warm']:6.2f}  close {s['close']:5.2f}  total {run.total:6.2f} s",
                      flush=True)
    reference = runs[0].values
    same = all(run.values == reference for run in runs)
    med = {b: {p: statistics.median(x.seconds[p] for x in runs if x.backend == b) for p in PHASES}
           for b in BACKENDS}
    total = {b: statistics.median(x.total for x in runs if x.backend == b) for b in BACKENDS}
    print(f"\nmedian of {a.rounds} round(s), seconds:")
    print(f"{'backend':<8}{'start':>8}{'cold':>8}{'warm':>8}{'close':>8}{'total':>8}")
    for b in BACKENDS:
        print(f"{b:<8}" + "".join(f"{med[b][p]:8.2f}" for p in PHASES) + f"{total[b]:8.2f}")
    ratio_total = total["dask"] / total["loky"]
    ratio_warm = med["dask"]["warm"] / med["loky"]["warm"]
    for what, ratio in (("whole run (start + cold + close)", ratio_total), ("warm cells", ratio_warm)):
        verdict = "within" if ratio <= TARGET_RATIO else "ABOVE"
        print(f"dask / loky, {what}: {ratio:.2f}x ({verdict} the {TARGET_RATIO}x target)")
    print(f"values identical across backends and rounds: {'yes' if same else 'NO'}")
    if a.json_out:
        rounds = "; ".join(f"{x.backend} " + " ".join(f"{p} {x.seconds[p]:.2f}" for p in PHASES)
                           for x in runs)
        dataset = f"{spec.id} ({a.scale}, {len(cells)} cells, {a.jobs} jobs)"
        rows = [{"benchmark": f"backend_dask_vs_loky_{what}", "dataset": dataset,
                 "ours_seconds": ours, "reference": "loky", "reference_seconds": ref,
                 "ratio": ours / ref, "target_ratio": TARGET_RATIO,
                 "note": f"values identical: {'yes' if same else 'NO'}; rounds: {rounds}"}
                for what, ours, ref in (("run", total["dask"], total["loky"]),
                                        ("warm", med["dask"]["warm"], med["loky"]["warm"]))]
        a.json_out.write_text(json.dumps(rows, indent=2))
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
