"""Whether an optional package imports here, without importing it into this process.

An optional package (lightgbm, interpret, diffprivlib, xgboost) counts as available only
when it imports: installed but broken counts as missing (diffprivlib 0.6 next to
scikit-learn >= 1.6 fails on import, not on lookup). Importing lightgbm or interpret loads
scikit-learn and scipy (~0.8 s), which ``dpexp list`` must not pay to show its counts
(issue 43). So the answer is found in three steps, cheapest first:

1. not found by :func:`importlib.util.find_spec`: missing (nothing imported);
2. already imported in this process: available;
3. else the import is tried once in a child interpreter (the same ``sys.path``) and its
   outcome kept in a small JSON file beside the user's data cache
   (``<data dir>/optional-imports.json``, :func:`dpexp.paths.data_dir`), keyed by what
   decides it: the interpreter, the module's file (path, size, mtime), the folders it and
   the ``site-packages`` folders of ``sys.path`` hold (any install, upgrade or removal
   there renames a ``*.dist-info`` folder, which changes the folder's mtime), and the
   installed versions of the package and of scikit-learn (``importlib.metadata``). A key
   that no longer matches tries the import again: a stale entry is never used.

A command that will ask about several packages starts their probes first, all at once and
in the background (:func:`start_probes`): a cold cache then costs about the slowest import
(lightgbm, ~1-3 s) while the command does its own work, not the sum of them one after
another (issue 43: ``dpexp list`` on a fresh machine).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dpexp.errors import DpexpError
from dpexp.paths import data_dir

__all__ = ["PROBE_FILE", "finish_probes", "import_failure", "probe_file", "start_probes"]

#: The probe cache's file name in the data directory.
PROBE_FILE = "optional-imports.json"
#: Keys kept per package: an environment switched back and forth (two virtualenvs sharing
#: one data directory) keeps both answers instead of probing at every switch.
KEYS_PER_PACKAGE = 8
#: Seconds a child interpreter may take to import one package.
PROBE_TIMEOUT = 300

#: The child interpreter: the parent's ``sys.path``, one import, its outcome as JSON (the
#: reason is the exception's type and first line, as an in-process import would give).
_PROBE = """
import importlib, json, sys
sys.path[:] = json.loads(sys.argv[2])
try:
    importlib.import_module(sys.argv[1])
except Exception as exc:
    first = str(exc).splitlines()[0] if str(exc) else ""
    print(json.dumps(f"{type(exc).__name__}: {first}"))
else:
    print(json.dumps(None))
