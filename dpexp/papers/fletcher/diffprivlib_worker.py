"""Fit IBM diffprivlib's RandomForestClassifier in a side environment; return plain arrays.

Run by path (``python diffprivlib_worker.py``) by the interpreter of ``dpexp peers setup
diffprivlib``, never imported by dpexp: it needs only numpy and diffprivlib, which there
import next to a scikit-learn they work with (< 1.6).

Protocol (one fit per request, the process stays up between them): each stdin line is
``<request.npz> <reply.npz>``; the worker answers each with one stdout line, ``ok`` once
the reply file is written, or ``error <one line>``. The request holds ``X`` (float64),
``y`` (class indices 0..C-1), ``lows``, ``highs`` (the public feature domain: diffprivlib's
``bounds``), ``n_classes``, ``epsilon``, ``n_estimators``, ``max_depth``, ``seed`` and
optionally ``X_check`` (rows whose diffprivlib ``predict_proba`` is returned as
``proba_check``, for tests of the caller's evaluation). The reply holds every tree's
scikit-learn ``tree_`` arrays concatenated in tree order: ``node_counts`` (nodes per tree),
``children_left``/``children_right`` (indices within the tree, -1 at a leaf),
``feature``, ``threshold`` and ``value`` (node x class).
"""

from __future__ import annotations

import sys

import numpy as np


def fit(request_path: str, reply_path: str) -> None:
    """One fit: read the request, fit with ``shuffle=True``, write the trees' arrays."""
    # lazy: imported by main() before the first request; here only to name the class
    from diffprivlib.models import RandomForestClassifier

    with np.load(request_path) as req:
        X, y = req["X"], req["y"]
        n_classes = int(req["n_classes"])
        forest = RandomForestClassifier(
            n_estimators=int(req["n_estimators"]), epsilon=float(req["epsilon"]),
            bounds=(req["lows"], req["highs"]), classes=np.arange(n_classes),
            max_depth=int(req["max_depth"]), random_state=int(req["seed"]), shuffle=True,
        )
        forest.fit(X, y)
        check = req["X_check"] if "X_check" in req.files else None
    trees = [est.tree_ for est in forest.estimators_]
    reply = {
        "node_counts": np.array([t.node_count for t in trees], dtype=np.int64),
        "children_left": np.concatenate([t.children_left for t in trees]).astype(np.int64),
        "children_right": np.concatenate([t.children_right for t in trees]).astype(np.int64),
        "feature": np.concatenate([t.feature for t in trees]).astype(np.int64),
        "threshold": np.concatenate([t.threshold for t in trees]).astype(np.float64),
        "value": np.concatenate([t.value[:, 0, :] for t in trees]).astype(np.float64),
    }
    if check is not None:
        reply["proba_check"] = forest.predict_proba(check)
    np.savez(reply_path, **reply)


def main() -> int:
    protocol = sys.stdout
    sys.stdout = sys.stderr  # anything a library prints must not corrupt the replies
    # An interpreter without diffprivlib stops here, its traceback on stderr (shown by the caller).
    # lazy: after stdout is redirected, so nothing printed on import reaches the replies
    import diffprivlib.models  # noqa: F401

    for line in sys.stdin:
        paths = line.split()
        if not paths:
            continue
        try:
            if len(paths) != 2:
                raise ValueError(f"expected '<request.npz> <reply.npz>', got {line.strip()!r}")
            fit(*paths)
            answer = "ok"
        except Exception as exc:  # noqa: BLE001 - every failure goes back as one line
            answer = "error " + f"{type(exc).__name__}: {exc}".replace("\n", " ")
        protocol.write(answer + "\n")
        protocol.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
