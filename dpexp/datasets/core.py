"""Load a registered dataset into a :class:`Dataset` with its public metadata."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpexp.datasets import download
from dpexp.datasets.parsers import PARSERS, Parsed, generate_synthetic
from dpexp.datasets.registry import DatasetInfo, get_dataset_info
from dpexp.errors import DatasetError


@dataclass
class Dataset:
    """A loaded dataset. ``X_test``/``y_test`` are set only for fixed train/test splits."""

    name: str
    info: DatasetInfo
    task: str
    X: Any
    y: np.ndarray
    feature_names: list[str]
    categorical_features: np.ndarray
    n_categories: np.ndarray
    feature_domain: np.ndarray
    domain_source: str
    label_domain: tuple[float, float] | None
    classes: np.ndarray | None
    class_names: list[str] | None
    X_test: Any = None
    y_test: np.ndarray | None = None
    params: dict = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def public_metadata(self) -> dict[str, Any]:
        """What estimators may use without spending privacy budget (the public schema)."""
        return {
            "feature_domain": self.feature_domain,
            "categorical_features": self.categorical_features,
            "n_categories": self.n_categories,
            "label_domain": self.label_domain,
            "classes": self.classes,
        }

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "task": self.task,
            "rows": self.n_rows,
            "features": self.n_features,
            "categorical_features": int(self.categorical_features.sum()),
            "sparse": bool(sp.issparse(self.X)),
            "test_rows": None if self.X_test is None else int(self.X_test.shape[0]),
            "domain_source": self.domain_source,
        }
        if self.task == "classification":
            vals, counts = np.unique(self.y, return_counts=True)
            names = self.class_names or [str(v) for v in vals]
            out["class_balance"] = {
                str(names[int(v)] if self.class_names else v): round(float(c) / len(self.y), 4)
                for v, c in zip(vals, counts, strict=True)
            }
        else:
            out["label_range"] = [float(np.min(self.y)), float(np.max(self.y))]
        return out


def _check_binary(name: str, X) -> None:
    values = X.data if sp.issparse(X) else X
    if not np.isin(values, (0, 1)).all():
        raise DatasetError(f"Dataset {name!r} is declared binary in datasets.yaml but has other values.")


def _domain(info: DatasetInfo, X, X_test, categorical: np.ndarray, n_cat: np.ndarray):
    d = X.shape[1]
    spec = info.feature_domain
    if isinstance(spec, dict) and "declared" in spec:
        lo, hi = float(spec["declared"]["low"]), float(spec["declared"]["high"])
        dom = np.tile([lo, hi], (d, 1)).astype(np.float64)
        source = "declared"
    elif isinstance(spec, dict) and "declared_columns" in spec:
        dom = np.asarray(spec["declared_columns"], dtype=np.float64)
        if dom.shape != (d, 2):
            raise DatasetError(f"Dataset {info.name!r}: declared_columns must have {d} [low, high] pairs.")
        source = "declared"
    else:
        parts = [X] if X_test is None else [X, X_test]
        if sp.issparse(X):
            lo = np.min([np.asarray(p.min(axis=0).todense()).ravel() for p in parts], axis=0)
            hi = np.max([np.asarray(p.max(axis=0).todense()).ravel() for p in parts], axis=0)
        else:
            lo = np.min([np.nanmin(p, axis=0) for p in parts], axis=0)
            hi = np.max([np.nanmax(p, axis=0) for p in parts], axis=0)
        dom = np.column_stack([lo, hi]).astype(np.float64)
        source = "observed"
    dom[categorical, 0] = 0
    dom[categorical, 1] = np.maximum(n_cat[categorical] - 1, 0)
    return dom, source


def _label_domain(info: DatasetInfo, y, y_test):
    spec = info.label_domain
    if spec is None:
        return None
    if isinstance(spec, dict) and "declared" in spec:
        return float(spec["declared"]["low"]), float(spec["declared"]["high"])
    ys = y if y_test is None else np.concatenate([y, y_test])
    return float(np.min(ys)), float(np.max(ys))


def _encode_labels(y, y_test):
    allv = y if y_test is None else np.concatenate([y, y_test])
    classes, codes = np.unique(allv, return_inverse=True)
    n = len(y)
    names = [str(c) for c in classes]
    return codes[:n].astype(np.int64), (None if y_test is None else codes[n:].astype(np.int64)), names


def _subsample(n: int, y, task: str, max_rows: int, seed: int) -> np.ndarray:
    """Seeded (stratified for classification) row subsample, sorted."""
    rng = np.random.default_rng([seed, 7919])
    if task == "classification":
        from sklearn.model_selection import train_test_split

        idx, _ = train_test_split(
            np.arange(n), train_size=max_rows, stratify=y, random_state=int(rng.integers(2**31))
        )
        return np.sort(idx)
    return np.sort(rng.choice(n, size=max_rows, replace=False))


def load_dataset(
    name: str,
    params: dict | None = None,
    *,
    max_rows: int | None = None,
    subsample_seed: int = 0,
    mirror: str | None = None,
    progress: bool = True,
) -> Dataset:
    """Load ``name`` (download and verify on first use), check its shape, attach metadata.

    ``max_rows`` (smoke scale only) subsamples rows after the shape check; synthetic data
    is generated at that size directly instead of generating the full size first.
    """
    info = get_dataset_info(name)
    params = dict(params or {})
    if info.parser == "synthetic":
        bad = set(params) - {"n_samples", "seed"}
        if bad:
            raise DatasetError(f"Dataset {name!r} has no parameter(s) {sorted(bad)}; it takes n_samples, seed.")
        parsed: Parsed = generate_synthetic(info.options, params, max_rows)
        expected_rows = min(int(params.get("n_samples", info.rows)), max_rows or 10**12)
    else:
        if params:
            raise DatasetError(f"Dataset {name!r} takes no parameters, got {sorted(params)}.")
        paths = download.fetch_dataset(info, mirror=mirror, progress=progress)
        parsed = PARSERS[info.parser](paths, info.options)
        expected_rows = info.rows
    X, y = parsed.X, np.asarray(parsed.y)
    if expected_rows is not None and X.shape[0] != expected_rows:
        raise DatasetError(
            f"Dataset {name!r}: loaded {X.shape[0]} rows but the registry expects "
            f"{expected_rows}; the file may be a different version. Delete it from the data "
            f"directory and download again."
        )
    if info.features is not None and X.shape[1] != info.features:
        raise DatasetError(
            f"Dataset {name!r}: loaded {X.shape[1]} features but the registry expects {info.features}."
        )
    if info.test_rows is not None and (parsed.X_test is None or parsed.X_test.shape[0] != info.test_rows):
        got = None if parsed.X_test is None else parsed.X_test.shape[0]
        raise DatasetError(f"Dataset {name!r}: test part has {got} rows, expected {info.test_rows}.")
    categorical = np.asarray(parsed.categorical, bool)
    n_cat = np.zeros(X.shape[1], dtype=np.int64)
    declared = info.feature_domain.get("declared", {}) if isinstance(info.feature_domain, dict) else {}
    if declared.get("binary"):
        _check_binary(name, X)
        categorical = np.ones(X.shape[1], bool)
        n_cat[:] = 2
    if categorical.any() and not declared.get("binary"):
        parts = [X] if parsed.X_test is None else [X, parsed.X_test]
        for j in np.flatnonzero(categorical):
            n_cat[j] = int(max(np.nanmax(p[:, j]) for p in parts)) + 1
    y_test = parsed.y_test
    classes = class_names = None
    if info.task == "classification":
        y, y_test, class_names = _encode_labels(y, y_test)
        classes = np.arange(len(class_names))
    else:
        y = y.astype(np.float64)
        y_test = None if y_test is None else np.asarray(y_test, dtype=np.float64)
    domain, source = _domain(info, X, parsed.X_test, categorical, n_cat)
    label_domain = _label_domain(info, y, y_test) if info.task == "regression" else None
    if max_rows is not None and X.shape[0] > max_rows:
        idx = _subsample(X.shape[0], y, info.task, max_rows, subsample_seed)
        X, y = X[idx], y[idx]
    return Dataset(
        name=name, info=info, task=info.task, X=X, y=y, feature_names=parsed.feature_names,
        categorical_features=categorical, n_categories=n_cat, feature_domain=domain,
        domain_source=source, label_domain=label_domain, classes=classes,
        class_names=class_names, X_test=parsed.X_test, y_test=y_test, params=params,
    )