"""


def import_failure(package: str) -> str | None:
    """Why the optional ``package`` does not import here, or None when it does (module
    docstring: only a cold cache imports it, and then in a child interpreter)."""
    if sys.modules.get(package) is not None:  # None: an import blocked on purpose
        return None
    spec, failure = _find(package)
    if spec is None:
        return failure
    key = json.dumps(_probe_key(package, spec), sort_keys=True)
    known = _read_probes().get(package, {})
    if key in known:
        return known[key]
    started = _RUNNING.pop(package, None)
    if started is not None and started[0] != key:  # the install changed since it started
        _stop(started[1])
        started = None
    failure, cacheable = _finish(package, started[1] if started is not None else _start(package))
    if cacheable:
        _remember(package, key, failure)
    return failure


#: Probes started ahead of the question (:func:`start_probes`): package -> (the probe key
#: when started, the child interpreter or why it could not start).
_RUNNING: dict[str, tuple[str, subprocess.Popen[str] | str]] = {}


def start_probes(packages: Iterable[str]) -> None:
    """Start the child interpreters of those ``packages`` whose answer is not cached yet,
    all at once, without waiting for them (module docstring): :func:`import_failure`
    collects each answer when asked. A probe never asked for is stopped at exit."""
    known = _read_probes()
    for package in dict.fromkeys(packages):
        if package in _RUNNING or sys.modules.get(package) is not None:
            continue
        spec, _ = _find(package)
        if spec is None:
            continue
        key = json.dumps(_probe_key(package, spec), sort_keys=True)
        if key not in known.get(package, {}):
            _RUNNING[package] = (key, _start(package))


def finish_probes() -> None:
    """Collect (and cache) the answer of every probe :func:`start_probes` started: before
    this process forks workers, which would otherwise share a probe's pipes and ask it
    again each (``dpexp report`` builds its sections in forked processes)."""
    for package in list(_RUNNING):
        import_failure(package)


def _find(package: str) -> tuple[importlib.machinery.ModuleSpec | None, str | None]:
    """(the module's spec, None), or (None, why it is missing) when no import can find it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError) as exc:  # a dotted name whose parent fails
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if spec is None:
        return None, f"ModuleNotFoundError: No module named {package!r}"
    return spec, None


@atexit.register
def _stop_unasked() -> None:
    """Stop the probes nobody asked about (a command that failed before its questions)."""
    while _RUNNING:
        _stop(_RUNNING.popitem()[1][1])


def _stop(child: subprocess.Popen[str] | str) -> None:
    if isinstance(child, subprocess.Popen):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            child.kill()
            child.communicate(timeout=PROBE_TIMEOUT)


def probe_file() -> Path | None:
    """The probe cache's path (None when no data directory can be named here)."""
    try:
        return data_dir() / PROBE_FILE
    except DpexpError:
        return None


def _mtime(path: str | Path) -> int | None:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return None


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def _probe_key(package: str, spec: importlib.machinery.ModuleSpec) -> dict[str, Any]:
    """What decides whether ``package`` imports (module docstring, step 3)."""
    origin = spec.origin if spec.has_location else None
    locations = list(spec.submodule_search_locations or ())
    home = Path(locations[0] if locations else origin or "").parent
    try:
        size = os.stat(origin).st_size if origin else None
    except OSError:
        size = None
    folders = {str(home), *(p for p in sys.path if Path(p).name in ("site-packages", "dist-packages"))}
    return {
        "python": [sys.executable, sys.version],
        "origin": [origin, size, _mtime(origin) if origin else None],
        "folders": {f: _mtime(f) for f in sorted(folders)},
        "versions": {d: _version(d) for d in (package, "scikit-learn")},
    }


def _start(package: str) -> subprocess.Popen[str] | str:
    """The child interpreter importing ``package`` with this one's ``sys.path`` (started,
    not waited for), or why it cannot start."""
    try:
        return subprocess.Popen([sys.executable, "-c", _PROBE, package, json.dumps(sys.path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        return f"OSError: cannot start {sys.executable} to import {package} ({exc})"


def _finish(package: str, child: subprocess.Popen[str] | str) -> tuple[str | None, bool]:
    """(failure or None, whether the outcome may be cached) of the probe ``child`` (from
    :func:`_start`). A child that crashes (a segfaulting extension) reports no outcome:
    the package counts as missing, with its exit code."""
    if isinstance(child, str):  # it could not start
        return child, False
    try:
        stdout, stderr = child.communicate(timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        _stop(child)
        return f"TimeoutExpired: importing {package} took over {PROBE_TIMEOUT} s", False
    lines = stdout.strip().splitlines()
    if child.returncode == 0 and lines:
        try:
            outcome = json.loads(lines[-1])
        except ValueError:
            outcome = ""
        if outcome is None or (isinstance(outcome, str) and outcome):
            return outcome, True
    last = (stderr.strip().splitlines() or [""])[-1]
    return f"ImportError: importing {package} ended with exit code {child.returncode} {last}".rstrip(), True


def _read_probes() -> dict[str, dict[str, str | None]]:
    path = probe_file()
    if path is None:
        return {}
    try:
        probes = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(probes, dict):
        return {}
    return {p: keys for p, keys in probes.items() if isinstance(keys, dict)}


def _remember(package: str, key: str, failure: str | None) -> None:
    """Add one outcome to the cache file (atomic replace; a cache that cannot be written,
    a read-only data directory, only means probing again next time)."""
    path = probe_file()
    if path is None:
        return
    probes = _read_probes()
    keys = probes.pop(package, {})
    keys.pop(key, None)
    keys[key] = failure  # newest last: the oldest keys are dropped first
    probes[package] = dict(list(keys.items())[-KEYS_PER_PACKAGE:])
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{PROBE_FILE}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(probes, fh, indent=1)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
