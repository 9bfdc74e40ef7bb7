"""The self-contained HTML of ``dpexp report`` (issue 19): Markdown blocks rendered by
markdown-it-py, plus the verdict table built here with every piece of data escaped.

Raw HTML stays disabled in the Markdown renderer, so nothing a spec says can inject markup;
the only HTML that is not rendered Markdown is what :func:`verdict_table` and
:func:`page` build, from escaped text. Colours carry the verdicts: green reproduced/pass,
amber explained, red unexplained/fail, grey not run or not evaluated (smoke).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

#: CSS classes of a verdict (the same in the verdict table and the per-artefact sections).
GOOD, WARN, BAD, NONE = "v-good", "v-warn", "v-bad", "v-none"

_STYLE = (
    "body{font-family:sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;line-height:1.4}"
    "table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 6px}img{max-width:100%}"
    "code{background:#f3f3f3}"
    # The caveat box: not-DP rows and data-derived domains must be seen, not skimmed.
    "blockquote{border-left:5px solid #c0392b;background:#fdf0ef;margin:1em 0;padding:0.4em 1em}"
    f".{GOOD}{{background:#d4efd4}}.{WARN}{{background:#ffe9b3}}.{BAD}{{background:#f6c9c6}}"
    f".{NONE}{{background:#ececec;color:#555}}"
    # The verdict table is wide: smaller type, and it scrolls inside the text column
    # instead of running off the page.
    "table.verdicts{display:block;overflow-x:auto;max-width:100%;font-size:0.78em}"
    "table.verdicts td.n{text-align:right;white-space:nowrap}"
    "table.verdicts td:nth-child(2){white-space:nowrap}"
    "table.verdicts tr.paper th{text-align:left;background:#dde6f0}"
    "li.v-good,li.v-warn,li.v-bad,li.v-none{padding:1px 4px;margin:2px 0}"
    "table.verdicts tr.total td{font-weight:bold;border-top:2px solid #888}"
    # Per-artefact caveats, collapsed under a one-line summary (issue 42).
    "details.caveats{border-left:5px solid #c0392b;background:#fdf0ef;margin:0.6em 0;"
    "padding:0.2em 0.8em}details.caveats summary{cursor:pointer;font-weight:bold}"
    "p.caption{font-size:0.9em;color:#333;margin-top:0}"
)

#: How a cell or list item of rendered Markdown starts -> its verdict class.
_CELL_CLASS = {"reproduced": GOOD, "shown": WARN, "refuted": WARN, "explained": WARN, "plausible": BAD,
               "unexplained": BAD, "not compared": NONE, "timing": NONE, "no tolerance": NONE,
               "not judged": NONE, "calibration": NONE, "reprint": NONE}
_ITEM_CLASS = {"**✓ pass**": GOOD, "**✗ fail**": BAD, "**✗ fail (explained)**": WARN,
               "**✗ fail (explained: shown": WARN, "**✗ fail (explained: plausible": BAD,
               "**·": NONE, "**?": NONE}


@dataclass(frozen=True)
class Block:
    """One piece of the report: Markdown (for REPORT.md and, rendered, for the HTML),
    optionally trusted HTML to use instead in the HTML, and an anchor id that the block's
    first heading carries (``#dpboost-fig2``)."""

    markdown: str
    html: str | None = None
    anchor: str | None = None


_IMAGE_LINE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)\)\s*$")


def _markdown_it() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")


def _class_of(content: str, table: dict[str, str]) -> str | None:
    # Longest prefix first, so "**✗ fail (explained)**" is not read as "**✗ fail**".
    for prefix in sorted(table, key=len, reverse=True):
        if content.startswith(prefix):
            return table[prefix]
    return None


def _mark_verdicts(tokens: list) -> None:
    """Give table cells and list items that state a verdict their colour class."""
    for i, tok in enumerate(tokens[:-2]):
        if tok.type == "td_open" and tokens[i + 1].type == "inline":
            cls = _class_of(tokens[i + 1].content, _CELL_CLASS)
        elif tok.type == "list_item_open" and tokens[i + 2].type == "inline":
            cls = _class_of(tokens[i + 2].content, _ITEM_CLASS)
        else:
            continue
        if cls:
            tok.attrSet("class", cls)


#: A safe URL that stands for an embedded image while markdown-it parses the block; the
#: rendered ``src`` attribute is then replaced by the image's data URI (:func:`_embed_after`).
_PLACEHOLDER = "dpexp-embedded-image-{}.png"


def _image_uris(markdown: str, base_dir: Path) -> tuple[str, dict[str, str]]:
    """``markdown`` with every image line whose PNG file exists under ``base_dir`` pointing
    at a placeholder, and the placeholder -> base64 data URI of each image."""
    out, uris = [], {}
    for line in markdown.splitlines():
        m = _IMAGE_LINE.match(line)
        if m and not m["src"].startswith("data:"):
            p = (Path(base_dir) / m["src"]).resolve()
            if p.is_file() and p.suffix.lower() == ".png":
                placeholder = _PLACEHOLDER.format(len(uris))
                uris[placeholder] = "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()
                line = f"![{m['alt']}]({placeholder})"
        out.append(line)
    return "\n".join(out), uris


