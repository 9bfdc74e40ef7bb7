"""Public input and randomness of the Gaussian BDT (moved from tests/xgbdp/test_public_input.py, now tests/papers/xgbdp/)."""


from __future__ import annotations

import warnings

import numpy as np

from dpexp.papers.gaussian_bdt.estimators import GaussianBDTRegressor

META = {
    "feature_domain": np.tile([0.0, 1.0], (3, 1)),
    "categorical_features": np.zeros(3, dtype=bool),
    "n_categories": np.zeros(3, dtype=np.int64),
}
SMALL = {"n_trees": 3, "max_depth": 2}


def _data(n: int = 80, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    return X, (X[:, 0] + 0.2 * X[:, 1] > 0.6).astype(int)


def _trees_equal(a, b, *, values: bool = True) -> bool:
    return all(
        np.array_equal(s.feature, t.feature)
        and np.array_equal(s.threshold, t.threshold, equal_nan=True)  # NaN at leaves
        and (not values or np.array_equal(s.value, t.value))
        for s, t in zip(a.trees_, b.trees_, strict=True)
    )


def test_gaussian_bdt_structure_from_random_state_noise_from_noise_rng():
    """The random splits are structure: the same for any noise_rng; the leaves differ."""
    X, y = _data()
    fits = [GaussianBDTRegressor(label_domain=(0, 1), random_state=4,
                                 noise_rng=np.random.default_rng(s), **SMALL, **META).fit(X, y)
            for s in (1, 2)]
    assert _trees_equal(*fits, values=False)
    assert not _trees_equal(*fits)
    other = GaussianBDTRegressor(label_domain=(0, 1), random_state=5,
                                 noise_rng=np.random.default_rng(1), **SMALL, **META).fit(X, y)
    assert not _trees_equal(fits[0], other, values=False)


def test_gaussian_bdt_regressor_label_domain_from_data_marks_not_dp():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = GaussianBDTRegressor(random_state=0, **SMALL, **META).fit(X, y.astype(float))
    assert any("label domain" in r for r in m.accountant_.not_dp_reasons)

