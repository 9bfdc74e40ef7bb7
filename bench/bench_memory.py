"""Peak memory of one worker on DPBoost's largest cells, and the workers it allows here.

    python bench/bench_memory.py                    # quick: synthetic_cls 200,000 x 400
    python bench/bench_memory.py --rows 1000000     # the full size (Table 2's synthetic_cls)

Each measurement runs in a child process of its own and reads its peak resident memory
(VmHWM, the high-water mark of /proc/self/status) at the end, as a worker of a run would
reach it:

* load: synthetic_cls loaded through the registry (``dpexp.datasets``), as a worker loads
  it. Generated sets are drawn under a lock and kept on disk (``dpexp/datasets/generated.py``):
  when no draw of this size is kept yet this child draws it (make_classification works
  in float64: the draw's peak, about 9 GiB at 1,000,000 x 400), else it reads the kept
  file; the line says which;
* np_gbdt, dpboost: a worker's cell: load (read back from the kept draw), the 5-fold
  split of dpboost-table2 (fold 0: the training and test rows copied out, as the runner
  does), then the estimator with Table 2's parameters fitted on the training rows with
  ``--trees`` trees (the memory of a fit hardly grows with the trees: the data, their
  binned codes and the histograms of one tree at a time);
* lightgbm: the same cell with LightGBM (depth 6, 64 leaves, 255 bins, one thread).

``base`` is the child's memory after its imports, before loading: the part a peak
measured at another row count keeps (``dpexp.experiments.worker_memory`` scales the rest
with the rows). The bench prints the workers ``dpexp plan`` recommends with these peaks,
``min(cores, floor(available memory / peak))``, and records the peaks of np_gbdt and
dpboost in ``<data dir>/worker-peaks.json`` for ``dpexp plan`` (``--no-record``: not).
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpexp.experiments.worker_memory import (  # noqa: E402
    WorkerPeak,
    available_memory_gib,
    recommended_workers,
    record_worker_peaks,
)

DATASET = "synthetic_cls"
#: The experiment whose largest cells are measured (its parameters, its CV).
EXPERIMENT = "dpboost-table2"
OURS = ("np_gbdt", "dpboost")
CHILDREN = ("load", *OURS, "lightgbm")


def memory_gib(field: str) -> float:
    """A line of /proc/self/status in GiB (VmHWM: the peak; VmRSS: now)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 2**20  # kB
    raise SystemExit(f"no {field} in /proc/self/status: this bench needs Linux")


def child(kind: str, rows: int, n_trees: int) -> dict:
    """In the child process: one measurement (see the module's docstring)."""
    # lazy: imported in the child, before loading: the base a peak at another row count keeps
    import numpy as np
    from lightgbm import LGBMClassifier

    from dpexp.datasets.generated import draw_key, draw_path, draw_shape
    from dpexp.datasets.registry import get_dataset_info
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.design import with_n_records
    from dpexp.experiments.execute import load_for_cell, split_indices
    from dpexp.privacy.randomness import seeded_noise
    from dpexp.registry import get_algorithm, make_estimator

    spec = resolve(EXPERIMENT).at_scale("paper")
    ref = next(d for d in spec.datasets if d.name == DATASET)
    base = memory_gib("VmRSS")
    info = get_dataset_info(DATASET)
    n_rows, _ = draw_shape(info.options, dict(ref.params), rows)
    kept = draw_path(DATASET, draw_key(DATASET, info.options, dict(ref.params), n_rows)).exists()
    t0 = time.perf_counter()
    ds = load_for_cell(ref, rows, 0, None)
    out = {"kind": kind, "rows": int(ds.n_rows), "base_gib": base,
           "load": "read the kept draw" if kept else "drew it (and kept it)"}
    if kind != "load":
        tr, te = split_indices(ds, spec.cv, 0, 0, 0)
        X_train, y_train, X_test = ds.X[tr], ds.y[tr], ds.X[te]
        out["n_train"] = int(len(tr))
        if kind == "lightgbm":
            est = LGBMClassifier(max_depth=6, num_leaves=64, max_bin=255, learning_rate=0.01,
                                 n_estimators=n_trees, n_jobs=1, verbose=-1)
        else:
            algo = next(a for a in spec.algorithms if a.name == kind)
            params = with_n_records(kind, {**dict(algo.params), "n_trees": n_trees}, len(tr))
            est = make_estimator(kind, ds.task, params,
                                 epsilon=spec.epsilons[0] if get_algorithm(kind).private else None,
                                 random_state=0, public=ds.public_metadata(),
                                 noise_rng=seeded_noise(0))
        est.fit(X_train, y_train)
        est.predict(X_test)
        del X_train, y_train, X_test
    out["seconds"] = time.perf_counter() - t0
    out["peak_gib"] = memory_gib("VmHWM")
    out["data_gib"] = float(np.asarray(ds.X).nbytes / 2**30)
    return out


