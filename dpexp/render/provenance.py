"""The report's appendix: the environment it was rendered in, its code revision (dirty
only for changed code, not for the results and figures the report is rendered from and
into) and no absolute path."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import numpy
import pandas as pd
import scipy

import dpexp
from dpexp.paths import project_root


def report_environment(results_dir: Path) -> dict[str, str]:
    return {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "dpexp": dpexp.__version__,
        "git revision": report_revision(),
        "python": platform.python_version(),
        # scikit-learn's version from its metadata: a report fits nothing, and importing
        # scikit-learn for its __version__ cost ~0.6 s (issue 43)
        "numpy / scipy / scikit-learn / pandas": f"{numpy.__version__} / {scipy.__version__} / {metadata.version('scikit-learn')} / {pd.__version__}",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "results directory": shown_path(results_dir),
    }


#: Paths whose changes do not make a report's revision dirty: the report's own outputs
#: (regenerating the report before committing it must not mark it "-dirty").
OUTPUT_PATHS = ("results/", "figures/")


def report_revision() -> str:
    """The commit the report's code is at: ``<hash>``, or ``<hash>-dirty`` when code (not
    the results and figures the report is rendered from and into) differs from it."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=project_root(), capture_output=True, text=True,
                              timeout=10, check=False)

    try:
        rev = git("rev-parse", "--short=12", "HEAD")
        status = git("status", "--porcelain", "--untracked-files=no")
    except OSError:
        return "unknown"
    if rev.returncode != 0:
        return "unknown"
    changed = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    code = [p for p in changed if not p.startswith(OUTPUT_PATHS)]
    return rev.stdout.strip() + ("-dirty" if code else "")


def shown_path(path: Path) -> str:
    """A path as the report may show it: relative to the project, never absolute."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(project_root().resolve()))
    except ValueError:
        return p.name  # outside the project: its name only, no machine's layout

