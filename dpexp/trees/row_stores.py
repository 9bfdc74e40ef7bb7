"""Where a growing tree keeps its rows: the :class:`RowStore` interface and its three
storages, plus the :class:`GrowWorkspace` of scratch arrays the trees of a fit share.

The grower (:func:`dpexp.trees.grower.grow_tree`) sees one interface whatever the data:
an ``order`` array of row ids partitioned by node (node ``j`` of a depth owns
``order[starts[j]:ends[j]]``), a histogram build over those nodes and a stable partition
of them. The storages differ only in speed, never in a result:

* :class:`InPlaceRows` -- dense tables that fit in cache: ``order`` is partitioned in
  place, each build gathers the statistics it reads;
* :class:`MovedStatsRows` -- large dense tables: the statistics are gathered once in row
  order and every partition moves them along with their rows into a second buffer
  (double buffering), so builds read them in order, never at random;
* :class:`SparseRows` -- column-compressed data.

A build sees the same values in the same positions in every storage, and partitions are
stable, so the choice never changes a bit of a tree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dpexp.trees.binned_data import BinnedData
from dpexp.trees.hist_layout import DenseLayout, dense_layout
from dpexp.trees.hist_tasks import gather_rows
from dpexp.trees.histograms import (
    build_hist_sparse,
    dense_hist_into,
    merged_possible,
    plan_settings,
)
from dpexp.trees.partition import (
    copy_if_sorted,
    is_sorted,
    partition_dense,
    partition_rows,
    partition_sparse,
)

# From this many rows a tree keeps its statistics in row order, moved along by every
# partition (MovedStatsRows): below it the table is cache-resident and gathering the
# statistics per build is cheaper.
MOVE_STATS_MIN_ROWS = 1 << 17


class GrowWorkspace:
    """Scratch arrays that the trees of one fit share (``grow_tree(..., workspace=...)``).

    A large table's row buffers are tens of megabytes; allocated afresh for every tree
    they are paid again in page faults each time. Arrays only grow; callers get views of
    the first elements. Not for trees grown concurrently.
    """

    def __init__(self) -> None:
        self._flat: dict[object, np.ndarray] = {}
        self._layout: tuple[BinnedData, DenseLayout] | None = None

    def layout(self, data: BinnedData) -> DenseLayout:
        """The histogram kernels' :func:`~dpexp.trees.hist_layout.dense_layout` of dense
        ``data`` (made once for the trees of a fit, which all grow on the same table)."""
        if self._layout is None or self._layout[0] is not data:
            self._layout = (data, dense_layout(data.codes, data.sparse_codes(),
                                               data.row_codes()))
        return self._layout[1]

    def array(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        """A C-contiguous ``shape`` array (contents undefined) backed by buffer ``name``."""
        size = math.prod(shape)
        buf = self._flat.get(name)
        if buf is None or buf.dtype != np.dtype(dtype) or buf.size < size:
            buf = np.empty(max(size, 1), dtype=dtype)
            self._flat[name] = buf
        return buf[:size].reshape(shape)

    def zeros(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """A float64 ``shape`` array backed by buffer ``name``, zero when first allocated
        and afterwards as its users left it. Histograms use this: no kernel writes the
        bins past a feature's codes, so those stay zero without being cleared again
        (one buffer per histogram shape, so the positions of those bins never move)."""
        key = (name, shape[1:])
        size = math.prod(shape)
        buf = self._flat.get(key)
        if buf is None or buf.size < size:
            buf = np.zeros(max(size, 1))
            self._flat[key] = buf
        return buf[:size].reshape(shape)


class RowStore(Protocol):
    """A tree's rows, partitioned by node (``order``)."""

    order: np.ndarray
    # the last statistic is a unit row count (``unit_last``), so the children's row
    # counts are known from their totals and the last depth need not be partitioned
    counts_rows: bool

    def build(self, starts: np.ndarray, ends: np.ndarray, out: np.ndarray,
              slots: np.ndarray, n_rows: int) -> None:
        """Histograms of the nodes ``order[starts[j]:ends[j]]`` (``n_rows`` rows in all)
        into ``out[slots[j]]``. IN: all but ``out``; OUT: ``out[slots]``."""
        ...

    def partition(self, starts: np.ndarray, ends: np.ndarray, features: np.ndarray,
                  bins: np.ndarray, *, with_stats: bool) -> np.ndarray:
        """Stable partition of every node on ``code[features[j]] <= bins[j]`` (feature
        -1: kept as is); rows outside the nodes keep their positions. Returns the rows
        going left per node. ``with_stats`` False: the statistics' positions will not be
        read again (below the last split), so they need not follow."""
        ...