def measure(kind: str, rows: int, n_trees: int) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", kind, "--rows", str(rows),
                           "--trees", str(n_trees)], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"{kind}: the child failed: {tail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000,
                    help="rows of synthetic_cls (default 200,000; the full set: 1000000)")
    ap.add_argument("--trees", type=int, default=5, help="trees of each fit (default 5)")
    ap.add_argument("--no-record", action="store_true",
                    help="do not record the peaks for dpexp plan")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--child", choices=CHILDREN, help=argparse.SUPPRESS)
    # run_all.py hands every benchmark the same extra arguments: ignore the others' flags.
    a, unknown = ap.parse_known_args()
    if unknown:
        print(f"ignoring arguments {unknown}", file=sys.stderr)
    if a.rows < 1000 or a.trees < 1:
        ap.error("--rows must be >= 1000 and --trees >= 1")
    if a.child:
        print(json.dumps(child(a.child, a.rows, a.trees)))
        return
    cores, available = os.cpu_count() or 1, available_memory_gib()
    print(f"{DATASET} {a.rows:,} x 400 ({EXPERIMENT}'s fold 0 of 5), {a.trees} trees; "
          f"{cores} cores, {available:.1f} GiB available", flush=True)
    print(f"{'child':<10}{'base GiB':>10}{'peak GiB':>10}{'data GiB':>10}{'seconds':>9}  note")
    results = []
    for kind in CHILDREN:
        r = measure(kind, a.rows, a.trees)
        results.append(r)
        note = r["load"] if kind == "load" else f"{r['n_train']:,} training rows"
        print(f"{kind:<10}{r['base_gib']:10.2f}{r['peak_gib']:10.2f}{r['data_gib']:10.2f}"
              f"{r['seconds']:9.1f}  {note}", flush=True)
    by_kind = {r["kind"]: r for r in results}
    for kind in OURS:
        ratio = by_kind[kind]["peak_gib"] / by_kind["lightgbm"]["peak_gib"]
        print(f"{kind} peak / LightGBM's: {ratio:.2f}x")
    largest = max((by_kind[k] for k in OURS), key=lambda r: r["peak_gib"])
    workers = recommended_workers(cores, available, largest["peak_gib"])
    print(f"workers dpexp plan recommends here: {workers} = min({cores} cores, "
          f"floor({available:.1f} GiB / {largest['peak_gib']:.2f} GiB, {largest['kind']}'s peak))")
    if not a.no_record:
        path = record_worker_peaks(WorkerPeak(DATASET, k, by_kind[k]["rows"], by_kind[k]["base_gib"],
                                              by_kind[k]["peak_gib"]) for k in OURS)
        print(f"recorded the peaks of {', '.join(OURS)} in {path}")
    if a.json_out:  # bench/run_all.py's rows: each peak against LightGBM's on the same cell
        lgb = by_kind["lightgbm"]
        a.json_out.write_text(json.dumps([
            {"benchmark": f"{kind}_peak_rss", "dataset": f"{DATASET} {a.rows}x400",
             "ours_seconds": None, "reference": f"LightGBM peak {lgb['peak_gib']:.2f} GiB",
             "reference_seconds": None, "ratio": by_kind[kind]["peak_gib"] / lgb["peak_gib"],
             "target_ratio": 1.0,
             "note": (f"peak RSS {by_kind[kind]['peak_gib']:.2f} GiB; workers recommended here: "
                      f"{workers} ({cores} cores, {available:.1f} GiB available)")}
            for kind in OURS], indent=2))


if __name__ == "__main__":
    main()
