"""A data-dependent fallback warning names the user's ``fit`` call, not a dpexp file.

An estimator missing public input (``classes``, ``feature_domain``, ``label_domain``)
reads it from the private data and warns (:class:`~dpexp.privacy.public.DataDependentWarning`).
The warning is only useful when it points at the line that built the non-DP fit: here,
the ``fit`` call in this file, through the ``charges_budget`` wrapper, the mixins and
the shared helpers between it and the ``warn`` call.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

from dpexp.privacy.public import (
    DataDependentDomainWarning,
    DataDependentWarning,
    public_classes,
    warn_outside_package,
)
from dpexp.registry import AlgorithmInfo, make_estimator, package_unavailable, paper_manifests


def _installed(info: AlgorithmInfo) -> bool:
    return all(package_unavailable(r) is None for r in info.requires)


def _private_cases() -> list:
    """One case per private estimator class of every discovered paper."""
    out, seen = [], set()
    for manifest in paper_manifests():
        for info in manifest.algorithms:
            for task, target in info.targets.items():
                if not info.private or target.startswith("sklearn.") or target in seen:
                    continue
                if not _installed(info):
                    continue
                seen.add(target)
                params = dict(manifest.common_test_params.get(info.name, {}))
                out.append(pytest.param(info.name, task, params,
                                        id=f"{info.name}-{task}"))
    return out


def _data(task: str, n: int = 60):
    rng = np.random.default_rng(0)
    X = rng.random((n, 3))
    return X, ((X[:, 0] > 0.5).astype(int) if task == "classification" else X[:, 0])


def _data_dependent(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in caught if issubclass(w.category, DataDependentWarning)]


@pytest.mark.parametrize(("name", "task", "params"), _private_cases())
def test_fallback_warning_names_the_fit_call(name, task, params):
    params = dict(params)
    est = make_estimator(name, task, params, epsilon=params.pop("epsilon", 1.0),
                         random_state=0)  # no public input: every fallback warns
    X, y = _data(task)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit_line = inspect.currentframe().f_lineno + 1
        est.fit(X, y)
    fallbacks = _data_dependent(caught)
    assert fallbacks, f"{name} ({task}) fitted without public input and did not warn"
    assert [(w.filename, w.lineno) for w in fallbacks] == [(__file__, fit_line)] * len(fallbacks)


def test_warning_through_a_third_party_caller_names_that_caller():
    """Called from scikit-learn (``cross_val_score``), the warning names scikit-learn's
    line, the first frame outside dpexp, not a dpexp file."""
    from sklearn.model_selection import cross_val_score

    from dpexp.papers.dpboost.estimators import DPBoostRegressor

    X, y = _data("regression")
    est = DPBoostRegressor(n_trees=2, trees_per_ensemble=2, max_depth=1, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cross_val_score(est, X, y, cv=2)
    files = {w.filename for w in _data_dependent(caught)}
    assert files and all("sklearn" in f for f in files), files


def test_warn_outside_package_from_user_code_names_the_caller():
    with pytest.warns(DataDependentDomainWarning, match="probe") as caught:
        line = inspect.currentframe().f_lineno + 1
        warn_outside_package("probe", DataDependentDomainWarning)
    assert (caught[0].filename, caught[0].lineno) == (__file__, line)


def test_public_classes_keeps_an_explicit_stacklevel():
    """An explicit ``stacklevel`` is still honoured (1 = public_classes itself)."""
    with pytest.warns(DataDependentWarning) as caught:
        public_classes(np.array([0, 1, 1]), stacklevel=1)
    assert caught[0].filename.endswith("dpexp/privacy/public.py")