@dataclass(frozen=True)
class InPlaceKernelArgs:
    """What the compiled level loop (:mod:`dpexp.trees.fused_levels`) reads of an
    :class:`InPlaceRows` store: the arguments its builds and partitions pass to the
    kernels, in the kernels' order (``layout``: the dense layout's features and plain
    tuples; ``settings``: the build's plain :class:`~dpexp.trees.hist_layout.HistPlanSettings`;
    ``per_row``: column updates per row, the work measure of a build)."""

    codes_by_feature: np.ndarray
    codes: np.ndarray
    stats: np.ndarray
    order: np.ndarray
    scratch: np.ndarray
    layout: tuple
    settings: tuple
    per_row: float

    def head(self) -> tuple:
        """The leading arguments of the compiled level kernels."""
        return self.codes_by_feature, self.codes, self.stats, self.order, self.scratch


class InPlaceRows:
    """Dense, cache-sized: ``order`` partitioned in place, statistics gathered per build
    into one scratch buffer."""

    def __init__(self, data: BinnedData, stats: np.ndarray, order: np.ndarray,
                 ws: GrowWorkspace, unit_last: bool) -> None:
        self.order = order
        self.counts_rows = bool(unit_last) and stats.shape[1] > 0
        self._data, self._stats = data, stats
        self._layout = ws.layout(data)
        k = stats.shape[1] - int(self.counts_rows)
        self._scratch = ws.array("stats_a", (k, order.size), np.float64)

    def build(self, starts, ends, out, slots, n_rows) -> None:
        dense_hist_into(self._data.codes, self._stats, self.order, starts, ends, out, slots,
                        scratch=self._scratch, gathered=False, unit_last=self.counts_rows,
                        layout=self._layout, n_rows=n_rows)

    def partition(self, starts, ends, features, bins, *, with_stats: bool) -> np.ndarray:
        return partition_dense(self._data.codes_by_feature(), self.order, starts, ends,
                               features, bins)

    def kernel_args(self, threads: int) -> InPlaceKernelArgs | None:
        """The compiled level loop's view of this store (``threads``: numba's thread
        count now), or None when one of its builds could take the one-pass route of
        :mod:`dpexp.trees.level_histograms` (which the compiled loop does not run: such
        trees take the reference path)."""
        lay = self._layout
        if merged_possible(self._data.codes, self._stats, lay):
            return None
        return InPlaceKernelArgs(
            self._data.codes_by_feature(), self._data.codes, self._stats, self.order,
            self._scratch, (lay.feats, *lay.plain_tuples), plan_settings(lay, threads=threads),
            float(lay.per_row))


