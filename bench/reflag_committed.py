"""Re-flag the committed results tables (issue #38, item 6): ``private`` / ``not_dp_reason`` only.

    python bench/reflag_committed.py            # rewrite results/*/results-paper.csv.gz
    python bench/reflag_committed.py --check    # exit 1 if any table would change

A row of a private algorithm is ``private=True`` only when every public input the harness
gave it was declared (or paid for): an observed domain or an ``n_records`` read from the
data makes it ``private=False`` with the reason (:mod:`dpexp.experiments.reflag`). Values
and every other field keep their exact text; a second run changes nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpexp.experiments.reflag import reflag_table  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table would change")
    ap.add_argument("--results", type=Path, default=ROOT / "results")
    args = ap.parse_args()
    rows = changed = flipped = 0
    reasons: Counter = Counter()
    for path in sorted(args.results.glob("*/results-paper.csv.gz")):
        r = reflag_table(path, write=not args.check)
        rows, changed, flipped = rows + r.rows, changed + r.changed, flipped + r.now_not_private
        reasons.update(dict(r.reasons))
        if r.changed:
            print(f"{path.parent.name}: {r.changed} of {r.rows} rows re-flagged, "
                  f"{r.now_not_private} private=True -> False")
    print(f"total: {changed} of {rows} rows re-flagged; {flipped} private=True -> False "
          f"({', '.join(f'{k}: {v}' for k, v in reasons.most_common()) or 'none'})")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
