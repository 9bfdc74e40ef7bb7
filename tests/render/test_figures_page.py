"""Every committed figure is drawn for the report's page (issue 42): rendered again from
the committed results, each fits the page's width, keeps every panel at least 300 page
pixels tall with at most four a row, has a short one-line title (the caveats are its
caption), one legend that overlaps no panel, colours each algorithm as every other
figure does and shows values of ours inside every panel's limits. The committed PNG is
the size this code draws.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from PIL import Image

from dpexp.experiments.catalog import all_specs
from dpexp.experiments.results import cached_results
from dpexp.render import style
from dpexp.render.aggregate import aggregate
from dpexp.render.figures import PAPER_LABEL, SERIES_GID, build_figure, figure_caption
from dpexp.render.frame import normalise, render_context
from dpexp.render.paper_values import attach_paper_values

REPO = Path(__file__).resolve().parents[2]
COMMITTED = sorted(p for p in (REPO / "figures").glob("*/*.png")
                   if p.stem == p.parent.name)  # not smoke (-smoke) nor filtered (--tag)

pytestmark = pytest.mark.slow


def _figure(exp: str):
    spec = all_specs()[exp].at_scale("paper")
    res = cached_results(spec, "paper", REPO / "results", current_only=True)
    frame = normalise(res.frame)
    ctx = render_context(spec, frame, "paper")
    agg = attach_paper_values(aggregate(frame, spec), spec, "paper")
    fig = build_figure(spec, agg, ctx)
    fig.canvas.draw()
    fig.has_paper_values = bool(agg["paper_value"].notna().any())  # for the legend's check
    return fig, ctx


@pytest.fixture(scope="module")
def figures():
    import matplotlib.pyplot as plt

    with plt.rc_context({"figure.max_open_warning": 0}):  # all of them at once, on purpose
        out = {p.parent.name: _figure(p.parent.name) for p in COMMITTED}
    yield out
    for fig, _ in out.values():
        plt.close(fig)


def _panels(fig):
    return [ax for ax in fig.axes if ax.axison]


def test_every_figure_is_committed():
    assert len(COMMITTED) >= 25, COMMITTED


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.parent.name)
def test_figure_fits_the_page(figures, path):
    fig, ctx = figures[path.parent.name]
    width, height = fig.canvas.get_width_height()
    assert width <= style.PAGE_WIDTH_PX  # shown at its own size: one PNG pixel, one page pixel
    assert Image.open(path).size == (width, height), "committed PNG not re-rendered"
    panels = _panels(fig)
    assert panels
    for ax in panels:
        assert ax.get_window_extent().height >= style.MIN_PANEL_PX, ax.get_title()
    rows = defaultdict(int)
    for ax in panels:
        rows[round(ax.get_position().y0, 3)] += 1
    assert max(rows.values()) <= style.MAX_COLUMNS


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.parent.name)
def test_title_is_short_and_caveats_are_the_caption(figures, path):
    fig, ctx = figures[path.parent.name]
    title = fig.get_suptitle()
    assert "\n" not in title and len(title) <= style.MAX_TITLE_CHARS, title
    assert "domain" not in title.lower()
    if ctx.note:  # the caveat is the caption, written into the PNG beside the title
        assert "domain" in ctx.note.lower()
    caption = Image.open(path).text.get("Description", "")
    assert caption == figure_caption(ctx)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.parent.name)
def test_one_legend_outside_the_panels(figures, path):
    fig, _ = figures[path.parent.name]
    renderer = fig.canvas.get_renderer()
    assert len(fig.legends) <= 1 and not any(ax.get_legend() for ax in fig.axes)
    labels = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert (PAPER_LABEL in labels) == fig.has_paper_values  # hollow markers, said once
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        for ax in _panels(fig):
            assert not box.overlaps(ax.get_tightbbox(renderer)), ax.get_title()


def _points_in_view(ax) -> int:
    """The values of ours (artists tagged with a series gid: lines, bars, a non-private
    level) that lie inside the panel's limits; paper markers and error bars not counted."""
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    shown = 0
    for artist in ax.findobj(lambda a: str(a.get_gid() or "").startswith(SERIES_GID)):
        if isinstance(artist, Line2D):
            xs, ys = (np.asarray(v, dtype=float) for v in artist.get_data())
            if artist.get_transform() != ax.transData:  # a level: axes x, data y
                xs = np.full(ys.shape, (x0 + x1) / 2)
        elif isinstance(artist, Rectangle) and artist.get_height():  # a bar of ours
            xs = np.array([artist.get_x() + artist.get_width() / 2])
            ys = np.array([artist.get_y() + artist.get_height()])
        else:
            continue
        shown += int(np.sum(np.isfinite(xs) & np.isfinite(ys) & (xs >= x0) & (xs <= x1)
                            & (ys >= y0) & (ys <= y1)))
    return shown


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.parent.name)
def test_every_panel_shows_our_values(figures, path):
    # Fletcher Fig. 9 once drew one SynthF size per panel, each a single point out of
    # view on a log axis: panels with nothing of ours inside their limits
    fig, _ = figures[path.parent.name]
    for ax in _panels(fig):
        assert _points_in_view(ax) >= 1, f"{path.parent.name}: panel {ax.get_title()!r}"


def test_a_panel_whose_values_lie_out_of_view_counts_none():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1.0, 2.0], [0.5, 0.6], gid=f"{SERIES_GID}dpboost#0")
    ax.plot([1.5], [0.55], marker="o", ls="none")  # a paper marker: never counted
    ax.bar([3.0], [0.7], gid=f"{SERIES_GID}np#0")
    ax.set_xscale("log")
    ax.set_xlim(0.5, 4.0)
    assert _points_in_view(ax) == 3
    ax.set_xlim(10.0, 100.0)  # Fig. 9's old panels: one point, off a log axis
    assert _points_in_view(ax) == 0
    plt.close(fig)


def test_one_colour_per_algorithm_across_figures(figures):
    from matplotlib.colors import to_hex

    seen: dict[str, set[str]] = defaultdict(set)
    for fig, _ in figures.values():
        for artist in fig.findobj(lambda a: str(a.get_gid() or "").startswith(SERIES_GID)):
            colour = artist.get_edgecolor() if hasattr(artist, "get_hatch") else artist.get_color()
            seen[artist.get_gid()[len(SERIES_GID):]].add(to_hex(colour))
    assert len(seen) >= 10
    for tag, colours in seen.items():  # "<algorithm>#<variant>": its shade of one colour
        key, _, variant = tag.rpartition("#")
        assert colours == {style.variant_color(key, int(variant))}, tag
    firsts = {tag.rpartition("#")[0] for tag in seen if tag.endswith("#0")}
    assert all(style.variant_color(k, 0) == style.style_of(k).color for k in firsts)


def test_error_bars_stay_in_the_metric_range():
    import pandas as pd

    from dpexp.render.figures import _clipped_yerr

    err = _clipped_yerr(pd.Series([0.1, 0.95]), pd.Series([0.3, 0.2]), "staged_error")
    assert err[0].tolist() == pytest.approx([0.1, 0.2])  # down to 0, not -0.2
    assert err[1].tolist() == pytest.approx([0.3, 0.05])  # up to 1, not 1.15


def test_log_axis_and_grid_shape():
    assert style.wants_log([4.0, 9337.0]) and not style.wants_log([0.1, 0.9])
    assert not style.wants_log([0.0, 50.0])
    assert style.grid_shape(6) == (2, 3) and style.grid_shape(7) == (2, 4)
    assert style.grid_shape(4) == (1, 4) and style.grid_shape(5) == (2, 3)
