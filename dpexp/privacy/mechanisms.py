"""Differentially private mechanisms, vectorised over numpy arrays.

Neighbour relation. All guarantees here are for datasets that differ by *adding or
removing one record* (unbounded DP), as in Li et al. 2020 (DPBoost) Definition 1 and
Fletcher & Islam 2017 Section 2.1 ("the number of records that would have to be added or
removed"). Sensitivities are the largest change of the released statistic under that
relation: L1 for Laplace and the exponential mechanism (Li et al. Definition 2, Eq. 6),
L2 for the Gaussian mechanism (Peinemann's slides: the clipped leaf sum changes by at
most L, the count by 1).

Every mechanism takes keyword-only ``epsilon``, ``sensitivity`` (where it has one) and
``rng`` (a ``numpy.random.Generator`` or :class:`~dpexp.privacy.randomness.SecureGenerator`)
and raises ``ValueError`` naming the bad parameter.

Selection mechanisms accept utilities of shape ``(k,)`` (returning an ``int``) or
``(..., k)`` (returning an int array of shape ``...``, one independent draw per row), and
an optional ``size`` for ``size`` independent draws from the same utilities.

Floating point and the noise generator (docs/PRIVACY.md, "Floating-point attacks" and
"Randomness"). Real-valued releases (:func:`laplace_mechanism`, :func:`gaussian_mechanism`)
are exact: the value is rounded to a public grid ``g = 2**k`` chosen from the privacy
parameters only, discrete Laplace or discrete Gaussian noise in grid units is added in
integer arithmetic (:mod:`dpexp.privacy.grids`, :mod:`dpexp.privacy.samplers`, Canonne,
Kamath & Steinke 2020), and the output ``g * integer`` is an exactly representable
double: the set of possible outputs is the grid whatever the data, so Mironov's (CCS
2012) low-order-bit attack has nothing to read. Counts are released as integers by :func:`discrete_laplace_mechanism`.
The selection mechanisms release an index, but their probabilities are computed in
doubles (exact to ~2**-53; a weight below 2**-53 of the total is never drawn). The noise
``rng`` is a reproducible numpy Generator in experiments (estimators derive it from
``random_state``); for a published model construct the estimator with
``noise_rng=dpexp.privacy.secure_generator()`` (see
:func:`dpexp.privacy.randomness.estimator_streams`), so the noise comes from the OS
secure source and cannot be recomputed from a seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from dpexp.errors import check_epsilon
from dpexp.jit import njit
from dpexp.privacy.calibration import (
    check_delta,
    check_sensitivity,
    discrete_laplace_scale,
    gaussian_sigma_classic,
)
from dpexp.privacy.grids import gaussian_grid, grid_release, laplace_grid
from dpexp.privacy.randomness import Rng, check_rng
from dpexp.privacy.samplers import discrete_gaussian, discrete_laplace

T = TypeVar("T")

__all__ = [
    "laplace_mechanism",
    "discrete_laplace_mechanism",
    "gaussian_mechanism",
    "exponential_mechanism",
    "exponential_uniforms",
    "report_noisy_max_one_sided",
    "smooth_sensitivity_leaf_2017",
]


# --------------------------------------------------------------------------- validation


_EXPONENT = np.int64(0x7FF0000000000000)  # a double is NaN or infinite iff these bits are all set


@njit(cache=True, nogil=True)
def all_finite(bits):  # pragma: no cover - compiled
    """Whether every double of ``bits`` (their int64 view, 1-d) is finite: an integer
    test of the exponent bits, branch-free, so the loop vectorises."""
    bad = 0
    for i in range(bits.shape[0]):
        bad += (bits[i] & _EXPONENT) == _EXPONENT
    return bad == 0


def _finite_array(value: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric, got {value!r}") from None
    # one compiled pass without the boolean temporary of np.isfinite (a split's
    # utilities are thousands of candidates per node, checked once per tree depth)
    finite = (all_finite(arr.reshape(-1).view(np.int64)) if arr.flags.c_contiguous
              else bool(np.all(np.isfinite(arr))))
    if not finite:
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return arr


def _utility_array(utility: Any, name: str) -> np.ndarray:
    arr = _finite_array(utility, name)
    if arr.ndim == 0 or arr.shape[-1] == 0:
        raise ValueError(
            f"{name} must be a non-empty vector (last axis = candidates), got shape {arr.shape}"
        )
    return arr


def _return(value: np.ndarray, like: Any) -> Any:
    """Keep scalars scalar."""
    return float(value) if np.ndim(like) == 0 and value.ndim == 0 else value


# --------------------------------------------------------------------------- Laplace


def laplace_mechanism(value: Any, *, epsilon: float, sensitivity: float, rng: Rng) -> Any:
    """``value`` plus Laplace noise of scale >= ``sensitivity / epsilon``, on a public grid.

    epsilon-DP for add/remove-one-record neighbours when ``sensitivity`` bounds the change
    of each element (each element its own release, e.g. one value per leaf under parallel
    composition), or the L1 change of values that are multiples of the grid step (counts)
    (Li et al. 2020, Theorem 1 / Eq. 7; Dwork & Roth Thm 3.6). Examples: a count has
    sensitivity 1; a DPBoost leaf value -sum(g)/(n+lambda) has sensitivity g*/(1+lambda)
    (Li et al. Lemma 2 / Corollary 1).

    Exact and float-safe: the grid step ``g = 2**k`` (``sensitivity / g`` in [2**20,
    2**21), :func:`~dpexp.privacy.grids.laplace_grid`) depends on the sensitivity only;
    the value is rounded to the grid, which can add one step to its change, so the
    integer sensitivity is ``floor(sensitivity / g) + 1``; discrete Laplace noise of
    scale ``t/s >= that / epsilon`` (rounded up exactly) is added in integers (CKS 2020,
    Algorithm 2), and the output is ``g * integer``, an exact double. Outputs therefore lie
    on the grid whatever the data (no Mironov-style low-order bits) and the noise is never
    smaller than claimed. When one record moves several off-grid elements at once, each
    can gain a step: the loss is then at most epsilon * (m + c) / (m + 1) for c moved
    elements, m = floor(sensitivity / g) >= 2**20. ``sensitivity = 0`` returns ``value``.
    For a published model pass the estimator ``noise_rng=secure_generator()``
    (``estimator_streams``) so ``rng`` is the OS secure source, not a seeded stream.
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = check_sensitivity(sensitivity)
    rng = check_rng(rng)
    arr = _finite_array(value, "value")
    if sensitivity == 0:
        return _return(arr.copy(), value)
    plan = laplace_grid(epsilon=epsilon, sensitivity=sensitivity)
    noise = discrete_laplace(plan.t, plan.s, arr.size, rng=rng).reshape(arr.shape)
    return _return(grid_release(arr, plan.exponent, noise), value)


