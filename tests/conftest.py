"""Shared fixtures: where the real datasets come from, and a fresh data cache.

Tests of the download and parsing code use small files the suite writes itself
(``tests/datasets/``) and always run. Tests that need the *real* datasets get them, in
this order of preference:

1. **shared copies** -- ``$DPEXP_TEST_SHARED_DATASETS`` or ``../shared/datasets`` beside the
   clone (with its ``MANIFEST.tsv``): served byte-exact over HTTP on 127.0.0.1 and used as
   ``DPEXP_DATA_MIRROR``, so every download goes through the real pooch code path;
2. **network** -- the official hosts, when they answer (``DPEXP_TEST_NETWORK=0`` turns
   this off, ``=1`` skips the probe);
3. otherwise such a test is **skipped**, with a reason saying how to enable it.

``DPEXP_TEST_REQUIRE_REAL_DATA=1`` (set by ``.ci/run``) turns a missing source into a
failure, and makes the session fail if any test was skipped for want of data, so CI
cannot pass without running them.
"""

from __future__ import annotations

import functools
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest
from mirror_server import serve_directory

REPO = Path(__file__).resolve().parents[1]
REQUIRE_ENV = "DPEXP_TEST_REQUIRE_REAL_DATA"
#: Official hosts probed to decide whether real datasets can be downloaded.
OFFICIAL_HOSTS = ("archive.ics.uci.edu", "www.csie.ntu.edu.tw")
HOW_TO_ENABLE = (
    "set DPEXP_TEST_SHARED_DATASETS to a folder laid out like shared/datasets (with "
    "MANIFEST.tsv), put shared/datasets beside the clone, or allow network access to "
    + " and ".join(OFFICIAL_HOSTS)
)
#: Words of a skip reason that mean "a dataset was unavailable" (checked under REQUIRE_ENV).
_DATA_SKIP_WORDS = ("dataset", "mirror", "shared/")


def shared_datasets_dir() -> Path:
    env = os.environ.get("DPEXP_TEST_SHARED_DATASETS")
    return Path(env).expanduser() if env else REPO.parent / "shared" / "datasets"


def real_data_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def _network_available() -> bool:
    setting = os.environ.get("DPEXP_TEST_NETWORK", "")
    if setting in ("0", "1"):
        return setting == "1"
    for host in OFFICIAL_HOSTS:
        try:
            socket.create_connection((host, 443), timeout=3).close()
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class RealData:
    """Where real datasets come from in this session: ``shared``, ``network`` or ``none``."""

    mode: str
    shared: Path | None
    reason: str


def _real_data() -> RealData:
    path = shared_datasets_dir()
    if (path / "MANIFEST.tsv").exists():
        return RealData("shared", path, f"shared copies at {path}")
    missing = f"the shared dataset copies are missing at {path}"
    if _network_available():
        return RealData("network", None, f"{missing}; downloading from the official hosts")
    return RealData("none", None, f"{missing} and the official hosts are unreachable; {HOW_TO_ENABLE}")


def unavailable(what: str, source: RealData) -> None:
    """Skip (or, under ``DPEXP_TEST_REQUIRE_REAL_DATA``, fail) a test that needs ``what``."""
    message = f"needs {what}: {source.reason}"
    if real_data_required():
        pytest.fail(f"{message} ({REQUIRE_ENV} is set, so this is an error)", pytrace=False)
    pytest.skip(message)


#: Set by ``.ci/run``: a missing side environment of an optional peer
#: (``dpexp peers setup diffprivlib``, made by ``make install-test``) fails its tests.
REQUIRE_PEERS_ENV = "DPEXP_TEST_REQUIRE_PEERS"


def require_side_env(package: str) -> Path:
    """The side interpreter providing ``package`` (:mod:`dpexp.side_envs`); skip without it,
    or fail under ``DPEXP_TEST_REQUIRE_PEERS=1``."""
    from dpexp.side_envs import how_to_get, side_python

    python = side_python(package)
    if python is None:
        message = f"needs the {package} side environment: {how_to_get(package)}"
        if os.environ.get(REQUIRE_PEERS_ENV, "") not in ("", "0"):
            pytest.fail(f"{message} ({REQUIRE_PEERS_ENV} is set, so this is an error)", pytrace=False)
        pytest.skip(message)
    return python


@pytest.fixture(scope="session")
def real_data() -> RealData:
    return _REAL_DATA


def obtainable(name: str, source: RealData) -> bool:
    """Whether dataset ``name`` can be loaded in this session by any process (a CLI run in
    a subprocess or a worker too, where the in-process guard of ``fetch_file`` does not
    reach): synthetic or already cached, else served by the shared copies or the network."""
    from dpexp.experiments.environment import dataset_available

    return source.mode in ("shared", "network") or dataset_available(name)


def require_datasets(*names: str) -> None:
    """Skip (or, under ``DPEXP_TEST_REQUIRE_REAL_DATA``, fail) unless every dataset of
    ``names`` can be had here: call it before a run that would download them."""
    source = _session_source()
    missing = [n for n in dict.fromkeys(names) if not obtainable(n, source)]
    if missing:
        unavailable("the real " + ("dataset " if len(missing) == 1 else "datasets ")
                    + ", ".join(repr(n) for n in missing), source)


@functools.cache
def _session_source() -> RealData:
    """The session's source, also from a test module that imports this file by name (a
    second module object, which pytest_configure did not set up: it probes once itself)."""
    return _REAL_DATA if _REAL_DATA.reason != _NOT_PROBED else _real_data()


