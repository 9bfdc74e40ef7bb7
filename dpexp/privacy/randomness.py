"""Random number streams for the privacy mechanisms.

Defaults are private
    An estimator's ``random_state`` seeds its structure only; with ``noise_rng=None`` its
    noise comes from fresh OS entropy (:func:`estimator_streams`), so nothing published
    with the model (``seeds_``, the random_state itself) lets anyone recompute the noise.

Reproducible runs (an explicit choice)
    The runner passes ``noise_rng=seeded_noise(random_state)`` (a SeedSequence keyed by
    the cell's seed, :func:`dpexp.seeding.seed_sequence`) and says so in every result row
    (``noise`` = :data:`SEEDED_NOISE`): a research result, not a release. Estimators spawn
    child sequences per tree and per mechanism with :func:`spawn_generators`, so no
    generator state is ever used for two noise draws that must be independent (two
    mechanisms sharing a stream would make their noise correlated, which breaks the
    composition theorems).

Real releases (:func:`secure_generator`)
    A :class:`SecureGenerator` draws every uniform from the operating system's
    cryptographically secure source (``os.urandom`` via :mod:`secrets`) and turns it into
    Laplace, Gaussian, Gumbel and exponential noise by inverse transforms. It is *not*
    reproducible, which is the point: the noise of a published model must not be
    recoverable from a seed. The mechanisms' exact discrete samplers
    (:mod:`dpexp.privacy.samplers`) consume its 64-bit words as they consume a numpy
    Generator's, so the floating-point guarantee (docs/PRIVACY.md) holds with either.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtri

from dpexp.seeding import seed_sequence

__all__ = [
    "EstimatorStreams",
    "SecureGenerator",
    "NOT_PRIVATE",
    "Rng",
    "SEEDED_NOISE",
    "check_rng",
    "estimator_streams",
    "make_generator",
    "random_words",
    "secure_generator",
    "seeded_noise",
    "spawn_generators",
]

_TWO53 = float(2**53)


class SecureGenerator:
    """A drop-in for the few ``numpy.random.Generator`` methods the mechanisms use.

    Uniforms are 53-bit fractions from ``secrets.token_bytes`` (the OS secure source),
    strictly inside (0, 1) so the inverse transforms never produce infinities.
    """

    secure = True

    def _uniform01(self, size: Any) -> np.ndarray:
        shape = () if size is None else tuple(np.atleast_1d(size).astype(int))
        count = int(np.prod(shape)) if shape else 1
        raw = np.frombuffer(secrets.token_bytes(8 * count), dtype=np.uint64) >> np.uint64(11)
        u = (raw.astype(np.float64) + 0.5) / _TWO53
        return u.reshape(shape) if shape else u[0]

    def random(self, size: Any = None) -> Any:
        return self._uniform01(size)

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None) -> Any:
        return low + (high - low) * self._uniform01(size)

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        u = self._uniform01(size) - 0.5
        return loc - scale * np.sign(u) * np.log1p(-2.0 * np.abs(u))

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        return loc + scale * ndtri(self._uniform01(size))

    def standard_normal(self, size: Any = None) -> Any:
        return ndtri(self._uniform01(size))

    def gumbel(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        return loc - scale * np.log(-np.log(self._uniform01(size)))

    def exponential(self, scale: Any = 1.0, size: Any = None) -> Any:
        return -scale * np.log(self._uniform01(size))

    def integers(self, low: int, high: int | None = None, size: Any = None) -> Any:
        if high is None:
            low, high = 0, low
        span = int(high) - int(low)
        if size is None:
            return int(low) + secrets.randbelow(span)
        shape = tuple(np.atleast_1d(size).astype(int))
        vals = [int(low) + secrets.randbelow(span) for _ in range(int(np.prod(shape)))]
        return np.asarray(vals, dtype=np.int64).reshape(shape)

    def bytes(self, length: int) -> bytes:
        return secrets.token_bytes(length)

    def spawn(self, n_children: int) -> list[SecureGenerator]:
        return [SecureGenerator() for _ in range(n_children)]

    def __repr__(self) -> str:
        return "SecureGenerator(os.urandom)"


Rng = np.random.Generator | SecureGenerator


def check_rng(rng: Any, name: str = "rng") -> Rng:
    """Refuse anything but a Generator (an int seed here is how seeds end up reused)."""
    if isinstance(rng, np.random.Generator | SecureGenerator):
        return rng
    raise TypeError(
        f"{name} must be a numpy.random.Generator (or dpexp SecureGenerator), got "
        f"{type(rng).__name__}; spawn one from the cell's SeedSequence"
    )


def random_words(rng: Rng, n: int) -> np.ndarray:
    """``n`` independent uniformly random 64-bit words (``uint64``) from ``rng``.

    The raw input of the exact samplers (:mod:`dpexp.privacy.samplers`): a
    ``numpy.random.Generator`` gives ``integers(0, 2**64, dtype=uint64)``, which for the
    full range is the bit generator's next 64-bit outputs, so draws of sizes ``a`` then
    ``b`` are the words of one draw of size ``a + b`` (the samplers' outputs depend on the
    stream only, not on how it is chunked); a :class:`SecureGenerator` gives words from
    ``secrets.token_bytes`` (the OS secure source).
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if isinstance(rng, SecureGenerator):
        return np.frombuffer(secrets.token_bytes(8 * n), dtype="<u8").astype(np.uint64)
    rng = check_rng(rng)
    if type(rng.bit_generator) in _RAW_IS_UINT64:
        # the same words: integers() spends most of a small call (a leaf release's few
        # hundred words) handling its arguments
        return rng.bit_generator.random_raw(n)
    return rng.integers(0, 2**64, size=n, dtype=np.uint64)


