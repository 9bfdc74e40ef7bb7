"""Load a registered dataset into a :class:`Dataset` with its public metadata."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpexp.datasets import download
from dpexp.datasets.generated import load_or_draw
from dpexp.datasets.parsed import Parsed, check_shape
from dpexp.datasets.parsers import PARSERS, generate_synthetic
from dpexp.datasets.registry import DatasetInfo, get_dataset_info
from dpexp.errors import DatasetError

#: Domain source of a value taken from the format's documentation / generator definition.
DECLARED = "declared"
#: Domain source of a value computed from the file itself (min/max, largest code, labels).
OBSERVED = "observed"
_NOT_DP = "not DP: domain from data"


@dataclass
class Dataset:
    """A loaded dataset. ``X_test``/``y_test`` are set only for fixed train/test splits.

    ``classes`` are the codes 0..k-1 of the registry's declared class list (``class_names``
    in that order), whatever the rows present; ``domain_source`` says whether the feature
    and label domains were declared or read from the file (not DP).
    """

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
    #: Per feature: ``"declared"`` (format documentation / generator) or ``"observed"``.
    feature_domain_sources: list[str] = field(default_factory=list)
    #: Regression only: where ``label_domain`` comes from.
    label_domain_source: str | None = None

    @property
    def domain_is_public(self) -> bool:
        """True when nothing in :meth:`public_metadata` was computed from the data."""
        return self.domain_source == DECLARED

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def public_metadata(self) -> dict[str, Any]:
        """The schema estimators receive as public input (no budget is spent on it).

        It is truly public only where declared: when :attr:`domain_source` is not
        ``"declared"``, part of it was read from the data and a release built on it is not
        DP (the runner records ``domain_source`` in every result row)."""
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
            "observed_features": [n for n, src in zip(self.feature_names, self.feature_domain_sources,
                                                      strict=True) if src == OBSERVED],
        }
        if self.task == "classification":
            counts = np.bincount(self.y, minlength=len(self.class_names or ()))
            out["class_balance"] = {
                name: round(float(c) / max(len(self.y), 1), 4)
                for name, c in zip(self.class_names or [], counts, strict=True)
            }
        else:
            out["label_range"] = [float(np.min(self.y)), float(np.max(self.y))]
        return out


def _check_binary(name: str, X) -> None:
    values = X.data if sp.issparse(X) else X
    if not np.isin(values, (0, 1)).all():
        raise DatasetError(f"Dataset {name!r} is declared binary in datasets.yaml but has other values.")


def _column_range(parts: list) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature min/max over ``parts`` (train and, if any, the fixed test part)."""
    if sp.issparse(parts[0]):
        lo = np.min([np.asarray(p.min(axis=0).todense()).ravel() for p in parts], axis=0)
        hi = np.max([np.asarray(p.max(axis=0).todense()).ravel() for p in parts], axis=0)
    else:
        lo = np.min([np.nanmin(p, axis=0) if p.shape[0] else np.full(p.shape[1], np.inf) for p in parts], axis=0)
        hi = np.max([np.nanmax(p, axis=0) if p.shape[0] else np.full(p.shape[1], -np.inf) for p in parts], axis=0)
    return lo.astype(np.float64), hi.astype(np.float64)


def _declared_bounds(info: DatasetInfo, names: list[str]) -> np.ndarray:
    """[low, high] per feature from the registry; NaN rows where nothing is declared."""
    d = len(names)
    dom = np.full((d, 2), np.nan)
    spec = info.feature_domain
    if isinstance(spec, dict) and "declared" in spec:
        dom[:] = [float(spec["declared"]["low"]), float(spec["declared"]["high"])]
    elif isinstance(spec, dict) and isinstance(spec.get("declared_columns"), list):
        cols = np.asarray(spec["declared_columns"], dtype=np.float64)
        if cols.shape != (d, 2):
            raise DatasetError(f"Dataset {info.name!r}: declared_columns must have {d} [low, high] pairs.")
        dom[:] = cols
    elif isinstance(spec, dict) and isinstance(spec.get("declared_columns"), dict):
        for col, pair in spec["declared_columns"].items():
            if col not in names:
                raise DatasetError(
                    f"Dataset {info.name!r}: declared_columns names {col!r}, which is not a "
                    f"feature (features: {', '.join(names)})."
                )
            dom[names.index(col)] = [float(pair[0]), float(pair[1])]
    return dom


