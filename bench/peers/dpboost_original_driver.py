"""Side-venv half of the DPBoost-original peer: train the authors' LightGBM fork on one fold.

Runs under the side virtualenv's Python with ``PYTHONPATH=<build>/<branch>/python-package``
(the fork needs numpy < 2), so it imports nothing from dpexp. The dpexp half
(``dpboost_original.py``) writes the fold's rows to ``IN.npz`` and the fork's parameters
to ``IN.json``; this script trains, times the training with the fork already loaded
(no first-call cost inside the timing), and writes the test scores to ``OUT.npz``.

usage: python dpboost_original_driver.py IN.npz IN.json OUT.npz
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import scipy.sparse as sp


def _matrix(data: np.lib.npyio.NpzFile, prefix: str):
    if f"{prefix}_data" in data:
        return sp.csr_matrix(
            (data[f"{prefix}_data"], data[f"{prefix}_indices"], data[f"{prefix}_indptr"]),
            shape=tuple(data[f"{prefix}_shape"]),
        )
    return data[prefix]


def main(in_npz: str, in_json: str, out_npz: str) -> None:
    import lightgbm as lgb

    data = np.load(in_npz)
    with open(in_json) as fh:
        params = json.load(fh)
    n_trees = int(params["num_iterations"])
    X_tr, X_te = _matrix(data, "X_train"), _matrix(data, "X_test")
    y_tr = data["y_train"].astype(np.float64)
    # One tiny warm-up fit so that library loading and first-call costs stay out of the timing.
    warm = {**params, "num_iterations": 1, "my_n_trees": 1, "inner_boost_round": 1}
    lgb.train(warm, lgb.Dataset(X_tr[:64], y_tr[:64], free_raw_data=False), num_boost_round=1)
    train = lgb.Dataset(X_tr, y_tr, params=params, free_raw_data=False)
    train.construct()  # binning excluded from the timing, as dpexp's seconds_per_tree
    t0 = time.perf_counter()
    booster = lgb.train(params, train, num_boost_round=n_trees)
    seconds = time.perf_counter() - t0
    # raw_score includes the initial score LightGBM boosted from (the label mean when
    # boost_from_average is on, as in the authors' regression script).
    raw = booster.predict(X_te, raw_score=True)
    np.savez(out_npz, raw_score=np.asarray(raw, dtype=np.float64), fit_seconds=seconds,
             n_trees=booster.current_iteration())


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
