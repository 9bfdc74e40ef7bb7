"""Bit-identity check of the tree engine across a refactor (not part of the test suite).

    python bench/check_identical.py save  before.npz   # on the old code
    python bench/check_identical.py check before.npz   # on the new code: exit 1 on a diff

Records, on fixed data, every array a refactor of :mod:`dpexp.trees` must not change:

* direct :func:`~dpexp.trees.grower.grow_tree` calls (greedy split + Newton leaves, and
  the exponential mechanism + Laplace leaves with a fixed ``rng``) over every row storage
  of the grower: small dense tables (partitioned in place), large ones (statistics moved
  with the rows), column-sparse data, unit last statistic, the fused last-depth scoring,
  three statistics, row subsets -- none of which depend on the estimators' code;
* NPGBDTClassifier (deterministic: the grower only) on a synthetic set and on adult from
  the offline mirror (``DPEXP_DATA_MIRROR``, default ``/work/shared/datasets``);
* DPBoostClassifier with a fixed ``random_state`` and ``noise_rng=seeded_noise(0)`` (the
  default draws fresh noise), which also depends on the estimator's noise streams
  (reported separately: a change there may not be the engine's).
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpexp.privacy.accountant import Accountant  # noqa: E402
from dpexp.privacy.randomness import seeded_noise  # noqa: E402
from dpexp.trees.binning import fit_bin_mapper  # noqa: E402
from dpexp.trees.grower import GrowWorkspace, grow_tree  # noqa: E402
from dpexp.trees.policies import ExponentialSplit, GreedySplit, LaplaceLeaf, NewtonLeaf  # noqa: E402

MIRROR = os.environ.get("DPEXP_DATA_MIRROR", "/work/shared/datasets")


def _synthetic(n: int, d: int, seed: int, sparse_frac: float = 0.0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    X[:, d // 2:] = (X[:, d // 2:] > 0.8).astype(float)  # binary columns: bundles
    if sparse_frac:
        X[rng.random((n, d)) < sparse_frac] = 0.0
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * X[:, -1] > 0.9, 1.0, -1.0)
    return X, y


def _tree_arrays(prefix: str, grown, out: dict) -> None:
    t = grown.tree
    for name in ("kind", "feature", "threshold", "child_start", "n_children", "value", "depth"):
        out[f"{prefix}/{name}"] = np.asarray(getattr(t, name))
    out[f"{prefix}/bins"] = grown.bins
    if grown.order is not None:
        out[f"{prefix}/order"] = np.array(grown.order)
        out[f"{prefix}/leaf_start"] = grown.leaf_start
        out[f"{prefix}/leaf_end"] = grown.leaf_end
        out[f"{prefix}/leaf_node"] = grown.leaf_node


def grower_cases(out: dict) -> None:
    """Direct grow_tree calls on every row storage and fast path."""
    for n, d, tag in ((3000, 12, "small"), (150_000, 10, "large")):
        X, y = _synthetic(n, d, seed=n)
        m = fit_bin_mapper(X, feature_domain=np.tile([0.0, 1.0], (d, 1)), max_bins=64)
        data = m.transform(X)
        p = 1.0 / (1.0 + np.exp(-0.3 * y))
        g = p - (y > 0)
        stats2 = np.column_stack([g, p * (1 - p)])
        stats_unit = np.column_stack([g, np.ones(n)])
        stats3 = np.column_stack([g, np.ones(n), y ** 2])
        sub = np.sort(np.random.default_rng(1).choice(n, n // 2, replace=False))
        full = np.arange(n, dtype=np.int64)
        for depth in (1, 3, 6):
            for sname, stats, unit in (("h", stats2, False), ("unit", stats_unit, True),
                                       ("k3", stats3, False)):
                for rname, rows in (("all", full), ("sub", sub)):
                    key = f"grow/{tag}/d{depth}/{sname}/{rname}"
                    ws = GrowWorkspace()
                    gt = grow_tree(data, stats, rows, m, max_depth=depth,
                                   split_policy=GreedySplit(0.1), leaf_policy=NewtonLeaf(0.1),
                                   rng=np.random.default_rng(0), workspace=ws,
                                   unit_last=unit)
                    _tree_arrays(key, gt, out)
                    if sname == "k3":
                        continue
                    scores = np.zeros(n)
                    gt = grow_tree(data, stats, rows, m, max_depth=depth,
                                   split_policy=GreedySplit(0.1), leaf_policy=NewtonLeaf(0.1),
                                   rng=np.random.default_rng(0), workspace=ws,
                                   unit_last=unit, scores=scores, score_scale=0.5)
                    _tree_arrays(key + "/scored", gt, out)
                    out[key + "/scores"] = scores
                    acc = Accountant(1e9)
                    gt = grow_tree(data, stats, rows, m, max_depth=depth,
                                   split_policy=ExponentialSplit(0.1, 0.5, 3.0),
                                   leaf_policy=LaplaceLeaf(0.1, 0.5, 1.0, clip=1.0),
                                   rng=np.random.default_rng(7), accountant=acc,
                                   workspace=ws, unit_last=unit)
                    _tree_arrays(key + "/dp", gt, out)
    # column-sparse storage
    X, y = _synthetic(2000, 8, seed=5, sparse_frac=0.6)
    m = fit_bin_mapper(X, feature_domain=np.tile([0.0, 1.0], (8, 1)), max_bins=32)
    data = m.transform(sp.csr_matrix(X), dense_limit_bytes=0)
    stats = np.column_stack([y, np.ones_like(y)])
    for depth in (2, 5):
        gt = grow_tree(data, stats, np.arange(2000), m, max_depth=depth,
                       split_policy=GreedySplit(0.1), leaf_policy=NewtonLeaf(0.1),
                       rng=np.random.default_rng(0))
        _tree_arrays(f"grow/sparse/d{depth}", gt, out)
        gt = grow_tree(data, stats, np.arange(0, 2000, 3), m, max_depth=depth,
                       split_policy=ExponentialSplit(0.1, 0.5, 3.0),
                       leaf_policy=LaplaceLeaf(0.1, 0.5, 1.0), rng=np.random.default_rng(3),
                       accountant=Accountant(1e9))
        _tree_arrays(f"grow/sparse/d{depth}/dp", gt, out)


def _fit_record(prefix: str, est, X, Xp, out: dict) -> None:
    est.fit(X[0], X[1])
    out[f"{prefix}/decision"] = est.decision_function(Xp)
    out[f"{prefix}/proba"] = est.predict_proba(Xp)
    for i, t in enumerate(getattr(est, "trees_", [])):
        for name in ("feature", "threshold", "child_start", "value"):
            out[f"{prefix}/tree{i}/{name}"] = np.asarray(getattr(t, name))


def estimator_cases(out: dict, *, with_adult: bool) -> None:
    from dpexp.papers.dpboost.estimators import DPBoostClassifier, NPGBDTClassifier

    sets = []
    X, y = _synthetic(5000, 10, seed=11)
    sets.append(("synthetic", X, y, {"feature_domain": np.tile([0.0, 1.0], (10, 1))}))
    if with_adult:
        from dpexp.datasets import load_dataset

        ds = load_dataset("adult", mirror=MIRROR, progress=False)
        Xa = ds.X.toarray() if hasattr(ds.X, "toarray") else np.asarray(ds.X)
        ya = np.where(ds.y == ds.classes[-1], 1, 0)
        sets.append(("adult", Xa, ya, {"feature_domain": ds.feature_domain,
                                       "categorical_features": ds.categorical_features,
                                       "n_categories": ds.n_categories}))
    for name, X, y, meta in sets:
        y = np.where(y > 0, 1, 0)
        Xp = X[:2000]
        for cls, kw, tag in ((NPGBDTClassifier, {}, "np"),
                             (DPBoostClassifier, {"epsilon": 5.0, "trees_per_ensemble": 10,
                                                  "noise_rng": seeded_noise(0)},  # reproducible
                              "dpboost")):
            params = dict(n_trees=20, max_depth=5, learning_rate=0.1, random_state=0, **meta,
                          **kw)
            if "classes" in inspect.signature(cls).parameters:
                params["classes"] = [0, 1]
            _fit_record(f"{tag}/{name}", cls(**params), (X, y), Xp, out)


def main() -> int:
    mode, path = sys.argv[1], Path(sys.argv[2])
    out: dict[str, np.ndarray] = {}
    grower_cases(out)
    estimator_cases(out, with_adult=True)
    if mode == "save":
        np.savez_compressed(path, **out)
        print(f"saved {len(out)} arrays to {path}")
        return 0
    ref = np.load(path)
    bad = []
    for key in sorted(set(ref.files) | set(out)):
        if key not in ref.files or key not in out:
            bad.append(f"{key}: present only in {'new' if key in out else 'reference'}")
        elif not np.array_equal(ref[key], out[key], equal_nan=True) or \
                ref[key].dtype != out[key].dtype:
            bad.append(f"{key}: differs")
    engine = [b for b in bad if not b.startswith("dpboost/")]
    print(f"{len(ref.files)} arrays compared; {len(bad)} differ "
          f"({len(engine)} from the engine, {len(bad) - len(engine)} DPBoost estimator)")
    for b in bad[:40]:
        print("  ", b)
    return 1 if engine else 0


if __name__ == "__main__":
    raise SystemExit(main())
