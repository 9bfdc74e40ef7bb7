"""Large generated datasets kept on disk, so each process of a campaign does not draw them
again.

DPBoost's synthetic sets (``make_classification`` / ``make_regression``, 1,000,000 x 400)
take about a minute to draw, once per worker process and experiment: a paper-scale
campaign drew them about fifty times. A draw of at least :data:`MIN_VALUES` values is
saved under ``<data dir>/generated/`` (``DPEXP_DATA_DIR``, see :mod:`dpexp.paths`) and
read back by later loads.

A file is named by a hash of everything the draw depends on: the registry's generator
options, the dataset's parameters, the row count and the versions of scikit-learn and
numpy (whose generators define the values). A file that does not read back as the
expected shape is drawn again; a data directory that cannot be written is left alone
(the draw is used, not saved). Files are written to a temporary name and renamed, so two
processes drawing at once never see half a file, and a draw runs under a lock file beside
it: when two workers need the same missing draw, one draws (DPBoost's 1,000,000 x 400
classification set peaks at about 9 GiB while ``make_classification`` works in float64)
and the other waits, then reads the saved file (about 1.7 GiB), so a campaign's workers
never hold two draws at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from dpexp.datasets.parsed import Parsed
from dpexp.paths import data_dir

#: Draws of at least this many values (rows x features) are kept on disk.
MIN_VALUES = 1 << 24
#: Generators whose draw is (X, y) alone (feature names and kinds follow from the shape).
KEPT_GENERATORS = frozenset({"make_classification", "make_regression"})


def draw_key(name: str, options: dict, params: dict, n_rows: int) -> str:
    """A short fingerprint of one draw: the generator's options and parameters, the rows,
    and the versions of the libraries that generate it."""
    import sklearn

    text = json.dumps({"name": name, "options": options, "params": params, "rows": n_rows,
                       "sklearn": sklearn.__version__, "numpy": np.__version__},
                      sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def draw_path(name: str, key: str) -> Path:
    return data_dir() / "generated" / f"{name}-{key}.npz"


def draw_shape(options: dict, params: dict, max_rows: int | None) -> tuple[int, int | None]:
    """(rows, features) of a draw of the generator ``options`` with ``params`` (features
    None when the options leave them to the generator's default)."""
    opts = {**options, **params}
    n_rows = int(opts["n_samples"])
    if max_rows is not None:
        n_rows = min(n_rows, int(max_rows))
    if "n_features" in opts:
        return n_rows, int(opts["n_features"])
    if "n_random" in opts:  # Fletcher-Islam's synth*: informative + random features
        return n_rows, int(opts["n_informative"]) + int(opts["n_random"])
    return n_rows, None


def load_or_draw(name: str, options: dict, params: dict, max_rows: int | None,
                 draw: Callable[[], Parsed]) -> Parsed:
    """The draw of dataset ``name`` (registry ``options``, ``params``, at most ``max_rows``
    rows): read from disk when kept there, else ``draw()``, kept when large."""
    n_rows, n_features = draw_shape(options, params, max_rows)
    kept = (options.get("generator") in KEPT_GENERATORS and n_features is not None
            and n_rows * n_features >= MIN_VALUES)
    if not kept:
        return draw()
    path = draw_path(name, draw_key(name, options, params, n_rows))
    parsed = _read(path, n_rows, n_features)
    if parsed is not None:
        return parsed
    with _draw_lock(path):
        # another process may have drawn it while this one waited for the lock
        parsed = _read(path, n_rows, n_features)
        if parsed is None:
            parsed = draw()
            _write(path, parsed)
    return parsed


@contextmanager
def _draw_lock(path: Path) -> Iterator[None]:
    """Hold ``<draw>.lock`` (an exclusive ``flock``) while drawing; without a writable data
    directory there is nothing to share, so no lock."""
    lock = path.with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.touch(exist_ok=True)
    except OSError:
        yield
        return
    with open(lock, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read(path: Path, n_rows: int, n_features: int) -> Parsed | None:
    try:
        with np.load(path, allow_pickle=False) as f:
            X, y = f["X"], f["y"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None  # missing, truncated or not ours: draw again
    if X.shape != (n_rows, n_features) or y.shape != (n_rows,):
        return None
    return _parsed(X, y)


def _parsed(X: np.ndarray, y: np.ndarray) -> Parsed:
    return Parsed(X=X, y=y, feature_names=[f"x{i + 1}" for i in range(X.shape[1])],
                  categorical=np.zeros(X.shape[1], bool))


def _write(path: Path, parsed: Parsed) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    except OSError:
        return  # an unwritable data directory: use the draw, keep nothing
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, X=parsed.X, y=parsed.y)
        os.chmod(tmp, 0o644)  # as a downloaded file's (mkstemp makes it private)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
