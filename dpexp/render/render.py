"""Render one experiment from the cache alone (no recomputation)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dpexp.experiments.runner import collect
from dpexp.experiments.spec import ExperimentSpec
from dpexp.render.aggregate import aggregate, attach_paper_values
from dpexp.render.figures import render_figure
from dpexp.render.tables import render_table


@dataclass
class RenderReport:
    files: list[Path]
    missing_cells: int
    total_cells: int


def _suffix(scale: str) -> str:
    return "" if scale == "paper" else f"-{scale}"


def render_experiment(spec: ExperimentSpec, scale: str, results_dir: Path, figures_dir: Path) -> RenderReport:
    """Figures into ``figures_dir/EXP/`` and tables into ``results_dir/EXP/``."""
    from dpexp.datasets.registry import get_dataset_info

    frame, missing = collect(spec, scale, results_dir)
    total = len(frame) and (len(missing) + frame.groupby(["dataset", "label", "params", "epsilon", "fold", "repeat"]).ngroups)
    agg = attach_paper_values(aggregate(frame, spec), spec)
    tasks = {d.key: get_dataset_info(d.name).task for d in spec.datasets}
    name = f"{spec.id}{_suffix(scale)}"
    files: list[Path] = []
    header = (
        f"## {spec.artefact} ({spec.paper}) — {spec.id}, {scale} scale\n\n{spec.caption}"
        + (f"\n\n{spec.notes}" if spec.notes else "")
        + (f"\n\n**Missing cells:** {len(missing)} (run `dpexp run {spec.id} --scale {scale}`)."
           if missing else "")
    )
    files += render_table(spec, agg, Path(results_dir) / spec.id / name, scale, header)
    if spec.significance and len(frame):
        from dpexp.experiments.cache import atomic_write_text
        from dpexp.render.significance import wilcoxon_markdown, wilcoxon_table

        ref = spec.significance["reference"]
        metric = spec.significance.get("metric", "accuracy")
        table = wilcoxon_table(frame, ref, metric)
        base = Path(results_dir) / spec.id / f"{name}-wilcoxon"
        atomic_write_text(base.with_suffix(".csv"), table.to_csv(index=False))
        md_path = files[0]
        atomic_write_text(md_path, md_path.read_text() + "\n" + wilcoxon_markdown(table, ref, metric) + "\n")
        files.append(base.with_suffix(".csv"))
    if spec.kind == "figure" and len(agg):
        files += render_figure(spec, agg, tasks, Path(figures_dir) / spec.id / name)
    return RenderReport(files=files, missing_cells=len(missing), total_cells=int(total or len(missing)))
