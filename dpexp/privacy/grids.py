"""The public grids on which real values are released, and the release itself.

A real value is released as ``g * integer`` with ``g = 2**exponent`` fixed by the privacy
parameters only (never by the data): the value is rounded to the grid, integer noise
from the exact samplers (:mod:`dpexp.privacy.samplers`, Canonne, Kamath & Steinke 2020)
is added, and the result is an exactly representable double. The set of possible
outputs is then the grid whatever the data, so Mironov's (CCS 2012) low-order-bit
attack has nothing to read.

* :func:`laplace_grid`: the grid and discrete Laplace scale of an epsilon release;
* :func:`gaussian_grid`: the grid and discrete Gaussian variance of an (epsilon, delta)
  release;
* :func:`grid_release`: the value rounded to the grid plus the integer noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dpexp.errors import check_epsilon
from dpexp.jit import njit
from dpexp.privacy.calibration import (
    analytic_gaussian_sigma,
    discrete_gaussian_delta,
    discrete_gaussian_variance,
    discrete_laplace_scale,
    gaussian_sigma_classic,
)
from dpexp.privacy.sampler_kernels import DGAUSS_TV, SIGMA2_LIMIT

__all__ = ["GaussianGrid", "LaplaceGrid", "gaussian_grid", "grid_release", "laplace_grid"]

#: Laplace grid: sensitivity / g in [2**20, 2**21), so rounding adds < 2**-20 relative.
LAPLACE_GRID_BITS = 20
#: Gaussian grid: σ / g >= 2**11 and sensitivity / g >= 2**10 (rounding adds < 0.1 %),
#: while σ / g <= 2**25 (the sampler's integer range).
GAUSSIAN_GRID_BITS = (11, 10, 25)


def _grid_steps(sensitivity: float, exponent: int) -> int:
    """floor(sensitivity / 2**exponent) + 1: rounding two values to the grid changes
    their distance by less than one step, |rint(a) - rint(b)| <= floor(|a - b|) + 1."""
    return math.floor(Fraction(sensitivity) / Fraction(2) ** exponent) + 1


def _check_grid_sensitivity(sensitivity: float) -> float:
    if not (2.0**-900 <= sensitivity <= 2.0**900):
        raise ValueError(
            f"sensitivity must be 0 or in [2**-900, 2**900] for a grid release, got {sensitivity!r}")
    return sensitivity


@dataclass(frozen=True)
class LaplaceGrid:
    """A grid Laplace release: step ``2**exponent``, integer sensitivity ``steps`` (grid
    units) and the discrete Laplace scale ``t/s`` >= steps / epsilon (grid units)."""

    exponent: int
    steps: int
    t: int
    s: int


@lru_cache(maxsize=512)
def laplace_grid(*, epsilon: float, sensitivity: float) -> LaplaceGrid:
    """The public grid of a Laplace release with (epsilon, sensitivity).

    ``g = 2**exponent`` with ``sensitivity / g`` in [2**20, 2**21): a function of the
    sensitivity only (never of the data), fine enough that rounding adds less than
    2**-20 of the sensitivity. The integer sensitivity is ``floor(sensitivity/g) + 1``.
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = _check_grid_sensitivity(float(sensitivity))
    exponent = math.frexp(sensitivity)[1] - 1 - LAPLACE_GRID_BITS
    steps = _grid_steps(sensitivity, exponent)
    t, s = discrete_laplace_scale(epsilon=epsilon, sensitivity=steps)
    return LaplaceGrid(exponent, steps, t, s)


@dataclass(frozen=True)
class GaussianGrid:
    """A grid Gaussian release: step ``2**exponent``, integer L2 sensitivity ``steps``
    and the discrete Gaussian's variance ``sigma2 = t * m`` (grid units)."""

    exponent: int
    steps: int
    t: int
    m: int

    @property
    def sigma2(self) -> int:
        return self.t * self.m


def _gaussian_exponent(sigma: float, sensitivity: float) -> int:
    """The grid exponent: σ/g >= 2**11 and Δ/g >= 2**10, but σ/g <= 2**25."""
    fine_sigma, fine_sens, coarsest = GAUSSIAN_GRID_BITS
    log_sigma = math.frexp(sigma)[1] - 1  # floor(log2 σ)
    exponent = min(log_sigma - fine_sigma, math.frexp(sensitivity)[1] - 1 - fine_sens)
    return max(exponent, log_sigma - coarsest)


