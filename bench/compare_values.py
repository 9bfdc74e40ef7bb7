"""Did a re-timed experiment reproduce its committed values?

    python bench/compare_values.py EXP [--rev HEAD] [--scale paper]

Compares ``results/EXP/results-SCALE.csv.gz`` in the working tree (after ``dpexp run EXP
--recompute-before TIME``) with the same file at git revision ``--rev``: every value of
the same cell, metric and step must be equal (NaN equals NaN); timing metrics are left
out. Prints one line (and the first differing rows); exit status 1 when a value differs.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

KEY = ["dataset", "label", "params", "epsilon", "fold", "repeat", "seed", "metric", "step"]


def is_timing(metric: pd.Series) -> pd.Series:
    return metric.astype(str).str.contains("second")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--scale", default="paper")
    a = ap.parse_args()
    root = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                               text=True, check=True).stdout.strip())
    rel = f"results/{a.experiment}/results-{a.scale}.csv.gz"
    shown = subprocess.run(["git", "-C", str(root), "show", f"{a.rev}:{rel}"], capture_output=True)
    if shown.returncode:
        print(f"{rel} is not in {a.rev}", file=sys.stderr)
        return 2
    old = pd.read_csv(io.BytesIO(shown.stdout), compression="gzip", low_memory=False)
    new = pd.read_csv(root / rel, low_memory=False)
    both = old.merge(new, on=KEY, how="inner", suffixes=("_old", "_new"))
    both = both[~is_timing(both.metric)]
    x, y = both.value_old.to_numpy(float), both.value_new.to_numpy(float)
    differ = ~((x == y) | (np.isnan(x) & np.isnan(y)))
    print(f"{a.experiment}: {len(both)} values compared, {int(differ.sum())} differ; "
          f"rows {len(old)} at {a.rev}, {len(new)} now")
    if differ.any():
        print(both.loc[differ, KEY + ["value_old", "value_new"]].head(20).to_string())
    return int(differ.any())


if __name__ == "__main__":
    sys.exit(main())
