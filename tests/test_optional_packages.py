"""Whether an optional package imports, asked without importing it here
(:mod:`dpexp.optional_packages`): the answer of a real import, tried once in a child
interpreter and cached until what decides it changes."""

from __future__ import annotations

import importlib
import json
import os
import sys

import pytest

from dpexp import optional_packages
from dpexp.optional_packages import import_failure, probe_file, start_probes


@pytest.fixture
def probes(tmp_path, monkeypatch):
    """A fresh data directory (the probe cache) and a folder of packages on sys.path."""
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path / "data"))
    packages = tmp_path / "packages"
    packages.mkdir()
    monkeypatch.syspath_prepend(str(packages))
    return packages


def _write(path, text: str, mtime: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(mtime, mtime))  # a different mtime, even within one clock tick


def test_a_broken_install_is_missing_with_its_reason_and_not_imported_here(probes):
    (probes / "dpexp_probe_broken.py").write_text("raise ImportError('cannot import DOUBLE')\n")
    (probes / "dpexp_probe_fine.py").write_text("VALUE = 1\n")
    assert import_failure("dpexp_probe_broken") == "ImportError: cannot import DOUBLE"
    assert import_failure("dpexp_probe_fine") is None
    assert import_failure("dpexp_probe_absent") == "ModuleNotFoundError: No module named 'dpexp_probe_absent'"
    # the imports ran in a child interpreter
    assert "dpexp_probe_broken" not in sys.modules and "dpexp_probe_fine" not in sys.modules
    cached = json.loads(probe_file().read_text())
    assert list(cached["dpexp_probe_broken"].values()) == ["ImportError: cannot import DOUBLE"]
    assert list(cached["dpexp_probe_fine"].values()) == [None]
    assert "dpexp_probe_absent" not in cached  # found absent without any import


def test_a_cached_answer_starts_no_interpreter(probes, monkeypatch):
    (probes / "dpexp_probe_broken2.py").write_text("raise ImportError('broken')\n")
    assert import_failure("dpexp_probe_broken2") == "ImportError: broken"

    def no_child(*args, **kwargs):
        raise AssertionError("probed again despite a matching cache entry")

    monkeypatch.setattr(optional_packages.subprocess, "Popen", no_child)
    assert import_failure("dpexp_probe_broken2") == "ImportError: broken"


def test_a_changed_install_is_probed_again(probes):
    module = probes / "dpexp_probe_fixed.py"
    _write(module, "raise ImportError('old version')\n", 1_000_000_000_000_000_000)
    assert import_failure("dpexp_probe_fixed") == "ImportError: old version"
    _write(module, "VALUE = 2\n", 1_100_000_000_000_000_000)  # upgraded in place
    assert import_failure("dpexp_probe_fixed") is None
    _write(module, "raise ImportError('old version')\n", 1_000_000_000_000_000_000)
    # both answers kept (keyed by the file): switching back reads the first again
    assert import_failure("dpexp_probe_fixed") == "ImportError: old version"
    assert len(json.loads(probe_file().read_text())["dpexp_probe_fixed"]) == 2


def test_an_import_that_kills_the_interpreter_counts_as_missing(probes):
    (probes / "dpexp_probe_crash.py").write_text("import os\nos._exit(3)\n")
    why = import_failure("dpexp_probe_crash")
    assert why is not None and "exit code 3" in why


def test_a_stale_or_corrupt_cache_is_not_trusted(probes):
    (probes / "dpexp_probe_ok.py").write_text("VALUE = 3\n")
    probe_file().parent.mkdir(parents=True, exist_ok=True)
    probe_file().write_text("{not json")
    assert import_failure("dpexp_probe_ok") is None
    # an entry under another key (another install) is not this install's answer
    probe_file().write_text(json.dumps({"dpexp_probe_ok": {"another install": "ImportError: no"}}))
    assert import_failure("dpexp_probe_ok") is None


def test_a_package_imported_here_is_available_without_a_probe(probes, monkeypatch):
    def no_child(*args, **kwargs):
        raise AssertionError("probed a package this process has imported")

    monkeypatch.setattr(optional_packages.subprocess, "Popen", no_child)
    assert import_failure("json") is None
    monkeypatch.setitem(sys.modules, "dpexp_probe_blocked", None)  # an import blocked on purpose
    assert import_failure("dpexp_probe_blocked").startswith("ModuleNotFoundError")


@pytest.mark.parametrize("package", ["lightgbm", "interpret"])
def test_the_probe_agrees_with_a_real_import(probes, package):
    why = import_failure(package)
    try:
        importlib.import_module(package)
    except Exception:  # noqa: BLE001 - any failure means unavailable
        assert why is not None
    else:
        assert why is None


def test_probes_started_ahead_run_together_and_answer_the_questions(probes, monkeypatch):
    (probes / "dpexp_probe_early_a.py").write_text("VALUE = 1\n")
    (probes / "dpexp_probe_early_b.py").write_text("raise ImportError('b is broken')\n")
    (probes / "dpexp_probe_early_c.py").write_text("VALUE = 3\n")
    assert import_failure("dpexp_probe_early_c") is None  # cached before: not started again
    started = []
    real_popen = optional_packages.subprocess.Popen

    def counted(args, **kwargs):
        started.append(args[3])
        return real_popen(args, **kwargs)

    monkeypatch.setattr(optional_packages.subprocess, "Popen", counted)
    start_probes(["dpexp_probe_early_a", "dpexp_probe_early_b", "dpexp_probe_early_c",
                  "dpexp_probe_absent_too", "dpexp_probe_early_a"])
    # both children run before any answer is asked for (not one after the other)
    assert started == ["dpexp_probe_early_a", "dpexp_probe_early_b"]
    assert import_failure("dpexp_probe_early_b") == "ImportError: b is broken"
    assert import_failure("dpexp_probe_early_a") is None
    assert import_failure("dpexp_probe_early_c") is None
    assert started == ["dpexp_probe_early_a", "dpexp_probe_early_b"]  # no second child
    assert not optional_packages._RUNNING
    cached = json.loads(probe_file().read_text())
    assert list(cached["dpexp_probe_early_b"].values()) == ["ImportError: b is broken"]


def test_a_probe_started_before_the_install_changed_is_not_its_answer(probes):
    module = probes / "dpexp_probe_changed.py"
    _write(module, "raise ImportError('before')\n", 1_000_000_000_000_000_000)
    start_probes(["dpexp_probe_changed"])
    _write(module, "VALUE = 1\n", 1_100_000_000_000_000_000)  # upgraded meanwhile
    assert import_failure("dpexp_probe_changed") is None
