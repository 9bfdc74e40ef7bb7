"""add_pair: one histogram update of the GBDT case, the same sums as two scalar adds."""

import numpy as np
import pytest
from numba import njit

from dpexp.trees.pair_add import add_pair


@njit(cache=False)
def _fill_3d(hist, codes, g, h):
    for p in range(codes.shape[0]):
        for f in range(codes.shape[1]):
            add_pair(hist, (f, codes[p, f]), g[p], h[p])


@njit(cache=False)
def _fill_4d(hist, slot, codes, g, h):
    for p in range(codes.shape[0]):
        for f in range(codes.shape[1]):
            add_pair(hist, (slot[p], f, codes[p, f]), g[p], h[p])


@njit(cache=False)
def _fill_2d(hist, codes, g):
    for p in range(codes.shape[0]):
        add_pair(hist, (codes[p],), g[p], 1.0)


def _data(n=3000, d=5, bins=7, seed=0):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, bins, size=(n, d)).astype(np.uint8)
    return codes, rng.normal(size=n) * 1e3, rng.uniform(size=n)


def _scalar_3d(codes, g, h, bins, start=0.0):
    out = np.full((codes.shape[1], bins, 2), start)
    for p in range(codes.shape[0]):  # the same order of additions as the kernels
        for f in range(codes.shape[1]):
            out[f, codes[p, f], 0] += g[p]
            out[f, codes[p, f], 1] += h[p]
    return out


def test_three_axes_same_bits_as_scalar_adds():
    codes, g, h = _data()
    hist = np.zeros((codes.shape[1], 7, 2))
    _fill_3d(hist, codes, g, h)
    np.testing.assert_array_equal(hist, _scalar_3d(codes, g, h, 7))


def test_four_axes_and_a_wider_last_axis_leave_other_entries_alone():
    codes, g, h = _data(n=500)
    slot = (np.arange(500) % 3).astype(np.int32)
    hist = np.full((3, codes.shape[1], 7, 3), -5.0)  # third statistic: never written
    _fill_4d(hist, slot, codes, g, h)
    want = np.full_like(hist, -5.0)
    for j in range(3):
        rows = slot == j
        want[j, ..., :2] = _scalar_3d(codes[rows], g[rows], h[rows], 7, start=-5.0)
    np.testing.assert_array_equal(hist, want)


def test_two_axes_unit_hessian_counts_rows():
    codes, g, _ = _data(n=400, d=1)
    hist = np.zeros((7, 2))
    _fill_2d(hist, codes[:, 0], g)
    np.testing.assert_array_equal(hist[:, 1], np.bincount(codes[:, 0], minlength=7))


def test_not_contiguous_falls_back_to_scalar_adds():
    codes, g, h = _data(n=300)
    hist = np.zeros((codes.shape[1], 7, 2), order="F")
    _fill_3d(hist, codes, g, h)
    np.testing.assert_array_equal(hist, _scalar_3d(codes, g, h, 7))


def test_pure_python_call():
    hist = np.zeros((2, 3, 2))
    add_pair(hist, (1, 2), 0.5, 2.0)
    add_pair(hist, (1, 2), 0.25, 1.0)
    assert hist[1, 2].tolist() == [0.75, 3.0]
    assert hist.sum() == 3.75


def test_contiguous_update_is_one_two_lane_add():
    codes, g, h = _data(n=10)
    _fill_3d(np.zeros((codes.shape[1], 7, 2)), codes, g, h)
    llvm = next(iter(_fill_3d.inspect_llvm().values()))
    assert "fadd <2 x double>" in llvm


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_other_dtypes_use_scalar_adds(dtype):
    codes, g, h = _data(n=50)
    hist = np.zeros((codes.shape[1], 7, 2), dtype=dtype)
    _fill_3d(hist, codes, g.astype(dtype), h.astype(dtype))
    want = _scalar_3d(codes, g.astype(dtype), h.astype(dtype), 7).astype(dtype)
    np.testing.assert_allclose(hist, want, rtol=1e-5)
