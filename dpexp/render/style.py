"""The one look of every figure (issue 42): page geometry, algorithm colours and markers,
metric ranges, and when an axis goes logarithmic.

Figures are drawn for the report's page: the HTML report's text column is
:data:`PAGE_WIDTH_PX` wide and shows an image at its natural size up to that width, so a
figure is saved at :data:`DPI` no wider than the page, and one pixel of the PNG is one pixel
on the page. At most :data:`MAX_COLUMNS` panels share a row and every panel's plotting area
is at least :data:`MIN_PANEL_PX` tall. An algorithm has the same colour and marker in every
figure of every paper (keyed by its registry name, :func:`algorithm_key`); variants of one
algorithm in a figure keep its hue and marker and differ by shade and line style (lines) or
hatch (bars), :func:`variant_color`. The paper's printed
values are hollow markers of the series' own marker and colour.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass

from matplotlib.colors import to_hex, to_rgb

#: Width of the report's text column in CSS pixels (``max-width:1150px`` less 1em padding
#: on each side, dpexp.render.html): a wider image is shrunk, and its panels with it.
PAGE_WIDTH_PX = 1118
#: Dots per inch of the saved PNG: figure inches x DPI = pixels on the page.
DPI = 100
#: Most panels in one row of a figure.
MAX_COLUMNS = 4
#: Least height, in page pixels, of a panel's plotting area.
MIN_PANEL_PX = 300
#: Most characters of a figure's title (caveats go to the caption, never the title).
MAX_TITLE_CHARS = 80
#: A panel's series spanning more than this ratio (largest / smallest positive value) get
#: a logarithmic y axis, so one poor series does not flatten the others.
LOG_SPAN = 10.0

#: Figure geometry in inches (at :data:`DPI`, 100 page pixels an inch).
FIG_WIDTH_IN = 11.0
PANEL_WIDTH_IN = 2.75
#: One row of panels: the plotting area (3.1 in = 310 px) plus its title, ticks and label.
ROW_HEIGHT_IN = 4.0
TITLE_HEIGHT_IN = 0.45
#: Characters of a panel title's line (a panel is about 2.75 in wide).
PANEL_TITLE_CHARS = 38
LEGEND_ROW_IN = 0.26

FONT = {"font.size": 9, "axes.titlesize": 9.5, "axes.labelsize": 9, "xtick.labelsize": 8,
        "ytick.labelsize": 8, "legend.fontsize": 8.5, "figure.titlesize": 11}

#: Colours: tab10 then the darker tab20 halves, distinct enough side by side.
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
            "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h", "*")


@dataclass(frozen=True)
class SeriesStyle:
    """How one algorithm is drawn in every figure."""

    color: str
    marker: str


#: The registered algorithms of the five papers, fixed so that adding an algorithm never
#: recolours the others. Private algorithms and their non-private counterparts differ in
#: hue; the comparators (peers) are the muted colours.
ALGORITHM_STYLES: dict[str, SeriesStyle] = {
    "dpboost": SeriesStyle("#d62728", "o"),
    "dpboost_honest": SeriesStyle("#843c39", "h"),
    "np_gbdt": SeriesStyle("#1f77b4", "s"),
    "seq": SeriesStyle("#ff7f0e", "^"),
    "para": SeriesStyle("#2ca02c", "v"),
    "fletcher_forest": SeriesStyle("#9467bd", "o"),
    "fletcher_forest_np": SeriesStyle("#17becf", "s"),
    "breiman_rf": SeriesStyle("#1f77b4", "D"),
    "fs_c45": SeriesStyle("#8c564b", "^"),
    "jpw": SeriesStyle("#e377c2", "v"),
    "diffprivlib_rf": SeriesStyle("#7f7f7f", "X"),
    "gaussian_bdt": SeriesStyle("#bcbd22", "P"),
    "inprivate": SeriesStyle("#31a354", "o"),
    "inprivate_np": SeriesStyle("#393b79", "s"),
    "xgboost_dp": SeriesStyle("#e6550d", "o"),
    "np_xgboost": SeriesStyle("#3182bd", "s"),
    "xgboost_dp_paper": SeriesStyle("#8c6d31", "D"),
    "dpboost_original": SeriesStyle("#7b4173", "X"),
    "dp_adaboost": SeriesStyle("#756bb1", "^"),
    "dp_rf_xgbdp": SeriesStyle("#637939", "v"),
    "np_xgb_tree_adaboost": SeriesStyle("#9467bd", "<"),
    "np_xgb_tree_rf": SeriesStyle("#2ca02c", ">"),
    "lib_adaboost": SeriesStyle("#636363", "p"),
    "lib_random_forest": SeriesStyle("#8c564b", "h"),
    "lib_xgboost": SeriesStyle("#17becf", "*"),
}

#: Series computed by a procedure (no registered estimator) that plot an algorithm's
#: number: the label's algorithm, so they share its colour.
PROCEDURE_LABELS: dict[str, str] = {
    "XGBoost-DP": "xgboost_dp",
    "XGBoost (no noise)": "np_xgboost",
}

#: Variants of one algorithm in a figure (k-th distinct series): line styles and hatches.
LINE_STYLES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
HATCHES = ("", "//", "..", "xx", "\\\\", "oo")

#: The range of a metric's values: error bars are clipped to it. Metrics not listed are
#: unbounded; a name ending in one of these (``staged_error``) takes its range.
METRIC_RANGES: dict[str, tuple[float, float]] = {
    "accuracy": (0.0, 1.0), "auc": (0.0, 1.0), "error": (0.0, 1.0), "f1": (0.0, 1.0),
    "f1_minority": (0.0, 1.0), "precision": (0.0, 1.0), "recall": (0.0, 1.0),
    "changed_argmax_fraction": (0.0, 1.0), "rmse": (0.0, math.inf), "mae": (0.0, math.inf),
    "mse": (0.0, math.inf), "seconds": (0.0, math.inf), "r2": (-math.inf, 1.0),
}


#: How a figure's title names each paper (short: the title stays one line).
PAPER_SHORT: dict[str, str] = {
    "dpboost-li-2020": "DPBoost, Li et al. 2020",
    "fletcher-islam-2017": "Fletcher & Islam 2017",
    "fletcher-islam-2017-with-2021-addendum": "Fletcher & Islam 2017+2021",
    "gaussian-bdt-peinemann-slides": "Gaussian BDT, Peinemann (slides)",
    "inprivate-digging-zhao-2018": "InPrivate Digging, Zhao et al. 2018",
    "xgboost-dp-shi-2021": "XGBoost-DP, Shi et al. 2021",
    "leaderboard": "dpexp leaderboard",
}


def short_title(artefact: str, paper: str, suffix: str = "") -> str:
    """"<artefact> — <paper, short>" in at most :data:`MAX_TITLE_CHARS` (the artefact is
    cut with "…" when it alone is too long)."""
    tail = f" — {PAPER_SHORT.get(paper, paper)}{suffix}"
    room = MAX_TITLE_CHARS - len(tail)
    head = artefact if len(artefact) <= room else artefact[:max(room - 1, 8)].rstrip() + "…"
    return head + tail


def algorithm_key(algorithm: str | None, label: str) -> str:
    """The identity a series is coloured by: its registry name (the results' ``algorithm``
    column); for a procedure's series (``procedure:...``, or none recorded) the algorithm
    its label names, else the procedure and label."""
    if algorithm and not algorithm.startswith("procedure:"):
        return algorithm
    return PROCEDURE_LABELS.get(label, f"{algorithm or 'procedure'}|{label}")


def style_of(key: str) -> SeriesStyle:
    """The colour and marker of an algorithm; an algorithm not in :data:`ALGORITHM_STYLES`
    (a plug-in's) gets one from a hash of its key, the same in every figure."""
    if key in ALGORITHM_STYLES:
        return ALGORITHM_STYLES[key]
    h = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    return SeriesStyle(_PALETTE[h % len(_PALETTE)], _MARKERS[(h // len(_PALETTE)) % len(_MARKERS)])


#: Variant k of an algorithm in one figure: its colour mixed with white (> 0) or black
#: (< 0) by this much, so several settings of one algorithm stay apart and keep its hue.
_SHADES = (0.0, 0.45, -0.35, 0.65, -0.55, 0.25, -0.2)


def variant_color(key: str, variant: int) -> str:
    """The colour of the ``variant``-th series of an algorithm in a figure (0: its own)."""
    mix = _SHADES[variant % len(_SHADES)]
    rgb = to_rgb(style_of(key).color)
    target = 1.0 if mix > 0 else 0.0
    return to_hex(tuple(c + abs(mix) * (target - c) for c in rgb))


def metric_range(metric: str | None) -> tuple[float, float]:
    """(low, high) of a metric's possible values; unbounded when unknown."""
    if not metric:
        return (-math.inf, math.inf)
    if metric in METRIC_RANGES:
        return METRIC_RANGES[metric]
    for name, rng in METRIC_RANGES.items():
        if metric.endswith(f"_{name}"):
            return rng
    return (-math.inf, math.inf)


def wants_log(values: Iterable[float]) -> bool:
    """True when the positive values span more than :data:`LOG_SPAN` and none is <= 0."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals or min(vals) <= 0:
        return False
    return max(vals) / min(vals) > LOG_SPAN


def grid_shape(n: int) -> tuple[int, int]:
    """(rows, columns) of ``n`` panels: at most :data:`MAX_COLUMNS` a row, rows balanced
    (6 panels are 2 x 3, not 4 + 2 with one alone)."""
    n = max(n, 1)
    rows = math.ceil(n / MAX_COLUMNS)
    return rows, math.ceil(n / rows)


def figure_width(columns: int) -> float:
    """Inches: the page width for a full row, narrower for fewer panels."""
    return min(FIG_WIDTH_IN, max(5.5, PANEL_WIDTH_IN * columns + 0.3))


def legend_columns(labels: list[str], width_in: float) -> int:
    """How many legend entries fit side by side in ``width_in`` inches."""
    longest = max((len(x) for x in labels), default=10)
    per_entry = 0.5 + 0.065 * longest  # marker + text at the legend's font size
    return max(1, min(len(labels), int(width_in // per_entry)))


def apply_rc() -> dict:
    """The matplotlib rc settings of every figure (use with ``plt.rc_context``)."""
    return {**FONT, "figure.dpi": DPI, "savefig.dpi": DPI, "axes.grid": True,
            "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False}
