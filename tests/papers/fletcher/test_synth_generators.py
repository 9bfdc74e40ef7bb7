"""Fletcher-Islam SynthA-G generators (Table 1 plus our documented class_sep choice)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dpexp.datasets import load_dataset
from dpexp.datasets.parsers import generate_synthetic
from dpexp.datasets.registry import get_dataset_info
from dpexp.errors import DatasetError

TABLE1 = {"synthA": (5, 0), "synthB": (10, 0), "synthC": (15, 0), "synthD": (10, 5),
          "synthE": (5, 10), "synthF": (5, 5), "synthG": (10, 10)}


def test_options_reach_make_classification():
    opts = {"generator": "make_classification", "n_samples": 500, "n_informative": 5,
            "n_random": 2, "class_sep": 1.5, "flip_y": 0.0, "n_clusters_per_class": 1}
    parsed = generate_synthetic(opts, {"seed": 3}, None)
    X, y = make_classification(n_samples=500, n_features=7, n_informative=5, n_redundant=0,
                               n_repeated=0, n_classes=2, random_state=3, class_sep=1.5,
                               flip_y=0.0, n_clusters_per_class=1)
    np.testing.assert_array_equal(parsed.X, X.astype(np.float32))
    np.testing.assert_array_equal(parsed.y, y)


def test_class_sep_changes_the_data():
    base = {"generator": "make_classification", "n_samples": 300, "n_informative": 5, "n_random": 0}
    a = generate_synthetic(base, {}, None)
    b = generate_synthetic({**base, "class_sep": 1.5}, {}, None)
    assert not np.array_equal(a.X, b.X)


def test_unknown_option_is_a_clear_error():
    opts = {"generator": "make_classification", "n_samples": 100, "n_informative": 5,
            "n_random": 0, "n_redundant": 2}
    with pytest.raises(DatasetError, match="n_redundant"):
        generate_synthetic(opts, {}, None)


@pytest.mark.parametrize("name", sorted(TABLE1))
def test_registry_entries_follow_table1(name):
    info = get_dataset_info(name)
    n_inf, n_rand = TABLE1[name]
    assert (info.options["n_informative"], info.options["n_random"]) == (n_inf, n_rand)
    assert info.options["class_sep"] == 1.5
    assert info.features == n_inf + n_rand


def test_synth_is_balanced_binary():
    ds = load_dataset("synthA", {"n_samples": 2000}, progress=False)
    counts = np.bincount(ds.y)
    assert counts.size == 2 and abs(counts[0] - counts[1]) < 0.05 * ds.y.size
