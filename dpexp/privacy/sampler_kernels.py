"""Compiled kernels of the exact samplers: Canonne, Kamath & Steinke 2020 ("The Discrete
Gaussian for Differential Privacy", NeurIPS), in integer arithmetic only.

* ``_bern_exp``: Bernoulli(exp(-num/den)), CKS Algorithm 1.
* :func:`discrete_laplace_kernel`: P(z) ∝ exp(-|z| s/t), CKS Algorithm 2.
* :func:`discrete_gaussian_kernel`: P(z) ∝ exp(-z²/(2σ²)), σ² = t·m integers, CKS Algorithm 3.
* :func:`fill_draws`: uniform integers and Bernoulli draws by rejection from whole words
  (the building blocks, drawn on their own by the tests).

Resumable kernels. Every kernel reads uniformly random 64-bit words from a buffer. When
it runs out in the middle of a sample it stops and reports the sample index and the
position of that sample's first word; the driver (:mod:`dpexp.privacy.samplers`) keeps
the unread words, appends fresh ones and resumes there. Each sample is therefore a
function of the words from its first word on, and the outputs are a deterministic
function of the random stream whatever the buffer size.

Integer ranges. Every intermediate fits in uint64/int64; each bound is proved where it
is used. Two loops are cut at a bound whose probability of being reached is
astronomically small (the geometric part of the discrete Laplace, ``P <= e**-16383``;
the candidates of the discrete Gaussian beyond m + 2**32, accepted with ``P <=
e**-2048``); the docstrings state the resulting total-variation bounds.
"""

from __future__ import annotations

import numpy as np

from dpexp.jit import njit
from dpexp.privacy.sampler_limits import SCALE_LIMIT, SIGMA2_LIMIT

__all__ = [
    "BERNOULLI",
    "BERNOULLI_EXP",
    "DGAUSS_TV",
    "SCALE_LIMIT",
    "SIGMA2_LIMIT",
    "UNIFORM",
    "discrete_gaussian_kernel",
    "discrete_laplace_kernel",
    "discrete_laplace_rows",
    "fill_draws",
]

_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_U63 = np.uint64(63)
_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_TWO62 = np.uint64(1 << 62)
_TWO48 = np.uint64(1 << 48)
_TWO16 = np.uint64(1 << 16)
_GONE = np.int64(-1)  # position returned when the buffer ran out

#: Upper bound on the total variation between ``discrete_gaussian`` and the exact law
#: (the cut at |Y| >= m + 2**32: 2 e**-2048 < 1e-800, so below any double), added to
#: the computed delta as the smallest positive double.
DGAUSS_TV = 5e-324
#: The laws of :func:`fill_draws`.
UNIFORM, BERNOULLI, BERNOULLI_EXP = 0, 1, 2

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
def fill_draws(words: np.ndarray, out: np.ndarray, start: int, a: np.uint64, b: np.uint64,
               law: int) -> tuple:  # pragma: no cover
    """Fill ``out[start:]`` with draws of ``law`` from ``words``: ``UNIFORM`` integers in
    [0, a) (``b`` unused), ``BERNOULLI`` Bernoulli(a/b), ``BERNOULLI_EXP``
    Bernoulli(exp(-a/b)) (CKS Algorithm 1); return (next index, position of its first
    word)."""
    pos = np.int64(0)
    i = start
    while i < out.shape[0]:
        if law == UNIFORM:
            value, p = _below(words, pos, a)
        elif law == BERNOULLI:
            bit, p = _bernoulli(words, pos, a, b)
            value = np.uint64(bit)
        else:
            bit, p = _bern_exp(words, pos, a, b)
            value = np.uint64(bit)
        if p < 0:
            return i, pos
        out[i] = value
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
def discrete_gaussian_kernel(words: np.ndarray, out: np.ndarray, start: int, t: np.uint64,
                             m: np.uint64) -> tuple:  # pragma: no cover
    """Fill ``out[start:]`` with discrete Gaussian samples of variance ``t * m`` from
    ``words``; return (next index, position of its first word)."""
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
