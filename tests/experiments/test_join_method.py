"""A registered method joins any experiment (issue 44): ``dpexp run EXP --algorithms NAME``.

A registered algorithm the spec does not list becomes a series of its own (label = its
name, its manifest's defaults); the experiment's own series keep their cells (content-
addressed: the same keys, so the same seeds and numbers); the grid leaves out the datasets
whose task the method does not support (``AlgorithmInfo.targets``), with one note, and
``plan`` counts the same grid as ``run``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from dpexp.errors import DpexpError, UnknownNameError
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import check_grid_size, count_cells, expand, unsupported_notes
from dpexp.experiments.spec import DatasetRef, joined_series, select


@pytest.fixture(scope="module")
def quickstart():
    """quickstart at smoke scale (synthA) plus a regression dataset: two tasks."""
    spec = resolve("quickstart").at_scale("smoke")
    return replace(spec, datasets=(*spec.datasets, DatasetRef("weather_temperature")))


def _series(spec):
    return [a.label for a in spec.algorithms]


def test_a_registered_algorithm_not_in_the_spec_joins_it(quickstart):
    joined = select(quickstart, algorithms=["gaussian_bdt"])
    assert joined.algorithms == (joined_series("gaussian_bdt"),)
    assert joined.algorithms[0].label == "gaussian_bdt" and joined.algorithms[0].params == {}
    cells = expand(joined, "smoke")
    assert {c.label for c in cells} == {"gaussian_bdt"}
    assert {c.dataset.name for c in cells} == {"synthA", "weather_temperature"}
    assert len(cells) == count_cells(joined) == 2 * len(joined.epsilons) * joined.cv.folds


def test_joining_leaves_the_experiments_own_cells_unchanged(quickstart):
    own = expand(quickstart, "smoke")
    mixed = select(quickstart, algorithms=[*_series(quickstart), "gaussian_bdt"])
    assert _series(mixed) == [*_series(quickstart), "gaussian_bdt"]
    after = expand(mixed, "smoke")
    joined = [c for c in after if c.label == "gaussian_bdt"]
    assert joined and len(after) == len(own) + len(joined)
    # content-addressed: the keys (hence seeds, cache files and numbers) do not move
    assert [c.key for c in after if c.label != "gaussian_bdt"] == [c.key for c in own]
    assert [c.seed_key for c in after if c.label != "gaussian_bdt"] == [c.seed_key for c in own]
    # a name and a label of the spec's still select its own series, in a mixed list
    by_name = select(quickstart, algorithms=["breiman_rf", "gaussian_bdt"])
    assert _series(by_name) == ["Breiman RF (non-private)", "gaussian_bdt"]


def test_unsupported_tasks_are_skipped_with_one_note(quickstart):
    # fletcher_forest (quickstart's own) and jpw (joined) are classification-only
    spec = select(quickstart, algorithms=["fletcher_forest", "breiman_rf", "jpw"])
    cells = expand(spec, "smoke")
    pairs = {(c.dataset.name, c.algorithm) for c in cells}
    assert pairs == {("synthA", "fletcher_forest"), ("synthA", "breiman_rf"),
                     ("weather_temperature", "breiman_rf"), ("synthA", "jpw")}
    assert count_cells(spec) == len(cells) == check_grid_size(spec, yes=False)
    assert unsupported_notes(spec) == [
        "DP random forest (Fletcher-Islam, ROSNAM) (fletcher_forest): skipped 1 regression "
        "dataset (weather_temperature): it supports classification only",
        "jpw: skipped 1 regression dataset (weather_temperature): it supports "
        "classification only",
    ]
    assert unsupported_notes(replace(spec, datasets=quickstart.datasets[:1])) == []


def test_a_grid_left_empty_by_the_tasks_is_an_error(quickstart):
    only_regression = select(quickstart, datasets=["weather_temperature"], algorithms=["jpw"])
    assert expand(only_regression, "smoke") == [] and count_cells(only_regression) == 0
    with pytest.raises(DpexpError, match="no cell left to compute: jpw: skipped 1 regression"):
        check_grid_size(only_regression, yes=False)


def test_an_unknown_name_still_fails_with_the_closest(quickstart):
    with pytest.raises(UnknownNameError) as err:
        select(quickstart, algorithms=["gausian_bdt"])
    assert err.value.suggestions[0] == "gaussian_bdt"
    assert "in quickstart or the registry" in str(err.value)
