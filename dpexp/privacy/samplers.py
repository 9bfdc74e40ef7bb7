"""Exact, floating-point-safe samplers for the privacy mechanisms.

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
* :func:`laplace_grid` / :func:`gaussian_grid`: the public grid ``g = 2**exponent`` (from
  the privacy parameters only, never from the data) on which real values are released
  as ``g * integer``, exactly representable doubles.

Resumable kernels. The compiled kernels read words from a buffer. When it runs out in
the middle of a sample they stop and report the sample index and the position of that
sample's first word; the driver keeps the unread words, appends fresh ones and resumes
there. Each sample is therefore a function of the words from its first word on, and the
outputs are a deterministic function of the random stream whatever the buffer size
(``tests/privacy/test_samplers.py`` checks it).

Integer ranges. Every intermediate fits in uint64/int64; each bound is proved where it
is used. Two loops are cut at a bound whose probability of being reached is
astronomically small (the geometric part of the discrete Laplace, ``P <= e**-16383``;
the candidates of the discrete Gaussian beyond m + 2**32, accepted with ``P <=
e**-2048``); the docstrings state the resulting total-variation bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
from numba import njit
from scipy.special import ndtr

from dpexp.errors import check_epsilon
from dpexp.privacy.randomness import Rng, check_rng, random_words

__all__ = [
    "GaussianGrid",
    "LaplaceGrid",
    "bernoulli",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_gaussian_delta",
    "discrete_gaussian_variance",
    "discrete_laplace",
    "discrete_laplace_kernel",
    "discrete_laplace_rows",
    "discrete_laplace_scale",
    "gaussian_grid",
    "grid_release",
    "laplace_grid",
    "random_words",
    "uniform_below",
]

_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_U63 = np.uint64(63)
_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_TWO62 = np.uint64(1 << 62)
_TWO48 = np.uint64(1 << 48)
_TWO16 = np.uint64(1 << 16)
_GONE = np.int64(-1)  # position returned when the buffer ran out

#: Numerator and denominator of a discrete Laplace scale t/s stay below this. With
#: t < 2**48 the geometric part V is cut at V <= (2**62 - t) / t >= 2**14 - 1.
SCALE_LIMIT = 1 << 48
#: The discrete Gaussian's variance σ² = t·m (grid units) stays below this: then t, m
#: <= 2**26 + 1 and 2 t m < 2**53 (see ``_dgauss_one``).
SIGMA2_LIMIT = 1 << 52
#: Laplace grid: sensitivity / g in [2**20, 2**21), so rounding adds < 2**-20 relative.
LAPLACE_GRID_BITS = 20
#: Gaussian grid: σ / g >= 2**11 and sensitivity / g >= 2**10 (rounding adds < 0.1 %),
#: while σ / g <= 2**25 (the sampler's integer range).
GAUSSIAN_GRID_BITS = (11, 10, 25)
#: Upper bound on the total variation between ``discrete_gaussian`` and the exact law
#: (the cut at |Y| >= m + 2**32: 2 e**-2048 < 1e-800, so below any double), added to
#: the computed delta as the smallest positive double.
DGAUSS_TV = 5e-324


# --------------------------------------------------------------------------- kernels
#
# Every helper takes (words, pos, ...) and returns (value, new pos); pos == -1 means
# the buffer ran out and the caller must give up the current sample.


@njit(cache=True, nogil=True)
def _below(words: np.ndarray, pos: int, m: np.uint64) -> tuple:  # pragma: no cover
    """Uniform integer in [0, m) for 1 <= m < 2**64, by rejection from whole words.

    ``r = 2**64 mod m`` (computed as ``(2**64 - m) mod m`` in uint64); words below
    ``2**64 - r``, a multiple of m, are accepted and reduced mod m: exactly uniform.
    m = 1 consumes no word. A word is rejected with probability r / 2**64 < m / 2**64.
    """
    if m <= _ONE:
        return _ZERO, pos
    if m & (m - _ONE) == _ZERO:  # a power of two: the low bits, no rejection, no division
        if pos >= words.shape[0]:
            return _ZERO, _GONE
        return words[pos] & (m - _ONE), pos + 1
    r = (_ZERO - m) % m
    while True:
        if pos >= words.shape[0]:
            return _ZERO, _GONE
        w = words[pos]
        pos += 1
        if r == _ZERO or w < _ZERO - r:
            return w % m, pos


@njit(cache=True, nogil=True)
def _bernoulli(words: np.ndarray, pos: int, num: np.uint64, den: np.uint64) -> tuple:  # pragma: no cover
    """Bernoulli(num/den), 0 <= num <= den, den >= 1, from whole words by rejection.

    den a power of two: the low bits of one word, compared with num. Otherwise
    q = floor(2**64/den) = (2**64 - 1) // den (den does not divide 2**64); words below
    den*q < 2**64 are accepted, and each of the den values of w // q has q of them, so
    w < num*q (<= den*q) has probability num/den exactly. One division per draw.
    """
    if num >= den:  # probability 1 (and 0 below): decided without a word
        return True, pos
    if num == _ZERO:
        return False, pos
    if den & (den - _ONE) == _ZERO:
        if pos >= words.shape[0]:
            return False, _GONE
        return (words[pos] & (den - _ONE)) < num, pos + 1
    q = _MAX // den
    lim = q * den
    while True:
        if pos >= words.shape[0]:
            return False, _GONE
        w = words[pos]
        pos += 1
        if w < lim:
            return w < num * q, pos


@njit(cache=True, nogil=True)
def _bernoulli_over_k(words: np.ndarray, pos: int, num: np.uint64, den: np.uint64,
                      k: np.uint64) -> tuple:  # pragma: no cover
    """Bernoulli(num / (den k)) for num <= den, k >= 1.

    One draw with denominator den*k when den <= (2**64 - 1) // k (then den*k < 2**64); else the
    product of the independent Bernoulli(num/den) and Bernoulli(1/k), the same law.
    """
    # den < 2**48 and k < 2**16 bound den*k below 2**64 without a division
    if (den < _TWO48 and k < _TWO16) or den <= _MAX // k:
        return _bernoulli(words, pos, num, den * k)
    a, pos = _bernoulli(words, pos, num, den)
    if pos < 0 or not a:
        return False, pos
    return _bernoulli(words, pos, _ONE, k)


@njit(cache=True, nogil=True)
def _bern_exp_unit(words: np.ndarray, pos: int, num: np.uint64, den: np.uint64) -> tuple:  # pragma: no cover
    """Bernoulli(exp(-γ)) for γ = num/den in [0, 1]: CKS 2020, Algorithm 1 (γ <= 1 branch).

    K = 1; while Bernoulli(γ/K): K += 1; return K odd. P(K odd) = exp(-γ) (CKS Prop. 2).
    K grows by one per word read, so it never overflows. γ = 0 returns 1 with no word.
    """
    if num == _ZERO:
        return True, pos
    k = _ONE
    while True:
        a, pos = _bernoulli_over_k(words, pos, num, den, k)
        if pos < 0:
            return False, _GONE
        if not a:
            break
        k += _ONE
    return (k & _ONE) == _ONE, pos


@njit(cache=True, nogil=True)
def _bern_exp(words: np.ndarray, pos: int, num: np.uint64, den: np.uint64) -> tuple:  # pragma: no cover
    """Bernoulli(exp(-num/den)) for any num >= 0, den >= 1: CKS 2020, Algorithm 1.

    exp(-γ) = exp(-1)**floor(γ) * exp(-(γ - floor γ)): floor(γ) independent
    Bernoulli(exp(-1)) (stopping at the first 0), then Bernoulli(exp(-frac)) with
    frac = (num mod den)/den.
    """
    q = num // den
    r = num - q * den
    while q > _ZERO:
        b, pos = _bern_exp_unit(words, pos, _ONE, _ONE)
        if pos < 0 or not b:
            return False, pos
        q -= _ONE
    return _bern_exp_unit(words, pos, r, den)


@njit(cache=True, nogil=True)
def _dlap_one(words: np.ndarray, pos: int, t: np.uint64, s: np.uint64,
              vmax: np.uint64) -> tuple:  # pragma: no cover
    """One discrete Laplace sample, P(z) ∝ exp(-|z| s/t): CKS 2020, Algorithm 2.

    U uniform below t, kept with probability exp(-U/t); V ~ Geometric(1 - e**-1) by
    Bernoulli(exp(-1)) trials; X = U + tV is Geometric(1 - e**(-1/t)); Y = floor(X/s)
    is Geometric(1 - e**(-s/t)); a fair sign, rejecting "-0". Ranges: t < 2**48 and
    V <= vmax = (2**62 - t) // t give X = U + tV < t + (2**62 - t) = 2**62. A run of V
    past vmax (>= 2**14 - 1 successes, probability <= e**-16383) restarts the sample.
    """
    while True:
        u, pos = _below(words, pos, t)
        if pos < 0:
            return np.int64(0), _GONE
        keep, pos = _bern_exp_unit(words, pos, u, t)
        if pos < 0:
            return np.int64(0), _GONE
        if not keep:
            continue
        v = _ZERO
        while v <= vmax:
            a, pos = _bern_exp_unit(words, pos, _ONE, _ONE)
            if pos < 0:
                return np.int64(0), _GONE
            if not a:
                break
            v += _ONE
        if v > vmax:
            continue
        y = u + t * v
        if s != _ONE:
            y //= s
        if pos >= words.shape[0]:
            return np.int64(0), _GONE
        negative = (words[pos] >> _U63) == _ONE
        pos += 1
        if negative and y == _ZERO:
            continue
        z = np.int64(y)
        return (-z if negative else z), pos


@njit(cache=True, nogil=True)
def _dgauss_one(words: np.ndarray, pos: int, t: np.uint64, m: np.uint64, den: np.uint64,
                ymax: np.uint64, vmax: np.uint64) -> tuple:  # pragma: no cover
    """One discrete Gaussian sample with σ² = t·m: CKS 2020, Algorithm 3.

    Y ~ DLap(t), accepted with probability exp(-(|Y| - σ²/t)² / (2σ²)) = exp(-a²/(2tm)),
    a = |Y| - m. The accepted law is ∝ exp(-|y|/t - (|y| - σ²/t)²/(2σ²)) ∝ exp(-y²/(2σ²))
    for *any* t > 0 (CKS use t = floor(σ) + 1; t ≈ σ here too), and t | σ² makes
    σ²/t = m an integer. Ranges: t·m < 2**52, so den = 2tm < 2**53; |Y| > ymax =
    m + 2**32 - 1 is rejected outright, so |a| < 2**32 and a² < 2**64. Such a Y would be
    accepted with probability below exp(-2**64 / 2**53) = e**-2048 (DGAUSS_TV).
    """
    while True:
        y, pos = _dlap_one(words, pos, t, _ONE, vmax)
        if pos < 0:
            return np.int64(0), _GONE
        ay = np.uint64(abs(y))
        if ay > ymax:
            continue
        a = ay - m if ay >= m else m - ay
        keep, pos = _bern_exp(words, pos, a * a, den)
        if pos < 0:
            return np.int64(0), _GONE
        if keep:
            return y, pos


@njit(cache=True, nogil=True)
def _uniform_kernel(words, out, start, m, unused):  # pragma: no cover
    pos = np.int64(0)
    i = start
    while i < out.shape[0]:
        u, p = _below(words, pos, m)
        if p < 0:
            return i, pos
        out[i] = u
        pos = p
        i += 1
    return i, pos


@njit(cache=True, nogil=True)
def _bernoulli_kernel(words, out, start, num, den):  # pragma: no cover
    pos = np.int64(0)
    i = start
    while i < out.shape[0]:
        b, p = _bernoulli(words, pos, num, den)
        if p < 0:
            return i, pos
        out[i] = b
        pos = p
        i += 1
    return i, pos


@njit(cache=True, nogil=True)
def _bern_exp_kernel(words, out, start, num, den):  # pragma: no cover
    pos = np.int64(0)
    i = start
    while i < out.shape[0]:
        b, p = _bern_exp(words, pos, num, den)
        if p < 0:
            return i, pos
        out[i] = b
        pos = p
        i += 1
    return i, pos


@njit(cache=True, nogil=True)
def discrete_laplace_kernel(words: np.ndarray, out: np.ndarray, start: int, t: np.uint64,
                            s: np.uint64) -> tuple:  # pragma: no cover
    """Fill ``out[start:]`` with DLap(t/s) samples from ``words``; return (next index,
    position of its first word). The shared kernel of every discrete Laplace release
    (mechanisms and the Fletcher/JPW empty leaves)."""
    vmax = (_TWO62 - t) // t
    pos = np.int64(0)
    i = start
    while i < out.shape[0]:
        z, p = _dlap_one(words, pos, t, s, vmax)
        if p < 0:
            return i, pos
        out[i] = z
        pos = p
        i += 1
    return i, pos


@njit(cache=True, nogil=True)
def discrete_laplace_rows(words: np.ndarray, out: np.ndarray, t: np.uint64, s: np.uint64,
                          done: np.ndarray, pos: np.ndarray) -> None:  # pragma: no cover
    """Row ``r`` of ``out`` from row ``r`` of ``words`` (one word stream per row, e.g. one
    per empty leaf) by :func:`discrete_laplace_kernel`; ``done[r]``, ``pos[r]`` say how far
    it got (``done[r] < out.shape[1]``: the row's stream ran out at word ``pos[r]``)."""
    for r in range(out.shape[0]):
        done[r], pos[r] = discrete_laplace_kernel(words[r], out[r], 0, t, s)


@njit(cache=True, nogil=True)
def _dgauss_kernel(words, out, start, t, m):  # pragma: no cover
    vmax = (_TWO62 - t) // t
    den = np.uint64(2) * t * m
    ymax = m + np.uint64(0xFFFFFFFF)
    pos = np.int64(0)
    i = start
    while i < out.shape[0]:
        z, p = _dgauss_one(words, pos, t, m, den, ymax, vmax)
        if p < 0:
            return i, pos
        out[i] = z
        pos = p
        i += 1
    return i, pos


# --------------------------------------------------------------------------- drivers


def _run(kernel, a: int, b: int, size: int, rng: Rng, *, dtype: Any, words_per_sample: int,
         buffer_words: int | None) -> np.ndarray:
    """Draw ``size`` samples with ``kernel``, refilling the word buffer as it runs out.

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
        i, pos = kernel(words, out, i, pa, pb)
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
    return _run(_uniform_kernel, bound, 0, size, rng, dtype=np.uint64, words_per_sample=2,
                buffer_words=_check_buffer(buffer_words))


def bernoulli(num: int, den: int, size: int, *, rng: Rng, buffer_words: int | None = None) -> np.ndarray:
    """``size`` exact Bernoulli(num/den) draws (bool), 0 <= num <= den < 2**64."""
    den = _positive_int(den, "den")
    if isinstance(num, bool) or not isinstance(num, int | np.integer) or not 0 <= num <= den:
        raise ValueError(f"num must be an integer in [0, den], got {num!r}")
    return _run(_bernoulli_kernel, int(num), den, size, rng, dtype=np.bool_, words_per_sample=2,
                buffer_words=_check_buffer(buffer_words))


def bernoulli_exp(num: int, den: int, size: int, *, rng: Rng,
                  buffer_words: int | None = None) -> np.ndarray:
    """``size`` exact Bernoulli(exp(-num/den)) draws (bool): CKS 2020, Algorithm 1."""
    den = _positive_int(den, "den")
    if isinstance(num, bool) or not isinstance(num, int | np.integer) or not 0 <= num < 1 << 64:
        raise ValueError(f"num must be an integer in [0, 2**64), got {num!r}")
    return _run(_bern_exp_kernel, int(num), den, size, rng, dtype=np.bool_, words_per_sample=4,
                buffer_words=_check_buffer(buffer_words))


def discrete_laplace(t: int, s: int, size: int, *, rng: Rng,
                     buffer_words: int | None = None) -> np.ndarray:
    """``size`` discrete Laplace integers (int64), P(z) ∝ exp(-|z| s / t): CKS 2020, Alg. 2.

    ``t`` and ``s`` are integers in [1, 2**48) (:func:`discrete_laplace_scale` rounds a
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
    σ² = ``t * m`` < 2**52: CKS 2020, Algorithm 3 (:func:`discrete_gaussian_variance`
    rounds a variance up to that form, t ≈ m ≈ σ).

    Candidates |Y| >= m + 2**32 are rejected without the acceptance test (it keeps
    integers in uint64, see ``_dgauss_one``); they would pass it with probability below
    e**-2048, so the output's total variation from the exact law is below 2 e**-2048.
    """
    t = _positive_int(t, "t", SCALE_LIMIT)
    m = _positive_int(m, "m", SCALE_LIMIT)
    if t * m >= SIGMA2_LIMIT:
        raise ValueError(f"t * m must be below 2**52, got {t} * {m}")
    if not (m <= 2 * t + 2 and t <= 2 * m + 2):
        # correct for any t, but a candidate is accepted with probability ~exp(-(m-t)²/2tm)
        raise ValueError(f"t and m must be within a factor 2 (both ≈ σ), got {t} and {m}")
    return _run(_dgauss_kernel, t, m, size, rng, dtype=np.int64, words_per_sample=13,
                buffer_words=_check_buffer(buffer_words))


def discrete_gaussian_variance(sigma2: int | float | Fraction) -> tuple[int, int]:
    """``(t, m)`` with t·m >= ``sigma2`` (exact, rounded up by less than t ≈ σ), t =
    floor(sqrt(ceil(sigma2))) + 1 and m = ceil(ceil(sigma2) / t): the form
    :func:`discrete_gaussian` takes."""
    target = math.ceil(Fraction(sigma2))
    if not 0 < target < SIGMA2_LIMIT:
        raise ValueError(f"sigma2 must be in (0, 2**52), got {sigma2!r}")
    t = math.isqrt(target) + 1
    m = -(-target // t)
    if t * m >= SIGMA2_LIMIT:
        raise ValueError(f"sigma2 must be in (0, 2**52), got {sigma2!r}")
    return t, m


# --------------------------------------------------------------------------- calibration


@lru_cache(maxsize=1024)
def discrete_laplace_scale(*, epsilon: float, sensitivity: int | float | Fraction) -> tuple[int, int]:
    """The discrete Laplace scale ``(t, s)``, t/s >= sensitivity/epsilon, both < 2**48.

    Computed exactly with :class:`fractions.Fraction` from the doubles given: the exact
    ratio when its numerator and denominator fit, else ``t = ceil(ratio * s)`` with the
    largest power of two ``s <= 2**47`` that keeps ``t < 2**48`` (relative excess at most
    max(2**-46, 2**-47 / ratio)); so the released noise is never smaller than claimed, and
    DLap(t/s) with integer sensitivity Δ is (Δ s / t <= epsilon)-DP (CKS 2020, Prop. 5
    / Dwork & Roth Thm 3.6 for the geometric mechanism).
    """
    epsilon = check_epsilon(epsilon)
    ratio = Fraction(sensitivity) / Fraction(epsilon)
    if ratio <= 0:
        raise ValueError(f"sensitivity must be > 0, got {sensitivity!r}")
    if ratio.numerator < SCALE_LIMIT and ratio.denominator < SCALE_LIMIT:
        return ratio.numerator, ratio.denominator
    k = 47
    while k >= 0 and math.ceil(ratio * (1 << k)) >= SCALE_LIMIT:
        k -= 1
    if k < 0:
        raise ValueError(
            f"sensitivity / epsilon = {float(ratio):.3g} is too large for the discrete "
            f"Laplace sampler (limit {SCALE_LIMIT})")
    up = Fraction(math.ceil(ratio * (1 << k)), 1 << k)  # reduced: t/s in lowest terms
    return up.numerator, up.denominator


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


#: Up to this σ the δ of a discrete Gaussian is summed from its pmf term by term.
_EXACT_DELTA_SIGMA = 4096.0


def _tail_bounds(k: int, sigma: float) -> tuple[float, float]:
    """Lower and upper bounds on sum_{y >= k} exp(-y²/(2σ²)) / (sqrt(2π) σ), k >= 1.

    The terms decrease from k - 1 on, so the sum lies between the integrals from k and
    from k - 1: Gaussian tails, ``ndtr(-x/σ)``."""
    return float(ndtr(-k / sigma)), float(ndtr(-(k - 1) / sigma))


def _upper_tail(x: Fraction, sigma: float, upper: bool) -> float:
    """A bound (upper or lower) on P[Y > x], Y ~ N_Z(0, σ²), for large σ.

    Z = sum_y exp(-y²/(2σ²)) = sqrt(2π) σ (1 + 2 sum_k exp(-2π²k²σ²)) (Poisson
    summation): for σ > 4096 it is sqrt(2π) σ to far below double precision, the
    correction being < e**-(3 * 10**8)."""
    k = math.floor(x) + 1  # y > x  <=>  y >= k
    if k >= 1:
        lo, hi = _tail_bounds(k, sigma)
        return hi if upper else lo
    lo, hi = _tail_bounds(1 - k, sigma)  # P[Y >= k] = 1 - P[Y >= 1 - k] by symmetry
    return 1.0 - (lo if upper else hi)


def discrete_gaussian_delta(*, epsilon: float, sigma2: int, sensitivity: int) -> float:
    """δ(ε) of the discrete Gaussian N_Z(0, sigma2) with integer sensitivity: CKS 2020,
    Theorem 7, δ = P[Y > εσ²/Δ - Δ/2] - e^ε P[Y > εσ²/Δ + Δ/2], Y ~ N_Z(0, σ²).

    For σ <= 4096 summed numerically from the pmf on |y| <= 50 σ + Δ (the mass beyond is
    below e**-1250; terms summed without cancellation, relative error ~1e-13). For larger
    σ an upper bound: each tail bounded by Gaussian integrals (the first from above, the
    second from below; the slack, a few per cent of δ at σ = 4096, shrinks as 1/σ).
    """
    sigma = math.sqrt(sigma2)
    mid = Fraction(epsilon) * sigma2 / sensitivity
    a, b = mid - Fraction(sensitivity, 2), mid + Fraction(sensitivity, 2)
    if sigma > _EXACT_DELTA_SIGMA:
        first = _upper_tail(a, sigma, upper=True)
        second = _upper_tail(b, sigma, upper=False)
        return max(0.0, first - math.exp(epsilon) * second)
    half = math.ceil(50 * sigma) + int(sensitivity) + 1
    y = np.arange(-half, half + 1, dtype=np.int64)
    w = np.exp(-(y.astype(np.float64) ** 2) / (2.0 * sigma2))
    total = w.sum()
    first = w[y >= math.floor(a) + 1].sum() / total
    second = w[y >= math.floor(b) + 1].sum() / total
    return max(0.0, float(first - math.exp(epsilon) * second))


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
    from dpexp.privacy.mechanisms import analytic_gaussian_sigma, gaussian_sigma_classic

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
