"""diffprivlib's RandomForestClassifier fitted in a side environment, evaluated here.

diffprivlib 0.6.6 does not import next to dpexp's scikit-learn (>= 1.6), so
:class:`~dpexp.papers.fletcher.comparators.DiffprivlibForestClassifier` fits through the
interpreter of ``dpexp peers setup diffprivlib`` (:mod:`dpexp.side_envs`) when the import
fails here: the standalone script ``diffprivlib_worker.py`` (numpy and diffprivlib only)
fits and writes every tree's arrays; :class:`SideForest` holds them and predicts with numpy
alone, so a fitted estimator pickles and predicts without the side environment.

One worker process per (parent process, interpreter) stays up between fits: starting the
interpreter and importing diffprivlib costs about 1 s, more than a small fit (the audit's
one-tree fits take milliseconds). Data goes through ``.npz`` files in a temporary folder;
each fit has a timeout, and a failure is one :class:`~dpexp.errors.DpexpError` line with
the worker's own error.
"""

from __future__ import annotations

import atexit
import os
import selectors
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpexp.errors import DpexpError

__all__ = ["FIT_TIMEOUT_S", "WORKER_SCRIPT", "SideForest", "fit_in_side_env", "stop_workers"]

#: The standalone script the side interpreter runs (by path; it imports no dpexp).
WORKER_SCRIPT = Path(__file__).with_name("diffprivlib_worker.py")
#: Seconds one fit may take in the side environment before the worker is stopped.
FIT_TIMEOUT_S = 3600.0
#: Rows x trees routed at once by :meth:`SideForest.predict_proba` (bounds its memory).
_ROUTE_CELLS = 1 << 22


