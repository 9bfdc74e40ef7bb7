"""Render one experiment from the cache alone (no recomputation).

Whatever subset of cells is cached is rendered (issue 17, item 2): datasets, epsilons and
seeds outside the spec's own grid included, panels and rows in the paper's order. Output
files never clobber each other silently:

* the unfiltered render (``filters=None``) covers the union of every cached cell of the
  experiment at that scale, so re-rendering after another run loses nothing;
* a filtered render writes files whose names carry a filter tag
  (``fig2-smoke--dataset=cod-rna_eps=1,4.png``).

Smoke-scale outputs say "smoke — not the paper's setting" in every title and heading, and
each heading states the feature-domain source, the replicates pooled and, in a caveat box,
the rows whose release is not DP.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dpexp.errors import DpexpError
from dpexp.experiments.cache import write_text_if_changed
from dpexp.experiments.results import cached_results
from dpexp.experiments.schema import CELL_COLUMNS
from dpexp.experiments.spec import ExperimentSpec
from dpexp.render.aggregate import aggregate
from dpexp.render.figures import FORMATS, render_figure
from dpexp.render.frame import (
    NOT_DP_TITLE,
    RenderContext,
    normalise,
    not_dp_caveats,
    procedure_notes,
    render_context,
    replicate_statement,
)
from dpexp.render.markup import SMOKE_LABEL, caveat_box, md_code, md_escape
from dpexp.render.paper_values import attach_paper_values
from dpexp.render.significance import wilcoxon_markdown, wilcoxon_table
from dpexp.render.tables import render_table

_FILTER_FIELDS = (("datasets", "dataset"), ("algorithms", "algorithms"), ("epsilons", "eps"),
                  ("seeds", "seed"))


class NothingCachedError(DpexpError):
    """No cached cell matches what was asked to be rendered."""


@dataclass
class RenderReport:
    files: list[Path]
    missing_cells: int
    total_cells: int
    done_cells: int = 0
    tag: str = ""
    frame: pd.DataFrame | None = field(default=None, repr=False)  # normalised rows rendered
    agg: pd.DataFrame | None = field(default=None, repr=False)  # with the paper's values
    context: RenderContext | None = field(default=None, repr=False)
    #: the heading's not-DP caveat lines and replicate statement (the report shows them too)
    not_dp: list[str] = field(default_factory=list, repr=False)
    replicates: str = ""


def _suffix(scale: str) -> str:
    return "" if scale == "paper" else f"-{scale}"


def _filter_values(filters) -> list[tuple[str, list[str]]]:
    """(tag name, values as text) of every field a filter restricts."""
    if filters is None:
        return []
    out = []
    for attr, short in _FILTER_FIELDS:
        vals = getattr(filters, attr, None)
        if vals:
            text = [f"{float(v):g}" if attr == "epsilons" else str(v) for v in vals]
            out.append((short, text))
    return out


def filter_tag(filters) -> str:
    """A file-name-safe tag naming a filter ("" for none), e.g. ``dataset=cod-rna_eps=1,4``."""
    def safe(v: str) -> str:
        return re.sub(r"[^A-Za-z0-9.+-]+", "-", v).strip("-")

    tag = "_".join(f"{name}={','.join(safe(v) for v in vals)}" for name, vals in _filter_values(filters))
    if len(tag) > 96:  # keep names short but distinct
        tag = tag[:80].rstrip("-_,") + "-" + hashlib.sha256(tag.encode()).hexdigest()[:10]
    return tag


def _run_command(spec: ExperimentSpec, scale: str, filters) -> str:
    opts = {"dataset": "--dataset", "algorithms": "--algorithms", "eps": "--epsilons",
            "seed": "--seed"}
    cmd = [f"dpexp run {spec.id} --scale {scale}"]
    for name, vals in _filter_values(filters):
        if name == "dataset":
            cmd += [f"--dataset {v}" for v in vals]
        elif name == "seed":
            cmd += [f"--seed {v}" for v in vals]
        else:
            cmd.append(f"{opts[name]} {','.join(vals)}")
    return " ".join(cmd)


def _count(missing) -> int:
    return int(missing) if isinstance(missing, int) else len(missing)


def _header(spec: ExperimentSpec, scale: str, frame: pd.DataFrame, ctx: RenderContext, *,
            replicates: str, caveats: list[str], missing: int, filters, command: str) -> str:
    """The Markdown heading of the table: what was run, pooled (``replicates``:
    :func:`replicate_statement`), and what is not DP (``caveats``: :func:`not_dp_caveats`)."""
    scale_text = SMOKE_LABEL if scale == "smoke" else f"{scale} scale"
    md = [f"## {md_escape(spec.artefact)} ({md_escape(spec.paper)}) — {md_code(spec.id)}, {scale_text}",
          "", md_escape(spec.caption)]
    if spec.notes:
        md += ["", f"Notes: {md_escape(spec.notes)}"]
    md += [""]
    if scale == "smoke":
        md += [f"**Scale:** {SMOKE_LABEL} (subsampled data, fewer folds and trees): a pipeline "
               "check; its numbers are not compared with the paper's.", ""]
    selection = _filter_values(filters)
    if selection:
        md += ["**Selection:** " + md_escape("; ".join(f"{n} = {', '.join(v)}" for n, v in selection))
               + " (a filtered render; the unfiltered one covers every cached cell).", ""]
    md += [f"**Aggregation:** {replicates}.", ""]
    if ctx.note:
        md += [f"**{md_escape(ctx.note)}**", ""]
    computed = procedure_notes(frame)
    if computed:
        md += [f"**Computed, not released:** {md_escape('; '.join(computed))}.", ""]
    if caveats:
        md += caveat_box(NOT_DP_TITLE, [md_escape(x) for x in caveats])
    if missing:
        md += [f"**Missing cells:** {missing} of the spec's grid are not cached "
               f"(run {md_code(command)}).", ""]
    return "\n".join(md).rstrip()


def _significance(spec: ExperimentSpec, frame: pd.DataFrame, scale: str, md_path: Path,
                  base: Path) -> list[Path]:
    ref = spec.significance["reference"]
    metric = spec.significance.get("metric", "accuracy")
    table = wilcoxon_table(frame[frame["metric_kind"] != "diagnostic"], ref, metric)
    csv = base.parent / f"{base.name}-wilcoxon.csv"
    write_text_if_changed(csv, table.to_csv(index=False))
    text = wilcoxon_markdown(table, ref, metric)
    if scale == "smoke":
        text = f"**Significance ({SMOKE_LABEL}):** a pipeline check, too few pairs to test the paper's claim.\n\n{text}"
    write_text_if_changed(md_path, md_path.read_text() + "\n" + text + "\n")
    return [csv]


def render_frame(spec: ExperimentSpec, scale: str, frame: pd.DataFrame, results_dir: Path,
                 figures_dir: Path, *, missing: int = 0, done: int | None = None,
                 filters=None, redraw: bool = False,
                 formats: Sequence[str] = FORMATS) -> RenderReport:
    """Render the rows of ``frame`` (any subset of the experiment's cells at ``scale``;
    ``done`` cells cached, ``missing`` cells of the spec's grid not cached). The figure is
    drawn in ``formats`` (:func:`dpexp.render.figures.render_figure`); a figure whose
    inputs are unchanged is not redrawn (:mod:`dpexp.render.figure_inputs`) unless
    ``redraw``."""
    if frame.empty:
        raise NothingCachedError(
            f"Nothing cached for {spec.id} at {scale} scale; run `{_run_command(spec, scale, filters)}`.")
    frame = normalise(frame)
    ctx = render_context(spec, frame, scale)
    agg = attach_paper_values(aggregate(frame, spec), spec, scale)
    tag = filter_tag(filters)
    name = f"{spec.id}{_suffix(scale)}" + (f"--{tag}" if tag else "")
    base = Path(results_dir) / spec.id / name
    replicates = replicate_statement(frame, agg["n"])
    caveats = not_dp_caveats(frame, ctx)
    header = _header(spec, scale, frame, ctx, replicates=replicates, caveats=caveats,
                     missing=missing, filters=filters, command=_run_command(spec, scale, filters))
    files = render_table(spec, agg, base, ctx, header)
    if spec.significance:
        files += _significance(spec, frame, scale, files[0], base)
    if spec.kind == "figure":
        files += render_figure(spec, agg, ctx, Path(figures_dir) / spec.id / name, redraw=redraw,
                               formats=formats)
    if done is None:
        done = frame.groupby([c for c in CELL_COLUMNS if c in frame], dropna=False).ngroups
    return RenderReport(files=files, missing_cells=missing, total_cells=done + missing,
                        done_cells=done, tag=tag, frame=frame, agg=agg, context=ctx,
                        not_dp=caveats, replicates=replicates)


def render_experiment(spec: ExperimentSpec, scale: str, results_dir: Path, figures_dir: Path,
                      filters=None, *, redraw: bool = False) -> RenderReport:
    """Figures into ``figures_dir/EXP/`` and tables into ``results_dir/EXP/``, from every
    cached row of the experiment at ``scale`` that ``filters`` (a ResultFilter) keeps.

    Raises :class:`NothingCachedError` (a DpexpError: a message, no traceback) when no
    cached row matches. ``redraw`` draws the figure even when its inputs are unchanged.
    """
    res = cached_results(spec, scale, results_dir, filters, current_only=True)
    return render_frame(spec, scale, res.frame, results_dir, figures_dir,
                        missing=_count(res.missing), done=res.n_cells, filters=filters,
                        redraw=redraw)
