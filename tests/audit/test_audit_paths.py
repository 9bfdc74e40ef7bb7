"""The release-path machinery of the audit (issue #38): encoders, the runner's fit, and
the old behaviours the broken twins re-introduce (each checked to be what it claims)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpexp.audit.paths import CANARY_POSITIONS, exact_code, grid_levels, insert_row
from dpexp.audit.runner_path import RunnerCase, runner_fit, tiny_info
from dpexp.papers.fletcher import audit_paid_domain as paid_domain
from dpexp.papers.fletcher import audit_paths as fletcher_paths


def test_float_grid_levels_separate_a_count_from_pure_noise():
    noise = np.random.default_rng(0).laplace(0.0, 1.0, 2_000)
    assert grid_levels(1.0 + noise).max() <= 1
    assert grid_levels(noise).max() >= 2
    assert grid_levels(np.arange(-5.0, 5.0)).max() == 0


def test_exact_code_tells_bit_level_differences():
    a = np.array([0.1, 0.2])
    b = a.copy()
    b[1] = np.nextafter(b[1], 1.0)
    assert exact_code(a) == exact_code(a.copy())
    assert exact_code(a) != exact_code(b)
    assert exact_code(a) != exact_code(a.astype(np.float32))


def test_insert_row_positions():
    X, y = np.arange(4.0)[:, None], np.arange(4)
    rows = {p: insert_row(X, y, [9.0], 9, p)[1].tolist() for p in CANARY_POSITIONS}
    assert rows == {"row 0": [9, 0, 1, 2, 3], "middle": [0, 1, 9, 2, 3], "end": [0, 1, 2, 3, 9]}


# ------------------------------------------------------------------------- the runner's fit

JPW_CASE = RunnerCase("jpw", tiny_info("t_jpw", rows=7, features=8, classes=(0, 1, 2),
                                       domain=(0.0, 1.0)), {"n_trees": 1})


def _jpw_fit(n: int, **kw):
    X, y = np.zeros((n, 8)), np.arange(n) % 2
    return runner_fit(JPW_CASE, X, y, epsilon=1.0, noise_seed=1, **kw)


def test_runner_fit_declares_the_registry_row_count_not_len_x():
    fit = _jpw_fit(8)
    assert fit.estimator.n_records == 7 and fit.private
    assert _jpw_fit(8, n_from_data=True).estimator.n_records == 8  # the broken twin


def test_runner_fit_without_declared_rows_is_not_dp():
    case = RunnerCase("jpw", tiny_info("t_jpw_undeclared", rows=None, features=8,
                                       classes=(0, 1, 2), domain=(0.0, 1.0)), {"n_trees": 1})
    fit = runner_fit(case, np.zeros((8, 8)), np.arange(8) % 2, epsilon=1.0, noise_seed=1)
    assert not fit.private and "n_records" in fit.reason


def test_runner_fit_with_an_observed_domain_is_not_dp():
    case = fletcher_paths.OBSERVED_RUNNER
    X, y = fletcher_paths.OBSERVED_DATASETS[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = runner_fit(case, X, y, epsilon=1.0, noise_seed=1)
        old = runner_fit(case, X, y, epsilon=1.0, noise_seed=1, honour_inputs=False)
    assert float(fit.estimator.schema_.highs[0]) == 10.0  # the domain was read from the data
    assert not fit.private and "observed" in fit.reason
    assert old.private  # the broken twin: the accountant alone says DP


# ------------------------------------------------------------------ the twins' old behaviours


def test_old_default_noise_is_a_function_of_random_state():
    a, b = fletcher_paths.old_default_noise(5), fletcher_paths.old_default_noise(5)
    assert a.random(3).tolist() == b.random(3).tolist()


def test_row_keyed_partition_moves_records_when_a_row_is_inserted():
    X, _ = fletcher_paths.position_base()
    n, T = X.shape[0], fletcher_paths.N_POSITION_TREES
    before = fletcher_paths.old_row_partition(fletcher_paths.STRUCTURE_SEED, n, T)
    after = fletcher_paths.old_row_partition(fletcher_paths.STRUCTURE_SEED, n + 1, T)[1:]
    assert np.mean(before != after) > 0.5  # the records' trees are reshuffled


@pytest.mark.parametrize("X, y", fletcher_paths.FLOAT_DATASETS)
def test_float_laplace_jpw_releases_textbook_floats(X, y):
    est = fletcher_paths.FloatLaplaceJPW(
        epsilon=1.0, n_trees=1, max_depth=1, feature_domain=fletcher_paths.FOREST_DOMAIN,
        classes=fletcher_paths.FLOAT_CLASSES, random_state=0,
        noise_rng=np.random.default_rng(0)).fit(X, y)
    counts = est.tree_counts(np.array([[0.0], [1.0]]))
    assert not np.all(counts == np.round(counts))  # not integers: float Laplace noise


def test_two_fits_of_the_broken_twin_share_their_noise():
    X, y = fletcher_paths.SHARED_DATASETS[0]
    (r1, r2), charged = fletcher_paths._shared_counts(fletcher_paths.FloatLaplaceJPW, X, y, 0.75)
    assert charged == pytest.approx(0.75)
    joint = 2.0 * r1 - r2  # (s2 r1 - s1 r2) / (s2 - s1) with s2 = 2 s1
    assert joint[2] == pytest.approx(1.0)  # the probed leaf's exact count of class 2


def test_runner_fit_with_a_paid_domain_is_dp_and_its_broken_twin_uses_the_observed_one():
    X, y = paid_domain.DATASETS[2]  # the canary at x = 10 stretches the observed domain
    paid = runner_fit(paid_domain.CASE, X, y, epsilon=1.0, noise_seed=3)
    assert paid.private and paid.reason == ""
    domain = np.asarray(paid.estimator.get_params()["feature_domain"])
    assert np.all(np.log2(np.abs(domain[domain != 0])) % 1 == 0)  # the public log2 grid
    broken = runner_fit(paid_domain.CASE, X, y, epsilon=1.0, noise_seed=3, observed_as_paid=True)
    assert broken.private  # the lie the audit must catch
    np.testing.assert_array_equal(broken.estimator.get_params()["feature_domain"], [[0.75, 10.0]])