@dataclass(frozen=True, eq=False)
class SideForest:
    """diffprivlib's fitted trees as plain arrays (scikit-learn ``tree_`` layout, every
    tree's nodes concatenated; child indices are global, -1 at a leaf).

    Prediction repeats scikit-learn's: rows are cast to float32 (as diffprivlib's
    ``validate_data``/``_validate_X_predict`` do), a row goes left when
    ``x[feature] <= threshold``, a tree's probability is its leaf's ``value`` row and the
    forest's the trees' mean, summed in tree order as diffprivlib sums them."""

    roots: np.ndarray            # (T,) the root node of each tree
    children_left: np.ndarray    # (nodes,)
    children_right: np.ndarray   # (nodes,)
    feature: np.ndarray          # (nodes,) 0 at a leaf (never read there)
    threshold: np.ndarray        # (nodes,)
    value: np.ndarray            # (nodes, C) class distribution of each leaf

    @classmethod
    def from_reply(cls, reply: dict[str, np.ndarray]) -> SideForest:
        counts = np.asarray(reply["node_counts"], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        shift = np.repeat(offsets, counts)
        left = np.asarray(reply["children_left"], dtype=np.int64)
        right = np.asarray(reply["children_right"], dtype=np.int64)
        leaf = left < 0
        return cls(
            roots=offsets,
            children_left=np.where(leaf, -1, left + shift),
            children_right=np.where(leaf, -1, right + shift),
            feature=np.where(leaf, 0, np.asarray(reply["feature"], dtype=np.int64)),
            threshold=np.asarray(reply["threshold"], dtype=np.float64),
            value=np.asarray(reply["value"], dtype=np.float64),
        )

    @property
    def n_trees(self) -> int:
        return int(self.roots.size)

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """The leaf each row of ``X`` reaches in each tree, ``(n, T)``: all rows and trees
        advance one level per step (a loop over depth, not rows)."""
        X32 = np.asarray(X, dtype=np.float32)
        n, T = X32.shape[0], self.n_trees
        out = np.empty((n, T), dtype=np.int64)
        step = max(1, _ROUTE_CELLS // max(T, 1))
        for start in range(0, n, step):
            rows = X32[start:start + step]
            node = np.broadcast_to(self.roots, (rows.shape[0], T)).copy()
            row_of = np.arange(rows.shape[0])[:, None]
            while True:
                left = self.children_left[node]
                inner = left >= 0
                if not inner.any():
                    break
                # float32 value against the float64 threshold, as scikit-learn compares them
                go_left = rows[row_of, self.feature[node]] <= self.threshold[node]
                node = np.where(inner, np.where(go_left, left, self.children_right[node]), node)
            out[start:start + step] = node
        return out

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        leaves = self.leaves(X)
        proba = np.zeros((leaves.shape[0], self.value.shape[1]))
        for t in range(self.n_trees):  # diffprivlib's order of summation (bit-identical)
            proba += self.value[leaves[:, t]]
        return proba / self.n_trees


# --------------------------------------------------------------------------- workers


class _Worker:
    """One side interpreter running ``diffprivlib_worker.py``, fed one request at a time."""

    def __init__(self, python: Path):
        self.python = python
        self.lock = threading.Lock()
        self.stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - lives as long as the worker
        try:
            self.proc = subprocess.Popen(
                [str(python), str(WORKER_SCRIPT)], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1)
        except OSError as exc:
            self.stderr.close()
            raise DpexpError(f"diffprivlib side environment: cannot start {python}: "
                             f"{exc.strerror or exc}") from None

    def stderr_tail(self) -> str:
        self.stderr.flush()
        self.stderr.seek(0)
        lines = [ln.strip() for ln in self.stderr.read().splitlines() if ln.strip()]
        return lines[-1] if lines else "no error output"

    def request(self, request: Path, reply: Path, timeout: float) -> str:
        """Send one request; the worker's answer line (``ok`` or ``error ...``)."""
        try:
            self.proc.stdin.write(f"{request} {reply}\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died() from None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                self.stop()
                raise DpexpError(f"diffprivlib side environment ({self.python}): the fit took "
                                 f"over {timeout:.0f} s; stopped")
        answer = self.proc.stdout.readline()
        if not answer:
            raise self._died()
        return answer.strip()

    def _died(self) -> DpexpError:
        self.proc.wait(timeout=10)
        return DpexpError(f"diffprivlib side environment ({self.python}) stopped (exit "
                          f"{self.proc.returncode}): {self.stderr_tail()}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


#: (process id, interpreter) -> its worker; the pid keeps a forked child off its parent's pipes.
_WORKERS: dict[tuple[int, str], _Worker] = {}
_WORKERS_LOCK = threading.Lock()


def _worker(python: Path) -> _Worker:
    key = (os.getpid(), str(python))
    with _WORKERS_LOCK:
        worker = _WORKERS.get(key)
        if worker is None or not worker.alive():
            worker = _WORKERS[key] = _Worker(python)
        return worker


def stop_workers() -> None:
    """Stop this process's side workers (also run at exit)."""
    with _WORKERS_LOCK:
        mine = [k for k in _WORKERS if k[0] == os.getpid()]
        for key in mine:
            _WORKERS.pop(key).stop()


atexit.register(stop_workers)


def fit_in_side_env(python: Path, X: np.ndarray, y_codes: np.ndarray, *, n_classes: int,
                    lows: np.ndarray, highs: np.ndarray, epsilon: float, n_estimators: int,
                    max_depth: int, seed: int, X_check: np.ndarray | None = None,
                    timeout: float = FIT_TIMEOUT_S) -> tuple[SideForest, np.ndarray | None]:
    """Fit diffprivlib's forest (``shuffle=True``) in ``python`` on ``X`` and the class
    indices ``y_codes``; its trees, and diffprivlib's own ``predict_proba`` of ``X_check``
    when given (else None)."""
    payload = {"X": np.ascontiguousarray(X, dtype=np.float64),
               "y": np.asarray(y_codes, dtype=np.int64), "n_classes": np.int64(n_classes),
               "lows": np.asarray(lows, dtype=np.float64),
               "highs": np.asarray(highs, dtype=np.float64), "epsilon": np.float64(epsilon),
               "n_estimators": np.int64(n_estimators), "max_depth": np.int64(max_depth),
               "seed": np.int64(seed)}
    if X_check is not None:
        payload["X_check"] = np.asarray(X_check, dtype=np.float64)
    worker = _worker(python)
    with worker.lock, tempfile.TemporaryDirectory(prefix="dpexp-diffprivlib-") as tmp:
        request, reply = Path(tmp) / "request.npz", Path(tmp) / "reply.npz"
        np.savez(request, **payload)
        answer = worker.request(request, reply, timeout)
        if answer != "ok":
            raise DpexpError(f"diffprivlib side environment ({python}): "
                             f"{answer.removeprefix('error ')}")
        with np.load(reply) as out:
            arrays = {k: out[k] for k in out.files}
    return SideForest.from_reply(arrays), arrays.get("proba_check")