def _integer_sensitivity(sensitivity: Any) -> int:
    """A count's sensitivity: an integer >= 0 (an integer-valued float is accepted)."""
    if isinstance(sensitivity, bool):
        raise ValueError(f"sensitivity must be an integer >= 0, got {sensitivity!r}")
    value = check_sensitivity(sensitivity)
    if value != math.floor(value):
        raise ValueError(f"sensitivity must be an integer >= 0 for counts, got {sensitivity!r}")
    return int(value)


def _integer_array(counts: Any, name: str) -> np.ndarray:
    """``counts`` as int64: integer arrays, or floats that are whole numbers."""
    arr = np.asarray(counts)
    if arr.dtype.kind in "iub":
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 2**62:
            raise ValueError(f"{name} must be below 2**62")
        return arr.astype(np.int64)
    arr = _finite_array(counts, name)
    if np.any(arr != np.rint(arr)):
        raise ValueError(f"{name} must be whole numbers (counts), got non-integer values")
    if np.any(np.abs(arr) >= 2.0**62):
        raise ValueError(f"{name} must be below 2**62 in absolute value")
    return arr.astype(np.int64)


def discrete_laplace_mechanism(
    counts: Any, *, epsilon: float, sensitivity: int = 1, rng: Rng
) -> Any:
    """``counts`` plus discrete Laplace noise, as exact integers (``int64``; an ``int`` for
    a scalar): P(noise = z) ∝ exp(-|z| s/t), ``t/s >= sensitivity / epsilon``.

    epsilon-DP for add/remove neighbours when one record changes the counts by at most
    ``sensitivity`` in L1 (an integer; 1 for a histogram; Dwork & Roth Thm 3.6 for the
    geometric mechanism; Canonne, Kamath & Steinke 2020, Algorithm 2 for the sampler).
    The scale is rounded *up* to a rational t/s with integers below 2**48
    (:func:`~dpexp.privacy.calibration.discrete_laplace_scale`, exact ``Fraction``
    arithmetic), so the noise is never smaller than claimed, and the output set is the
    integers whatever the data: no floating point anywhere. For a published model pass
    the estimator ``noise_rng=secure_generator()`` (``estimator_streams``).
    """
    epsilon = check_epsilon(epsilon)
    sens = _integer_sensitivity(sensitivity)
    rng = check_rng(rng)
    arr = _integer_array(counts, "counts")
    if sens == 0:
        out = arr.copy()
    else:
        t, s = discrete_laplace_scale(epsilon=epsilon, sensitivity=sens)
        out = arr + discrete_laplace(t, s, arr.size, rng=rng).reshape(arr.shape)
    return int(out) if np.ndim(counts) == 0 else out


