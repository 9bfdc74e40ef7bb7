"""Skip redrawing a figure whose inputs have not changed (issue 43: ``dpexp report`` spent
most of its time drawing 30 unchanged figures).

A figure is a function of what it plots (the aggregated frame), the spec fields the
drawing reads, the render context (order, names, tasks, scale, caption), the figure and
style code, matplotlib (version, FreeType, rc settings; the fonts are matplotlib's own).
:func:`inputs_digest` hashes all of them. Beside ``NAME.png`` the sidecar
``NAME.png.inputs`` records that digest and the sha256 of every file written from it
(PNG and PDF): a file is current when the digest is the recorded one and its bytes are
the recorded bytes (a file replaced by another render, a killed render, a missing PDF on
a fresh clone: redrawn). The sidecar is written last, atomically, after the files; the
figure files' bytes are exactly what drawing gives (nothing is added to the PNG).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd

from dpexp.experiments.cache import atomic_write_text
from dpexp.experiments.spec import ExperimentSpec
from dpexp.render.frame import RenderContext

__all__ = ["FORMATS", "current_files", "figure_path", "inputs_digest", "record_files", "sidecar_path"]

#: The files drawn of one figure, in the order they are written.
FORMATS = ("pdf", "png")
#: The code a figure is drawn by (beside this module): a change to any of them redraws.
_SOURCES = ("figures.py", "style.py", "frame.py", "markup.py", "figure_inputs.py")


def _source_text() -> str:
    here = Path(__file__).parent
    return "".join(hashlib.sha256((here / name).read_bytes()).hexdigest() for name in _SOURCES)


def _frame_text(frame: pd.DataFrame) -> str:
    """The frame exactly: columns, dtypes, index and every value (floats round-trip)."""
    dtypes = ",".join(f"{c}:{t}" for c, t in frame.dtypes.items())
    return dtypes + "\n" + frame.to_csv(index=True, lineterminator="\n")


def _canonical(value: Any) -> str:
    """A stable text of nested dicts, lists and scalars (dicts by sorted key)."""
    if isinstance(value, dict):
        items = sorted((str(k), _canonical(v)) for k, v in value.items())
        return "{" + ",".join(f"{k!r}:{v}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    return repr(value)


def _matplotlib_text() -> str:
    # lazy: ft2font is matplotlib's compiled text renderer, loaded with pyplot anyway
    from matplotlib import ft2font

    rc = {k: v for k, v in matplotlib.rcParams.items() if not k.startswith("backend")}
    return _canonical({"version": matplotlib.__version__,
                       "freetype": getattr(ft2font, "__freetype_version__", ""), "rc": rc})


def inputs_digest(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext) -> str:
    """The sha256 of everything a figure is drawn from (module docstring)."""
    used = {"plot": spec.plot, "artefact": spec.artefact, "paper": spec.paper,
            "series": [[a.label, a.name] for a in spec.algorithms], "metrics": spec.metrics}
    context = {"order": ctx.order, "display": ctx.display, "tasks": ctx.tasks,
               "scale": ctx.scale, "note": ctx.note, "algorithms": ctx.algorithms}
    h = hashlib.sha256()
    for part in (_canonical(used), _canonical(context), _frame_text(agg), _source_text(),
                 _matplotlib_text()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def sidecar_path(out_base: Path) -> Path:
    """``NAME.png.inputs`` beside ``NAME.png`` (the name may contain dots)."""
    return out_base.parent / f"{out_base.name}.png.inputs"


def figure_path(out_base: Path, ext: str) -> Path:
    """``NAME.ext`` beside ``out_base`` (the name may contain dots)."""
    return out_base.parent / f"{out_base.name}.{ext}"


def _recorded(out_base: Path) -> dict[str, str]:
    """The sidecar's lines (``inputs DIGEST``, then ``FORMAT SHA256`` per file) as a dict."""
    try:
        lines = sidecar_path(out_base).read_text().splitlines()
    except OSError:
        return {}
    pairs = [line.split(" ", 1) for line in lines]
    return {p[0]: p[1] for p in pairs if len(p) == 2}


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def current_files(out_base: Path, digest: str) -> dict[str, str]:
    """Format -> sha256 of each figure file drawn from ``digest`` and unchanged since."""
    recorded = _recorded(out_base)
    if recorded.get("inputs") != digest:
        return {}
    out = {}
    for ext in FORMATS:
        sha = _sha256(figure_path(out_base, ext))
        if sha is not None and sha == recorded.get(ext):
            out[ext] = sha
    return out


def record_files(out_base: Path, digest: str, files: dict[str, str]) -> None:
    """Write the sidecar: ``files`` (format -> sha256) were drawn from ``digest``."""
    lines = [f"inputs {digest}", *(f"{ext} {files[ext]}" for ext in FORMATS if ext in files)]
    atomic_write_text(sidecar_path(out_base), "\n".join(lines) + "\n")
