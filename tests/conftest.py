"""Shared fixtures.

Every test downloads through the real pooch code path: a session fixture serves the
byte-exact dataset copies of ``../shared/datasets`` over HTTP on 127.0.0.1 and points
``DPEXP_DATA_MIRROR`` at it, with a fresh ``DPEXP_DATA_DIR``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mirror_server import serve_directory

REPO = Path(__file__).resolve().parents[1]


def shared_datasets_dir() -> Path:
    env = os.environ.get("DPEXP_TEST_SHARED_DATASETS")
    return Path(env) if env else REPO.parent / "shared" / "datasets"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    path = shared_datasets_dir()
    if not (path / "MANIFEST.tsv").exists():
        pytest.fail(f"the shared dataset copies are missing at {path} (set DPEXP_TEST_SHARED_DATASETS)")
    return path


@pytest.fixture(scope="session")
def http_mirror(shared_datasets):
    server, url = serve_directory(shared_datasets)
    yield url
    server.shutdown()


@pytest.fixture(scope="session", autouse=True)
def data_env(tmp_path_factory, http_mirror):
    """Fresh data cache + HTTP mirror for the whole session (restored afterwards)."""
    old = {k: os.environ.get(k) for k in ("DPEXP_DATA_DIR", "DPEXP_DATA_MIRROR")}
    data_dir = tmp_path_factory.mktemp("dpexp-data")
    os.environ["DPEXP_DATA_DIR"] = str(data_dir)
    os.environ["DPEXP_DATA_MIRROR"] = http_mirror
    yield data_dir
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