def _domain(info: DatasetInfo, names: list[str], parts: list, categorical: np.ndarray,
            n_cat: np.ndarray, cat_declared: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Public feature domain and, per feature, whether it was declared or observed.

    Declared bounds are checked against the file (a value outside means the declaration is
    wrong, which would silently clip real records). Undeclared features keep the
    min/max over the whole file (train and test) for reproduction -- not DP, and said so.
    """
    dom = _declared_bounds(info, names)
    lo, hi = _column_range(parts)
    declared = ~np.isnan(dom[:, 0])
    outside = declared & ((lo < dom[:, 0]) | (hi > dom[:, 1]))
    if outside.any():
        j = int(np.flatnonzero(outside)[0])
        raise DatasetError(
            f"Dataset {info.name!r}: feature {names[j]!r} has values in [{lo[j]:g}, {hi[j]:g}], "
            f"outside its declared domain [{dom[j, 0]:g}, {dom[j, 1]:g}] in datasets.yaml."
        )
    dom[~declared] = np.column_stack([lo, hi])[~declared]
    sources = [DECLARED if ok else OBSERVED for ok in declared]
    for j in np.flatnonzero(categorical):
        dom[j] = [0, max(int(n_cat[j]) - 1, 0)]
        sources[j] = DECLARED if cat_declared[j] else OBSERVED
    return dom, sources


def _label_domain(info: DatasetInfo, y, y_test) -> tuple[tuple[float, float] | None, str | None]:
    spec = info.label_domain
    if spec is None:
        return None, None
    ys = y if y_test is None else np.concatenate([y, y_test])
    if isinstance(spec, dict) and "declared" in spec:
        lo, hi = float(spec["declared"]["low"]), float(spec["declared"]["high"])
        if len(ys) and (np.min(ys) < lo or np.max(ys) > hi):
            raise DatasetError(
                f"Dataset {info.name!r}: labels lie in [{np.min(ys):g}, {np.max(ys):g}], "
                f"outside the declared label_domain [{lo:g}, {hi:g}] in datasets.yaml."
            )
        return (lo, hi), DECLARED
    return (float(np.min(ys)), float(np.max(ys))), OBSERVED


def _label_codes(info: DatasetInfo, y: np.ndarray, origin: Callable[[int], tuple[Path, int]] | None = None) -> np.ndarray:
    """Codes 0..k-1 of ``y`` in the declared class list; a label outside it is an error
    (naming the file and line of its first row where the parser says where rows came from)."""
    declared = list(info.classes or ())
    numeric = np.issubdtype(np.asarray(y).dtype, np.number)
    keys = [float(c) for c in declared] if numeric else [str(c) for c in declared]
    lookup = {k: i for i, k in enumerate(keys)}
    values = np.asarray(y, dtype=np.float64) if numeric else np.asarray([str(v) for v in y], dtype=object)
    uniq = np.unique(values)
    unknown = [u for u in uniq if (float(u) if numeric else u) not in lookup]
    if unknown:
        shown = [format(u, "g") if numeric else u for u in unknown[:5]]
        where = ""
        if origin is not None:
            path, line = origin(int(np.flatnonzero(np.isin(values, unknown))[0]))
            where = f" (first at {path}, line {line})"
        raise DatasetError(
            f"Dataset {info.name!r}: label(s) {shown} are not in the "
            f"declared classes {declared} of datasets.yaml{where}; the file or the declaration is wrong."
        )
    table = {u: lookup[float(u) if numeric else u] for u in uniq}
    return np.fromiter((table[v] for v in values), dtype=np.int64, count=len(values))


def _encode_labels(info: DatasetInfo, parsed: Parsed, y, y_test):
    origin = parsed.row_origin
    codes = _label_codes(info, y, origin)
    test_origin = None if origin is None else (lambda i: origin(i + len(y)))
    test_codes = None if y_test is None else _label_codes(info, y_test, test_origin)
    return codes, test_codes, [str(c) for c in info.classes or ()]


def summarize_domain_source(features: list[str], label: str | None) -> str:
    """One string for result rows: ``declared`` when every public value is declared, else
    ``observed (not DP: domain from data: <which>)``. Classes are always declared (the
    registry requires them)."""
    what = observed_parts(features, label)
    return DECLARED if not what else f"{OBSERVED} ({_NOT_DP}: {what})"


def observed_parts(features: list[str], label: str | None) -> str:
    """Which public values were observed, e.g. ``2 of 8 features, label range`` ("" if none)."""
    what = []
    n_obs = sum(s == OBSERVED for s in features)
    if n_obs:
        what.append(f"all {n_obs} features" if n_obs == len(features) else f"{n_obs} of {len(features)} features")
    if label == OBSERVED:
        what.append("label range")
    return ", ".join(what)


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


def _categories(info: DatasetInfo, parsed: Parsed, parts: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(categorical mask, number of categories, declared?) per feature.

    Declared: the parser's declared category lists, or ``binary: true`` (every feature
    0/1). Otherwise the largest code + 1 over the file -- observed, not DP.
    """
    d = parts[0].shape[1]
    categorical = np.asarray(parsed.categorical, bool)
    n_cat = np.zeros(d, dtype=np.int64)
    declared = np.zeros(d, dtype=bool)
    if parsed.n_categories is not None:
        declared = np.asarray(parsed.n_categories) > 0
        n_cat[declared] = np.asarray(parsed.n_categories)[declared]
    spec = info.feature_domain.get("declared", {}) if isinstance(info.feature_domain, dict) else {}
    if spec.get("binary"):
        for part in parts:
            _check_binary(info.name, part)
        categorical = np.ones(d, bool)
        n_cat[:] = 2
        declared[:] = True
    for j in np.flatnonzero(categorical & ~declared):
        n_cat[j] = int(max(np.nanmax(p[:, j]) if p.shape[0] else -1 for p in parts)) + 1
    return categorical, n_cat, declared


def _parse(info: DatasetInfo, params: dict, max_rows: int | None, mirror: str | None,
           progress: bool) -> tuple[Parsed, int | None]:
    """Parsed file (or generated data) and the row count the registry expects."""
    if info.parser == "synthetic":
        bad = set(params) - {"n_samples", "seed"}
        if bad:
            raise DatasetError(f"Dataset {info.name!r} has no parameter(s) {sorted(bad)}; it takes n_samples, seed.")
        parsed = load_or_draw(info.name, info.options, params, max_rows,
                              lambda: generate_synthetic(info.options, params, max_rows))
        return parsed, min(int(params.get("n_samples", info.rows)), max_rows or 10**12)
    if params:
        raise DatasetError(f"Dataset {info.name!r} takes no parameters, got {sorted(params)}.")
    paths = download.fetch_dataset(info, mirror=mirror, progress=progress)
    return PARSERS[info.parser](paths, info.options), info.rows


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

    Public metadata: classes are the registry's declared list (a label outside it is a
    :class:`DatasetError`); feature / label domains and category counts are declared where
    datasets.yaml declares them and observed otherwise, which ``domain_source`` states
    (``"declared"`` or ``"observed (not DP: domain from data: ...)"``).
    """
    info = get_dataset_info(name)
    params = dict(params or {})
    parsed, expected_rows = _parse(info, params, max_rows, mirror, progress)
    check_shape(info, parsed, expected_rows)
    X, y, y_test = parsed.X, np.asarray(parsed.y), parsed.y_test
    parts = [X] if parsed.X_test is None else [X, parsed.X_test]
    categorical, n_cat, cat_declared = _categories(info, parsed, parts)
    classes = class_names = None
    if info.task == "classification":
        y, y_test, class_names = _encode_labels(info, parsed, y, y_test)
        classes = np.arange(len(class_names))
    else:
        y = y.astype(np.float64)
        y_test = None if y_test is None else np.asarray(y_test, dtype=np.float64)
    domain, feature_sources = _domain(info, parsed.feature_names, parts, categorical, n_cat, cat_declared)
    label_domain, label_source = _label_domain(info, y, y_test) if info.task == "regression" else (None, None)
    if max_rows is not None and X.shape[0] > max_rows:
        idx = _subsample(X.shape[0], y, info.task, max_rows, subsample_seed)
        X, y = X[idx], y[idx]
    return Dataset(
        name=name, info=info, task=info.task, X=X, y=y, feature_names=parsed.feature_names,
        categorical_features=categorical, n_categories=n_cat, feature_domain=domain,
        domain_source=summarize_domain_source(feature_sources, label_source),
        label_domain=label_domain, classes=classes, class_names=class_names,
        X_test=parsed.X_test, y_test=y_test, params=params,
        feature_domain_sources=feature_sources, label_domain_source=label_source,
    )
