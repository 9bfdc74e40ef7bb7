"""Generators: secure source, spawning, refusal of seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpexp.privacy import (
    SecureGenerator,
    estimator_streams,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    make_generator,
    record_ids,
    record_partition,
    report_noisy_max_one_sided,
    secure_generator,
    seeded_noise,
    spawn_generators,
)
from dpexp.privacy.randomness import NOT_PRIVATE


def test_secure_generator_drives_every_mechanism():
    rng = secure_generator()
    assert isinstance(rng, SecureGenerator)
    assert np.shape(laplace_mechanism(np.zeros(4), epsilon=1.0, sensitivity=1.0, rng=rng)) == (4,)
    assert np.shape(
        gaussian_mechanism(np.zeros(3), epsilon=0.5, delta=1e-5, sensitivity=1.0, rng=rng)
    ) == (3,)
    assert exponential_mechanism([0.0, 1.0], epsilon=1.0, sensitivity=1.0, rng=rng) in (0, 1)
    assert report_noisy_max_one_sided([0, 1], epsilon=1.0, rng=rng, noise="exponential") in (0, 1)
    assert set(np.unique(record_partition(record_ids(np.arange(50.0)[:, None]), 2, rng))) <= {0, 1}


def test_secure_generator_distributions():
    rng = secure_generator()
    assert (
        stats.kstest(rng.laplace(0.0, 2.0, size=20_000), stats.laplace(scale=2.0).cdf).pvalue > 1e-4
    )
    assert stats.kstest(rng.normal(0.0, 3.0, size=20_000), stats.norm(scale=3.0).cdf).pvalue > 1e-4
    assert stats.kstest(rng.gumbel(size=20_000), stats.gumbel_r.cdf).pvalue > 1e-4
    u = rng.random(10_000)
    assert u.min() > 0 and u.max() < 1
    a, b = rng.random(5), rng.random(5)
    assert not np.array_equal(a, b)


def test_spawned_streams_are_distinct_and_reproducible():
    ss = np.random.SeedSequence(7)
    g1 = [g.random(3) for g in spawn_generators(ss, 3)]
    g2 = [g.random(3) for g in spawn_generators(np.random.SeedSequence(7), ["a", "b", "c"])]
    assert all(np.array_equal(a, b) for a, b in zip(g1, g2, strict=True))
    assert not np.array_equal(g1[0], g1[1])
    assert np.array_equal(make_generator(3, "cell").random(2), make_generator(3, "cell").random(2))
    assert not np.array_equal(
        make_generator(3, "cell").random(2), make_generator(3, "other").random(2)
    )
    with pytest.raises(ValueError):
        spawn_generators(ss, -1)


def test_default_noise_is_fresh_entropy_never_the_random_state():
    """Issue #38 item 1: ``noise_rng=None`` draws from the OS, not from ``random_state``
    (which the model publishes through its structure, e.g. ``seeds_``)."""
    a, b = (estimator_streams(3).noise_generator().random(4) for _ in range(2))
    assert not np.array_equal(a, b)
    old = np.random.default_rng(np.random.SeedSequence([0x6E6F697365, 3]).spawn(1)[0]).random(4)
    assert not np.array_equal(a, old)  # the formerly derived stream is not the default
    same = [estimator_streams(3).structure.generate_state(2) for _ in range(2)]
    assert np.array_equal(*same)  # the structure still follows random_state


def test_seeded_noise_is_the_former_stream_and_a_seed():
    ss = seeded_noise(3)
    got = estimator_streams(3, ss).noise_generators(2)[1].random(3)
    old = np.random.default_rng(np.random.SeedSequence([0x6E6F697365, 3]).spawn(2)[1]).random(3)
    assert np.array_equal(got, old)  # runner numbers unchanged
    again = estimator_streams(3, ss).noise_generators(2)[1].random(3)
    assert np.array_equal(got, again) and ss.n_children_spawned == 0  # never advanced
    with pytest.raises(TypeError):
        seeded_noise(None)


def test_a_non_private_variant_derives_its_randomness_from_random_state():
    """NOT_PRIVATE (the getattr default of an estimator without ``noise_rng``): nothing
    private to protect, so deterministic given ``random_state``, as scikit-learn's."""
    a, b = (estimator_streams(3, NOT_PRIVATE).noise_generator().random(3) for _ in range(2))
    assert np.array_equal(a, b)
    assert np.array_equal(a, estimator_streams(3, seeded_noise(3)).noise_generator().random(3))
