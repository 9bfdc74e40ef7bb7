"""A mechanism-level DEMO: a stand-in forest, not a registered estimator.

It exists to show (and test) parallel composition over a record-stable partition and
the ledger-entry audit on something small enough to fit 10^5 times a second. It is *not*
what users run: the registered Fletcher forest (``fletcher_forest``) is audited end to
end in :mod:`dpexp.papers.fletcher.audit`. Its audit targets have ``kind="demo"``
(``forest_disjoint``, and the broken ``forest_position_blocks``) or ``"ledger-entry"``
(``forest_disjoint_ledger``, the broken ``forest_leaf_half_noise_ledger``).

T trees over disjoint record sets (parallel composition, Fletcher & Islam 2017
Definition 3 and Algorithm 1 line 22), each with one data-independent split on a binary
feature, so 2 leaves per tree. Each leaf's majority label is released with
:func:`~dpexp.privacy.report_noisy_max_one_sided` at the full epsilon (2021 addendum),
which is epsilon-DP overall only because adding/removing one record touches one leaf of
one tree -- i.e. only if the record-to-tree assignment is record-stable
(:func:`~dpexp.privacy.record_partition`). The broken fixture swaps in position blocks.

A dataset is an int array of shape ``(n, 2)``: column 0 the binary feature (= leaf),
column 1 the binary label. The output of one run is ``T * 2`` labels, tree-major.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import numpy as np

from dpexp.privacy.accountant import Accountant
from dpexp.privacy.mechanisms import report_noisy_max_one_sided
from dpexp.privacy.partition import RecordIds, record_ids, record_partition, record_partition_batch

N_TREES = 3
N_LEAVES = 2
N_CLASSES = 2

#: Six records (feature, label) and a canary; the neighbouring dataset appends the canary.
BASE = np.array([[1, 0], [1, 0], [1, 0], [1, 1], [0, 1], [0, 0]], dtype=np.int64)
CANARY = np.array([[0, 0]], dtype=np.int64)
DATASETS = (BASE, np.concatenate([BASE, CANARY]))

#: ``partition(data, rng, size)`` -> ``(size, n)`` tree of each record per draw.
Partitioner = Callable[[np.ndarray, np.random.Generator, int], np.ndarray]


def data_ids(data: np.ndarray) -> RecordIds:
    """Content ids of the records (feature, label): a record's tree depends on it alone."""
    data = np.asarray(data)
    return record_ids(data[:, :1], data[:, 1])


def stable_parts(data: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` record-stable partitions of the records into the trees, ``(size, n)``."""
    return record_partition_batch(data_ids(data), [1.0 / N_TREES] * N_TREES, rng, size)


def leaf_counts(data: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """Class counts per (draw, tree, leaf): shape ``(size, T, L, C)``."""
    size, n = parts.shape
    cell = data[:, 0] * N_CLASSES + data[:, 1]  # (n,) leaf-class cell of each record
    onehot_tree = (parts[:, :, None] == np.arange(N_TREES)).astype(np.int64)  # (size, n, T)
    onehot_cell = np.zeros((n, N_LEAVES * N_CLASSES), dtype=np.int64)
    onehot_cell[np.arange(n), cell] = 1
    counts = np.einsum("snt,nc->stc", onehot_tree, onehot_cell)
    return counts.reshape(size, N_TREES, N_LEAVES, N_CLASSES)


def forest_release(
    data: np.ndarray,
    *,
    epsilon: float,
    delta: float = 0.0,
    rng: np.random.Generator,
    size: int,
    partition: Partitioner = stable_parts,
) -> np.ndarray:
    """``size`` independent forests (fresh partition and noise each): ``(size, T * L)`` labels."""
    parts = partition(np.asarray(data), rng, size)
    counts = leaf_counts(np.asarray(data), parts)
    labels = report_noisy_max_one_sided(counts, epsilon=epsilon, rng=rng)
    return np.asarray(labels).reshape(size, N_TREES * N_LEAVES)


def fit_forest(
    data: np.ndarray,
    *,
    epsilon: float,
    rng: np.random.Generator,
    public_rng: np.random.Generator | None = None,
    fixed_outputs: Mapping[str, Any] | None = None,
    leaf_epsilon_factor: float = 1.0,
) -> Accountant:
    """One forest with full accounting (parallel over trees, parallel over leaves).

    ``public_rng`` draws the record partition (data-independent), ``rng`` the noise.
    Every leaf label is recorded as an output, for
    :func:`dpexp.audit.targets.ledger_entry_target` (which passes ``fixed_outputs``; no
    release here depends on another, so the fixed values are not used further).
    ``leaf_epsilon_factor`` != 1 makes leaf 0 of each tree use more epsilon than it
    records -- only for the broken fixture.
    """
    acc = Accountant(epsilon=epsilon, keep_outputs=True, fixed_outputs=fixed_outputs)
    parts = record_partition(data_ids(data), N_TREES, rng if public_rng is None else public_rng)
    whats = [[f"tree {t} leaf {leaf} label" for leaf in range(N_LEAVES)] for t in range(N_TREES)]
    counts = leaf_counts(data, parts[None, :])[0]  # (T, L, C)
    # only the broken fixture draws leaf 0 with more epsilon than it charges
    eps_draw = [epsilon * leaf_epsilon_factor] + [epsilon] * (N_LEAVES - 1)
    with acc.parallel("trees"):
        for t in range(N_TREES):
            with acc.sequential(f"tree {t}"), acc.parallel(f"leaves of tree {t}"):
                for leaf in range(N_LEAVES):
                    label = acc.release(
                        partial(report_noisy_max_one_sided, counts[t, leaf],
                                epsilon=eps_draw[leaf], rng=rng),
                        epsilon=epsilon, what=whats[t][leaf],
                        mechanism="report_noisy_max_one_sided")
                    acc.record_output(whats[t][leaf], int(label))
    return acc
