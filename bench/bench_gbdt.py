"""Benchmark of the histogram GBDT engine against LightGBM (DPBoost issue, "Speed and memory").

    python bench/bench_gbdt.py                 # adult, covtype (if available), synthetic_cls 1M x 400
    python bench/bench_gbdt.py --quick         # synthetic 100k x 400 only, few trees

Prints seconds per tree of NP (our engine, greedy), DPBoost (our engine, exponential
mechanism + Laplace leaves) and LightGBM with the same depth (6, num_leaves 64), max bins
(255), learning rate and tree count, all with every core; the ratios to LightGBM; and the
peak resident memory of a child process that only trains DPBoost/NP on synthetic_cls.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MIRROR = Path(os.environ.get("DPEXP_DATA_MIRROR", "/work/shared/datasets"))


def synthetic_cls(n_rows: int, n_features: int, seed: int = 0):
    """float32 binary classification data built in chunks (keeps peak memory low)."""
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


def load(name: str, rows: int):
    from sklearn.datasets import load_svmlight_file

    if name == "adult":
        X, y = load_svmlight_file(str(MIRROR / "adult" / "a9a"), n_features=123)
        return X.toarray(), y, np.tile([0.0, 1.0], (123, 1))
    if name == "covtype":
        path = MIRROR / "covtype" / "covtype.libsvm.binary.scale"
        if not path.exists():
            return None
        X, y = load_svmlight_file(str(path))
        X = X.toarray()
        return X, y, np.column_stack([X.min(0), X.max(0)])
    X, y = synthetic_cls(rows, 400)
    return X, y, np.tile([-6.0, 6.0], (400, 1))


def time_ours(X, y, dom, n_trees, private: bool, binning: str = "domain") -> float:
    from dpexp.algorithms.dpboost import DPBoostClassifier, NPGBDTClassifier

    common = dict(n_trees=n_trees, learning_rate=0.1, max_depth=6, reg_lambda=0.1,
                  feature_domain=dom, binning=binning)
    est = (DPBoostClassifier(epsilon=10.0, trees_per_ensemble=n_trees, random_state=0, **common)
           if private else NPGBDTClassifier(**common))
    est.fit(X[:2000], y[:2000])  # JIT warm-up
    est.fit(X, y)
    return est.diagnostics_["seconds_per_tree"]


def time_lightgbm(X, y, n_trees) -> float | None:
    try:
        import lightgbm as lgb
    except ImportError:
        return None
    params = dict(objective="regression", learning_rate=0.1, max_depth=6, num_leaves=64,
                  max_bin=255, reg_lambda=0.1, boost_from_average=False, verbose=-1,
                  num_threads=os.cpu_count())
    ds = lgb.Dataset(X, y, params=params)
    ds.construct()  # binning excluded, as ours
    t0 = time.perf_counter()
    lgb.train(params, ds, num_boost_round=n_trees)
    return (time.perf_counter() - t0) / n_trees


def child_memory(rows: int, n_trees: int, private: bool) -> None:
    """Run in a subprocess: train on synthetic_cls and print peak RSS (GiB) as JSON."""
    X, y, dom = load("synthetic_cls", rows)
    from dpexp.algorithms.dpboost import DPBoostClassifier, NPGBDTClassifier

    common = dict(n_trees=n_trees, learning_rate=0.1, feature_domain=dom)
    est = (DPBoostClassifier(epsilon=10.0, trees_per_ensemble=n_trees, random_state=0, **common)
           if private else NPGBDTClassifier(**common))
    est.fit(X, y)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({"peak_gib": peak, "data_gib": X.nbytes / 2**30}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--child", choices=["np", "dp"])
    a = ap.parse_args()
    if a.child:
        child_memory(a.rows, a.trees, a.child == "dp")
        return
    rows = 100_000 if a.quick else a.rows
    names = ["synthetic_cls"] if a.quick else ["adult", "covtype", "synthetic_cls"]
    print(f"{'dataset':<16}{'NP s/tree':>11}{'DP s/tree':>11}{'LGBM s/tree':>13}"
          f"{'NP/LGBM':>9}{'DP/LGBM':>9}")
    for name in names:
        loaded = load(name, rows)
        if loaded is None:
            print(f"{name:<16}  (not available offline; skipped)")
            continue
        X, y, dom = loaded
        n_trees = a.trees if name == "synthetic_cls" else 100
        lg = time_lightgbm(X, y, n_trees)
        npt = time_ours(X, y, dom, n_trees, private=False)
        dpt = time_ours(X, y, dom, n_trees, private=True)
        ratios = [f"{v / lg:9.2f}" if lg else f"{'n/a':>9}" for v in (npt, dpt)]
        print(f"{name:<16}{npt:11.4f}{dpt:11.4f}{(lg or float('nan')):13.4f}{''.join(ratios)}",
              flush=True)
        if name == "adult":
            q = time_ours(X, y, dom, n_trees, private=False, binning="quantile")
            print(f"{'adult (NP quantile bins)':<27}{q:.4f} s/tree" + (f", {q / lg:.2f}x" if lg else ""))
        del X, y
    for mode in ("np", "dp"):
        out = subprocess.run(
            [sys.executable, __file__, "--child", mode, "--rows", str(rows), "--trees", "5"],
            capture_output=True, text=True, check=True,
        ).stdout.strip().splitlines()[-1]
        mem = json.loads(out)
        print(f"peak memory, {mode} training on synthetic_cls {rows} x 400: "
              f"{mem['peak_gib']:.2f} GiB (float32 data itself: {mem['data_gib']:.2f} GiB)")


if __name__ == "__main__":
    main()