# --------------------------------------------------------------------------- Gaussian


def gaussian_mechanism(
    value: Any,
    *,
    epsilon: float,
    delta: float,
    sensitivity: float,
    rng: Rng,
    calibration: str = "classic",
) -> Any:
    """``value`` plus discrete Gaussian noise on a public grid, (epsilon, delta)-DP.

    (epsilon, delta)-DP for add/remove neighbours when ``sensitivity`` bounds the L2
    change of ``value`` (per element, or for values that are multiples of the grid step;
    see :func:`laplace_mechanism` for off-grid vectors). ``calibration="classic"``
    (Dwork & Roth; Peinemann's slides) refuses epsilon >= 1; ``"analytic"`` (Balle & Wang
    2018) works for any epsilon and adds less noise.

    Exact and float-safe (:func:`~dpexp.privacy.grids.gaussian_grid`): the grid step
    ``g = 2**k`` (sigma/g >= 2**11 and sensitivity/g >= 2**10) depends on (epsilon,
    delta, sensitivity) only; the value is rounded to it; sigma is recalibrated for the
    integer sensitivity ``floor(sensitivity / g) + 1``, sigma² rounded up to an integer,
    and raised until the discrete Gaussian's own delta (Canonne, Kamath & Steinke 2020,
    Theorem 7) is <= delta; the noise is an exact discrete Gaussian (CKS Algorithm 3, up
    to a total variation below 2 e**-2048), and the output ``g * integer`` is an exact
    double on the grid whatever the data. The grid costs < 0.1 % more noise (unless
    sigma/sensitivity > 2**15). For a published model pass the estimator
    ``noise_rng=secure_generator()`` (``estimator_streams``).
    """
    if calibration not in ("classic", "analytic"):
        raise ValueError(f"calibration must be 'classic' or 'analytic', got {calibration!r}")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    sensitivity = check_sensitivity(sensitivity)
    if calibration == "classic":  # validates epsilon < 1 before anything is drawn
        gaussian_sigma_classic(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    rng = check_rng(rng)
    arr = _finite_array(value, "value")
    if sensitivity == 0:
        return _return(arr.copy(), value)
    plan = gaussian_grid(epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                         calibration=calibration)
    noise = discrete_gaussian(plan.t, plan.m, arr.size, rng=rng).reshape(arr.shape)
    return _return(grid_release(arr, plan.exponent, noise), value)


# --------------------------------------------------------------------------- selection


_MIN_NORMAL = float(np.finfo(np.float64).tiny)
_TWO_53 = 1 << 53


@njit(cache=True, nogil=True, inline="always")
def _add_run(acc, w, cum, i0, i1):  # pragma: no cover - compiled
    """``acc += w; cum[i] = acc`` for ``i`` in ``i0:i1`` (``acc >= 0``, ``w >= 0``): the
    partial sums of a run of equal weights, bit for bit those of one rounded addition
    after the other, in a few steps per binade of ``acc`` instead of one per element.

    While ``acc`` stays in its binade ``[2**(e-1), 2**e)`` every double there is a
    multiple of ``ulp = 2**(e-53)``, so each addition of ``w`` rounds to ``acc`` plus the
    same multiple ``delta`` of ``ulp`` (``w`` rounded to that grid) -- unless ``w`` lies
    exactly halfway between two multiples, where round-half-even depends on the last
    bit of ``acc``: such additions, those that leave the binade, and ``acc`` below
    ``w`` or subnormal are done one at a time. Sums ``acc + j * delta`` inside the binade
    are exact, so the partial sums are written without a chain of additions."""
    i = i0
    while i < i1:
        if w == 0.0:  # acc + 0.0 == acc (acc is never -0.0)
            cum[i:i1] = acc
            return acc
        if acc < _MIN_NORMAL or w > acc:
            acc += w
            cum[i] = acc
            i += 1
            continue
        e = math.frexp(acc)[1]  # acc in [2**(e-1), 2**e)
        ulp = math.ldexp(1.0, e - 53)
        top = math.ldexp(1.0, e)
        delta = (acc + w) - acc  # exact (Sterbenz: acc <= acc + w <= 2 acc)
        if abs(w - delta) * 2.0 == ulp or acc + delta >= top:
            acc += w  # a tie, or the last addition of the binade: one at a time
            cum[i] = acc
            i += 1
            continue
        if delta == 0.0:  # w < ulp / 2: every addition rounds back to acc
            cum[i:i1] = acc
            return acc
        # acc + j * delta <= 2**e - ulp for j <= n: each addition adds exactly delta
        n = (_TWO_53 - 1 - np.int64(acc / ulp)) // np.int64(delta / ulp)
        m = min(n, i1 - i)
        for j in range(m):
            cum[i + j] = acc + (j + 1) * delta
        acc = acc + m * delta
        i += m
    return acc


#: Runs of equal utilities shorter than this are summed one addition at a time (the same
#: bits as :func:`_add_run`, which costs ~4 additions per binade step and per call): on
#: DPBoost's utilities of one-hot features (runs of 2-10 equal gains) the selection ran
#: 1.5-2x faster (issue 43).
_RUN_MIN = 16


@njit(cache=True, nogil=True)
def inverse_cdf_rows(x, scale, uniforms, out):  # pragma: no cover - compiled
    """``out[m, r]``: draw ``m`` of row ``r`` of ``x (R, k)`` with P(i) ∝ exp(scale * x_ri),
    from ``uniforms[m, r]`` in [0, 1). See :func:`_sample_from_logits`."""
    n_rows, k = x.shape
    cum = np.empty(k)
    for r in range(n_rows):
        top = -np.inf
        for i in range(k):
            if x[r, i] > top:  # NaN never compares greater: it gets weight 0
                top = x[r, i]
        acc = 0.0
        last = k - 1
        i = 0
        while i < k:
            # equal utilities (runs of empty bins) have equal weights: one exp per run,
            # and a long run's cumulative sums from _add_run (NaN ends a run at once)
            v = x[r, i]
            j = i + 1
            while j < k and x[r, j] == v:
                j += 1
            z = (v - top) * scale
            w = np.exp(z) if z == z else 0.0  # -inf -> 0, NaN -> 0
            if j - i < _RUN_MIN:  # short runs: _add_run's binade arithmetic costs more
                for q in range(i, j):
                    acc += w
                    cum[q] = acc
            else:
                acc = _add_run(acc, w, cum, i, j)
            if w > 0.0:
                last = j - 1
            i = j
        for m in range(uniforms.shape[0]):
            target = uniforms[m, r] * acc
            lo = 0
            hi = k  # first i with cum[i] > target: binary search on the non-decreasing cum
            while lo < hi:
                mid = (lo + hi) >> 1
                if cum[mid] > target:
                    hi = mid
                else:
                    lo = mid + 1
            # target can round up to acc: fall back on the last candidate with weight > 0
            out[m, r] = lo if lo < k else last


def _sample_from_logits(x: np.ndarray, scale: float, rng: Rng, size: int | None) -> Any:
    """Sample ``i`` with P(i) ∝ exp(scale * x_i) along the last axis, by inverse CDF.

    Log-sum-exp form: each row is shifted by its maximum, so the weights
    ``w_i = exp(scale * (x_i - max x))`` lie in [0, 1] with one equal to 1 and nothing
    overflows whatever the utilities' size; ``-inf`` (and NaN) entries get weight 0. One
    uniform ``U`` per draw picks the first ``i`` whose cumulative weight exceeds
    ``U * sum(w)``: the same distribution as Gumbel-max (exactly equal utilities get
    exactly equal probabilities) for one random number per draw instead of one per
    candidate, in one compiled pass per row. A weight below ``2**-53`` of the running
    total adds nothing, i.e. has probability zero -- as under Gumbel-max, whose noise never
    exceeds ~37 in double precision.
    """
    batch = x.shape[:-1]
    rows = np.ascontiguousarray(x, dtype=np.float64).reshape(-1, x.shape[-1])
    n_draws = 1 if size is None else int(size)
    u = np.asarray(rng.random(size=(n_draws, rows.shape[0])), dtype=np.float64)
    out = np.empty((n_draws, rows.shape[0]), dtype=np.int64)
    inverse_cdf_rows(rows, float(scale), u, out)
    choice = out.reshape((n_draws, *batch)) if size is not None else out.reshape(batch)
    return int(choice) if choice.ndim == 0 else choice


def _check_size(size: Any) -> int | None:
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 0:
        raise ValueError(f"size must be a non-negative integer or None, got {size!r}")
    return int(size)


def exponential_mechanism(
    utility: Any, *, epsilon: float, sensitivity: float, rng: Rng, size: int | None = None
) -> Any:
    """Pick candidate ``i`` with P(i) ∝ exp(epsilon * u_i / (2 * sensitivity)).

    epsilon-DP for add/remove neighbours when every utility changes by at most
    ``sensitivity`` (McSherry & Talwar 2007; Li et al. 2020 Theorem 2 / Eq. 8; Fletcher &
    Islam 2017 Definition 4 / Eq. 2). DPBoost uses it for splits with
    sensitivity 3 g*^2 (Li et al. Lemma 1). Numerically safe for utilities of any finite
    size (log-sum-exp, inverse CDF with one uniform per draw); ties are uniformly
    broken.

    Floating point: the output is an index, but its law is computed in doubles from a
    53-bit uniform, so probabilities are exact only to ~2**-53 and a weight below 2**-53
    of the total is never drawn (the floating-point caveat of Mironov, CCS 2012, in its
    selection form; docs/PRIVACY.md, "Floating-point attacks"). For a published model
    pass the estimator ``noise_rng=secure_generator()`` (``estimator_streams``).
    """
    scale = _exponential_scale(epsilon, sensitivity)
    rng = check_rng(rng)
    u = _utility_array(utility, "utility")
    size = _check_size(size)
    return _sample_from_logits(u, scale, rng, size)


def _exponential_scale(epsilon: float, sensitivity: float) -> float:
    """The factor of the utilities in the exponential mechanism's logits,
    ``epsilon / (2 * sensitivity)``, once both are checked."""
    epsilon = check_epsilon(epsilon)
    sensitivity = check_sensitivity(sensitivity, allow_zero=False)
    return epsilon / (2.0 * sensitivity)


def exponential_uniforms(select: Callable[[float, np.ndarray], T], *, epsilon: float,
                         sensitivity: float, rng: Rng, n_draws: int) -> T:
    """``select(scale, uniforms)``: ``n_draws`` selections of the exponential mechanism
    (:func:`exponential_mechanism`, P(i) ∝ exp(``scale`` * u_i), ``scale = epsilon / (2
    sensitivity)``) made by a compiled caller from ``uniforms``, one uniform per
    selection drawn from ``rng`` in one call: draw ``i`` must take ``uniforms[i]``
    through :func:`inverse_cdf_rows` and refuse non-finite utilities (``ValueError``, as
    :func:`exponential_mechanism` does). ``rng.random`` gives the same doubles in one call
    as in several, so the selections are those of :func:`exponential_mechanism` called
    once per row in turn (Li et al. 2020 Algorithm 1, line 7, at every depth of a tree)."""
    scale = _exponential_scale(epsilon, sensitivity)
    rng = check_rng(rng)
    n = int(n_draws)
    if n < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws!r}")
    # the call _sample_from_logits makes for one draw of each of n rows
    uniforms = np.asarray(rng.random(size=(1, n)), dtype=np.float64).reshape(n)
    return select(scale, uniforms)


