"""Row-major histogram codes of dense binned data (:class:`RowCodes`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpexp.jit import njit
from dpexp.trees.sparse_features import SparseFeatureCodes

# tables of at most this many histogram columns (dense features + bundles) and bins in
# all also get a row-major copy of their codes (:class:`RowCodes`): with few values per
# column they beat the column kernels, but a flat histogram past L1 and a table past L2
# lose to one column at a time (measurements: bench/HISTORY.md). Builds read row codes in
# their row tasks only, which cover every column when there are at most
# ``dpexp.trees.histograms.ROW_TASK_MAX_COLUMNS`` (32 as well).
ROW_CODES_MAX_COLUMNS = 32
ROW_CODES_MAX_BINS = 256


@dataclass(frozen=True)
class RowCodes:
    """The histogram columns of dense codes -- dense features, then bundles, in the
    order of :class:`~dpexp.trees.sparse_features.SparseFeatureCodes` (all features when
    there is none) -- row by row.

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
