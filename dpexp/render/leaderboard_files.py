"""The leaderboard's files: ranking tables, the price of privacy and the critical-difference
diagrams (autorank's plot, Demšar 2006 Fig. 1), written from the experiment's union results
table (:func:`dpexp.experiments.results.cached_results`, the table every artefact renders
from). The ε-utility curves per dataset are the experiment's own figure
(:func:`dpexp.render.render.render_experiment`)."""

from __future__ import annotations

import hashlib
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dpexp.experiments.cache import atomic_write_bytes, write_text_if_changed
from dpexp.experiments.results import cached_results
from dpexp.experiments.spec import ExperimentSpec
from dpexp.render import style
from dpexp.render.figure_inputs import (
    current_sha,
    digest_of,
    frame_text,
    matplotlib_text,
    record_file,
    source_text,
)
from dpexp.render.leaderboard import (
    ALPHA,
    Board,
    boards,
    entry_status,
    price_of_privacy,
    ranking_table,
)
from dpexp.render.markup import SMOKE_LABEL

#: The code a CD diagram is drawn by (beside this module; leaderboard.py runs autorank's
#: test the diagram shows): a change to any of them redraws.
CD_SOURCES = ("leaderboard_files.py", "leaderboard.py", "style.py", "figure_inputs.py")


@dataclass(frozen=True)
class LeaderboardFiles:
    """What :func:`write_leaderboard` computed and wrote."""

    boards: list[Board]
    #: One ranking table per board (in ``boards`` order).
    tables: list[pd.DataFrame]
    #: Task -> entry label -> privacy status (over the entry's rows of that task).
    status: dict[str, dict[str, str]]
    files: list[Path] = field(default_factory=list)
    #: The CD diagram of each tested board, by (task, epsilon).
    diagrams: dict[tuple[str, float], Path] = field(default_factory=dict)
    #: The price of privacy per (task, dataset, DP entry, epsilon)
    #: (:func:`dpexp.render.leaderboard.price_of_privacy`).
    price: pd.DataFrame | None = None


def metric_of_task(spec: ExperimentSpec) -> dict[str, str]:
    """The leaderboard's metric per task: the first the spec asks for."""
    return {task: names[0] for task, names in spec.metrics.items() if names}


def write_leaderboard(spec: ExperimentSpec, scale: str, results_dir: Path, figures_dir: Path,
                      epsilons: list[float] | None = None,
                      frame: pd.DataFrame | None = None) -> LeaderboardFiles:
    """Compute every board of ``spec``'s cached results at ``scale`` and write
    ``results/ID/ID-ranks-SCALE.{csv,md}``, ``ID-price-of-privacy-SCALE.csv`` and one CD
    diagram per tested board (``figures/ID/ID-cd-TASK-epsE-SCALE.png``). ``frame``: those
    results (``cached_results(spec, scale, results_dir, current_only=True).frame``) when
    the caller read them already (the report: once a report)."""
    if frame is None:
        frame = cached_results(spec, scale, results_dir, current_only=True).frame
    metrics = metric_of_task(spec)
    found = boards(frame, metrics, epsilons)
    # an entry's status on a board: over its rows of the board's task
    task_of = {m: t for t, m in metrics.items()}
    status = {t: entry_status(frame[frame["metric"].map(task_of) == t]) for t in metrics}
    tables = [ranking_table(b, status[b.task]) for b in found]
    out_dir, fig_dir = results_dir / spec.id, figures_dir / spec.id
    price = price_of_privacy(frame, metrics)
    out = LeaderboardFiles(found, tables, status, price=price)
    ranks_csv = out_dir / f"{spec.id}-ranks-{scale}.csv"
    write_text_if_changed(ranks_csv, pd.concat(tables).to_csv(index=False) if tables else "")
    price_csv = out_dir / f"{spec.id}-price-of-privacy-{scale}.csv"
    write_text_if_changed(price_csv, price.to_csv(index=False))
    out.files.extend([ranks_csv, price_csv])
    for board in found:
        if board.test.critical_difference is not None:
            path = fig_dir / f"{spec.id}-cd-{board.task}-eps{board.epsilon:g}-{scale}.png"
            draw_current_cd_diagram(board, path, _title(spec, board, scale))
            out.diagrams[(board.task, board.epsilon)] = path
            out.files.append(path)
    md = out_dir / f"{spec.id}-ranks-{scale}.md"
    write_text_if_changed(md, ranks_markdown(spec, scale, out))
    out.files.append(md)
    return out