@lru_cache(maxsize=512)
def gaussian_grid(*, epsilon: float, delta: float, sensitivity: float, calibration: str) -> GaussianGrid:
    """The public grid and discrete Gaussian variance of an (epsilon, delta) release.

    ``calibration`` is ``"classic"`` or ``"analytic"`` (Balle & Wang 2018). The grid step
    ``g = 2**exponent`` (σ/g >= 2**11 and sensitivity/g >= 2**10, with σ/g <= 2**25; a
    function of the privacy parameters only) is fixed from σ(sensitivity); σ is then
    recalibrated for the inflated integer sensitivity ``floor(sensitivity/g) + 1``, σ²
    rounded *up* to t·m, and raised by 0.1 % steps until the discrete Gaussian's own δ
    (CKS Theorem 7, plus the sampler's ``DGAUSS_TV``) is <= delta. The grid costs noise,
    not privacy: σ grows by the factor (floor(Δ/g) + 1)/(Δ/g) < 1.001 unless σ/Δ > 2**15
    (epsilon below ~1e-4 at delta = 1e-5).
    """
    calibrate = {"classic": gaussian_sigma_classic, "analytic": analytic_gaussian_sigma}.get(calibration)
    if calibrate is None:
        raise ValueError(f"calibration must be 'classic' or 'analytic', got {calibration!r}")
    sigma = calibrate(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    sensitivity = _check_grid_sensitivity(float(sensitivity))
    exponent = _gaussian_exponent(sigma, sensitivity)
    steps = _grid_steps(sensitivity, exponent)
    target = Fraction(calibrate(epsilon=epsilon, delta=delta, sensitivity=float(steps))) ** 2
    slack = (1.0 + math.exp(epsilon)) * DGAUSS_TV
    while True:
        if target >= SIGMA2_LIMIT:
            raise ValueError(
                f"sigma / sensitivity = {sigma / sensitivity:.3g} is too large for the grid "
                "Gaussian sampler: raise epsilon")
        t, m = discrete_gaussian_variance(target)
        if discrete_gaussian_delta(epsilon=epsilon, sigma2=t * m, sensitivity=steps) + slack <= delta:
            return GaussianGrid(exponent, steps, t, m)
        target = Fraction(t * m) * Fraction(1001, 1000)


@njit(cache=True, nogil=True)
def _grid_add(values: np.ndarray, exponent: int, noise: np.ndarray, out: np.ndarray) -> int:  # pragma: no cover
    """``out[i] = 2**e * (rint(values[i] / 2**e) + noise[i])``; returns how many elements
    fell outside |integer| < 2**53 (then ``out`` is not to be used).

    ``ldexp`` scales by a power of two exactly (a result too small to be normal rounds to
    an integer 0 either way); rint rounds half to even, a fixed function of the value.
    """
    limit = 2.0**53
    bad = 0
    for i in range(values.shape[0]):
        k = np.rint(math.ldexp(values[i], -exponent))
        if not abs(k) < limit / 2:
            bad += 1
            continue
        total = np.int64(k) + noise[i]
        if not abs(total) < np.int64(1) << np.int64(53):
            bad += 1
            continue
        out[i] = math.ldexp(float(total), exponent)
    return bad


def grid_release(value: np.ndarray, exponent: int, noise: np.ndarray) -> np.ndarray:
    """``2**exponent * (rint(value / 2**exponent) + noise)``: the value rounded to the
    public grid (round half to even, a fixed function), plus integer noise, as doubles.

    The result is exactly ``g * k`` for an integer ``|k| < 2**53`` (representable, so
    the set of possible outputs is the grid whatever the data); a value too large for
    that (``|value| >= 2**(52 + exponent)``) raises ``ValueError``.
    """
    flat = np.ascontiguousarray(value, dtype=np.float64).reshape(-1)
    out = np.empty(flat.size, dtype=np.float64)
    bad = _grid_add(flat, int(exponent), np.ascontiguousarray(noise, dtype=np.int64).reshape(-1), out)
    if bad:
        raise ValueError(f"value too large for the release grid 2**{exponent} "
                         f"(|value| must stay below 2**{52 + exponent})")
    return out.reshape(np.shape(value))
