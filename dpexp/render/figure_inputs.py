"""Skip redrawing a figure whose inputs have not changed (issue 43: ``dpexp report`` spent
most of its time drawing 30 unchanged figures, and a fresh clone redrew all of them).

A figure is a function of what it plots (the aggregated frame, or a leaderboard board's
scores), the spec fields the drawing reads, the render context (order, names, tasks,
scale, caption), the figure and style code, matplotlib (version, FreeType, rc settings;
the fonts are matplotlib's own). :func:`inputs_digest` and :func:`digest_of` hash them:
text made from committed inputs only (the results table, the specs, the code), never a
path, a cache file, a time or a host name, so a fresh clone computes the digest its
committed figure was drawn from.

Each figure file has its own sidecar, ``NAME.EXT.inputs`` beside ``NAME.EXT``: the digest
and the sha256 of the file drawn from it. A file is current when the digest is the
recorded one and its bytes are the recorded bytes (a file replaced by another render or a
killed render: redrawn). The PNG's sidecar is committed with the PNG (a fresh clone's
first report redraws nothing whose inputs did not change); the PDF's is regenerated with
the PDF. A sidecar is written atomically, after its file; the figure files' bytes are
exactly what drawing gives (nothing is added to the PNG).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd

from dpexp.experiments.cache import atomic_write_text
from dpexp.experiments.spec import ExperimentSpec
from dpexp.render.frame import RenderContext

__all__ = ["FIGURE_SOURCES", "FORMATS", "canonical", "current_sha", "digest_of", "figure_path",
           "file_sha256", "frame_text", "inputs_digest", "matplotlib_text", "record_file", "sidecar_path",
           "source_text"]

#: The files drawn of one figure, in the order they are written.
FORMATS = ("pdf", "png")
#: The code an experiment's figure is drawn by (beside this module): a change redraws.
FIGURE_SOURCES = ("figures.py", "style.py", "frame.py", "markup.py", "figure_inputs.py")


def source_text(names: Iterable[str]) -> str:
    """The sha256 of each named module beside this one (its bytes as committed)."""
    here = Path(__file__).parent
    return "".join(hashlib.sha256((here / name).read_bytes()).hexdigest() for name in names)


def frame_text(frame: pd.DataFrame) -> str:
    """The frame exactly: columns, dtypes, index and every value (floats round-trip)."""
    dtypes = ",".join(f"{c}:{t}" for c, t in frame.dtypes.items())
    return dtypes + "\n" + frame.to_csv(index=True, lineterminator="\n")


def canonical(value: Any) -> str:
    """A stable text of nested dicts, lists and scalars (dicts by sorted key)."""
    if isinstance(value, dict):
        items = sorted((str(k), canonical(v)) for k, v in value.items())
        return "{" + ",".join(f"{k!r}:{v}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    return repr(value)


def matplotlib_text() -> str:
    """matplotlib's version, FreeType's and the rc settings (backends aside): what else
    decides the pixels."""
    # lazy: ft2font is matplotlib's compiled text renderer, loaded with pyplot anyway
    from matplotlib import ft2font

    # the stored values (dict.items): reading rcParams["backend"] through the mapping
    # resolves the backend, which imports pyplot (~1 s a report worker) for a key left out
    rc = {k: v for k, v in dict.items(matplotlib.rcParams) if not k.startswith("backend")}
    return canonical({"version": matplotlib.__version__,
                      "freetype": getattr(ft2font, "__freetype_version__", ""), "rc": rc})


def digest_of(parts: Sequence[str]) -> str:
    """The sha256 of ``parts`` (texts), each ended by a NUL."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def inputs_digest(spec: ExperimentSpec, agg: pd.DataFrame, ctx: RenderContext) -> str:
    """The sha256 of everything an experiment's figure is drawn from (module docstring)."""
    used = {"plot": spec.plot, "artefact": spec.artefact, "paper": spec.paper,
            "series": [[a.label, a.name] for a in spec.algorithms], "metrics": spec.metrics}
    context = {"order": ctx.order, "display": ctx.display, "tasks": ctx.tasks,
               "scale": ctx.scale, "note": ctx.note, "algorithms": ctx.algorithms}
    return digest_of([canonical(used), canonical(context), frame_text(agg),
                      source_text(FIGURE_SOURCES), matplotlib_text()])


def sidecar_path(path: Path) -> Path:
    """``NAME.EXT.inputs`` beside the figure file ``NAME.EXT`` (the name may contain dots)."""
    return path.parent / f"{path.name}.inputs"


def figure_path(out_base: Path, ext: str) -> Path:
    """``NAME.ext`` beside ``out_base`` (the name may contain dots)."""
    return out_base.parent / f"{out_base.name}.{ext}"


def _format(path: Path) -> str:
    return path.suffix.lstrip(".")


def _recorded(path: Path) -> dict[str, str]:
    """The sidecar's lines (``inputs DIGEST``, then ``EXT SHA256``) as a dict."""
    try:
        lines = sidecar_path(path).read_text().splitlines()
    except OSError:
        return {}
    pairs = [line.split(" ", 1) for line in lines]
    return {p[0]: p[1] for p in pairs if len(p) == 2}


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def current_sha(path: Path, digest: str) -> str | None:
    """The sha256 of the figure file ``path`` when it was drawn from ``digest`` and is
    unchanged since (its sidecar says so), else None (to be drawn)."""
    recorded = _recorded(path)
    if recorded.get("inputs") != digest:
        return None
    sha = file_sha256(path)
    return sha if sha is not None and sha == recorded.get(_format(path)) else None


def record_file(path: Path, digest: str, sha: str) -> None:
    """Write ``path``'s sidecar: the file, whose bytes have ``sha``, was drawn from ``digest``."""
    atomic_write_text(sidecar_path(path), f"inputs {digest}\n{_format(path)} {sha}\n")
