"""Fit + predict time of the Fletcher-Islam forest vs diffprivlib's RandomForestClassifier.

Adult (UCI, 30,162 rows), 100 trees, epsilon = 1, one stratified 90/10 split, both on the
same machine in the same run; seconds are medians over ``--repeats`` (random_state =
repeat), accuracies means. Target (issue 6): ours at least 10x faster than diffprivlib
at max_depth 9 (our Theorem 2 depth), i.e. ``ratio = reference / ours >= 10``.

diffprivlib 0.6.x does not import with scikit-learn >= 1.6 (it imports
``sklearn.tree._tree.DOUBLE``), so the peer runs in another interpreter: by default
diffprivlib's side environment, the one dpexp's runner and leaderboard use
(``dpexp peers setup diffprivlib``, :mod:`dpexp.side_envs`), else ``--peer-python``. The
same split and public bounds are handed to it as an .npz file.

    dpexp peers setup diffprivlib             # once: creates the side environment
    DPEXP_DATA_MIRROR=../shared/datasets python bench/bench_forest.py [--json-out rows.json]

Our kernels are compiled by numba and cached on disk; one untimed warm-up fit + predict
runs before the clock (its time, compile or cache load included, is in the note).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BENCHMARK = "fletcher forest fit+predict (adult_uci, 100 trees, eps=1)"
TARGET_DEPTH = 9  # Theorem 2 depth on Adult (Table 4); the target compares at it
TARGET_RATIO = 10.0

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
    out[str(depth)] = {"seconds": float(np.median(times)), "accuracy": float(np.mean(accs)),
                       "times": times}
import diffprivlib, sklearn
out["versions"] = {"diffprivlib": diffprivlib.__version__, "sklearn": sklearn.__version__}
print(json.dumps(out))
"""


def default_peer_python() -> str:
    """diffprivlib's side environment (:func:`dpexp.side_envs.side_python`) when it is
    set up, else ours (where diffprivlib then fails to import, said in the output)."""
    from dpexp.side_envs import side_python

    py = side_python("diffprivlib")
    return str(py) if py is not None else sys.executable


def make_ours(ds, rep: int):
    from dpexp.papers.fletcher.forest import FletcherForestClassifier

    return FletcherForestClassifier(
        epsilon=1.0, n_trees=100, feature_domain=ds.feature_domain,
        categorical_features=ds.categorical_features, n_categories=ds.n_categories,
        classes=ds.classes, random_state=rep,
    )


def run_ours(ds, Xtr, Xte, ytr, yte, repeats: int) -> dict:
    t = time.perf_counter()
    make_ours(ds, 0).fit(Xtr, ytr).predict(Xte)  # warm-up: load (or compile) the kernels
    first = time.perf_counter() - t
    times, accs = [], []
    for rep in range(repeats):
        t = time.perf_counter()
        m = make_ours(ds, rep).fit(Xtr, ytr)
        acc = float((m.predict(Xte) == yte).mean())
        times.append(time.perf_counter() - t)
        accs.append(acc)
    return {"seconds": float(np.median(times)), "accuracy": float(np.mean(accs)), "depth": m.depth_,
            "times": times, "first_call": first}


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


def rows_for(dataset: str, ours: dict, peer: dict | None, depths: list[int], repeats: int,
             peer_error: str = "") -> list[dict]:
    """Rows for bench/run_all.py; only the depth-9 row carries the issue's target."""
    rows = []
    for depth in depths:
        r = (peer or {}).get(str(depth))
        note = (f"accuracy ours {ours['accuracy']:.4f} (depth {ours['depth']})"
                + (f" vs diffprivlib {r['accuracy']:.4f}" if r else f"; diffprivlib not run: {peer_error}")
                + f"; medians of {repeats} repeats; ours' first call (numba load) {ours['first_call']:.2f} s")
        rows.append({
            "benchmark": BENCHMARK,
            "dataset": dataset,
            "ours_seconds": ours["seconds"],
            "reference": f"diffprivlib RandomForestClassifier (depth {depth})",
            "reference_seconds": r["seconds"] if r else None,
            "ratio": r["seconds"] / ours["seconds"] if r else None,
            "target_ratio": TARGET_RATIO if depth == TARGET_DEPTH else None,
            "target_direction": "min",  # a speed-up: met when ratio >= target
            "note": note,
        })
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="adult_uci")
    ap.add_argument("--peer-python", default=None,
                    help="interpreter with diffprivlib (default: its side environment, if set up)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-depths", default="9,5", help="diffprivlib max_depth values (9 = Table 4 depth)")
    ap.add_argument("--json-out", type=Path, help="write the result rows (list of dicts) here")
    # run_all.py hands every benchmark the same extra arguments: ignore the others' flags.
    args, unknown = ap.parse_known_args()
    if unknown:
        print(f"ignoring arguments {unknown}", file=sys.stderr)
    from dpexp.datasets import load_dataset

    ds = load_dataset(args.dataset)
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.1, stratify=y, random_state=0)
    ours = run_ours(ds, Xtr, Xte, ytr, yte, args.repeats)
    print(f"ours (fletcher_forest, depth {ours['depth']}): median {ours['seconds']:.3f} s "
          f"(runs {', '.join(f'{t:.3f}' for t in ours['times'])}; first call {ours['first_call']:.2f} s), "
          f"accuracy {ours['accuracy']:.4f}", flush=True)
    depths = [int(d) for d in args.peer_depths.split(",")]
    python = args.peer_python or default_peer_python()
    peer, err = None, ""
    try:
        peer = run_peer(python, ds, Xtr, Xte, ytr, yte, depths, args.repeats)
        print(f"peer: {python} ({peer.pop('versions', {})})")
    except Exception as exc:  # noqa: BLE001 - report and still write our row
        err = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        print(f"diffprivlib peer not run ({python}): {exc}\n(create it with: dpexp peers setup diffprivlib)")
    for depth in depths:
        r = (peer or {}).get(str(depth))
        if r:
            print(f"diffprivlib RandomForestClassifier (max_depth {depth}): median {r['seconds']:.3f} s "
                  f"(runs {', '.join(f'{t:.3f}' for t in r['times'])}), accuracy {r['accuracy']:.4f}; "
                  f"ours is {r['seconds'] / ours['seconds']:.1f}x faster")
    if args.json_out:
        rows = rows_for(args.dataset, ours, peer, depths, args.repeats, err)
        args.json_out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
