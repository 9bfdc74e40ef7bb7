"""The binned training matrix (:class:`BinnedData`): dense ``uint8`` codes or their
column-compressed non-zeros, with the derived layouts the histogram kernels read, built
once per table; and row gathers of dense codes (:func:`take_codes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from dpexp.jit import njit
from dpexp.trees.row_codes import RowCodes, row_major_codes
from dpexp.trees.sparse_features import SparseFeatureCodes, sparse_feature_codes

# largest C-ordered code matrix that also gets a column-major copy for row partitions
COLUMN_COPY_MAX_BYTES = 64 << 20
BAND_ROWS = 64  # rows per band of the row-major gathers: 64 rows of a few hundred codes fit L1


@dataclass
class BinnedData:
    """Binned training matrix: dense ``codes (n, d)`` or column-compressed non-zeros.

    Dense: ``codes`` is ``(n_rows, n_features)`` uint8, column-major (Fortran order) when
    made by :meth:`~dpexp.trees.binning.BinMapper.transform`, and the sparse fields are
    ``None``. Sparse: ``indptr (d+1,)``, ``rows (nnz,) int32`` and ``values (nnz,)
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


def take_codes(codes: np.ndarray, rows: np.ndarray, by_row: np.ndarray | None = None
               ) -> np.ndarray:
    """``codes[rows]`` in column-major order (the layout
    :meth:`~dpexp.trees.binning.BinMapper.transform` makes),
    read from ``by_row`` (the same codes row-major, :meth:`BinnedData.codes_by_row`) when
    given: the same bytes, a band of rows at a time."""
    out = np.empty((rows.size, codes.shape[1]), dtype=np.uint8, order="F")
    if by_row is None:
        _take_columns(codes, rows, out)
    else:
        _take_rows(by_row, rows, out)
    return out


@njit(cache=True, nogil=True)
def _take_rows(by_row, rows, out):  # pragma: no cover
    n = rows.shape[0]
    for i0 in range(0, n, BAND_ROWS):
        i1 = min(i0 + BAND_ROWS, n)
        for f in range(by_row.shape[1]):
            for i in range(i0, i1):
                out[i, f] = by_row[rows[i], f]


@njit(cache=True, nogil=True)
def _to_rows(codes, out):  # pragma: no cover
    """``out[i, f] = codes[i, f]``: a column-major table copied row-major, band by band."""
    n = codes.shape[0]
    for i0 in range(0, n, BAND_ROWS):
        i1 = min(i0 + BAND_ROWS, n)
        for f in range(codes.shape[1]):
            for i in range(i0, i1):
                out[i, f] = codes[i, f]


@njit(cache=True, nogil=True)
def _take_columns(codes, rows, out):  # pragma: no cover
    for f in range(codes.shape[1]):  # a column-major table is read one column at a time
        for i in range(rows.shape[0]):
            out[i, f] = codes[rows[i], f]
