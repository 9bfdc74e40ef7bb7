"""Run every benchmark in bench/ and print one table of ratios against named references.

Each ``bench/bench_*.py`` accepts ``--json-out FILE`` and writes rows
``{benchmark, dataset, ours_seconds, reference, reference_seconds, ratio, target_ratio,
note}``; ``ratio`` is oriented so that the target is met when ``ratio`` satisfies the
benchmark's target (see each script's docstring: slowdown vs the reference must stay
below its target, speed-up over the reference must exceed it). Benchmarks are kept out
of the test suite; run them on an otherwise idle machine.

    python bench/run_all.py [--only NAME] [-- extra args passed to every benchmark]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_one(script: Path, extra: list[str]) -> tuple[list[dict], str]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        proc = subprocess.run([sys.executable, str(script), "--json-out", str(out), *extra],
                              capture_output=True, text=True)
        log = proc.stdout + proc.stderr
        if proc.returncode != 0 or not out.exists():
            return [], f"{script.name} failed (exit {proc.returncode}):\n{log[-3000:]}"
        return json.loads(out.read_text()), log


def _fmt(v, spec="{:.4g}") -> str:
    return "—" if v is None else spec.format(v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="run only bench_<ONLY>.py")
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != "--"]
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        scripts = [s for s in scripts if s.stem == f"bench_{args.only}"]
    rows, failures = [], []
    for s in scripts:
        print(f"running {s.name} ...", flush=True)
        got, log = run_one(s, extra)
        if not got:
            failures.append(log)
        rows += got
    print(f"\nmachine: {os.cpu_count()} cores; medians over each benchmark's repeats\n")
    header = ["benchmark", "dataset", "ours (s)", "reference", "reference (s)", "ratio", "target", "met", "note"]
    lines = [" | ".join(header), " | ".join("---" for _ in header)]
    for r in rows:
        target = r.get("target_ratio")
        ratio = r.get("ratio")
        direction = r.get("target_direction", "max")  # max: ratio <= target; min: ratio >= target
        met = "—" if target is None or ratio is None else (
            "yes" if (ratio <= target if direction == "max" else ratio >= target) else "NO")
        lines.append(" | ".join([
            str(r.get("benchmark", "")), str(r.get("dataset", "")), _fmt(r.get("ours_seconds")),
            str(r.get("reference", "")), _fmt(r.get("reference_seconds")), _fmt(ratio, "{:.2f}x"),
            ("≤ " if direction == "max" else "≥ ") + _fmt(target, "{:g}x") if target else "—", met,
            str(r.get("note", "")),
        ]))
    print("\n".join(lines))
    for f in failures:
        print("\n" + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
