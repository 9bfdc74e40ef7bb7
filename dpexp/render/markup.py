"""Markdown helpers shared by the tables, the figures and the report.

Spec text (captions, notes, labels such as ``g*_l`` or ``synthF[n_samples=3000]``) is data,
not markup: :func:`md_escape` backslash-escapes every character CommonMark could read as
emphasis, a link, code or a table separator, so it shows literally in ``REPORT.md`` and in
the HTML (rendered by :mod:`dpexp.render.html` with raw HTML disabled, so nothing in a spec
can inject markup either).
"""

from __future__ import annotations

import re

#: Said in every smoke-scale figure title, table heading and report section.
SMOKE_LABEL = "smoke — not the paper's setting"

# CommonMark's ASCII punctuation that can start or end an inline construct (emphasis,
# code, links, images, autolinks, raw HTML, entities) or a table cell.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#+!|~&])")


def md_escape(text: object) -> str:
    """``text`` as literal Markdown (no emphasis, links, code or cell breaks), one line."""
    out = _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))
    # At the start of a block, "- x", "1. x" or "= x" would open a list or a heading.
    # Only a marker followed by a space (or nothing) does: "0.25" and "-0.5" stay as they are.
    return re.sub(r"^(\d*)([-=.)])(?=\s|$)", r"\1\\\2", out)


def md_code(text: object) -> str:
    """``text`` as an inline code span (for ids and commands), whatever backticks it has."""
    s = str(text)
    fence = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def caveat_box(title: str, lines: list[str]) -> list[str]:
    """A block quote (rendered as a red-bordered box in the HTML) with a bold title."""
    out = [f"> **{title}**", ">"]
    out += [f"> - {line}" for line in lines]
    return [*out, ""]