def report_noisy_max_one_sided(
    counts: Any,
    *,
    epsilon: float,
    rng: Rng,
    size: int | None = None,
    noise: str = "gumbel",
) -> Any:
    """Report the (noisy) arg-max of monotone counts: P(i) ∝ exp(epsilon * count_i).

    Fletcher's 2021 addendum to Fletcher & Islam 2017 (Section 2, Table 5): the majority
    label of a leaf is chosen with weight exp(epsilon * f_c) where f_c is the class count,
    replacing the unproven smooth-sensitivity rule. Sensitivity is 1 and the factor 2 of
    the exponential mechanism is dropped because counts are *monotone*: adding a record
    raises exactly one count by 1 and lowers none (Dwork & Roth Example 3.6 / Thm 3.10
    remark). **Valid only for add/remove neighbours**: under substitution two counts move
    in opposite directions and the guarantee becomes 2 * epsilon.

    ``noise="gumbel"`` samples exactly the distribution above (the law of Gumbel-max,
    drawn by inverse CDF). ``noise="exponential"``
    adds one-sided Exp(1/epsilon) noise to each count and reports the arg-max (report
    one-sided noisy arg-max proper, equal in law to permute-and-flip, McKenna & Sheldon
    2020; Ding et al. 2021); it is also epsilon-DP for monotone counts.

    Floating point: as for :func:`exponential_mechanism` (probabilities exact to ~2**-53;
    the ``"exponential"`` noise is a double-precision sample; Mironov, CCS 2012;
    docs/PRIVACY.md, "Floating-point attacks"). For a published model pass the estimator
    ``noise_rng=secure_generator()`` (``estimator_streams``).
    """
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    c = _utility_array(counts, "counts")
    if np.any(c < 0):
        raise ValueError("counts must be >= 0")
    size = _check_size(size)
    if noise == "gumbel":
        return _sample_from_logits(c, epsilon, rng, size)
    if noise == "exponential":
        shape = c.shape if size is None else (size, *c.shape)
        noisy = c + rng.exponential(1.0 / epsilon, size=shape)
        choice = np.argmax(noisy, axis=-1)
        return int(choice) if choice.ndim == 0 else choice
    raise ValueError(f"noise must be 'gumbel' or 'exponential', got {noise!r}")