class MovedStatsRows:
    """Dense, large: the rows and their statistics in row order ``(K, n)``, double
    buffered: every partition writes the level's rows, statistics alongside, into the
    other buffer (:func:`~dpexp.trees.partition.partition_rows`)."""

    def __init__(self, data: BinnedData, stats: np.ndarray, order: np.ndarray,
                 ws: GrowWorkspace, unit_last: bool) -> None:
        self.order = order
        self.counts_rows = bool(unit_last) and stats.shape[1] > 0
        self._data, self._stats, self._ws = data, stats, ws
        self._layout = ws.layout(data)
        self._given = order  # may be the caller's array: read, never written
        m, k = order.size, stats.shape[1] - int(self.counts_rows)
        self.ordered = ws.array("stats_a", (k, m), np.float64)
        gather_rows(stats, order, self.ordered)
        self._spare = (ws.array("order_b", (m,), order.dtype),
                       ws.array("stats_b", (k, m), np.float64))
        self._mask = ws.array("mask", (m,), np.uint8)

    def build(self, starts, ends, out, slots, n_rows) -> None:
        dense_hist_into(self._data.codes, self._stats, self.order, starts, ends, out, slots,
                        scratch=self.ordered, gathered=True, unit_last=self.counts_rows,
                        layout=self._layout, n_rows=n_rows)

    def partition(self, starts, ends, features, bins, *, with_stats: bool) -> np.ndarray:
        codes = self._data.codes_by_feature()
        out, out_stats = self._spare
        if out is self._given:
            out = self._ws.array("order_a", out.shape, out.dtype)
        covered = int((ends - starts).sum())
        if covered < self.order.size:  # positions outside the nodes: closed leaves
            out[:] = self.order
            if with_stats:
                out_stats[:] = self.ordered
        if with_stats:
            n_left = partition_rows(codes, self.order, starts, ends, features, bins, out,
                                    ordered=self.ordered, out_ordered=out_stats,
                                    mask=self._mask)
            self._spare = (self.order, self.ordered)
            self.order, self.ordered = out, out_stats
        else:
            n_left = partition_rows(codes, self.order, starts, ends, features, bins, out,
                                    mask=self._mask)
            self._spare = (self.order, out_stats)
            self.order = out
        return n_left


class SparseRows:
    """Column-compressed codes: ``order`` partitioned in place, histograms by column
    scans (:func:`~dpexp.trees.histograms.build_hist_sparse`)."""

    counts_rows = False  # the sparse kernels store every statistic

    def __init__(self, data: BinnedData, stats: np.ndarray, order: np.ndarray) -> None:
        self.order = order
        self._data, self._stats = data, stats

    def build(self, starts, ends, out, slots, n_rows) -> None:
        d = self._data
        out[slots] = build_hist_sparse(d.indptr, d.rows, d.values, d.zero_bin, self._stats,
                                       self.order, starts, ends, d.n_rows, out.shape[2])

    def partition(self, starts, ends, features, bins, *, with_stats: bool) -> np.ndarray:
        d = self._data
        return partition_sparse(d.indptr, d.rows, d.values, d.zero_bin, self.order, starts,
                                ends, features, bins, d.n_rows)


def row_store(data: BinnedData, stats: np.ndarray, rows: np.ndarray, ws: GrowWorkspace,
              unit_last: bool = False, *, order_in_workspace: bool = False) -> RowStore:
    """The storage for a tree grown on the rows ``rows`` (any order) of ``data``, its
    ``order`` sorted. ``stats``: C-contiguous float64 ``(n, K)``. The caller's ``rows``
    are never written. ``order_in_workspace``: a dense table's ``order`` of fewer than
    :data:`MOVE_STATS_MIN_ROWS` rows is kept in ``ws`` (as the larger tables' are), not
    in a new array: the caller reads it before the next tree (no page faults afresh)."""
    order = np.asarray(rows, dtype=np.int64)
    if order_in_workspace and not data.is_sparse and order.size < MOVE_STATS_MIN_ROWS:
        buf = ws.array("order_in_place", order.shape, np.int64)
        order = buf if copy_if_sorted(order, buf) else np.sort(order)
    elif not is_sorted(order):
        order = np.sort(order)
    elif data.is_sparse or order.size < MOVE_STATS_MIN_ROWS:
        order = order.copy()  # partitioned in place; MovedStatsRows never writes it
    if data.is_sparse:
        return SparseRows(data, stats, order)
    if order.size >= MOVE_STATS_MIN_ROWS:
        return MovedStatsRows(data, stats, order, ws, unit_last)
    return InPlaceRows(data, stats, order, ws, unit_last)
