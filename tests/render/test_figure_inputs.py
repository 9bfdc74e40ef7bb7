"""A figure is not redrawn when what it shows has not changed (issue 43): the digest of its
inputs is kept beside each file (``NAME.png.inputs``, ``NAME.pdf.inputs``), a second render
writes nothing and draws nothing, and a changed value, a replaced file or a missing PDF
(for ``dpexp render``, not the report) redraws. A fresh clone (the committed table, PNGs
and their sidecars; no cache, no PDF) reports without drawing; so do the leaderboard's CD
diagrams."""

from __future__ import annotations

import os

from render.cached_cells import cache_cells

from dpexp.experiments import cache
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import expand
from dpexp.experiments.spec import select
from dpexp.render.figure_inputs import current_sha, sidecar_path
from dpexp.render.render import render_experiment
from dpexp.render.report import write_report


def _files(figures_dir):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(figures_dir.rglob("*")) if p.is_file()}


def _render(r, f):
    return render_experiment(resolve("fig2").at_scale("smoke"), "smoke", r, f)


def test_a_second_render_draws_and_writes_nothing(tmp_path, drawn):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, datasets=["adult"], epsilons=[1.0, 4.0])
    first = _render(r, f)
    png = next(p for p in first.files if p.suffix == ".png")
    assert drawn == ["dpboost-fig2"] and png.is_file() and sidecar_path(png).is_file()
    before = _files(f)
    second = _render(r, f)
    assert drawn == ["dpboost-fig2"]  # not built again
    assert second.files == first.files
    assert _files(f) == before  # same bytes, same mtimes: nothing written


def test_a_changed_value_redraws(tmp_path, drawn):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, datasets=["adult"], epsilons=[1.0, 4.0])
    png = next(p for p in _render(r, f).files if p.suffix == ".png")
    old = png.read_bytes()
    # one cached value moved: the aggregated frame differs, so the figure is drawn again
    spec = select(resolve("fig2").at_scale("smoke"), ["adult"], None, [1.0, 4.0])
    cell = next(c for c in expand(spec, "smoke", 0) if c.label == "DPBoost" and c.epsilon == 1.0)
    data = cache.read_cell(r, cell)
    data["rows"][0]["value"] = 0.9
    cache.write_cell(r, cell, data)
    _render(r, f)
    assert drawn == ["dpboost-fig2"] * 2
    assert png.read_bytes() != old


def test_a_replaced_or_missing_file_is_drawn_again(tmp_path, drawn):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, datasets=["adult"], epsilons=[1.0])
    files = _render(r, f).files
    pdf, png = (next(p for p in files if p.suffix == s) for s in (".pdf", ".png"))
    good = png.read_bytes()
    png.write_bytes(b"not the figure")
    _render(r, f)
    assert drawn == ["dpboost-fig2"] * 2 and png.read_bytes() == good
    pdf.unlink()  # a fresh clone has the PNGs only: the PDF is drawn, the PNG left as it is
    mtime = png.stat().st_mtime_ns
    os.utime(png, ns=(mtime - 10**9, mtime - 10**9))
    _render(r, f)
    assert drawn == ["dpboost-fig2"] * 3 and pdf.is_file()
    assert png.stat().st_mtime_ns == mtime - 10**9 and png.read_bytes() == good
    assert sidecar_path(png).read_text().split()[0::2] == ["inputs", "png"]
    assert sidecar_path(pdf).read_text().split()[0::2] == ["inputs", "pdf"]


def test_the_report_draws_no_missing_pdf_but_keeps_a_present_one_in_step(tmp_path, drawn):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, datasets=["adult"], epsilons=[1.0])
    files = _render(r, f).files
    pdf, png = (next(p for p in files if p.suffix == s) for s in (".pdf", ".png"))
    pdf.unlink()
    write_report(r, f, "smoke")  # the report shows the PNG: nothing to draw
    assert drawn == ["dpboost-fig2"] and not pdf.exists()
    _render(r, f)  # dpexp render draws the PDF again
    spec = select(resolve("fig2").at_scale("smoke"), ["adult"], None, [1.0])
    cell = next(c for c in expand(spec, "smoke", 0) if c.label == "DPBoost")
    data = cache.read_cell(r, cell)
    data["rows"][0]["value"] = 0.9
    cache.write_cell(r, cell, data)
    old_pdf = pdf.read_bytes()
    write_report(r, f, "smoke")  # a changed value: the PNG and the PDF on disk, both
    assert drawn == ["dpboost-fig2"] * 3 and pdf.read_bytes() != old_pdf
    assert current_sha(pdf, sidecar_path(png).read_text().split()[1]) is not None


def test_redraw_draws_anyway(tmp_path, drawn):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, datasets=["adult"], epsilons=[1.0])
    _render(r, f)
    render_experiment(resolve("fig2").at_scale("smoke"), "smoke", r, f, redraw=True)
    assert drawn == ["dpboost-fig2"] * 2
