"""One artefact's section of ``dpexp report``: rendered at the best cached scale from the
cache and the committed results, its cells counted against those of the datasets and
optional packages this machine has, then every section's printed values judged once all
are built (a ``shown`` explanation is checked against another section's cells)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from dpexp.errors import DpexpError
from dpexp.experiments.cells import expand
from dpexp.experiments.committed import SharedReads, table_path
from dpexp.experiments.completion import Availability, Completion, completion, missing_packages
from dpexp.experiments.results import cached_results
from dpexp.experiments.schema import CELL_COLUMNS
from dpexp.experiments.spec import DatasetRef, ExperimentSpec
from dpexp.experiments.stale import stale_rows, stale_summary
from dpexp.render.claims import ClaimResult, check_claims
from dpexp.render.figures import REPORT_FORMATS
from dpexp.render.frame import not_dp_mask, procedure_mask
from dpexp.render.paper_values import PLAUSIBLE, SHOWN
from dpexp.render.render import NothingCachedError, RenderReport, render_frame
from dpexp.render.significance import significance_markdown
from dpexp.render.value_status import (
    ComparisonSummary,
    ValueStatus,
    lands,
    pooled_cells,
    summarise_statuses,
    value_statuses,
)


@dataclass
class Section:
    spec: ExperimentSpec
    scale: str | None
    n_cells: int = 0
    n_missing: int = 0
    cells_total: int = 0  # cells of the datasets that can be had (done ones included)
    #: done / here / grid (dpexp.experiments.completion): what list and plan say too
    completion: Completion = Completion(0, 0, 0)
    unavailable: list[str] = field(default_factory=list)  # dataset names, no result, not loadable
    #: series whose optional package does not import here, no result: "label (package)"
    algorithms_unavailable: list[str] = field(default_factory=list)
    #: those series' optional packages, each once (the report says how to get each)
    packages_unavailable: list[str] = field(default_factory=list)
    comparison: pd.DataFrame | None = None
    agg: pd.DataFrame | None = None  # every aggregated row (a shown explanation's cells)
    summary: ComparisonSummary | None = None
    statuses: list[ValueStatus] = field(default_factory=list)  # one per printed value
    claims: list[ClaimResult] = field(default_factory=list)
    figure: Path | None = None
    significance: str = ""
    seeds: list[int] = field(default_factory=list)
    not_dp: list[str] = field(default_factory=list)  # plain-text caveat lines
    domain: str = ""
    replicates: str = ""
    display: dict[str, str] = field(default_factory=dict)
    datasets_done: list[str] = field(default_factory=list)  # dataset keys with results
    problem: str = ""  # why the spec's grid could not be expanded ("" if it could)
    noise: list[str] = field(default_factory=list)  # how its rows' noise was drawn
    rows_stale: int = 0  # rows the current code would compute differently (stale.py)
    stale: str = ""  # the one line that says so ("" when none)
    not_dp_cells: int = 0  # budgeted cells without a DP guarantee (the caveats' summary)
    not_dp_kinds: list[str] = field(default_factory=list)  # why, in a few words each
    #: the rows as read (``build_section(keep_rows=True)``: a leaderboard's ranks are
    #: computed from them, so its table is read once a report)
    cached_frame: pd.DataFrame | None = None

    @property
    def n_done(self) -> int:
        return self.n_cells - self.n_missing if self.scale else 0


def _scales(results_dir: Path, spec: ExperimentSpec, wanted: str | None) -> list[str]:
    """Scales to try, best first: paper where cached, else smoke (or just ``wanted``)."""
    scales = [wanted] if wanted else ["paper", "smoke"]
    return [s for s in scales if (Path(results_dir) / "cache" / spec.cells_id / s).is_dir()
            or table_path(results_dir, spec.cells_id, s).exists()]


def _names(datasets: list[DatasetRef]) -> list[str]:
    return list(dict.fromkeys(d.name for d in datasets))


def build_section(spec: ExperimentSpec, results_dir: Path, figures_dir: Path, scale: str | None,
                  available: Availability | None = None,
                  shared: SharedReads | None = None, *, keep_rows: bool = False) -> Section:
    """Render ``spec`` at the best cached scale and collect what the report shows of it
    (``shared``: the report's committed tables read by several specs, read once;
    ``keep_rows``: the rows read kept in :attr:`Section.cached_frame`)."""
    available = available or Availability()
    problem = ""
    for s in _scales(results_dir, spec, scale):
        at = spec.at_scale(s)
        try:
            res = cached_results(at, s, results_dir, current_only=True, shared=shared)
            rendered = render_frame(at, s, res.frame, results_dir, figures_dir,
                                    missing=len(res.missing), done=res.n_cells,
                                    formats=REPORT_FORMATS)
        except NothingCachedError:
            continue
        except DpexpError as exc:  # one broken spec must not hide the others' verdicts
            problem = str(exc)
            break
        sec = _section(spec, s, rendered)
        if keep_rows:
            sec.cached_frame = res.frame
        # cells of the spec's grid only: a peer's column or an override run is shown but
        # is neither done nor to do
        grid = res.grid  # the grid of res.seeds (no filter here), keys already made
        missing = {c.key for c in res.missing}
        lacking = missing_packages(at, {c.label for c in res.missing})
        return _counted(sec, completion(grid, lambda c, gone=missing: c.key not in gone,
                                        available, lacking), lacking)
    # Not run: what running it would take, at the scale asked for (paper by default).
    at = spec.at_scale(scale or "paper")
    sec = Section(spec, None, problem=problem)
    try:
        cells = expand(at, scale or "paper", 0)
        lacking = missing_packages(at, {c.label for c in cells})
        return _counted(sec, completion(cells, lambda c: False, available, lacking), lacking)
    except DpexpError as exc:
        sec.problem = sec.problem or str(exc)
    sec.unavailable = [n for n in _names(at.datasets) if not available(n)]
    return sec


def _counted(sec: Section, done: Completion, lacking: dict[str, str]) -> Section:
    """``sec`` with its cell counts from ``done`` (the one definition of done)."""
    sec.completion = done
    sec.n_cells, sec.n_missing = (done.grid, done.grid - done.done) if sec.scale else (0, 0)
    sec.cells_total = done.here
    sec.unavailable = list(done.datasets_missing)
    sec.algorithms_unavailable = [f"{label} (needs {pkg})" for label, pkg in lacking.items()]
    sec.packages_unavailable = list(dict.fromkeys(lacking.values()))
    return sec


def _section(spec: ExperimentSpec, scale: str, rendered: RenderReport) -> Section:
    frame, agg, ctx = rendered.frame, rendered.agg, rendered.context
    sec = Section(spec, scale, n_cells=rendered.total_cells, n_missing=rendered.missing_cells)
    sec.seeds = sorted(int(x) for x in frame["seed"].dropna().unique())
    sec.datasets_done = sorted(str(d) for d in frame["dataset"].dropna().unique())
    sec.comparison = agg[agg["paper_value"].notna()]
    sec.agg = agg
    sec.claims = check_claims(spec.claims, agg, ctx.tasks, scale)
    sec.not_dp = list(rendered.not_dp)
    sec.not_dp_cells, sec.not_dp_kinds = not_dp_cell_count(frame)
    sec.domain = ctx.note
    sec.replicates = rendered.replicates
    sec.noise = sorted(set(pd.unique(frame["noise"])) - {""}) if "noise" in frame else []
    stale = stale_rows(frame)
    sec.rows_stale, sec.stale = int(stale.sum()), stale_summary(frame, stale)
    sec.display = ctx.display
    sec.significance = significance_markdown(spec, frame, scale, ctx.display)
    sec.figure = next((f for f in rendered.files if f.suffix == ".png"), None)
    return sec


def not_dp_cell_count(frame: pd.DataFrame) -> tuple[int, list[str]]:
    """How many cells run with a budget give no DP guarantee, and why in a few words
    ("marked not DP by the run", "domains from data"): the caveats' one-line summary."""
    budgeted = np.isfinite(frame["epsilon"].astype(float)) & ~procedure_mask(frame)
    marked = not_dp_mask(frame)
    from_data = (budgeted & ~marked & (frame["domain_source"] != "")
                 & ~frame["domain_source"].str.startswith("declared"))
    keys = [c for c in CELL_COLUMNS if c in frame]
    n = int(frame[marked | from_data].groupby(keys, dropna=False).ngroups) if keys else 0
    kinds = [k for k, m in (("marked not DP by the run", marked), ("domains from data", from_data))
             if m.any()]
    return n, kinds


