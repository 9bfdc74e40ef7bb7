"""Binning: map every feature to at most 255 bins stored as ``uint8`` codes.

Candidate split points are the bin *thresholds*: bin ``b`` of feature ``f`` holds the
values in ``(thresholds[f][b-1], thresholds[f][b]]`` and the candidate split "code <= b"
is the tree split ``x[f] <= thresholds[f][b]`` (``dpexp.trees.tree`` convention).

Two strategies, recorded as :attr:`BinMapper.strategy` so every result row can carry it:

* ``"domain"`` (default, private): thresholds on a fixed grid over the *public* feature
  domain ``(lo, hi)`` (LIBSVM-scaled ranges, domains declared in ``datasets.yaml``), or at
  ``0.5, 1.5, ...`` for categorical features with a public number of categories. The
  candidate set is then the same for every pair of neighbouring datasets, as the
  exponential mechanism of Li et al. 2020 (Algorithm 1, lines 4-8) requires.
* ``"quantile"`` (explicit option, NOT private): thresholds at data quantiles, which is
  what LightGBM (and hence the original DPBoost code) effectively does.

Sparse input (scipy CSR/CSC, e.g. LIBSVM data such as real-sim, 72,309 x 20,958) is kept
sparse when the dense ``uint8`` matrix would exceed ``dense_limit_bytes``: only the
codes of the stored non-zeros are kept (column-compressed), with each feature's code of
0 in :attr:`BinnedData.zero_bin`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from numba import njit

MAX_BINS = 255
STRATEGIES = ("domain", "quantile")
# a feature is "sparse" when at most this share of its entries differs from its most
# frequent code (binary/one-hot columns: at most half by definition); the others stay
# with the dense column kernel
SPARSE_MAX_DENSITY = 0.5
_DENSITY_SAMPLE_ROWS = 4096
# largest C-ordered code matrix that also gets a column-major copy for row partitions
COLUMN_COPY_MAX_BYTES = 64 << 20
# measured costs per row (ns, bench machine) of one dense column update, of one row-sparse
# entry and of a row-sparse row itself; they decide between bundles and row-sparse lists
COST_DENSE_UPDATE = 1.3
COST_SPARSE_ENTRY = 3.0
COST_SPARSE_ROW = 5.0
BUNDLE_VALUES = 256  # a bundle column is uint8; value 0 means "every member at its default"
# tables of at most this many histogram columns (dense features + bundles) and bins in
# all also get a row-major copy of their codes (:class:`RowCodes`): with few values per
# column they beat the column kernels, but a flat histogram past L1 and a table past L2
# lose to one column at a time (measurements: bench/HISTORY.md). Builds read row codes in
# their row tasks only, which cover every column when there are at most
# ``histograms.ROW_TASK_MAX_COLUMNS`` (32 as well).
ROW_CODES_MAX_COLUMNS = 32
ROW_CODES_MAX_BINS = 256


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


@dataclass(frozen=True)
class RowCodes:
    """The histogram columns of dense codes -- dense features, then bundles, in the
    order of :class:`SparseFeatureCodes` (all features when there is none) -- row by row.

    ``codes[r, c] = offset[c] + code`` of row ``r`` in column ``c`` (uint8, C order):
    column ``c``'s bins are ``offset[c]:offset[c + 1]`` of one flat histogram, so a row's
    updates need neither per-column strides nor per-column offsets, and a row's columns
    are one contiguous read. Rows that reach the same bins one after another no longer
    wait on each other's stores the way one column's do (few values, e.g. a bundle whose
    members are mostly at their defaults, make long chains of updates of the same bin).
    """

    codes: np.ndarray
    offset: np.ndarray

    @property
    def n_columns(self) -> int:
        return int(self.codes.shape[1])


@njit(cache=True, nogil=True)
def _fill_row_codes(codes, feats, bcodes, offset, out):  # pragma: no cover
    nd = feats.shape[0]
    for i in range(nd):  # column by column: the sources are column-major
        f = feats[i]
        base = offset[i]
        for r in range(out.shape[0]):
            out[r, i] = base + codes[r, f]
    for c in range(bcodes.shape[1]):
        base = offset[nd + c]
        for r in range(out.shape[0]):
            out[r, nd + c] = base + bcodes[r, c]


def row_major_codes(codes: np.ndarray, sparse: SparseFeatureCodes | None = None,
                    max_columns: int | None = None) -> RowCodes | None:
    """:class:`RowCodes` of dense ``codes`` with their :class:`SparseFeatureCodes`, or
    ``None`` when there are more than ``max_columns`` histogram columns (default
    ``ROW_CODES_MAX_COLUMNS``) or ``ROW_CODES_MAX_BINS`` bins in all, or no rows: the
    column kernels are faster there. Row-sparse lists are not columns: they stay as
    they are."""
    limit = ROW_CODES_MAX_COLUMNS if max_columns is None else int(max_columns)
    if sparse is None:
        feats = np.arange(codes.shape[1], dtype=np.int64)
        bcodes = np.zeros((codes.shape[0], 0), dtype=np.uint8, order="F")
    else:
        feats = np.asarray(sparse.dense_features, dtype=np.int64)
        bcodes = (sparse.bundle_codes if sparse.n_bundles
                  else np.zeros((codes.shape[0], 0), dtype=np.uint8, order="F"))
    n_columns = feats.size + bcodes.shape[1]
    if codes.shape[0] == 0 or n_columns == 0 or n_columns > limit:
        return None
    width = [int(codes[:, f].max()) + 1 for f in feats]
    width += [int(bcodes[:, c].max()) + 1 for c in range(bcodes.shape[1])]
    offset = np.zeros(n_columns + 1, dtype=np.int64)
    np.cumsum(width, out=offset[1:])
    if offset[-1] > ROW_CODES_MAX_BINS:
        return None
    out = np.empty((codes.shape[0], n_columns), dtype=np.uint8)
    _fill_row_codes(codes, feats, bcodes, offset, out)
    return RowCodes(codes=out, offset=offset)


@dataclass
class BinnedData:
    """Binned training matrix: dense ``codes (n, d)`` or column-compressed non-zeros.

    Dense: ``codes`` is ``(n_rows, n_features)`` uint8, column-major (Fortran order) when
    made by :meth:`BinMapper.transform`, and the sparse fields are ``None``. Sparse: ``indptr (d+1,)``, ``rows (nnz,) int32`` and ``values (nnz,)
    uint8`` hold the codes of the stored entries of each column, ``zero_bin (d,)`` the code
    of an implicit zero.
    """

    n_rows: int
    n_features: int
    codes: np.ndarray | None = None
    indptr: np.ndarray | None = None
    rows: np.ndarray | None = None
    values: np.ndarray | None = None
    zero_bin: np.ndarray | None = None
    _sparse_codes: list = field(default_factory=list, repr=False, compare=False)
    _by_feature: list = field(default_factory=list, repr=False, compare=False)
    _row_codes: list = field(default_factory=list, repr=False, compare=False)
    _by_row: list = field(default_factory=list, repr=False, compare=False)

    @property
    def is_sparse(self) -> bool:
        return self.codes is None

    def sparse_codes(self) -> SparseFeatureCodes | None:
        """The bundles/row-sparse lists of the sparse features of dense codes (built once,
        cached), or ``None`` when no feature is sparse (or the data is column-sparse)."""
        if self.is_sparse:
            return None
        if not self._sparse_codes:
            self._sparse_codes.append(sparse_feature_codes(self.codes))
        return self._sparse_codes[0]

    def prepare(self) -> BinnedData:
        """Build now the derived layouts the histogram kernels read -- the bundles or
        row-sparse lists of the sparse features (exclusive feature bundling), the
        row-major codes, the column-major copy -- instead of on the first tree that needs
        them. They are the table's construction (as LightGBM builds its bundles when it
        constructs a Dataset), computed once per table whatever the trees; cached as
        before, so nothing else changes. Returns ``self``."""
        if not self.is_sparse:
            self.sparse_codes()
            self.row_codes()
            self.codes_by_feature()
        return self

    def row_codes(self) -> RowCodes | None:
        """The :class:`RowCodes` of dense codes (built once, cached), or ``None`` for a
        wide table or column-sparse data (see :func:`row_major_codes`)."""
        if self.is_sparse:
            return None
        if not self._row_codes:
            self._row_codes.append(row_major_codes(self.codes, self.sparse_codes()))
        return self._row_codes[0]

    def codes_by_feature(self, max_bytes: int = COLUMN_COPY_MAX_BYTES) -> np.ndarray:
        """Dense codes in column-major (Fortran) order, indexed like ``codes[r, f]``.

        Row partitions read one feature of rows in increasing order, which is a stream in
        this layout but one cache line per row in the C layout. ``transform`` already
        stores codes this way; for C-ordered codes a copy is kept (cached) only when it is
        at most ``max_bytes``; otherwise ``codes`` itself is returned.
        """
        if self.codes is None or self.codes.flags.f_contiguous or self.codes.nbytes > max_bytes:
            return self.codes
        if not self._by_feature:
            self._by_feature.append(np.asfortranarray(self.codes))
        return self._by_feature[0]

    def codes_by_row(self) -> np.ndarray | None:
        """Dense codes in row-major (C) order, indexed like ``codes[r, f]`` (a copy of
        column-major codes, built once and cached; ``None`` for column-sparse data).

        Gathering a small subset of rows from a column-major table reads nearly every
        cache line of every column; from this copy it reads only the rows' own bytes (see
        :func:`take_codes`)."""
        if self.codes is None:
            return None
        if self.codes.flags.c_contiguous:
            return self.codes
        if not self._by_row:
            out = np.empty(self.codes.shape, dtype=np.uint8)
            _to_rows(self.codes, out)
            self._by_row.append(out)
        return self._by_row[0]

    def take(self, idx: np.ndarray) -> BinnedData:
        """The rows ``idx`` (sorted or not) as a new :class:`BinnedData`."""
        idx = np.asarray(idx, dtype=np.int64)
        if not self.is_sparse:
            return BinnedData(len(idx), self.n_features, codes=self.codes[idx])
        csc = sp.csc_matrix(
            (self.values, self.rows, self.indptr), shape=(self.n_rows, self.n_features)
        )
        sub = csc[idx].tocsc()
        sub.sort_indices()
        return BinnedData(
            len(idx),
            self.n_features,
            indptr=sub.indptr.astype(np.int64),
            rows=sub.indices.astype(np.int32),
            values=sub.data.astype(np.uint8),
            zero_bin=self.zero_bin,
        )


@dataclass
class BinMapper:
    """Per-feature thresholds; ``n_bins[f] = len(thresholds[f]) + 1`` (<= 255)."""

    thresholds: list[np.ndarray]
    strategy: str

    @property
    def n_features(self) -> int:
        return len(self.thresholds)

    @cached_property
    def n_bins(self) -> np.ndarray:
        return np.array([len(t) + 1 for t in self.thresholds], dtype=np.int32)

    @property
    def max_bins(self) -> int:
        return int(self.n_bins.max()) if self.thresholds else 1

    @cached_property
    def threshold_table(self) -> np.ndarray:
        """``(n_features, max_bins - 1)``: ``threshold_table[f, b] = thresholds[f][b]``,
        NaN past a feature's last threshold (one fancy index for a level's splits)."""
        table = np.full((self.n_features, max(self.max_bins - 1, 0)), np.nan)
        for f, thr in enumerate(self.thresholds):
            table[f, : len(thr)] = thr
        return table

    def threshold(self, feature: int, bin_: int) -> float:
        """Split value of candidate (feature, bin): left iff ``x[feature] <= value``."""
        return float(self.thresholds[feature][bin_])

    def transform(self, X, *, dense_limit_bytes: int = 1 << 30, chunk_rows: int = 65536):
        """Bin ``X`` (ndarray or scipy sparse) into :class:`BinnedData`."""
        n, d = X.shape
        if d != self.n_features:
            raise ValueError(f"X has {d} features, the bin mapper {self.n_features}")
        if sp.issparse(X) and n * d > dense_limit_bytes:
            return self._transform_sparse(X)
        # column-major: histogram tasks and row partitions stream one feature at a time
        codes = np.empty((n, d), dtype=np.uint8, order="F")
        for start in range(0, n, chunk_rows):
            block = X[start : start + chunk_rows]
            if sp.issparse(block):
                block = block.toarray()
            self._codes_into(np.asarray(block), codes[start : start + chunk_rows])
        return BinnedData(n, d, codes=codes)

    @cached_property
    def _grids(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(grid features, their origins, their inverse steps): the features whose
        thresholds lie on an evenly spaced grid (``domain_thresholds``, categorical codes)
        or that have one threshold.
        Their codes come from :func:`_grid_codes`, the others' from a binary search."""
        features, origins, inverse_steps = [], [], []
        for f, thr in enumerate(self.thresholds):
            if len(thr) == 1:  # binary features: the guess 0, then at most one step
                features.append(f)
                origins.append(thr[0])
                inverse_steps.append(0.0)
                continue
            if len(thr) < 2:
                continue
            step = (thr[-1] - thr[0]) / (len(thr) - 1)
            on_grid = thr[0] + step * np.arange(len(thr))
            if step > 0 and np.all(np.abs(thr - on_grid) <= 0.25 * step):
                features.append(f)
                origins.append(thr[0] - step)
                inverse_steps.append(1.0 / step)
        return (np.array(features, dtype=np.int64), np.array(origins, dtype=np.float64),
                np.array(inverse_steps, dtype=np.float64))

    def _codes_into(self, block: np.ndarray, out: np.ndarray) -> None:
        """Codes of the rows ``block`` written into ``out`` (any layout: the column-major
        table's rows, without a transposing copy)."""
        grid_features, origins, inverse_steps = self._grids
        if grid_features.size:
            _grid_codes(np.ascontiguousarray(block), self.threshold_table, self.n_bins - 1,
                        grid_features, origins, inverse_steps, out)
        on_grid = np.zeros(self.n_features, dtype=bool)
        on_grid[grid_features] = True
        for f, thr in enumerate(self.thresholds):
            if on_grid[f]:
                continue
            col = block[:, f]
            out[:, f] = np.searchsorted(thr, col, side="left")
            nan = np.isnan(col)
            if nan.any():  # NaN goes left, as in ArrayTree.apply (``x > t`` is False)
                out[nan, f] = 0

    def _transform_sparse(self, X) -> BinnedData:
        csc = sp.csc_matrix(X)
        csc.sort_indices()
        values = np.empty(csc.data.shape[0], dtype=np.uint8)
        zero_bin = np.empty(self.n_features, dtype=np.uint8)
        for f, thr in enumerate(self.thresholds):
            lo, hi = csc.indptr[f], csc.indptr[f + 1]
            values[lo:hi] = np.searchsorted(thr, csc.data[lo:hi], side="left")
            zero_bin[f] = np.searchsorted(thr, 0.0, side="left")
        return BinnedData(
            X.shape[0],
            X.shape[1],
            indptr=csc.indptr.astype(np.int64),
            rows=csc.indices.astype(np.int32),
            values=values,
            zero_bin=zero_bin,
        )


