"""What a report no longer does twice (issue 43): a table or page whose text is already
in its file is not rewritten (no fsync and rename a file), and the leaderboard's ranks are
computed from the rows its section read (its committed table read once a report)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from importlib import metadata

import pandas as pd
import pytest

from dpexp.experiments import cache, results
from dpexp.experiments.cache import write_text_if_changed
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import pays_on_dataset
from dpexp.experiments.results import cached_results
from dpexp.paths import project_root
from dpexp.render import leaderboard_files, leaderboard_section
from dpexp.render.leaderboard_files import write_leaderboard
from dpexp.render.leaderboard_section import leaderboard_part
from dpexp.render.section import Section


def six_datasets() -> pd.DataFrame:
    """Error rows of three DP entries and a non-private one on six datasets, one fold each."""
    return pd.DataFrame([
        {"dataset": f"d{i}", "label": label, "epsilon": eps, "fold": 0, "repeat": 0, "seed": 0,
         "metric": "error", "metric_kind": "metric", "value": base + 0.01 * i,
         "private": math.isfinite(eps), "not_dp_reason": "",
         "delta_spent": 0.0 if math.isfinite(eps) else math.inf}
        for i in range(6)
        for label, eps, base in (("A", 1.0, 0.2), ("B", 1.0, 0.25), ("C", 1.0, 0.4), ("R", math.inf, 0.1))])


def test_an_unchanged_file_is_not_rewritten(tmp_path, monkeypatch):
    path = tmp_path / "t" / "table.md"
    assert write_text_if_changed(path, "| a | b |\n")
    before = os.stat(path)
    writes = []
    monkeypatch.setattr(cache, "atomic_write_bytes", lambda p, data: writes.append(p))
    assert not write_text_if_changed(path, "| a | b |\n")
    assert writes == []
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    monkeypatch.undo()
    assert write_text_if_changed(path, "| a | c |\n")  # same size, other text: written
    assert path.read_text() == "| a | c |\n"
    assert write_text_if_changed(path, "| a |\n") and path.read_text() == "| a |\n"


def test_the_leaderboard_ranks_the_rows_its_section_read(tmp_path, monkeypatch):
    pytest.importorskip("autorank", reason="the leaderboard extra (autorank) is not installed")
    spec = resolve("leaderboard")
    frame = six_datasets()

    def no_read(*args, **kwargs):
        raise AssertionError("the leaderboard's results were read again")

    monkeypatch.setattr(leaderboard_files, "cached_results", no_read)
    given = write_leaderboard(spec.at_scale("smoke"), "smoke", tmp_path / "results",
                              tmp_path / "figures", frame=frame)
    part = leaderboard_part(Section(spec, "smoke", cached_frame=frame), tmp_path / "results",
                            tmp_path / "figures")
    assert part.files is not None and not part.problem
    assert [t.to_csv() for t in part.files.tables] == [t.to_csv() for t in given.tables]
    # without the section's rows it reads them (and here finds the read refused)
    with pytest.raises(AssertionError, match="read again"):
        leaderboard_part(Section(spec, "smoke"), tmp_path / "results", tmp_path / "figures")
    assert leaderboard_section.write_leaderboard is write_leaderboard


def test_a_report_asks_the_registry_once_a_dataset_whether_it_pays(monkeypatch):
    # the leaderboard has paid-domain twins: whether a cell is stale depends on whether its
    # dataset pays for its domains, a registry read (once a dataset, not once a cell)
    spec = resolve("leaderboard")
    asked = []

    def counted(dataset: str) -> bool:
        asked.append(dataset)
        return pays_on_dataset(dataset)

    monkeypatch.setattr(results, "pays_on_dataset", counted)
    res = cached_results(spec, "paper", project_root() / "results", current_only=True)
    assert res.n_cells > len(set(asked)) > 0
    assert sorted(asked) == sorted(set(asked))


def test_the_report_module_loads_no_scikit_learn():
    # the environment appendix reads scikit-learn's version from its metadata (a report
    # fits nothing; importing it cost ~0.6 s a report)
    code = ("import sys, dpexp.render.report, dpexp.render.provenance as p\n"
            "print('sklearn' in sys.modules, p.report_environment(p.project_root())"
            "['numpy / scipy / scikit-learn / pandas'])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=project_root(), env={**os.environ, "PYTHONPATH": str(project_root())})
    assert res.returncode == 0, res.stderr
    loaded, versions = res.stdout.strip().split(" ", 1)
    assert loaded == "False"
    assert versions.split(" / ")[2] == metadata.version("scikit-learn")
