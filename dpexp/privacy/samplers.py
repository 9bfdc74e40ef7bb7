"""Exact, floating-point-safe samplers for the privacy mechanisms: the word streams.

Every sampler here consumes uniformly random 64-bit words (:func:`random_words`: a seeded
``numpy.random.Generator`` in experiments, :class:`~dpexp.privacy.randomness.SecureGenerator`
for real releases) and works in integer arithmetic only, so its law is exactly the one
stated -- no double-precision transform, hence none of the low-order-bit leakage Mironov
(CCS 2012) exploited in textbook Laplace samplers.

* :func:`uniform_below`, :func:`bernoulli`: rejection sampling from whole words.
* :func:`bernoulli_exp`: Bernoulli(exp(-num/den)), Canonne, Kamath & Steinke 2020 ("The
  Discrete Gaussian for Differential Privacy", NeurIPS), Algorithm 1.
* :func:`discrete_laplace`: P(z) ∝ exp(-|z| s/t), CKS Algorithm 2.
* :func:`discrete_gaussian`: P(z) ∝ exp(-z²/(2σ²)), σ² = t·m integers, CKS Algorithm 3.

The compiled kernels (:mod:`dpexp.privacy.sampler_kernels`) are resumable: when the word
buffer runs out in the middle of a sample they report where that sample began, and the
driver here (:func:`_run`) keeps the unread words, appends fresh ones and resumes there,
so the outputs are a deterministic function of the random stream whatever the buffer
size (``tests/privacy/test_samplers.py`` checks it). Their parameters come from
:mod:`dpexp.privacy.calibration`; the public grids of real-valued releases from
:mod:`dpexp.privacy.grids`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpexp.privacy.randomness import Rng, check_rng, random_words
from dpexp.privacy.sampler_kernels import (
    BERNOULLI,
    BERNOULLI_EXP,
    SCALE_LIMIT,
    SIGMA2_LIMIT,
    UNIFORM,
    discrete_gaussian_kernel,
    discrete_laplace_kernel,
    fill_draws,
)

__all__ = [
    "bernoulli",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "uniform_below",
]


def _run(kernel, a: int, b: int, size: int, rng: Rng, *, dtype: Any, words_per_sample: int,
         buffer_words: int | None, law: tuple[int, ...] = ()) -> np.ndarray:
    """Draw ``size`` samples with ``kernel`` (``kernel(words, out, start, a, b, *law)``),
    refilling the word buffer as it runs out.

    ``buffer_words`` (tests) fixes the size of every refill. By default a refill holds
    about the expected need of the remaining samples (``words_per_sample``, measured),
    at most ``_REFILL_WORDS`` so the buffer stays in cache; the outputs are the same.
    """
    rng = check_rng(rng)
    n = _check_size(size)
    out = np.empty(n, dtype=dtype)
    if n == 0:
        return out
    pa, pb = np.uint64(a), np.uint64(b)
    words = None
    i = 0
    while True:
        want = buffer_words or min(words_per_sample * (n - i) + 16, _REFILL_WORDS)
        fresh = random_words(rng, want)
        words = fresh if words is None else np.concatenate([words, fresh])
        i, pos = kernel(words, out, i, pa, pb, *law)
        if i >= n:
            return out
        words = words[pos:]  # the unfinished sample restarts from its first word


_REFILL_WORDS = 1 << 16  # 512 KiB of words at a time


def _check_size(size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 0:
        raise ValueError(f"size must be a non-negative integer, got {size!r}")
    return int(size)


def _check_buffer(buffer_words: int | None) -> int | None:
    if buffer_words is not None and int(buffer_words) < 1:
        raise ValueError(f"buffer_words must be >= 1, got {buffer_words!r}")
    return None if buffer_words is None else int(buffer_words)


def _positive_int(value: Any, name: str, limit: int = 1 << 64) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 < value < limit:
        raise ValueError(f"{name} must be an integer in [1, {limit}), got {value!r}")
    return int(value)


def uniform_below(bound: int, size: int, *, rng: Rng, buffer_words: int | None = None) -> np.ndarray:
    """``size`` integers uniform on ``[0, bound)`` (``uint64``), exactly, by rejection."""
    bound = _positive_int(bound, "bound")
    return _run(fill_draws, bound, 0, size, rng, dtype=np.uint64, words_per_sample=2,
                buffer_words=_check_buffer(buffer_words), law=(UNIFORM,))


def bernoulli(num: int, den: int, size: int, *, rng: Rng, buffer_words: int | None = None) -> np.ndarray:
    """``size`` exact Bernoulli(num/den) draws (bool), 0 <= num <= den < 2**64."""
    den = _positive_int(den, "den")
    if isinstance(num, bool) or not isinstance(num, int | np.integer) or not 0 <= num <= den:
        raise ValueError(f"num must be an integer in [0, den], got {num!r}")
    return _run(fill_draws, int(num), den, size, rng, dtype=np.bool_, words_per_sample=2,
                buffer_words=_check_buffer(buffer_words), law=(BERNOULLI,))


def bernoulli_exp(num: int, den: int, size: int, *, rng: Rng,
                  buffer_words: int | None = None) -> np.ndarray:
    """``size`` exact Bernoulli(exp(-num/den)) draws (bool): CKS 2020, Algorithm 1."""
    den = _positive_int(den, "den")
    if isinstance(num, bool) or not isinstance(num, int | np.integer) or not 0 <= num < 1 << 64:
        raise ValueError(f"num must be an integer in [0, 2**64), got {num!r}")
    return _run(fill_draws, int(num), den, size, rng, dtype=np.bool_, words_per_sample=4,
                buffer_words=_check_buffer(buffer_words), law=(BERNOULLI_EXP,))


def discrete_laplace(t: int, s: int, size: int, *, rng: Rng,
                     buffer_words: int | None = None) -> np.ndarray:
    """``size`` discrete Laplace integers (int64), P(z) ∝ exp(-|z| s / t): CKS 2020, Alg. 2.

    ``t`` and ``s`` are integers in [1, 2**48)
    (:func:`~dpexp.privacy.calibration.discrete_laplace_scale` rounds a
    scale up to such a pair). The law is exact except that a geometric run of more than
    2**14 - 2 successes (probability below e**-16383) is redrawn.
    """
    t = _positive_int(t, "t", SCALE_LIMIT)
    s = _positive_int(s, "s", SCALE_LIMIT)
    return _run(discrete_laplace_kernel, t, s, size, rng, dtype=np.int64, words_per_sample=9,
                buffer_words=_check_buffer(buffer_words))


def discrete_gaussian(t: int, m: int, size: int, *, rng: Rng,
                      buffer_words: int | None = None) -> np.ndarray:
    """``size`` discrete Gaussian integers (int64), P(z) ∝ exp(-z² / (2σ²)) with
    σ² = ``t * m`` < 2**52: CKS 2020, Algorithm 3
    (:func:`~dpexp.privacy.calibration.discrete_gaussian_variance` rounds a variance up
    to that form, t ≈ m ≈ σ).

    Candidates |Y| >= m + 2**32 are rejected without the acceptance test (it keeps
    integers in uint64, see ``sampler_kernels._dgauss_one``); they would pass it with probability below
    e**-2048, so the output's total variation from the exact law is below 2 e**-2048.
    """
    t = _positive_int(t, "t", SCALE_LIMIT)
    m = _positive_int(m, "m", SCALE_LIMIT)
    if t * m >= SIGMA2_LIMIT:
        raise ValueError(f"t * m must be below 2**52, got {t} * {m}")
    if not (m <= 2 * t + 2 and t <= 2 * m + 2):
        # correct for any t, but a candidate is accepted with probability ~exp(-(m-t)²/2tm)
        raise ValueError(f"t and m must be within a factor 2 (both ≈ σ), got {t} and {m}")
    return _run(discrete_gaussian_kernel, t, m, size, rng, dtype=np.int64, words_per_sample=13,
                buffer_words=_check_buffer(buffer_words))