def take_codes(codes: np.ndarray, rows: np.ndarray, by_row: np.ndarray | None = None
               ) -> np.ndarray:
    """``codes[rows]`` in column-major order (the layout :meth:`BinMapper.transform` makes),
    read from ``by_row`` (the same codes row-major, :meth:`BinnedData.codes_by_row`) when
    given: the same bytes, a band of rows at a time."""
    out = np.empty((rows.size, codes.shape[1]), dtype=np.uint8, order="F")
    if by_row is None:
        _take_columns(codes, rows, out)
    else:
        _take_rows(by_row, rows, out)
    return out


_BAND = 64  # rows per band of the row-major gathers: 64 rows of a few hundred codes fit L1


@njit(cache=True, nogil=True)
def _take_rows(by_row, rows, out):  # pragma: no cover
    n = rows.shape[0]
    for i0 in range(0, n, _BAND):
        i1 = min(i0 + _BAND, n)
        for f in range(by_row.shape[1]):
            for i in range(i0, i1):
                out[i, f] = by_row[rows[i], f]


@njit(cache=True, nogil=True)
def _to_rows(codes, out):  # pragma: no cover
    """``out[i, f] = codes[i, f]``: a column-major table copied row-major, band by band."""
    n = codes.shape[0]
    for i0 in range(0, n, _BAND):
        i1 = min(i0 + _BAND, n)
        for f in range(codes.shape[1]):
            for i in range(i0, i1):
                out[i, f] = codes[i, f]


