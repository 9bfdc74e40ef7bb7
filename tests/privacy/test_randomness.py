"""Generators: secure source, spawning, refusal of seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpexp.privacy import (
    SecureGenerator,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    make_generator,
    record_partition,
    report_noisy_max_one_sided,
    secure_generator,
    spawn_generators,
)


def test_secure_generator_drives_every_mechanism():
    rng = secure_generator()
    assert isinstance(rng, SecureGenerator)
    assert np.shape(laplace_mechanism(np.zeros(4), epsilon=1.0, sensitivity=1.0, rng=rng)) == (4,)
    assert np.shape(
        gaussian_mechanism(np.zeros(3), epsilon=0.5, delta=1e-5, sensitivity=1.0, rng=rng)
    ) == (3,)
    assert exponential_mechanism([0.0, 1.0], epsilon=1.0, sensitivity=1.0, rng=rng) in (0, 1)
    assert report_noisy_max_one_sided([0, 1], epsilon=1.0, rng=rng, noise="exponential") in (0, 1)
    assert set(np.unique(record_partition(50, 2, rng))) <= {0, 1}


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