def _embed_after(rendered: str, uris: dict[str, str]) -> str:
    """The rendered HTML with each placeholder's ``src`` replaced by its data URI.

    Why after rendering: markdown-it percent-encodes a link character by character in
    Python, about 0.2 s per figure's megabyte of base64 (issue 43: 30 figures made a tenth
    of ``dpexp report``). Its percent-encoding keeps letters, digits and ``:;/+=``, and its
    attribute escaping touches only ``&<>"``: a ``data:image/png;base64,`` URI (the base64
    alphabet) comes out unchanged, so the page is the same bytes. A placeholder is replaced
    only inside ``src="..."``, which raw text cannot produce (raw HTML is disabled: a typed
    quote is written ``&quot;``)."""
    for placeholder, uri in uris.items():
        rendered = rendered.replace(f'src="{placeholder}"', f'src="{uri}"')
    return rendered


def render_block(block: Block, base_dir: Path) -> str:
    """The HTML of one block: its trusted HTML, or its Markdown rendered (images under
    ``base_dir`` embedded as data URIs, verdict cells coloured, the anchor on the first
    heading)."""
    if block.html is not None:
        return block.html
    md = _markdown_it()
    text, uris = _image_uris(block.markdown, base_dir)
    tokens = md.parse(text)
    _mark_verdicts(tokens)
    if block.anchor:
        first = next((t for t in tokens if t.type == "heading_open"), None)
        if first is not None:
            first.attrSet("id", block.anchor)
    return _embed_after(md.renderer.render(tokens, md.options, {}), uris)


def markdown_of(blocks: Sequence[Block]) -> str:
    """REPORT.md: the blocks' Markdown; an anchor becomes an ``<a id>`` line before the
    block (GitHub and most viewers honour it), so the verdict table's links work there too."""
    parts = []
    for b in blocks:
        if b.anchor:
            parts.append(f'<a id="{html.escape(b.anchor)}"></a>\n')
        parts.append(b.markdown.rstrip("\n") + "\n")
    return "\n".join(parts)


def markdown_to_html(markdown: str, base_dir: Path, title: str = "dpexp report") -> str:
    """Self-contained HTML of one Markdown text (images under ``base_dir`` embedded), rendered
    as the report's blocks are."""
    return page([Block(markdown)], base_dir, title)


def page(blocks: Sequence[Block], base_dir: Path, title: str = "dpexp report") -> str:
    """One self-contained HTML file of ``blocks`` (no external resource)."""
    body = "\n".join(render_block(b, base_dir) for b in blocks)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body>\n{body}</body></html>\n")


#: How a totals row of the verdict table starts (it is drawn bold, with a rule above).
TOTAL = "Total"


def details_block(summary: str, markdown: str, base_dir: Path) -> Block:
    """A collapsed ``<details>`` block: ``summary`` on one line, ``markdown`` inside.

    The Markdown of REPORT.md wraps the same text in ``<details>`` (GitHub renders it);
    the HTML renders the inside here, since raw HTML stays disabled in the renderer."""
    inner = render_block(Block(markdown), base_dir)
    head = html.escape(summary)
    return Block(f"<details><summary>{head}</summary>\n\n{markdown.strip()}\n\n</details>",
                 html=f'<details class="caveats"><summary>{head}</summary>\n{inner}</details>')


@dataclass(frozen=True)
class Cell:
    """One cell of the verdict table: its text and its verdict class (None: plain)."""

    text: str
    cls: str | None = None
    numeric: bool = False
    link: str | None = None  # anchor id the text links to


def _td(cell: Cell) -> str:
    classes = " ".join(c for c in (cell.cls, "n" if cell.numeric else None) if c)
    attr = f' class="{classes}"' if classes else ""
    text = html.escape(cell.text)
    if cell.link:
        text = f'<a href="#{html.escape(cell.link)}">{text}</a>'
    return f"<td{attr}>{text}</td>"


def verdict_table(header: Sequence[tuple[str, Sequence[str]]],
                  groups: Sequence[tuple[str, Sequence[Sequence[Cell]]]]) -> str:
    """An HTML table with a two-level header (``(group title, column names)``; a group with
    one column and the same title spans both header rows) and rows grouped under a
    full-width title row per group (``(group title, rows)``)."""
    n_cols = sum(len(cols) for _, cols in header)
    top, sub = [], []
    for title, cols in header:
        if len(cols) == 1 and cols[0] == title:
            top.append(f'<th rowspan="2">{html.escape(title)}</th>')
        else:
            top.append(f'<th colspan="{len(cols)}">{html.escape(title)}</th>')
            sub += [f"<th>{html.escape(c)}</th>" for c in cols]
    out = ['<table class="verdicts">', f"<thead><tr>{''.join(top)}</tr><tr>{''.join(sub)}</tr></thead>",
           "<tbody>"]
    for title, rows in groups:
        out.append(f'<tr class="paper"><th colspan="{n_cols}">{html.escape(title)}</th></tr>')
        out += [("<tr class=\"total\">" if row and row[0].text.startswith(TOTAL) else "<tr>")
                + "".join(_td(c) for c in row) + "</tr>" for row in rows]
    out.append("</tbody></table>")
    return "\n".join(out)
