"""The data layout a dense histogram build reads, as the compiled kernels take it.

A dense binned table is read as its dense features, plus either the exclusive bundles or
the row-sparse lists of its sparse features
(:class:`~dpexp.trees.sparse_features.SparseFeatureCodes`), plus optionally its
row-major codes (:class:`~dpexp.trees.row_codes.RowCodes`). :func:`dense_layout` turns
them into :class:`DenseLayout` once per fit. Settings and layouts reach the kernels as
named tuples (:class:`HistPlanSettings`, :class:`Bundles`, ...), which numba compiles
like plain tuples; callers pass them as plain tuples (:func:`as_named`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from dpexp.jit import njit
from dpexp.trees import parallel as par

_NO_INT = np.zeros(0, dtype=np.int64)


class Bundles(NamedTuple):
    """Exclusive bundles of a table's sparse features
    (:class:`~dpexp.trees.sparse_features.SparseFeatureCodes`): ``codes (n, n_bundles)``, value
    ``v`` of bundle ``c`` is code ``code[c, v]`` of feature ``feature[c, v]`` (-1: none),
    bundle ``c`` uses values ``0 .. values[c]-1``."""

    codes: np.ndarray
    feature: np.ndarray
    code: np.ndarray
    values: np.ndarray


class RowLists(NamedTuple):
    """Row-sparse lists of the sparse features: row ``r``'s non-default entries are
    ``feature[q], code[q]`` for ``q`` in ``indptr[r]:indptr[r+1]``."""

    indptr: np.ndarray
    feature: np.ndarray
    code: np.ndarray


class SparseTail(NamedTuple):
    """The sparse features (``features``), every feature's default bin (``default``,
    got by subtraction from the node total) and a bound of the sparse features' codes
    (``bins``)."""

    default: np.ndarray
    features: np.ndarray
    bins: int


class RowMajor(NamedTuple):
    """Row-major codes (:class:`~dpexp.trees.row_codes.RowCodes`): ``codes[r, c]`` is row
    ``r``'s bin in one flat histogram, column ``c`` owning bins ``offset[c]:offset[c+1]``
    (``codes`` with no rows: none)."""

    codes: np.ndarray
    offset: np.ndarray


class HistPlanSettings(NamedTuple):
    """How a build cuts its work (see :mod:`dpexp.trees.hist_plan`); the sums depend on
    the data's shapes only, never on the threads."""

    fblock: int  # columns per column task
    max_row_columns: int  # at most this many columns: row-chunk tasks over every column
    chunk_rows: int  # rows per row-chunk task, at least
    max_chunks: int  # row-chunk tasks per node, at most
    gather_rows: int  # rows per gather task
    sparse_chunk_rows: int  # rows per task over the row-sparse lists
    gathered: bool  # the caller keeps the statistics gathered in row order already
    # a parallel build only (neither changes a sum): its task groups, one per thread,
    threads: int
    # and the columns per task of a node of one row chunk when there are no row codes
    # (0: one task of every column), so that a depth's few small nodes fill the threads
    split_columns: int


@njit(cache=True, nogil=True)
def as_named(bundles, lists, tail, rows, settings):  # pragma: no cover
    """The named tuples of a build from plain ones (or named ones, unchanged). Callers
    pass plain tuples: numba types a named tuple argument in Python, a few microseconds
    per argument and call -- more than the whole build of a node of a few rows -- and a
    plain tuple in C."""
    return (Bundles(*bundles), RowLists(*lists), SparseTail(*tail), RowMajor(*rows),
            HistPlanSettings(*settings))


_NO_CODES = np.zeros((0, 0), dtype=np.uint8, order="F")
_NO_BUNDLES = Bundles(_NO_CODES, np.zeros((0, 1), dtype=np.int64),
                      np.zeros((0, 1), dtype=np.uint8), _NO_INT)
_NO_LISTS = RowLists(_NO_INT, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint8))
_NO_ROWS = RowMajor(np.zeros((0, 0), dtype=np.uint8), np.zeros(1, dtype=np.int64))


@dataclass(frozen=True)
class DenseLayout:
    """The kernel arguments that depend on a dense binned table only (its dense features,
    bundles or row-sparse lists, its row-major codes): made once per fit, not once per
    histogram build. ``per_row``: column updates per row (the work of a build);
    ``fblock``: columns per task of a column-task build (:func:`feature_block`)."""

    feats: np.ndarray
    bundles: Bundles
    lists: RowLists
    tail: SparseTail
    per_row: float
    fblock: int
    rows: RowMajor

    @property
    def n_columns(self) -> int:
        return int(self.feats.size + self.bundles.codes.shape[1])

    @cached_property
    def plain_tuples(self) -> tuple[tuple, tuple, tuple, tuple]:
        """``(bundles, lists, tail, rows)`` as plain tuples, the kernels' fast arguments
        (:func:`as_named`); made once per layout."""
        return tuple(self.bundles), tuple(self.lists), tuple(self.tail), tuple(self.rows)


def dense_layout(codes, sparse_codes=None, row_codes=None) -> DenseLayout:
    """:class:`DenseLayout` of ``codes (n, d)`` with its
    :class:`~dpexp.trees.sparse_features.SparseFeatureCodes` (None: every feature dense) and
    optionally its :class:`~dpexp.trees.row_codes.RowCodes` (tasks over every column of a
    node's rows then read those: the same histograms, faster)."""
    sc = sparse_codes
    if sc is None:
        feats = np.arange(codes.shape[1], dtype=np.int64)
        parts = (feats, _NO_BUNDLES, _NO_LISTS,
                 SparseTail(np.zeros(codes.shape[1], dtype=np.uint8), _NO_INT, 1), feats.size)
    elif sc.n_bundles:
        parts = (sc.dense_features,
                 Bundles(sc.bundle_codes, sc.bundle_feature, sc.bundle_code, sc.bundle_values),
                 _NO_LISTS, SparseTail(sc.default_bin, sc.sparse_features, sc.sparse_bins),
                 sc.dense_features.size + sc.n_bundles)
    else:
        parts = (sc.dense_features, _NO_BUNDLES, RowLists(sc.indptr, sc.feature, sc.code),
                 SparseTail(sc.default_bin, sc.sparse_features, sc.sparse_bins),
                 sc.dense_features.size + sc.mean_nnz)
    n_columns = parts[0].size + parts[1].codes.shape[1]
    rows = _NO_ROWS
    if row_codes is not None:
        if row_codes.n_columns != n_columns or row_codes.codes.shape[0] != codes.shape[0]:
            raise ValueError(f"row codes of shape {row_codes.codes.shape} do not fit a table "
                             f"of {codes.shape[0]} rows and {n_columns} histogram columns")
        rows = RowMajor(row_codes.codes, row_codes.offset)
    return DenseLayout(*parts, fblock=feature_block(n_columns), rows=rows)


def feature_block(n_features: int) -> int:
    """Features per dense histogram task: even (the kernel reads features in pairs and
    fours), about four tasks per thread for one node, at most :data:`~dpexp.trees.parallel.FEATURE_BLOCK`."""
    per_task = -(-n_features // (4 * par.n_threads()))
    return int(min(par.FEATURE_BLOCK, max(2, per_task + per_task % 2)))
