"""Tiny dataset files the suite writes itself, served on 127.0.0.1, and a registry for them.

They exercise the real download (pooch over HTTP, sha256 checks), parsing and metadata
code without the real datasets, so these tests run on any fresh clone, offline.

* ``tiny_svm``: LIBSVM, labels -1/+1, 3 features declared in [0, 1];
* ``tiny_uci``: UCI-style comma file + test file (one header line to skip, labels ending
  in '.', '?' for missing values): a categorical column with declared categories, a
  numeric column with a declared range and one without (observed);
* ``tiny_reg``: a regression CSV with a header row and an observed label range;
* ``tiny_tofu``: a file without a published checksum (trust on first use).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from mirror_server import serve_directory

SVM = "-1 1:0.5 2:1\n1 1:1 3:0.25\n-1 2:0.75\n1 1:0.125 2:0.5 3:1\n"
UCI_TRAIN = "3.5, red, 10, yes\n7, green, 20, no\n1, blue, ?, yes\n2.5, red, 30, no\n9, green, 40, yes\n"
UCI_TEST = "|header line of the test file\n4, blue, 50, yes.\n8, red, 60, no.\n"
REG = "size,colour,price\n1,a,10\n2,b,20\n3,a,35\n4,b,45\n"


@dataclass
class TinyMirror:
    root: Path       # a folder laid out like shared/datasets
    url: str         # the same folder over HTTP on 127.0.0.1
    home: Path       # a DPEXP_HOME with datasets.yaml (the tiny registry) and experiments/
    registry: dict   # the raw registry written to home/datasets.yaml


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tiny_registry(files: dict[str, bytes]) -> dict:
    """Registry entries (datasets.yaml format) for the tiny files, with their checksums."""

    def file(path: str, *, sha: bool = True) -> dict:
        name = path.split("/")[-1]
        return {"name": name, "url": None, "sha256": _sha(files[path]) if sha else None,
                "mirror_path": path}

    return {
        "tiny_svm": {
            "description": "tiny LIBSVM file", "task": "classification", "papers": {},
            "files": [file("tiny_svm/tiny.svm")], "parser": "libsvm",
            "options": {"n_features": 3}, "rows": 4, "features": 3, "classes": [-1, 1],
            "feature_domain": {"declared": {"low": 0, "high": 1}},
        },
        "tiny_uci": {
            "description": "tiny UCI-style file with a test part", "task": "classification",
            "papers": {}, "files": [file("tiny_uci/tiny.data"), file("tiny_uci/tiny.test")],
            "parser": "csv",
            "options": {
                "columns": ["length", "colour", "weight", "label"], "label": "label",
                "categorical": ["colour"], "categories": {"colour": ["red", "green", "blue", "white"]},
                "na_values": ["?"], "drop_missing": True, "skip_rows_test": 1, "join": "train_test",
                "label_map": {"yes": 1, "yes.": 1, "no": 0, "no.": 0},
            },
            "rows": 4, "test_rows": 2, "features": 3, "classes": [0, 1, 2],
            "feature_domain": {"declared_columns": {"length": [0, 10]}},
        },
        "tiny_reg": {
            "description": "tiny regression CSV", "task": "regression", "papers": {},
            "files": [file("tiny_reg/reg.csv")], "parser": "csv",
            "options": {"header": True, "label": "price", "categorical": ["colour"]},
            "rows": 4, "features": 2, "feature_domain": "observed", "label_domain": "observed",
        },
        "tiny_tofu": {
            "description": "tiny file without a published checksum", "task": "classification",
            "papers": {}, "files": [file("tiny_tofu/tofu.svm", sha=False)], "parser": "libsvm",
            "options": {"n_features": 3}, "rows": 4, "features": 3, "classes": [-1, 1],
            "feature_domain": {"declared": {"low": 0, "high": 1}},
        },
    }


@pytest.fixture(scope="session")
def tiny_mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-mirror")
    files = {"tiny_svm/tiny.svm": SVM, "tiny_uci/tiny.data": UCI_TRAIN,
             "tiny_uci/tiny.test": UCI_TEST, "tiny_reg/reg.csv": REG, "tiny_tofu/tofu.svm": SVM}
    raw = {k: v.encode() for k, v in files.items()}
    for path, data in raw.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    home = tmp_path_factory.mktemp("tiny-home")
    registry = tiny_registry(raw)
    (home / "datasets.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))
    (home / "experiments").mkdir()
    server, url = serve_directory(root)
    yield TinyMirror(root=root, url=url, home=home, registry=registry)
    server.shutdown()


@pytest.fixture
def tiny(tiny_mirror, tmp_path, monkeypatch) -> TinyMirror:
    """The tiny registry active (DPEXP_HOME), a fresh empty data dir, the HTTP mirror set."""
    monkeypatch.setenv("DPEXP_HOME", str(tiny_mirror.home))
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DPEXP_DATA_MIRROR", tiny_mirror.url)
    return tiny_mirror
