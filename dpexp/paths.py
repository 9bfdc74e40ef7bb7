"""Where dpexp finds its registry, specs, caches and outputs.

* Project files (``datasets.yaml``, ``experiments/``): ``$DPEXP_HOME`` if set, else the
  checkout the package was installed from (``pip install -e .``).
* Downloaded data: ``$DPEXP_DATA_DIR`` if set, else the platform cache
  (``pooch.os_cache("dpexp")``, e.g. ``~/.cache/dpexp``).
* Results and figures: ``results/`` and ``figures/`` in the project, or ``--results-dir``.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from dpexp.errors import DpexpError

#: The folder holding the package: the checkout of an editable install. Resolved once (a
#: plan of every experiment asks for the project 3,400 times; each resolve walks the path).
_CHECKOUT = Path(__file__).resolve().parent.parent


@functools.cache
def source_digest(root: Path, excluded: tuple[str, ...]) -> str:
    """The sha256 of every ``.py`` file under ``root`` but those in its top-level folders
    ``excluded`` (paths relative to ``root``, so a checkout anywhere gives the same digest):
    what a compiled kernel or a calibration's fit time may depend on."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in excluded:
            continue
        h.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def project_root() -> Path:
    env = os.environ.get("DPEXP_HOME")
    if env:
        return Path(env).expanduser().resolve()
    here = _CHECKOUT
    if (here / "datasets.yaml").exists():
        return here
    cwd = Path.cwd()
    for p in (cwd, *cwd.parents):
        if (p / "datasets.yaml").exists() and (p / "experiments").is_dir():
            return p
    raise DpexpError(
        "Cannot find the dpexp project files (datasets.yaml, experiments/). Install dpexp "
        "from its checkout with `pip install -e .` or set DPEXP_HOME to the checkout."
    )


def datasets_yaml() -> Path:
    return project_root() / "datasets.yaml"


def data_dir() -> Path:
    env = os.environ.get("DPEXP_DATA_DIR")
    if env:
        return Path(env).expanduser()
    import pooch

    return Path(pooch.os_cache("dpexp"))


def mirror_setting(mirror: str | os.PathLike | None = None) -> str | None:
    """The mirror to use (a folder or an http(s) base URL): ``mirror`` or
    ``$DPEXP_DATA_MIRROR``; a ``Path`` is accepted as well as a string. Here, not in
    :mod:`dpexp.datasets.download`, so that asking which datasets a machine has
    (``dpexp list``) loads no parser (pandas)."""
    value = mirror if mirror is not None else os.environ.get("DPEXP_DATA_MIRROR")
    return os.fspath(value) if value else None


def default_results_dir() -> Path:
    return project_root() / "results"


def default_figures_dir() -> Path:
    return project_root() / "figures"