@njit(cache=True, nogil=True)
def _take_columns(codes, rows, out):  # pragma: no cover
    for f in range(codes.shape[1]):  # a column-major table is read one column at a time
        for i in range(rows.shape[0]):
            out[i, f] = codes[rows[i], f]


@njit(cache=True, nogil=True)
def _grid_codes(block, table, n_thresholds, features, origins, inverse_steps, out):  # pragma: no cover
    """``out[i, f] = searchsorted(thresholds[f], block[i, f], side="left")`` (NaN: 0) for
    the grid ``features``: the grid position is the guess, then steps to the exact lower
    bound, so the codes equal the binary search's bit for bit (a binary search costs ~50 ns
    per value, the guess a few). ``block`` is row-major and ``out`` column-major: a band
    of ``_BAND`` rows is read once from memory and written a column at a time."""
    n = block.shape[0]
    for i0 in range(0, n, _BAND):
        i1 = min(i0 + _BAND, n)
        for j in range(features.shape[0]):
            f = features[j]
            m = n_thresholds[f]
            for i in range(i0, i1):
                x = np.float64(block[i, f])
                if x != x:
                    out[i, f] = 0
                    continue
                g = (x - origins[j]) * inverse_steps[j]
                k = 0
                if g >= m:
                    k = m
                elif g > 0:
                    k = int(g)
                while k > 0 and table[f, k - 1] >= x:
                    k -= 1
                while k < m and table[f, k] < x:
                    k += 1
                out[i, f] = k



