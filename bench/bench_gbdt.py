"""Benchmark of the histogram GBDT engine against LightGBM (DPBoost issue, "Speed and memory").

    python bench/bench_gbdt.py          # adult, cod-rna, covtype, synthetic_cls 1M x 400
    python bench/bench_gbdt.py --quick               # synthetic 100k x 400 only
    python bench/bench_gbdt.py --json-out rows.json  # also write machine-readable rows
    python bench/bench_gbdt.py --threads 1,2         # every contestant at 1, then 2 threads
    python bench/bench_gbdt.py --ab                  # also our reference level loop (A/B)

Prints seconds per tree of NP (our engine, greedy), DPBoost (our engine, exponential
mechanism + Laplace leaves) and LightGBM with the same depth (6, num_leaves 64), max bins
(255), learning rate (0.01) and tree count, binning excluded on both sides; the ratios to
LightGBM (target: NP <= 0.8x; DPBoost's row is for information, its target is against the
authors' original, below); and the peak resident memory of a child process that only
trains NP/DPBoost on synthetic_cls. Each time is the median of ``--repeats`` runs, the
contestants taking turns, so a burst of load on the machine hits all of them.

``--threads 1,2`` runs every contestant at each thread count (numba's
``set_num_threads``, LightGBM's ``num_threads``; the original's ``num_threads``) and prints
one row per contestant and thread count (default: every core). ``--ab`` also times our
reference level loop (``dpexp.trees.grower.COMPILED_LEVELS = False``) in the same turns
and prints the ratio compiled / reference (``gbdt_*_compiled_vs_reference`` rows): on a
loaded machine the ratio of two paths timed side by side in one process means more than
an absolute time.

covtype is not on the offline mirror of the development machines: when the registry
cannot load it, the bench says so and times a covtype-shaped stand-in instead (581,012
rows; 10 continuous features and 44 one-hot binary ones, like covtype's 4 wilderness
areas and 40 soil types), labelled ``covtype-shaped`` in the table. Not part of the test
suite.

``--original ROOT`` (builds of the DPBoost authors' code, see ``peers/dpboost_original.py``)
adds a second reference on adult, cod-rna and abalone (those among ``--datasets``): Fig. 2's
DPBoost column against the original at the paper's settings on the training rows of Fig.
2's fold 0, seconds per tree and the ratio ours / original (target <= 0.5). abalone is a
regression set: it gets that row only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MIRROR = Path(os.environ.get("DPEXP_DATA_MIRROR", "/work/shared/datasets"))
LEARNING_RATE = 0.01
MAX_DEPTH = 6
#: Target ratio to LightGBM, per contestant (None: the row is for information).
TARGETS: dict[str, float | None] = {"np": 0.8, "dpboost": None}
#: Target ratio of DPBoost to the authors' original (``--original``).
ORIGINAL_TARGET = 0.5
MEMORY_BUDGET_GIB = 3.0


@dataclass
class BenchData:
    """Training matrix plus the public metadata the runner would pass."""

    X: np.ndarray
    y: np.ndarray
    meta: dict


#: The bench's labels are -1/+1 (declared: the estimators take the label set as public input).
CLASSES = np.array([-1.0, 1.0])


def synthetic_cls(n_rows: int, n_features: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """float32 binary classification data built in chunks (the registry's float64
    make_classification matrix alone would be 3.2 GB at 1M x 400)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=n_features // 4)
    X = np.empty((n_rows, n_features), dtype=np.float32)
    y = np.empty(n_rows)
    for s in range(0, n_rows, 100_000):
        block = rng.normal(size=(min(100_000, n_rows - s), n_features)).astype(np.float32)
        X[s : s + len(block)] = block
        score = block[:, : n_features // 4] @ w + rng.normal(scale=2.0, size=len(block))
        y[s : s + len(block)] = np.where(score > 0, 1.0, -1.0)
    return X, y


def covtype_shaped(n_rows: int = 581_012, seed: int = 0) -> BenchData:
    """A stand-in with covtype's shape: 10 continuous features, then one-hot groups of 4
    and 40 binary columns (wilderness area, soil type); float32, label from a noisy
    score of all of them."""
    rng = np.random.default_rng(seed)
    cont = rng.normal(size=(n_rows, 10)).astype(np.float32)
    area = rng.integers(0, 4, n_rows)
    soil = np.minimum(rng.geometric(0.12, n_rows) - 1, 39)
    X = np.zeros((n_rows, 54), dtype=np.float32)
    X[:, :10] = cont
    X[np.arange(n_rows), 10 + area] = 1.0
    X[np.arange(n_rows), 14 + soil] = 1.0
    score = (cont @ rng.normal(size=10) + rng.normal(size=4)[area] + rng.normal(size=40)[soil]
             + rng.normal(scale=1.5, size=n_rows))
    domain = np.vstack([np.tile([-6.0, 6.0], (10, 1)), np.tile([0.0, 1.0], (44, 1))])
    binary = np.arange(54) >= 10
    meta = {"feature_domain": domain, "categorical_features": binary,
            "n_categories": np.where(binary, 2, 0)}
    return BenchData(X, np.where(score > np.median(score), 1.0, -1.0), meta)


def load(name: str, rows: int) -> tuple[str, BenchData] | None:
    """(label, data): adult / cod-rna / covtype through the registry (declared domains,
    binary adult features); synthetic_cls generated; covtype's stand-in when it is absent."""
    if name == "synthetic_cls":
        X, y = synthetic_cls(rows, 400)
        return name, BenchData(X, y, {"feature_domain": np.tile([-6.0, 6.0], (400, 1))})
    from dpexp.datasets import load_dataset

    try:
        ds = load_dataset(name, mirror=MIRROR)
    except Exception as exc:  # noqa: BLE001 - an absent mirror file only skips the row
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if name == "covtype":
            print(f"covtype: not available ({first}); timing the covtype-shaped stand-in",
                  file=sys.stderr)
            return "covtype-shaped", covtype_shaped()
        print(f"{name}: not available ({first})", file=sys.stderr)
        return None
    X = ds.X.toarray() if hasattr(ds.X, "toarray") else np.asarray(ds.X)
    meta = {"feature_domain": ds.feature_domain, "categorical_features": ds.categorical_features,
            "n_categories": ds.n_categories}
    return name, BenchData(X, np.where(ds.y == ds.classes[-1], 1.0, -1.0), meta)


def make_estimator(kind: str, n_trees: int, meta: dict):
    from dpexp.papers.dpboost.estimators import DPBoostClassifier, NPGBDTClassifier

    common = dict(n_trees=n_trees, learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
                  reg_lambda=0.1, classes=CLASSES, **meta)
    if kind == "np":
        return NPGBDTClassifier(**common)
    return DPBoostClassifier(epsilon=10.0, trees_per_ensemble=min(50, n_trees), random_state=0,
                             **common)


def set_threads(threads: int) -> int:
    """numba's thread count for our contestants (at most NUMBA_NUM_THREADS); returns it."""
    import numba

    n = max(1, min(threads, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(n)
    return n


def time_ours(data: BenchData, n_trees: int, kind: str, compiled: bool = True) -> float:
    """Seconds per tree of the boosting loop (the estimator times it, binning excluded);
    ``compiled`` False: the grower's reference level loop."""
    import dpexp.trees.grower as grower

    grower.COMPILED_LEVELS = compiled
    try:
        est = make_estimator(kind, n_trees, data.meta).fit(data.X, data.y)
    finally:
        grower.COMPILED_LEVELS = True
    return float(est.diagnostics_["seconds_per_tree"])


def time_lightgbm(data: BenchData, n_trees: int, threads: int | None = None) -> float | None:
    try:
        import lightgbm as lgb
    except ImportError:
        return None
    params = dict(objective="regression", learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
                  num_leaves=2**MAX_DEPTH, max_bin=255, reg_lambda=0.1,
                  boost_from_average=False, verbose=-1, num_threads=threads or os.cpu_count())
    ds = lgb.Dataset(data.X, data.y, params=params)
    ds.construct()  # binning excluded, as ours
    t0 = time.perf_counter()
    lgb.train(params, ds, num_boost_round=n_trees)
    return (time.perf_counter() - t0) / n_trees


def _peer_module():
    """bench/peers/dpboost_original.py (the DPBoost authors' code as a peer), loaded by path."""
    import importlib.util

    path = Path(__file__).with_name("peers") / "dpboost_original.py"
    spec = importlib.util.spec_from_file_location("dpboost_original_peer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Sets timed against the DPBoost authors' original (``--original``), as in the DPBoost issue.
ORIGINAL_SETS = ("adult", "cod-rna", "abalone")
#: Regression sets: timed against the original only (the LightGBM rows time classifiers).
REGRESSION_SETS = ("abalone",)
#: The spec whose DPBoost column and folds the original comparison uses (Fig. 2, Section 4).
ORIGINAL_SPEC = "dpboost-fig2"


def fig2_fold(name: str):
    """(dataset, training rows of fold 0, DPBoost's params) of Fig. 2 at paper scale: the
    rows the committed cells and the peer column (``peers/dpboost_original.py``) train on."""
    from dpexp.experiments.catalog import resolve
    from dpexp.experiments.execute import load_for_cell, split_indices

    spec = resolve(ORIGINAL_SPEC).at_scale("paper")
    ref = next(d for d in spec.datasets if d.name == name)
    ds = load_for_cell(ref, spec.max_rows("paper"), 0, str(MIRROR))
    train, _ = split_indices(ds, spec.cv, 0, 0, 0)
    dpboost = next(a for a in spec.algorithms if a.name == "dpboost")
    return ds, train, dict(dpboost.params)


def original_rows(name: str, root: Path, repeats: int, threads: int | None = None,
                  epsilon: float = 1.0) -> list[dict]:
    """DPBoost (ours, Fig. 2's column) vs the authors' original at the paper's settings
    (square loss, h = 1, lr 0.01, 50 trees in one ensemble; ``fork_params("paper", ...)``)
    on the training rows of Fig. 2's fold 0: seconds per tree, binning excluded on both
    sides, both with ``threads`` threads (None: every core), the two taking turns (median
    of ``repeats``)."""
    import numba

    from dpexp.registry import make_estimator

    peer = _peer_module()
    ds, train, params = fig2_fold(name)
    X, y = ds.X[train], ds.y[train]
    n_trees = int(params["n_trees"])
    threads = threads or os.cpu_count()
    # one thread on each side sidesteps OpenMP's (and numba's) spin-waiting on a loaded
    # machine, which inflates multi-threaded times of millisecond trees many-fold
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    fork = {**peer.fork_params("paper", ds.task, epsilon, n_trees), "num_threads": threads}
    python = root / "venv" / "bin" / "python"

    def ours(n: int = n_trees):
        return make_estimator("dpboost", ds.task, {**params, "n_trees": n, "trees_per_ensemble": n},
                              epsilon=epsilon, random_state=0, public=ds.public_metadata())

    ours(3).fit(X[:2000], y[:2000])  # JIT warm-up (serial kernels), untimed
    ours(1).fit(X, y)  # and the full-table paths
    ours_t, orig_t = [], []
    for _ in range(repeats):  # take turns, so a burst of load hits both
        _, seconds, _ = peer.train_original(root, python, peer.branch_for("paper", ds.task), fork,
                                         X, peer.fork_targets(ds, y), X[:10])
        orig_t.append(seconds / n_trees)
        ours_t.append(float(ours().fit(X, y).diagnostics_["seconds_per_tree"]))
    mine, orig = float(np.median(ours_t)), float(np.median(orig_t))
    return [{
        "benchmark": "gbdt_dpboost_vs_original", "dataset": name, "ours_seconds": mine,
        "reference": "dpboost_original", "reference_seconds": orig, "ratio": mine / orig,
        "target_ratio": ORIGINAL_TARGET, "threads": threads,
        "note": f"{X.shape[0]}x{X.shape[1]} (Fig. 2 fold 0), paper settings, eps {epsilon:g}, "
                f"{n_trees} trees, {threads} thread(s), median of {repeats}",
    }]


def peak_rss_gib() -> float:
    """This process's peak RSS. VmHWM, because ``ru_maxrss`` survives ``exec``: a child
    forked from a parent holding big arrays would report the parent's high-water mark."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**20  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def child_memory(rows: int, n_trees: int, kind: str) -> None:
    """Run in a subprocess: train on synthetic_cls and print peak RSS (GiB) as JSON."""
    _, data = load("synthetic_cls", rows)
    make_estimator(kind, n_trees, data.meta).fit(data.X, data.y)
    peak = peak_rss_gib()
    print(json.dumps({"peak_gib": peak, "data_gib": data.X.nbytes / 2**30}))


def speed_rows(name: str, data: BenchData, n_trees: int, repeats: int,
               threads: int | None = None, ab: bool = False) -> list[dict]:
    """NP, DPBoost and LightGBM on one set at ``threads`` threads (None: every core);
    with ``ab`` also our reference level loop, in the same turns."""
    threads = set_threads(threads or os.cpu_count())
    variants = [True, False] if ab else [True]
    for kind in ("np", "dpboost"):  # JIT warm-up, untimed
        # a small table compiles (or loads from numba's cache) the serial kernels; one
        # tree on the full table the large-table paths (parallel kernels, moved
        # statistics), so no compilation falls inside a timed fit
        for compiled in variants:
            time_ours(BenchData(data.X[:2000], data.y[:2000], data.meta), 3, kind, compiled)
            time_ours(data, 1, kind, compiled)
    times: dict[tuple[str, bool], list[float]] = {}
    lg_times: list[float] = []
    for _ in range(repeats):  # take turns, so a burst of load hits every contestant
        lg_t = time_lightgbm(data, n_trees, threads)
        if lg_t is not None:
            lg_times.append(lg_t)
        for kind in ("np", "dpboost"):
            for compiled in variants:
                times.setdefault((kind, compiled), []).append(
                    time_ours(data, n_trees, kind, compiled))
    lg = float(np.median(lg_times)) if lg_times else None
    note = (f"{data.X.shape[0]}x{data.X.shape[1]}, {n_trees} trees, depth {MAX_DEPTH}, "
            f"lr {LEARNING_RATE}, {threads} thread(s), median of {repeats}")
    rows = []
    for kind in ("np", "dpboost"):
        ours = float(np.median(times[kind, True]))
        rows.append({
            "benchmark": f"gbdt_{kind}_seconds_per_tree", "dataset": name, "ours_seconds": ours,
            "reference": "lightgbm", "reference_seconds": lg,
            "ratio": ours / lg if lg else None, "target_ratio": TARGETS[kind],
            "threads": threads, "note": note,
        })
        if ab:
            ref = float(np.median(times[kind, False]))
            rows.append({
                "benchmark": f"gbdt_{kind}_compiled_vs_reference", "dataset": name,
                "ours_seconds": ours, "reference": "reference level loop",
                "reference_seconds": ref, "ratio": ours / ref, "target_ratio": None,
                "threads": threads, "note": note,
            })
    return rows


def memory_row(rows: int, kind: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--rows", str(rows), "--trees", "5"],
        capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]
    mem = json.loads(out)
    return {
        "benchmark": f"gbdt_{kind}_peak_rss", "dataset": f"synthetic_cls {rows}x400",
        "ours_seconds": None, "reference": f"budget {MEMORY_BUDGET_GIB} GiB",
        "reference_seconds": None, "ratio": mem["peak_gib"] / MEMORY_BUDGET_GIB,
        "target_ratio": 1.0,
        "note": f"peak RSS {mem['peak_gib']:.2f} GiB (float32 data {mem['data_gib']:.2f} GiB)",
    }


def print_table(rows: list[dict]) -> None:
    # the reference is LightGBM, or the DPBoost original on gbdt_dpboost_vs_original rows
    print(f"{'benchmark':<36}{'dataset':<24}{'ours s':>10}{'ref s':>10}{'ratio':>8}{'target':>8}")
    for r in rows:
        fmt = lambda v, p: f"{v:{p}}" if v is not None else "n/a"  # noqa: E731
        print(f"{r['benchmark']:<36}{r['dataset']:<24}{fmt(r['ours_seconds'], '10.4f'):>10}"
              f"{fmt(r['reference_seconds'], '10.4f'):>10}{fmt(r['ratio'], '8.2f'):>8}"
              f"{fmt(r['target_ratio'], '8.2f'):>8}  {r['note']}", flush=True)


def _speed_rows_of(name: str, rows_n: int, a: argparse.Namespace) -> list[dict]:
    """NP and DPBoost vs LightGBM on one classification set ([] when it cannot be loaded)."""
    loaded = load(name, rows_n)
    if loaded is None:
        return []
    label, data = loaded
    n_trees = a.synthetic_trees if name == "synthetic_cls" else a.trees
    repeats = 1 if name == "synthetic_cls" and not a.quick else a.repeats
    return [row for threads in a.threads
            for row in speed_rows(label, data, n_trees, repeats, threads, a.ab)]


def _thread_counts(text: str) -> list[int]:
    """``--threads``: comma-separated positive thread counts."""
    try:
        counts = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of thread counts: {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"thread counts must be >= 1, got {text!r}")
    return counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--trees", type=int, default=200,
                    help="trees on adult, cod-rna and covtype")
    ap.add_argument("--synthetic-trees", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per contestant (median)")
    ap.add_argument("--datasets", default="adult,cod-rna,covtype,synthetic_cls")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--child", choices=["np", "dpboost"])
    ap.add_argument("--original", type=Path, default=os.environ.get("DPBOOST_ORIGINAL"),
                    help="builds of the DPBoost authors' code (bench/peers/dpboost_original.py): "
                         "adds DPBoost vs the original rows on adult, cod-rna and abalone "
                         "among --datasets (target <= 0.5x)")
    ap.add_argument("--original-threads", type=int, default=None,
                    help="threads of both sides in the original rows (default: every core)")
    ap.add_argument("--threads", type=_thread_counts, default=[None],
                    help="comma-separated thread counts, each contestant run at each "
                         "(e.g. 1,2; default: every core)")
    ap.add_argument("--ab", action="store_true",
                    help="also time our reference level loop (compiled / reference rows)")
    ap.add_argument("--original-only", action="store_true",
                    help="only the rows against the original (no LightGBM/NP rows)")
    a = ap.parse_args()
    if a.child:
        child_memory(a.rows, a.trees, a.child)
        return
    if a.original_only and not a.original:
        ap.error("--original-only needs --original ROOT (or DPBOOST_ORIGINAL)")
    if a.original_threads is not None and a.original_threads < 1:
        ap.error(f"--original-threads must be >= 1, got {a.original_threads}")
    rows_n = 100_000 if a.quick else a.rows
    names = ["synthetic_cls"] if a.quick else a.datasets.split(",")
    rows: list[dict] = []
    for name in names:
        skip = name in REGRESSION_SETS or a.original_only
        new = [] if skip else _speed_rows_of(name, rows_n, a)
        if a.original and name in ORIGINAL_SETS:
            for threads in ([a.original_threads] if a.original_threads else a.threads):
                new += original_rows(name, Path(a.original), a.repeats, threads)
        elif name in REGRESSION_SETS:
            print(f"{name}: regression, timed against the original only (--original)",
                  file=sys.stderr)
        print_table(new)
        rows += new
    if not a.no_memory:
        for kind in ("np", "dpboost"):
            rows.append(memory_row(rows_n, kind))
            print_table(rows[-1:])
    if a.json_out:
        a.json_out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
