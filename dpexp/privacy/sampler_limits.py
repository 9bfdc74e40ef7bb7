"""The integer ranges the exact samplers work in (:mod:`dpexp.privacy.sampler_kernels`),
apart from the compiled kernels: calibrating a mechanism checks them without loading numba
(``dpexp report`` reads the formulas only)."""

from __future__ import annotations

__all__ = ["SCALE_LIMIT", "SIGMA2_LIMIT"]

#: Numerator and denominator of a discrete Laplace scale t/s stay below this. With
#: t < 2**48 the geometric part V is cut at V <= (2**62 - t) / t >= 2**14 - 1.
SCALE_LIMIT = 1 << 48
#: The discrete Gaussian's variance σ² = t·m (grid units) stays below this: then t, m
#: <= 2**26 + 1 and 2 t m < 2**53 (see ``sampler_kernels._dgauss_one``).
SIGMA2_LIMIT = 1 << 52
