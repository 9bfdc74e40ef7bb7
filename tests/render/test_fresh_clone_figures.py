"""A fresh clone redraws no figure whose inputs did not change (issue 43): what git commits
of a render (the paper-scale results table, each PNG and its ``NAME.png.inputs``; no
cache, no PDF) is enough for the next report to see every figure current, the
experiments' figures and the leaderboard's CD diagrams alike. The digests hold nothing
of the machine: no path, no cache file."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from render.cached_cells import cache_cells
from render.test_leaderboard_section import METRICS, six_datasets

from dpexp.experiments.catalog import resolve
from dpexp.experiments.committed import index_path, table_path
from dpexp.experiments.runner import write_union_table
from dpexp.render.figure_inputs import inputs_digest, sidecar_path
from dpexp.render.leaderboard import boards
from dpexp.render.leaderboard_files import cd_digest, draw_current_cd_diagram
from dpexp.render.render import render_experiment
from dpexp.render.report import write_report


def _clone(results_dir, figures_dir, root, experiment):
    """What a clone has of a render: the committed table (and its index), the PNGs and
    their sidecars, with their mtimes (copy2); returns (results, figures) of the clone."""
    r, f = root / "results", root / "figures"
    table = table_path(results_dir, experiment, "paper")
    for src in (table, index_path(table)):
        dst = r / experiment / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    for src in figures_dir.rglob("*.png*"):
        if src.name.endswith((".png", ".png.inputs")):
            dst = f / src.relative_to(figures_dir)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    return r, f


def _stamps(figures_dir):
    return {p.relative_to(figures_dir): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(figures_dir.rglob("*")) if p.is_file()}


def test_a_fresh_clone_reports_without_drawing(tmp_path, drawn):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, datasets=["adult", "cod-rna"], epsilons=[1.0, 4.0], scale="paper",
                data_version=True)
    spec = resolve("fig2").at_scale("paper")
    write_union_table(spec, "paper", r)
    write_report(r, f, "paper")  # the campaign machine: from the cache and the table
    assert drawn == ["dpboost-fig2"]
    png = f / "dpboost-fig2" / "dpboost-fig2.png"
    assert sidecar_path(png).is_file() and not png.with_suffix(".pdf").exists()
    clone_r, clone_f = _clone(r, f, tmp_path / "clone", "dpboost-fig2")
    assert not (clone_r / "cache").exists()
    before = _stamps(clone_f)
    write_report(clone_r, clone_f, "paper")
    assert drawn == ["dpboost-fig2"]  # nothing redrawn
    assert _stamps(clone_f) == before  # nothing written: same bytes, same mtimes
    # the digest is the same from the cache as from the committed table alone
    here = render_experiment(spec, "paper", r, tmp_path / "elsewhere")
    there = render_experiment(spec, "paper", clone_r, tmp_path / "elsewhere-too")
    assert (inputs_digest(spec, here.agg, here.context)
            == inputs_digest(spec, there.agg, there.context))


def test_a_changed_table_redraws_on_the_clone(tmp_path, drawn):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, datasets=["adult"], epsilons=[1.0], scale="paper",
                data_version=True)
    spec = resolve("fig2").at_scale("paper")
    write_union_table(spec, "paper", r)
    write_report(r, f, "paper")
    clone_r, clone_f = _clone(r, f, tmp_path / "clone", "dpboost-fig2")
    # another campaign's numbers reach the clone in the table (one more dataset)
    cache_cells(r, datasets=["cod-rna"], epsilons=[1.0], scale="paper",
                data_version=True)
    write_union_table(spec, "paper", r)
    table = table_path(r, "dpboost-fig2", "paper")
    for src in (table, index_path(table)):
        shutil.copy2(src, clone_r / "dpboost-fig2" / src.name)
    write_report(clone_r, clone_f, "paper")
    assert drawn == ["dpboost-fig2"] * 2


def test_cd_diagrams_are_drawn_only_when_their_inputs_change(tmp_path):
    pytest.importorskip("autorank", reason="the leaderboard extra (autorank) is not installed")
    [board] = boards(six_datasets(), METRICS)
    path = tmp_path / "figures" / "lb" / "lb-cd-classification-eps1-paper.png"
    assert draw_current_cd_diagram(board, path, "t") is True
    assert sidecar_path(path).read_text().split()[0::2] == ["inputs", "png"]
    stamp = (path.read_bytes(), path.stat().st_mtime_ns)
    assert draw_current_cd_diagram(board, path, "t") is False
    assert (path.read_bytes(), path.stat().st_mtime_ns) == stamp
    # a clone: the PNG and its sidecar elsewhere
    clone = tmp_path / "clone" / path.name
    clone.parent.mkdir()
    for src in (path, sidecar_path(path)):
        shutil.copy2(src, clone.parent / src.name)
    assert draw_current_cd_diagram(board, clone, "t") is False
    # another title, other scores or a replaced file: drawn again
    assert cd_digest(board, "other") != cd_digest(board, "t")
    assert draw_current_cd_diagram(board, clone, "other") is True
    frame = six_datasets()
    frame.loc[0, "value"] = 0.9
    [changed] = boards(frame, METRICS)
    assert cd_digest(changed, "t") != cd_digest(board, "t")
    path.write_bytes(b"not the diagram")
    assert draw_current_cd_diagram(board, path, "t") is True and path.read_bytes() == stamp[0]


def test_the_aggregate_is_the_same_from_cell_files_as_from_a_committed_table(tmp_path):
    """A committed table gives None where a cell file gives NaN (``epsilon_spent`` of a
    non-private row); the aggregate, and so a figure's inputs digest, must not tell them
    apart (fletcher-fig7's digest did, by the column's dtype, before it was cast)."""
    from dpexp.render.aggregate import aggregate
    from dpexp.render.figure_inputs import frame_text

    r = tmp_path / "results"
    cache_cells(r, datasets=["adult"], epsilons=[1.0], scale="paper", data_version=True)
    spec = resolve("fig2").at_scale("paper")
    assert _as_cached(r, spec)["epsilon_spent"].isna().any()  # NP's rows spend nothing
    from_table = aggregate(_as_committed(r, spec), spec)
    from_cache = aggregate(_as_cached(r, spec), spec)
    assert frame_text(from_table) == frame_text(from_cache)


def _as_cached(results_dir, spec):
    from dpexp.experiments.results import cached_results

    return cached_results(spec, "paper", results_dir, current_only=True).frame


def _as_committed(results_dir, spec):
    frame = _as_cached(results_dir, spec).copy()
    frame["epsilon_spent"] = [None if pd.isna(v) else float(v) for v in frame["epsilon_spent"]]
    return frame.astype({"epsilon_spent": object})