def _title(spec: ExperimentSpec, board: Board, scale: str) -> str:
    smoke = f" ({SMOKE_LABEL})" if scale == "smoke" else ""
    return (f"{spec.artefact}: {board.task} {board.metric}, ε = {board.epsilon:g}; "
            f"{test_summary(board)}{smoke}")


def board_header(board: Board) -> str:
    """What a board ranks, on which blocks, and its test, in one line (the blocks of an
    untested board already say why it is not tested)."""
    test = "" if board.test.p_value is None else f"; {test_summary(board)}"
    return f"{board.task}, ε = {board.epsilon:g} ({board.metric}; {board.test.blocks}{test})"


def test_summary(board: Board) -> str:
    """The board's test in words: ``Friedman p = ..., Nemenyi CD = ...`` or ``not tested``."""
    test = board.test
    if test.p_value is None:
        return "not tested"
    if test.critical_difference is None:
        return f"{test.test_name} p = {test.p_value:.3g}"
    return (f"Friedman p = {test.p_value:.3g}, Nemenyi CD = {test.critical_difference:.2f} "
            f"(mean ranks further apart differ at 0.05)")


def cd_digest(board: Board, title: str) -> str:
    """The sha256 of everything a CD diagram is drawn from (as
    :func:`dpexp.render.figure_inputs.inputs_digest` for an experiment's figure): the
    board's scores (autorank's input; its frequentist tests are deterministic), the level,
    the title, autorank's version, the code and matplotlib."""
    # lazy: importlib.metadata reads autorank's version without importing autorank
    from importlib import metadata

    try:
        autorank_version = metadata.version("autorank")
    except metadata.PackageNotFoundError:
        autorank_version = ""  # drawing then says how to install it
    return digest_of([frame_text(board.scores), repr(ALPHA), title, autorank_version,
                      source_text(CD_SOURCES), matplotlib_text()])


def draw_current_cd_diagram(board: Board, path: Path, title: str) -> bool:
    """Draw ``board``'s CD diagram into ``path`` unless the file there was drawn from the
    same inputs and is unchanged since (its sidecar ``path.inputs`` says so, as a figure's:
    :mod:`dpexp.render.figure_inputs`); True when drawn."""
    digest = cd_digest(board, title)
    if current_sha(path, digest) is not None:
        return False
    record_file(path, digest, draw_cd_diagram(board, path, title))
    return True


def draw_cd_diagram(board: Board, path: Path, title: str) -> str:
    """autorank's critical-difference diagram of ``board`` as a PNG, written atomically
    (drawn even when the Friedman test finds no difference: the title gives its p-value);
    the sha256 of the bytes written."""
    # lazy: matplotlib's backend is chosen before pyplot is imported
    import matplotlib

    matplotlib.use("Agg")
    # lazy: pyplot only after use("Agg"); autorank is the optional leaderboard extra
    import autorank
    import matplotlib.pyplot as plt

    ax = autorank.plot_stats(board.test.result, allow_insignificant=True)
    fig = ax.get_figure()
    fig.suptitle(title, fontsize=8, y=1.08)  # above the CD bar and its label
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=style.DPI, bbox_inches="tight")
    plt.close(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = buffer.getvalue()
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def ranks_markdown(spec: ExperimentSpec, scale: str, lb: LeaderboardFiles) -> str:
    """The ranking tables as markdown, one section per board."""
    lines = [f"# {spec.artefact} ({scale})", ""]
    if scale == "smoke":
        lines += [f"*{SMOKE_LABEL}*", ""]
    for board, table in zip(lb.boards, lb.tables, strict=True):
        lines += [f"## {board_header(board)}", "", f"| entry | mean rank | mean {board.metric} | privacy |", "|---|---|---|---|"]
        for row in table.itertuples(index=False):
            lines.append(f"| {row.entry} | {row.mean_rank:.2f} | {_num(row[4])} | {row.status} |")
        if board.left_out:
            lines += ["", "Left out (incomplete): " + "; ".join(board.left_out)]
        lines.append("")
    return "\n".join(lines)


def _num(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else str(value)
