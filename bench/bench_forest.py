"""Fit + predict time of the Fletcher-Islam forest vs diffprivlib's RandomForestClassifier.

Adult (UCI, 30,162 rows), 100 trees, epsilon = 1, one stratified 90/10 split, both on the
same machine in the same run. diffprivlib 0.6.x does not import with scikit-learn >= 1.6
(it imports ``sklearn.tree._tree.DOUBLE``), so the peer can run in another interpreter:
``--peer-python /path/to/venv/bin/python`` (a venv with ``diffprivlib`` and
``scikit-learn<1.6``); the same split and public bounds are handed to it as an .npz file.

    DPEXP_DATA_MIRROR=../shared/datasets python bench/bench_forest.py [--peer-python PY]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

PEER = r"""
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from diffprivlib.models import RandomForestClassifier
d = np.load(sys.argv[1])
out = {}
for depth in json.loads(sys.argv[2]):
    accs, times = [], []
    for rep in range(int(sys.argv[3])):
        t = time.perf_counter()
        m = RandomForestClassifier(n_estimators=100, epsilon=1.0, bounds=(d["lo"], d["hi"]),
                                   classes=np.unique(d["ytr"]), max_depth=depth, random_state=rep)
        m.fit(d["Xtr"], d["ytr"])
        acc = float((m.predict(d["Xte"]) == d["yte"]).mean())
        times.append(time.perf_counter() - t)
        accs.append(acc)
    out[str(depth)] = {"seconds": float(np.median(times)), "accuracy": float(np.mean(accs))}
print(json.dumps(out))
"""


def run_ours(ds, Xtr, Xte, ytr, yte, repeats: int) -> dict:
    from dpexp.algorithms.fletcher import FletcherForestClassifier

    times, accs = [], []
    for rep in range(repeats):
        t = time.perf_counter()
        m = FletcherForestClassifier(
            epsilon=1.0, n_trees=100, feature_domain=ds.feature_domain,
            categorical_features=ds.categorical_features, n_categories=ds.n_categories, random_state=rep,
        ).fit(Xtr, ytr)
        acc = float((m.predict(Xte) == yte).mean())
        times.append(time.perf_counter() - t)
        accs.append(acc)
    return {"seconds": float(np.median(times)), "accuracy": float(np.mean(accs)), "depth": m.depth_}


def run_peer(python: str, ds, Xtr, Xte, ytr, yte, depths: list[int], repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "split.npz"
        dom = np.asarray(ds.feature_domain, dtype=float)
        np.savez(path, Xtr=Xtr, Xte=Xte, ytr=ytr, yte=yte, lo=dom[:, 0], hi=dom[:, 1])
        proc = subprocess.run([python, "-c", PEER, str(path), json.dumps(depths), str(repeats)],
                              capture_output=True, text=True, timeout=3600)
        if proc.returncode:
            raise RuntimeError(proc.stderr[-2000:])
        return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="adult_uci")
    ap.add_argument("--peer-python", default=sys.executable)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-depths", default="9,5", help="diffprivlib max_depth values (9 = Table 4 depth)")
    args = ap.parse_args()
    from dpexp.datasets import load_dataset

    ds = load_dataset(args.dataset)
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.1, stratify=y, random_state=0)
    ours = run_ours(ds, Xtr, Xte, ytr, yte, args.repeats)
    print(f"ours (fletcher_forest, depth {ours['depth']}): {ours['seconds']:.3f} s, accuracy {ours['accuracy']:.4f}")
    depths = [int(d) for d in args.peer_depths.split(",")]
    try:
        peer = run_peer(args.peer_python, ds, Xtr, Xte, ytr, yte, depths, args.repeats)
    except Exception as exc:  # noqa: BLE001 - report and stop
        print(f"diffprivlib peer not run: {exc}")
        return
    for depth, r in peer.items():
        print(f"diffprivlib RandomForestClassifier (max_depth {depth}): {r['seconds']:.3f} s, "
              f"accuracy {r['accuracy']:.4f}, ours is {r['seconds'] / ours['seconds']:.1f}x faster")


if __name__ == "__main__":
    main()