def domain_thresholds(lo: float, hi: float, max_bins: int = MAX_BINS) -> np.ndarray:
    """Fixed grid of ``max_bins - 1`` thresholds splitting ``[lo, hi]`` into equal bins."""
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
        return np.empty(0)
    k = np.arange(1, max_bins, dtype=np.float64)
    return lo + (hi - lo) * k / max_bins


def categorical_thresholds(n_categories: int) -> np.ndarray:
    """Thresholds ``0.5, 1.5, ..., c - 1.5``: one bin per integer code ``0..c-1``."""
    return np.arange(int(n_categories) - 1, dtype=np.float64) + 0.5


def quantile_thresholds(column: np.ndarray, max_bins: int = MAX_BINS) -> np.ndarray:
    """Data-dependent thresholds (NOT private): midpoints of distinct values or quantiles."""
    col = column[np.isfinite(column)]
    if col.size == 0:
        return np.empty(0)
    distinct = np.unique(col)
    if distinct.size <= max_bins:
        return (distinct[:-1] + distinct[1:]) / 2.0
    qs = np.quantile(col, np.linspace(0, 1, max_bins + 1)[1:-1])
    return np.unique(qs)


def fit_bin_mapper(
    X,
    *,
    strategy: str = "domain",
    feature_domain=None,
    categorical_features=None,
    n_categories=None,
    max_bins: int = MAX_BINS,
) -> BinMapper:
    """Build a :class:`BinMapper` for ``X``.

    With ``strategy="domain"`` only ``X.shape`` and the public metadata are used;
    ``feature_domain`` must then be given (``(d, 2)`` lows/highs). Categorical features
    (``categorical_features[f]`` with ``n_categories[f] > 0``) get one bin per code.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"binning must be one of {STRATEGIES}, got {strategy!r}")
    if not 2 <= max_bins <= MAX_BINS:
        raise ValueError(f"max_bins must be in [2, {MAX_BINS}], got {max_bins}")
    d = X.shape[1]
    cat = (
        np.zeros(d, dtype=bool)
        if categorical_features is None
        else np.asarray(categorical_features, dtype=bool)
    )
    ncat = np.zeros(d, dtype=np.int64) if n_categories is None else np.asarray(n_categories)
    if strategy == "domain":
        if feature_domain is None:
            raise ValueError("binning='domain' needs the public feature_domain")
        dom = np.asarray(feature_domain, dtype=np.float64)
        if dom.shape != (d, 2):
            raise ValueError(f"feature_domain must have shape ({d}, 2), got {dom.shape}")
    thresholds = []
    csc = sp.csc_matrix(X) if (strategy == "quantile" and sp.issparse(X)) else None
    for f in range(d):
        if cat[f] and 0 < ncat[f] <= MAX_BINS:
            thresholds.append(categorical_thresholds(int(ncat[f])))
        elif strategy == "domain":
            thresholds.append(domain_thresholds(dom[f, 0], dom[f, 1], max_bins))
        else:
            if csc is not None:
                col = csc[:, f].toarray().ravel()
            else:
                col = np.asarray(X[:, f], dtype=np.float64)
            thresholds.append(quantile_thresholds(col, max_bins))
    return BinMapper(thresholds=thresholds, strategy=strategy)
