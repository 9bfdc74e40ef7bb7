"""Record-stable partitions: removing one record must not move any other record."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpexp.privacy import record_partition
from dpexp.privacy.audit_fixtures import position_blocks


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 300),
    parts=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_removing_a_record_moves_no_other_record(n, parts, seed, data):
    removed = data.draw(st.integers(0, n - 1))
    ids = np.arange(n)
    full = record_partition(n, parts, np.random.default_rng(seed), record_ids=ids)
    keep = ids != removed
    without = record_partition(n - 1, parts, np.random.default_rng(seed), record_ids=ids[keep])
    assert np.array_equal(full[keep], without)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 200), seed=st.integers(0, 2**32 - 1))
def test_appending_a_record_with_default_ids(n, seed):
    a = record_partition(n, [0.2, 0.3, 0.5], np.random.default_rng(seed))
    b = record_partition(n + 1, [0.2, 0.3, 0.5], np.random.default_rng(seed))
    assert np.array_equal(a, b[:n])


def test_position_blocks_would_fail_the_stability_check():
    # the property above is a real test: position blocks violate it
    a = position_blocks(6, np.random.default_rng(0), 1)[0]
    b = position_blocks(7, np.random.default_rng(0), 1)[0]
    assert not np.array_equal(a, b[:6])


def test_proportions_and_unused_part():
    n = 200_000
    parts = record_partition(n, [0.5, 0.2, 0.1], np.random.default_rng(1))
    freq = np.array([(parts == k).mean() for k in (0, 1, 2, -1)])
    assert np.allclose(freq, [0.5, 0.2, 0.1, 0.2], atol=0.005)
    eq = record_partition(n, 4, np.random.default_rng(2))
    assert np.allclose(np.bincount(eq) / n, 0.25, atol=0.005)


def test_assignments_independent_of_other_records_across_keys():
    # different keys give different assignments (the key comes from rng)
    a = record_partition(1000, 2, np.random.default_rng(1))
    b = record_partition(1000, 2, np.random.default_rng(2))
    assert 0.4 < (a == b).mean() < 0.6


@pytest.mark.parametrize(
    "n,props,ids,match",
    [
        (-1, 2, None, "n_records"),
        (5, 0, None, "proportions"),
        (5, [], None, "proportions"),
        (5, [0.7, 0.7], None, "proportions"),
        (5, [0.5, -0.1], None, "proportions"),
        (5, [float("nan")], None, "proportions"),
        (3, 2, [0, 1], "record_ids"),
        (2, 2, [0, -1], "record_ids"),
    ],
)
def test_bad_input(n, props, ids, match):
    with pytest.raises(ValueError, match=match):
        record_partition(n, props, np.random.default_rng(0), record_ids=ids)
