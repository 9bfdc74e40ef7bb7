"""Large generated datasets are drawn once and read back from the data directory."""

import numpy as np
import pytest

from dpexp.datasets import generated
from dpexp.datasets.core import load_dataset
from dpexp.datasets.parsers import generate_synthetic


@pytest.fixture
def small_threshold(monkeypatch, tmp_path):
    """Keep every draw (the registry's sets are too large for a unit test) in a fresh dir."""
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(generated, "MIN_VALUES", 1)
    return tmp_path


def _count_draws(monkeypatch):
    calls = []

    def counting(options, params, max_rows):
        calls.append(max_rows)
        return generate_synthetic(options, params, max_rows)

    monkeypatch.setattr("dpexp.datasets.core.generate_synthetic", counting)
    return calls


def test_second_load_reads_the_kept_draw(small_threshold, monkeypatch):
    calls = _count_draws(monkeypatch)
    a = load_dataset("synthetic_cls", max_rows=500, progress=False)
    b = load_dataset("synthetic_cls", max_rows=500, progress=False)
    assert calls == [500]
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert a.X.dtype == b.X.dtype == np.float32
    assert a.feature_names == b.feature_names and a.domain_source == b.domain_source
    assert len(list((small_threshold / "generated").glob("synthetic_cls-*.npz"))) == 1


def test_kept_draw_equals_a_fresh_one(small_threshold):
    kept = load_dataset("synthetic_reg", max_rows=300, progress=False)
    again = load_dataset("synthetic_reg", max_rows=300, progress=False)
    fresh = generate_synthetic({"generator": "make_regression", "n_samples": 1000000,
                                "n_features": 400}, {}, 300)
    np.testing.assert_array_equal(again.X, fresh.X)
    np.testing.assert_array_equal(kept.y, fresh.y)


def test_other_rows_or_parameters_are_other_draws(small_threshold, monkeypatch):
    calls = _count_draws(monkeypatch)
    load_dataset("synthetic_cls", max_rows=200, progress=False)
    load_dataset("synthetic_cls", max_rows=300, progress=False)
    load_dataset("synthetic_cls", {"seed": 1}, max_rows=200, progress=False)
    assert calls == [200, 300, 200]
    assert len(list((small_threshold / "generated").glob("*.npz"))) == 3


def test_corrupted_file_is_drawn_again(small_threshold, monkeypatch):
    first = load_dataset("synthetic_cls", max_rows=200, progress=False)
    (path,) = (small_threshold / "generated").glob("*.npz")
    path.write_bytes(path.read_bytes()[:100])  # truncated
    calls = _count_draws(monkeypatch)
    second = load_dataset("synthetic_cls", max_rows=200, progress=False)
    assert calls == [200]
    np.testing.assert_array_equal(first.X, second.X)
    assert load_dataset("synthetic_cls", max_rows=200, progress=False).X.shape == (200, 400)
    assert calls == [200]  # the rewritten file is read


def test_wrong_shape_is_drawn_again(small_threshold, monkeypatch):
    load_dataset("synthetic_cls", max_rows=200, progress=False)
    (path,) = (small_threshold / "generated").glob("*.npz")
    np.savez(path, X=np.zeros((5, 400), np.float32), y=np.zeros(5))
    calls = _count_draws(monkeypatch)
    assert load_dataset("synthetic_cls", max_rows=200, progress=False).X.shape == (200, 400)
    assert calls == [200]


def test_unwritable_data_dir_still_loads(monkeypatch, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("DPEXP_DATA_DIR", str(blocked))
    monkeypatch.setattr(generated, "MIN_VALUES", 1)
    ds = load_dataset("synthetic_cls", max_rows=100, progress=False)
    assert ds.X.shape == (100, 400)


def test_small_draws_are_not_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path))
    load_dataset("synthetic_cls", max_rows=100, progress=False)  # 40,000 values
    assert not (tmp_path / "generated").exists()


def test_key_names_library_versions_and_shape():
    base = generated.draw_key("s", {"generator": "make_regression"}, {}, 10)
    assert base == generated.draw_key("s", {"generator": "make_regression"}, {}, 10)
    assert base != generated.draw_key("s", {"generator": "make_regression"}, {}, 11)
    assert base != generated.draw_key("s", {"generator": "make_regression"}, {"seed": 2}, 10)
    assert generated.draw_shape({"n_samples": 50, "n_informative": 3, "n_random": 4}, {},
                                20) == (20, 7)
    assert generated.draw_shape({"n_samples": 50}, {}, None) == (50, None)


def test_two_processes_needing_one_missing_draw_draw_it_once(small_threshold, monkeypatch):
    """The second loader waits on the draw's lock, then reads the first one's file: two
    workers of a campaign never hold two 9 GiB draws at once."""
    import threading
    import time

    calls = []

    def slow(options, params, max_rows):
        calls.append(max_rows)
        time.sleep(0.3)  # long enough for the other thread to arrive while this one draws
        return generate_synthetic(options, params, max_rows)

    monkeypatch.setattr("dpexp.datasets.core.generate_synthetic", slow)
    out = []
    threads = [threading.Thread(target=lambda: out.append(
        load_dataset("synthetic_cls", max_rows=300, progress=False))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [300]
    np.testing.assert_array_equal(out[0].X, out[1].X)