#: Bit generators whose raw output is the 64-bit word ``integers(0, 2**64,
#: dtype=uint64)`` returns over the full range (MT19937's raw output is 32 bits).
_RAW_IS_UINT64 = frozenset({np.random.PCG64, np.random.PCG64DXSM, np.random.Philox,
                            np.random.SFC64})


def make_generator(
    seed: int | np.random.SeedSequence, key: str | None = None
) -> np.random.Generator:
    """A Generator from a SeedSequence, or from (seed, key) via :func:`dpexp.seeding.seed_sequence`."""
    if isinstance(seed, np.random.SeedSequence):
        if key is not None:
            raise ValueError("key is only used with an integer seed")
        return np.random.default_rng(seed)
    return np.random.default_rng(seed_sequence(int(seed), key or ""))


def spawn_generators(parent: np.random.SeedSequence | Rng, n: int | Sequence[str]) -> list[Rng]:
    """``n`` independent child generators (one per tree, per mechanism, ...).

    ``parent`` is a SeedSequence (preferred) or a Generator/SecureGenerator (its
    ``spawn``). ``n`` may be a count or a list of labels (one child per label, in order).
    """
    count = n if isinstance(n, int) else len(n)
    if count < 0:
        raise ValueError(f"n must be >= 0, got {count}")
    if isinstance(parent, np.random.SeedSequence):
        return [np.random.default_rng(child) for child in parent.spawn(count)]
    parent = check_rng(parent, "parent")
    return list(parent.spawn(count))


def secure_generator() -> SecureGenerator:
    """A generator backed by the OS secure random source, for real (published) releases."""
    return SecureGenerator()


@dataclass(frozen=True)
class EstimatorStreams:
    """An estimator's two kinds of randomness, kept apart.

    ``structure``: data-independent choices that may be published with the model
    (random split features and thresholds, tree seeds, record partitions, bagging).
    ``noise``: every mechanism's noise, and any randomness a release shows only through
    data (e.g. the label of an empty leaf). It is never derived from, and never
    recoverable from, anything the model publishes.
    """

    structure: np.random.SeedSequence
    noise: np.random.SeedSequence | Rng

    def noise_generators(self, n: int | Sequence[str]) -> list[Rng]:
        """``n`` independent noise generators (one per tree, mechanism, ...)."""
        return spawn_generators(self.noise, n)

    def noise_generator(self) -> Rng:
        """One noise generator (a child of the noise stream)."""
        return self.noise_generators(1)[0]


