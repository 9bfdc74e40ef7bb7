"""The sparse features of dense binned codes, read a faster, exact way: exclusive bundles
(LightGBM's exclusive feature bundling) or row-sparse lists (:class:`SparseFeatureCodes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dpexp.jit import njit

# a feature is "sparse" when at most this share of its entries differs from its most
# frequent code (binary/one-hot columns: at most half by definition); the others stay
# with the dense column kernel
SPARSE_MAX_DENSITY = 0.5
_DENSITY_SAMPLE_ROWS = 4096
# measured costs per row (ns, bench machine) of one dense column update, of one row-sparse
# entry and of a row-sparse row itself; they decide between bundles and row-sparse lists
COST_DENSE_UPDATE = 1.3
COST_SPARSE_ENTRY = 3.0
COST_SPARSE_ROW = 5.0
BUNDLE_VALUES = 256  # a bundle column is uint8; value 0 means "every member at its default"


@dataclass
class SparseFeatureCodes:
    """A faster, exact way to histogram the *sparse* features of dense codes.

    ``dense_features`` are read from the codes as they are; every other feature is
    ``sparse`` (at most ``SPARSE_MAX_DENSITY`` of its rows differ from ``default_bin``,
    its most frequent code) and is read in one of two ways:

    * **exclusive bundles** (``bundle_codes`` set): sparse features that are never
      non-default in the same row -- the one-hot columns of one categorical variable --
      share one uint8 column (LightGBM's exclusive feature bundling, without its tolerated
      conflicts): value ``v > 0`` of bundle ``k`` stands for feature
      ``bundle_feature[k, v]`` at code ``bundle_code[k, v]``, 0 for all members at their
      defaults. Adult's 113 sparse columns become 14 bundles, covtype's 44 become 2;
    * **row-sparse lists** otherwise (sparse features that co-occur, e.g. bag-of-words):
      row ``r`` owns entries ``indptr[r]:indptr[r+1]`` with ``feature`` (int32, an index
      into ``sparse_features``) and ``code`` (uint8) of its non-default sparse features.

    Either way each default bin is filled by subtraction from the node total, so which
    bin is the default only changes the order of float additions, not the histogram.
    ``sparse_bins`` bounds the codes of the sparse features.
    """

    dense_features: np.ndarray
    sparse_features: np.ndarray
    default_bin: np.ndarray
    sparse_bins: int
    bundle_codes: np.ndarray | None = None
    bundle_feature: np.ndarray | None = None
    bundle_code: np.ndarray | None = None
    indptr: np.ndarray | None = None
    feature: np.ndarray | None = None
    code: np.ndarray | None = None
    mean_nnz: int = 0

    @property
    def n_bundles(self) -> int:
        return 0 if self.bundle_codes is None else int(self.bundle_codes.shape[1])

    @cached_property
    def bundle_values(self) -> np.ndarray:
        """Values used by each bundle (1 + its largest value; adult's are 2 to 34 of
        256): the histogram kernels clear and scan only these."""
        if self.bundle_feature is None:
            return np.zeros(0, dtype=np.int64)
        used = np.where(self.bundle_feature >= 0, np.arange(self.bundle_feature.shape[1]), 0)
        return used.max(axis=1).astype(np.int64) + 1


@njit(cache=True, nogil=True)
def _row_counts(codes, default, features):  # pragma: no cover
    n = codes.shape[0]
    counts = np.zeros(n, dtype=np.int64)
    for f in features:  # column by column: codes are column-major
        z = default[f]
        for r in range(n):
            counts[r] += codes[r, f] != z
    return counts


@njit(cache=True, nogil=True)
def _fill_non_default(codes, default, features, indptr, feature, code):  # pragma: no cover
    n = codes.shape[0]
    fill = indptr[:-1].copy()
    for i in range(features.shape[0]):  # entries of a row end up in feature order
        f = features[i]
        z = default[f]
        for r in range(n):
            c = codes[r, f]
            if c != z:
                q = fill[r]
                feature[q] = i
                code[q] = c
                fill[r] = q + 1


@njit(cache=True, nogil=True)
def _bundle_features(codes, default, n_bins, features, out, vfeat, vcode):  # pragma: no cover
    """Greedy exclusive bundling of ``features`` (in the given order) into the columns of
    ``out (n, max_bundles)`` (zeroed); returns the number of bundles, or -1 when more
    than ``max_bundles`` would be needed. A feature joins the first bundle with room for
    its non-default codes whose rows never meet its own non-default rows."""
    n = codes.shape[0]
    max_bundles = out.shape[1]
    used = np.zeros(max_bundles, dtype=np.int64)
    rows = np.empty(n, dtype=np.int64)
    n_bundles = 0
    for f in features:
        z = default[f]
        m = 0
        for r in range(n):
            if codes[r, f] != z:
                rows[m] = r
                m += 1
        need = n_bins[f] - 1
        k = -1
        for cand in range(n_bundles):
            if used[cand] + need > BUNDLE_VALUES - 1:
                continue
            free = True
            for i in range(m):
                if out[rows[i], cand] != 0:
                    free = False
                    break
            if free:
                k = cand
                break
        if k < 0:
            if n_bundles == max_bundles:
                return -1
            k = n_bundles
            n_bundles += 1
        off = used[k]
        for c in range(n_bins[f]):
            if c != z:
                v = off + 1 + (c if c < z else c - 1)
                vfeat[k, v] = f
                vcode[k, v] = c
        for i in range(m):
            c = codes[rows[i], f]
            out[rows[i], k] = off + 1 + (c if c < z else c - 1)
        used[k] += need
    return n_bundles


def most_frequent_codes(codes: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Most frequent code of every column of ``codes`` (on ``rows`` when given)."""
    sample = codes if rows is None else codes[rows]
    return np.array([np.bincount(sample[:, f], minlength=1).argmax()
                     for f in range(codes.shape[1])], dtype=np.uint8)


