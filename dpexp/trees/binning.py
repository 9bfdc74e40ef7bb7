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

The binned table itself is :class:`~dpexp.trees.binned_data.BinnedData`; the faster
layouts of its sparse features and its row-major codes are in
:mod:`dpexp.trees.sparse_features` and :mod:`dpexp.trees.row_codes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from dpexp.jit import njit
from dpexp.trees.binned_data import BAND_ROWS, BinnedData

MAX_BINS = 255
STRATEGIES = ("domain", "quantile")


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

    @cached_property
    def max_bins(self) -> int:
        return int(self.n_bins.max()) if self.thresholds else 1

    @cached_property
    def n_candidates(self) -> np.ndarray:
        """``n_candidates[f]``: the candidate splits of feature ``f`` (bins ``0 ..
        n_bins[f] - 2``), int64; read by every tree of a fit, so made once (not to be
        written)."""
        return np.maximum(self.n_bins - 1, 0).astype(np.int64)

    @cached_property
    def n_candidates_total(self) -> int:
        return int(self.n_candidates.sum())

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


@njit(cache=True, nogil=True)
def _grid_codes(block, table, n_thresholds, features, origins, inverse_steps, out):  # pragma: no cover
    """``out[i, f] = searchsorted(thresholds[f], block[i, f], side="left")`` (NaN: 0) for
    the grid ``features``: the grid position is the guess, then steps to the exact lower
    bound, so the codes equal the binary search's bit for bit (a binary search costs ~50 ns
    per value, the guess a few). ``block`` is row-major and ``out`` column-major: a band
    of ``BAND_ROWS`` rows is read once from memory and written a column at a time."""
    n = block.shape[0]
    for i0 in range(0, n, BAND_ROWS):
        i1 = min(i0 + BAND_ROWS, n)
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