def require_spec_data(experiment: str, scale: str = "smoke") -> None:
    """:func:`require_datasets` over the datasets an experiment runs at ``scale``."""
    from dpexp.experiments.catalog import resolve

    require_datasets(*(d.name for d in resolve(experiment).at_scale(scale).datasets))


@pytest.fixture(scope="session")
def shared_datasets(real_data) -> Path:
    """The byte-exact shared copies (tests that compare against MANIFEST.tsv need them)."""
    if real_data.shared is None:
        unavailable("the shared dataset copies", real_data)
    return real_data.shared


@pytest.fixture(scope="session")
def http_mirror(shared_datasets):
    server, url = serve_directory(shared_datasets)
    yield url
    server.shutdown()


def _guarded_fetch(original, source: RealData):
    """``download.fetch_file`` that skips instead of failing when a real dataset cannot be
    had: explicit mirrors (the tests' own tiny servers) and cached files pass through."""
    from dpexp.datasets import download

    def fetch_file(info, f, *, mirror=None, root=None, progress=True):
        target = (root or download.data_dir()) / info.name / f.name
        cached = target.exists() and f.sha256 is not None and download.sha256_of(target) == f.sha256
        reachable = source.mode == "network" and f.url is not None
        if download.mirror_setting(mirror) is None and not cached and not reachable:
            unavailable(f"the real dataset {info.name!r} ({f.name})", source)
        return original(info, f, mirror=mirror, root=root, progress=progress)

    return fetch_file


@pytest.fixture(scope="session", autouse=True)
def data_env(tmp_path_factory):
    """Fresh data cache + the session's real-data source (environment restored afterwards)."""
    from dpexp.datasets import download

    keys = ("DPEXP_DATA_DIR", "DPEXP_DATA_MIRROR")
    old = {k: os.environ.get(k) for k in keys}
    data_dir = tmp_path_factory.mktemp("dpexp-data")
    os.environ["DPEXP_DATA_DIR"] = str(data_dir)
    os.environ.pop("DPEXP_DATA_MIRROR", None)  # a user's own mirror must not leak in
    server = None
    with pytest.MonkeyPatch.context() as mp:
        if _REAL_DATA.shared is not None:
            server, url = serve_directory(_REAL_DATA.shared)
            os.environ["DPEXP_DATA_MIRROR"] = url
        else:
            mp.setattr(download, "fetch_file", _guarded_fetch(download.fetch_file, _REAL_DATA))
        yield data_dir
    if server is not None:
        server.shutdown()
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


# ----------------------------------------------------------------------------- hooks

_NOT_PROBED = "not probed yet"
_REAL_DATA: RealData = RealData("none", None, _NOT_PROBED)
_DATA_SKIPS: list[str] = []


def pytest_configure(config) -> None:  # noqa: ARG001
    global _REAL_DATA
    _REAL_DATA = _real_data()


def pytest_report_header(config) -> str:  # noqa: ARG001
    required = f" ({REQUIRE_ENV}: missing data is an error)" if real_data_required() else ""
    return f"dpexp real datasets: {_REAL_DATA.mode} -- {_REAL_DATA.reason}{required}"


def pytest_runtest_logreport(report) -> None:
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if any(w in reason.lower() for w in _DATA_SKIP_WORDS):
            _DATA_SKIPS.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session, exitstatus) -> None:
    if real_data_required() and _DATA_SKIPS and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    if real_data_required() and _DATA_SKIPS:
        terminalreporter.section(f"{REQUIRE_ENV}: tests skipped for want of data (session fails)")
        for line in _DATA_SKIPS:
            terminalreporter.line(line)


#: The runner tests' tiny experiment: synthA, a DP forest and Breiman's forest, 2 folds,
#: two epsilons, 300 rows at smoke scale (each test file changes what it needs).
TINY_SPEC = {
    "paper": "test", "artefact": "Figure 0", "kind": "figure", "caption": "c",
    "datasets": ["synthA"],
    "algorithms": [
        {"name": "fletcher_forest", "label": "DP forest", "params": {"n_trees": 3}},
        {"name": "breiman_rf", "label": "RF", "params": {"n_estimators": 5}},
    ],
    "epsilons": [1.0, 3.0], "cv": {"folds": 2}, "metrics": ["accuracy"],
    "plot": {"x": "epsilon", "y": "accuracy"},
    "scales": {"smoke": {"max_rows": 300}},
}


def tiny_spec(spec_id: str, **changes) -> dict:
    """:data:`TINY_SPEC` under the id ``spec_id``, with top-level keys replaced by ``changes``."""
    return {"id": spec_id, **TINY_SPEC, **changes}


def rewrite_cached_cell(path: Path, change) -> dict:
    """Apply ``change(payload)`` to a cached cell file and write it back with a matching
    checksum: a cell as an older dpexp (or another code path) would have written it, not a
    corrupt one (tests/faults edits cells without the checksum)."""
    import json

    from dpexp.experiments.cache import payload_checksum

    payload = json.loads(path.read_text())
    change(payload)
    payload["checksum"] = payload_checksum(payload)
    path.write_text(json.dumps(payload))
    return payload


def install_example_plugin(site: Path, package: Path) -> Path:
    """``site`` holding a copy of the example plugin ``package`` and a dist-info declaring
    its ``dpexp.papers`` entry point: the plugin installed, offline (put ``site`` on
    ``PYTHONPATH``)."""
    import shutil

    shutil.copytree(package, site / package.name)
    info = site / f"{package.name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dp-stump-paper\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[dpexp.papers]\ndp_stump = {package.name}\n")
    return site