def smooth_sensitivity_leaf_2017(
    counts: Any, *, epsilon: float, rng: Rng, size: int | None = None
) -> Any:
    """The 2017 Fletcher & Islam majority-label rule. **NOT differentially private.**

    Kept only to reproduce the 2017 paper (Section 4.1, Theorem 1, Eqs. 7-8): utility
    u_c = 1 for the most frequent label(s), 0 otherwise; "smooth sensitivity"
    S = exp(-j * epsilon) with j = n_c1 - n_c2 (top count minus second count); then the
    exponential mechanism P(c) ∝ exp(epsilon * u_c / (2 S)). Using a smooth sensitivity in
    place of a global one in the exponential mechanism is unproven (2021 addendum,
    Section 1) and wrong: for counts (1, 0) vs (2, 0) at epsilon = 1 the log-ratio of
    P(label 1) is about 2.1, i.e. the true epsilon is about twice the claim (the
    ``smooth_sensitivity_2017`` audit target flags it). Use
    :func:`report_noisy_max_one_sided` instead.

    Floating point and ``rng``: as for :func:`exponential_mechanism` (Mironov, CCS 2012;
    ``noise_rng=secure_generator()``), though no sampler makes this rule private.
    """
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    c = _utility_array(counts, "counts")
    size = _check_size(size)
    top = np.max(c, axis=-1, keepdims=True)
    second = np.sort(c, axis=-1)[..., -2:-1] if c.shape[-1] > 1 else np.zeros_like(top)
    j = top - second
    u = (c == top).astype(np.float64)
    # epsilon * u / (2 exp(-j epsilon)) = u * epsilon * exp(j epsilon) / 2, capped so
    # exp does not overflow (the winner is then chosen with probability 1 either way).
    logits = u * (epsilon / 2.0) * np.exp(np.minimum(j * epsilon, 700.0))
    return _sample_from_logits(logits, 1.0, rng, size)
