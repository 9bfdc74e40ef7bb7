"""Side environments: interpreters beside dpexp's own for optional peers that cannot share
its scikit-learn.

IBM diffprivlib 0.6.6 imports ``sklearn.tree._tree.DOUBLE``, which scikit-learn >= 1.6
removed, so it does not import next to the scikit-learn dpexp uses. ``dpexp peers setup
diffprivlib`` (:func:`setup_side_env`) makes a venv holding pinned versions that import
together; the estimator that needs the package (``diffprivlib_rf``) fits in that
interpreter through a standalone worker script and keeps only plain arrays, so nothing else
of dpexp runs there.

Where the interpreter is (:func:`side_python`): ``$DPEXP_DIFFPRIVLIB_PYTHON`` (any
interpreter that imports diffprivlib), else the venv this module made under the user cache
(``~/.cache/dpexp/peers/diffprivlib-0.6.6`` on Linux), counted only once its setup finished
(a marker file written after the import check passed).

Only an estimator written to fall back on a side environment may count one as providing
its package: the registry (:func:`dpexp.registry.package_unavailable`) does so for the
packages listed in :data:`SIDE_ENVS`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from dpexp.errors import DpexpError, UnknownNameError

#: Written into a venv once its packages installed and imported; its absence means the
#: setup did not finish (an interrupted pip leaves a venv that must not count).
READY_MARKER = ".dpexp-ready"
#: Seconds pip may take to install a side environment's packages.
PIP_TIMEOUT_S = 1800
#: Seconds the import check of a side interpreter may take.
PROBE_TIMEOUT_S = 300


@dataclass(frozen=True)
class SideEnv:
    """One side environment: what it installs and how to tell that it works."""

    #: The optional package it provides (the name in ``AlgorithmInfo.requires``).
    package: str
    #: The pinned version of that package (also names the venv's folder).
    version: str
    #: What pip installs (pins known to import together).
    requirements: tuple[str, ...]
    #: Python code that must run without error in a working interpreter.
    probe: str
    #: The environment variable that names an interpreter to use instead of the venv.
    python_variable: str

    @property
    def folder_name(self) -> str:
        return f"{self.package}-{self.version}"


#: The side environments dpexp knows, by the package each provides.
SIDE_ENVS: dict[str, SideEnv] = {
    "diffprivlib": SideEnv(
        package="diffprivlib",
        version="0.6.6",
        # scikit-learn 1.5 still has _tree.DOUBLE; numpy < 2.1 as scikit-learn 1.5's wheels
        # were built against it (pip resolves numpy 2.0.2, scikit-learn 1.5.2 today).
        requirements=("diffprivlib==0.6.6", "scikit-learn>=1.5,<1.6", "numpy<2.1"),
        probe="import numpy, sklearn; from diffprivlib.models import RandomForestClassifier",
        python_variable="DPEXP_DIFFPRIVLIB_PYTHON",
    ),
}


def get_side_env(package: str) -> SideEnv:
    if package not in SIDE_ENVS:
        raise UnknownNameError("side environment", package, SIDE_ENVS)
    return SIDE_ENVS[package]


def peers_dir() -> Path:
    """The folder holding the side venvs: the platform's user cache, ``dpexp/peers``."""
    # lazy: pooch (platformdirs) only when a side environment is looked for
    import pooch

    return Path(pooch.os_cache("dpexp")) / "peers"


def venv_dir(package: str) -> Path:
    return peers_dir() / get_side_env(package).folder_name


def _venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def side_python(package: str) -> Path | None:
    """The interpreter that provides ``package`` here, or None: the one named by the
    environment variable (when that file exists), else a finished venv of
    :func:`setup_side_env`. Checks files only (no interpreter is started)."""
    env = get_side_env(package)
    named = os.environ.get(env.python_variable, "").strip()
    if named:
        path = Path(named).expanduser()
        return path if path.is_file() else None
    folder = venv_dir(package)
    python = _venv_python(folder)
    return python if python.is_file() and (folder / READY_MARKER).is_file() else None


def how_to_get(package: str) -> str:
    """One clause saying how to make ``package``'s side environment (for error messages)."""
    env = get_side_env(package)
    named = os.environ.get(env.python_variable, "").strip()
    if named and not Path(named).expanduser().is_file():
        return f"{env.python_variable}={named} is not a file; unset it or point it at a python"
    return (f"run `dpexp peers setup {package}` (a side environment with {env.package} "
            f"{env.version}), or set {env.python_variable} to a python that imports it")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def _run(cmd: list[str], timeout: float, what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DpexpError(f"{what} took over {timeout:.0f} s; stopped") from None
    except OSError as exc:
        raise DpexpError(f"{what} could not start {cmd[0]}: {exc.strerror or exc}") from None


def probe_failure(package: str, python: Path) -> str | None:
    """Why ``python`` cannot import what the side environment of ``package`` needs, or None."""
    env = get_side_env(package)
    done = _run([str(python), "-c", env.probe], PROBE_TIMEOUT_S, f"checking {python}")
    return None if done.returncode == 0 else _last_line(done.stderr)


def setup_side_env(package: str, *, base_python: str | None = None,
                   log=lambda message: None) -> Path:
    """Make (idempotently) the side environment of ``package`` and return its interpreter.

    With the environment variable set, only checks that interpreter. Otherwise instant when
    the venv is finished; else creates it with ``base_python -m venv`` (default: this
    interpreter) and pip-installs the pinned requirements through pip's ordinary client.
    Any failure (no venv module, no pip, no registry reachable) is one
    :class:`~dpexp.errors.DpexpError` line."""
    env = get_side_env(package)
    named = os.environ.get(env.python_variable, "").strip()
    if named:
        python = Path(named).expanduser()
        if not python.is_file():
            raise DpexpError(f"{env.python_variable}={named} is not a file")
        why = probe_failure(package, python)
        if why:
            raise DpexpError(f"{env.python_variable}={named} cannot import {package}: {why}")
        return python
    folder = venv_dir(package)
    python = _venv_python(folder)
    if side_python(package) is not None:
        return python
    if not python.is_file():
        log(f"creating the {package} side environment at {folder}")
        folder.parent.mkdir(parents=True, exist_ok=True)
        made = _run([base_python or sys.executable, "-m", "venv", str(folder)], PROBE_TIMEOUT_S,
                    "creating the venv")
        if made.returncode != 0 or not python.is_file():
            raise DpexpError(f"could not create a venv at {folder}: {_last_line(made.stderr)}")
    log(f"installing {' '.join(env.requirements)} (pip)")
    pip = _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                *env.requirements], PIP_TIMEOUT_S, "pip install")
    if pip.returncode != 0:
        raise DpexpError(f"pip could not install {package}'s side environment at {folder} "
                         f"(no registry reachable?): {_last_line(pip.stderr)}")
    why = probe_failure(package, python)
    if why:
        raise DpexpError(f"the side environment at {folder} does not import {package}: {why}")
    versions = _run([str(python), "-m", "pip", "freeze", "--disable-pip-version-check"],
                    PROBE_TIMEOUT_S, "pip freeze")
    (folder / READY_MARKER).write_text(versions.stdout if versions.returncode == 0 else "")
    return python
