"""The binned table (dpexp.trees.binned_data): row gathers of dense codes."""

from __future__ import annotations

import numpy as np

from dpexp.trees.binned_data import BinnedData, take_codes


def test_gather_from_the_row_major_copy_equals_the_column_gather():
    """``take_codes`` through :meth:`BinnedData.codes_by_row` (bands of rows) gives the
    bytes of the column-by-column gather, for any row count and order."""
    rng = np.random.default_rng(4)
    codes = np.asfortranarray(rng.integers(0, 255, size=(1001, 37), dtype=np.uint8))
    data = BinnedData(1001, 37, codes=codes)
    by_row = data.codes_by_row()
    assert by_row.flags.c_contiguous and np.array_equal(by_row, codes)
    assert data.codes_by_row() is by_row  # cached
    for rows in (np.arange(0), np.array([5]), rng.choice(1001, 130, replace=False),
                 np.sort(rng.choice(1001, 700, replace=False)), np.array([3, 3, 1000, 0])):
        got = take_codes(codes, rows, by_row)
        assert got.flags.f_contiguous
        np.testing.assert_array_equal(got, take_codes(codes, rows))
        np.testing.assert_array_equal(got, codes[rows])