def shown_checker(sections: list[Section]):
    """A check of declared ``shown`` explanations against the named experiment's cells in
    this report (:func:`dpexp.render.value_status.lands`, the rule of a reproduction)."""
    by_id = {s.spec.id: s for s in sections}

    def check(spec: ExperimentSpec, entry: dict) -> tuple[bool, str]:
        shown = entry["shown"]
        other = by_id.get(str(shown["experiment"]))
        if other is None or other.agg is None or other.scale != "paper":
            return False, f"experiment {shown['experiment']} has no paper-scale results here"
        cells = ", ".join(f"{k} {v}" for k, v in shown["cells"].items())
        stats = pooled_cells(other.agg, other.spec, dict(shown["cells"]))
        if stats is None:
            return False, f"no cell of {shown['experiment']} matches ({cells})"
        ok, detail = lands(entry, spec, stats)
        return ok, f"{shown['experiment']} ({cells}): {detail}"

    return check


def judge_sections(sections: list[Section]) -> None:
    """Every section's per-value statuses and summary, once all sections are built (a shown
    explanation is checked against another section's cells)."""
    check = shown_checker(sections)
    _check_claims_shown(sections)
    for sec in sections:
        if sec.scale is None or sec.agg is None:
            continue
        sec.statuses = value_statuses(sec.agg, sec.spec, sec.scale, tuple(sec.unavailable), check)
        entries = sec.spec.paper_values.get("values") or []
        has = sec.agg["paper_value"].notna()
        sec.summary = summarise_statuses(sec.statuses, len(entries),
                                         len(set(sec.agg.loc[has, "paper_entry"])),
                                         sec.scale == "smoke",
                                         str(sec.spec.paper_values.get("source", "the paper")))


def _check_claims_shown(sections: list[Section]) -> None:
    """A claim explanation declared shown counts as shown only when the experiment it names
    has paper-scale results in this report; otherwise it is plausible, and says why."""
    done = {s.spec.id for s in sections if s.scale == "paper"}
    for sec in sections:
        sec.claims = [c if c.explanation_status != SHOWN or c.shown_by in done else
                      replace(c, explanation_status=PLAUSIBLE,
                              explanation=f"{c.explanation} [declared shown by {c.shown_by}, "
                                          "which has no paper-scale results here]")
                      for c in sec.claims]


