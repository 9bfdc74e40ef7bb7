"""The CLI's own latency (issue 43): ``dpexp list``, ``dpexp plan --all --scale paper
--jobs 2`` and ``dpexp report --scale paper`` on this checkout's committed results, each
timed as a user runs it (a new process; the bytecode written by a first, untimed run),
beside ``dpexp --help`` (the interpreter and the CLI's start) in the same run.

Targets, in seconds (issue 43): ``list`` <= 2, ``plan --all`` <= 10, ``report`` <= 20.
A row's ``ratio`` is the median time over the target (met when <= 1); the reference
column is ``dpexp --help``'s median. The commands read and write a copy of ``results/``
and ``figures/`` in a temporary directory, so the committed report is never rewritten;
the figures' input digests hold no path, so the copy redraws nothing that is current.

    python bench/bench_cli.py [--repeats 3] [--json-out rows.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Command:
    name: str
    args: tuple[str, ...]
    target_seconds: float
    #: the command takes --figures-dir (it writes figures)
    writes_figures: bool = False


COMMANDS = (
    Command("list", ("list",), 2.0),
    Command("plan_all_paper", ("plan", "--all", "--scale", "paper", "--jobs", "2"), 10.0),
    Command("report_paper", ("report", "--scale", "paper"), 20.0, writes_figures=True),
)


def _environment() -> dict[str, str]:
    """The user's environment, with Python's default bytecode caching (a sandbox may turn
    it off: every start would then compile dpexp again)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(args: list[str], env: dict[str, str]) -> float:
    """Seconds of one ``python -m dpexp.cli ARGS`` run (it must succeed)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dpexp.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"dpexp {' '.join(args)} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr[-2000:]}")
    return seconds


def median_seconds(args: list[str], env: dict[str, str], repeats: int) -> float:
    timed(args, env)  # untimed: writes the bytecode, as a user's first run does
    return statistics.median(timed(args, env) for _ in range(repeats))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json-out", type=Path)
    args, _ = ap.parse_known_args()  # run_all.py passes every benchmark the same extras
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {args.repeats}")
    env = _environment()
    help_seconds = median_seconds(["--help"], env, args.repeats)
    rows = []
    with tempfile.TemporaryDirectory(prefix="dpexp-bench-cli-") as tmp:
        results, figures = Path(tmp) / "results", Path(tmp) / "figures"
        shutil.copytree(ROOT / "results", results, ignore=shutil.ignore_patterns("cache"))
        shutil.copytree(ROOT / "figures", figures)
        for cmd in COMMANDS:
            extra = ["--results-dir", str(results)]
            if cmd.writes_figures:
                extra += ["--figures-dir", str(figures)]
            seconds = median_seconds([*cmd.args, *extra], env, args.repeats)
            rows.append({
                "benchmark": f"cli_{cmd.name}", "dataset": "committed results",
                "ours_seconds": seconds, "reference": "dpexp --help",
                "reference_seconds": help_seconds, "ratio": seconds / cmd.target_seconds,
                "target_ratio": 1.0,
                "note": f"dpexp {' '.join(cmd.args)}: target {cmd.target_seconds:g} s; "
                        f"median of {args.repeats}",
            })
            print(f"dpexp {' '.join(cmd.args)}: {seconds:.2f} s (target {cmd.target_seconds:g} s; "
                  f"--help {help_seconds:.2f} s)", flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