def sparse_feature_codes(codes: np.ndarray, n_bins: np.ndarray | None = None,
                         max_density: float = SPARSE_MAX_DENSITY) -> SparseFeatureCodes | None:
    """The :class:`SparseFeatureCodes` of dense ``codes``: the features whose share of
    non-default entries (estimated on evenly spaced rows) is at most ``max_density`` go
    into exclusive bundles when these cost less per row than row-sparse lists
    (``COST_*``), into row-sparse lists otherwise. ``None`` when no feature is sparse.
    ``n_bins[f]`` bounds feature ``f``'s codes (default: its largest code + 1)."""
    n, d = codes.shape
    if n == 0 or d == 0:
        return None
    probe = np.linspace(0, n - 1, min(n, _DENSITY_SAMPLE_ROWS)).astype(np.int64)
    default = most_frequent_codes(codes, probe)
    density = np.mean(codes[probe] != default, axis=0)
    sparse = np.flatnonzero(density <= max_density).astype(np.int64)
    if sparse.size == 0:
        return None
    dense = np.flatnonzero(density > max_density).astype(np.int64)
    default = most_frequent_codes(codes)
    if n_bins is None:
        n_bins = np.array([int(codes[:, f].max()) + 1 for f in range(d)], dtype=np.int64)
    n_bins = np.maximum(np.asarray(n_bins, dtype=np.int64), default.astype(np.int64) + 1)
    counts = _row_counts(codes, default, sparse)
    mean_nnz = float(counts.mean())
    sparse_bins = int(n_bins[sparse].max())
    common = dict(dense_features=dense, sparse_features=sparse, default_bin=default,
                  sparse_bins=sparse_bins)
    # bundles pay when they make fewer column updates than the row-sparse lists cost
    budget = int((mean_nnz * COST_SPARSE_ENTRY + COST_SPARSE_ROW) / COST_DENSE_UPDATE)
    if sparse_bins <= BUNDLE_VALUES - 1 and budget >= 1:
        bcodes = np.zeros((n, min(budget, sparse.size)), dtype=np.uint8, order="F")
        vfeat = np.full((bcodes.shape[1], BUNDLE_VALUES), -1, dtype=np.int64)
        vcode = np.zeros((bcodes.shape[1], BUNDLE_VALUES), dtype=np.uint8)
        # most populated features first: they are the hardest to place
        by_nnz = sparse[np.argsort(-density[sparse], kind="stable")]
        k = _bundle_features(codes, default, n_bins, by_nnz, bcodes, vfeat, vcode)
        if k > 0:
            return SparseFeatureCodes(**common, bundle_codes=bcodes[:, :k],
                                      bundle_feature=vfeat[:k], bundle_code=vcode[:k])
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    feature = np.empty(nnz, dtype=np.int32)
    code = np.empty(nnz, dtype=np.uint8)
    _fill_non_default(codes, default, sparse, indptr, feature, code)
    return SparseFeatureCodes(**common, indptr=indptr, feature=feature, code=code,
                              mean_nnz=max(1, round(mean_nnz)))