#: Spawn key that separates the noise stream from the structure stream of a random_state.
_NOISE_KEY = 0x6E6F697365  # "noise"

#: What a result row says of noise drawn through :func:`seeded_noise` (the runner's choice).
SEEDED_NOISE = "seeded from the run seed (research result, not a release)"


def seeded_noise(random_state: int) -> np.random.SeedSequence:
    """A reproducible noise source keyed by ``random_state``: ``noise_rng=`` for experiments.

    The same SeedSequence as the one ``estimator_streams`` derived by default before noise
    came from fresh OS entropy, so experiment numbers do not change. Whoever knows
    ``random_state`` (published with the model through its structure, e.g. ``seeds_``) can
    recompute this noise: a result fitted with it is a research result, not a release.
    """
    if isinstance(random_state, bool) or not isinstance(random_state, int | np.integer):
        raise TypeError(f"random_state must be an int, got {type(random_state).__name__}")
    return np.random.SeedSequence([_NOISE_KEY, int(random_state)])


@dataclass(frozen=True)
class _NotPrivate:
    """The type of :data:`NOT_PRIVATE` (a sentinel, compared by identity)."""

    def __repr__(self) -> str:
        return "NOT_PRIVATE"


#: ``noise_rng`` of an estimator that releases nothing private: a non-private variant
#: without a ``noise_rng`` parameter passes ``getattr(self, "noise_rng", NOT_PRIVATE)``.
#: Its random choices outside the structure (ties, empty leaves) are then derived from
#: ``random_state``, deterministic as scikit-learn's estimators are: no noise to protect.
NOT_PRIVATE = _NotPrivate()


def _fresh_copy(seed: np.random.SeedSequence) -> np.random.SeedSequence:
    """``seed`` at its current state, as a new object: every fit spawns the same children
    from one SeedSequence (as from one int seed) and the caller's object is never advanced."""
    return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size,
                                  n_children_spawned=seed.n_children_spawned)


def estimator_streams(random_state: Any, noise_rng: Any = None) -> EstimatorStreams:
    """Structure and noise streams of a private estimator.

    ``random_state`` (None or an int, as scikit-learn) seeds the structure stream only.
    ``noise_rng`` draws the noise:

    * None (the default): fresh OS entropy, never derived from ``random_state`` -- two fits
      with one ``random_state`` draw independent noise, and the published structure
      (``seeds_``) reveals nothing of it;
    * a ``numpy.random.SeedSequence`` (e.g. :func:`seeded_noise`): reproducible noise, an
      explicit choice for experiments; each fit spawns from the sequence's current state
      (a copy), so two fits with one sequence draw the same noise;
    * a ``numpy.random.Generator`` / :class:`SecureGenerator` whose children draw the noise
      (``noise_rng=dpexp.privacy.secure_generator()`` for a published model);
    * :data:`NOT_PRIVATE` (a non-private variant: derived from ``random_state``).

    The value mechanisms sample exactly on public grids, so no low-order bits of a
    release depend on the data (Mironov, CCS 2012; docs/PRIVACY.md, "Floating-point attacks").
    """
    if random_state is not None and not isinstance(random_state, int | np.integer):
        raise TypeError(
            f"random_state must be None or an int, got {type(random_state).__name__}"
        )
    structure = np.random.SeedSequence(None if random_state is None else int(random_state))
    if noise_rng is None or (noise_rng is NOT_PRIVATE and random_state is None):
        noise: np.random.SeedSequence | Rng = np.random.SeedSequence()  # OS entropy
    elif noise_rng is NOT_PRIVATE:
        noise = seeded_noise(random_state)
    elif isinstance(noise_rng, np.random.SeedSequence):
        noise = _fresh_copy(noise_rng)
    elif isinstance(noise_rng, np.random.Generator | SecureGenerator):
        noise = noise_rng
    else:
        raise TypeError(
            f"noise_rng must be None, a numpy.random.SeedSequence (e.g. seeded_noise(seed)), "
            f"a numpy.random.Generator or a dpexp SecureGenerator, got {type(noise_rng).__name__}"
        )
    return EstimatorStreams(structure=structure, noise=noise)
