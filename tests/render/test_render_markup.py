"""Spec text is shown literally in the report's Markdown and HTML (no stray italics, links,
code spans, lists or injected HTML)."""

from __future__ import annotations

import base64
import html
import os
import re

import pytest
from markdown_it import MarkdownIt

from dpexp.render.html import Block, markdown_to_html, render_block
from dpexp.render.markup import caveat_box, md_code, md_escape

TRICKY = [
    "h = 1, g*_l = 1, Delta G = 3 g*^2",
    "synthF[n_samples=3000] (paper)",
    "a | b | c",
    "<script>alert(1)</script> & &amp;",
    "`code` and **bold** and _under_ and ~~strike~~",
    "- not a list",
    "1. not a list either",
    "# not a heading",
    "back\\slash",
]


def _text(page: str) -> str:
    body = page[page.index("<body>") + len("<body>"): page.index("</body>")]
    return html.unescape(re.sub(r"<[^>]+>", "", body)).strip()


@pytest.mark.parametrize("text", TRICKY)
def test_escaped_text_renders_literally(tmp_path, text):
    page = markdown_to_html(md_escape(text), tmp_path)
    assert _text(page) == text
    assert "<script>" not in page and "<em>" not in page and "<code>" not in page


def test_escaped_text_in_a_table_cell_stays_in_its_cell(tmp_path):
    md = "| a | b |\n|---|---|\n| " + md_escape("x | y") + " | 2 |\n"
    page = markdown_to_html(md, tmp_path)
    assert re.findall(r"<td>(.*?)</td>", page) == ["x | y", "2"]


def test_code_spans_and_caveat_box(tmp_path):
    assert md_code("dpexp run `x`") == "`` dpexp run `x` ``"
    page = markdown_to_html("\n".join(caveat_box("Not DP", [md_escape("a*b*c")])), tmp_path)
    assert "<blockquote>" in page and "a*b*c" in page and "<strong>Not DP</strong>" in page


def test_images_are_embedded(tmp_path):
    png = tmp_path / "fig.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 16)
    page = markdown_to_html("![fig](fig.png)\n\n![gone](missing.png)", tmp_path)
    assert "data:image/png;base64," in page and 'src="fig.png"' not in page


def test_spliced_images_are_what_markdown_it_writes(tmp_path):
    """The data URIs are spliced in after rendering (issue 43); the page must be the bytes
    markdown-it gives when it parses the data URI itself."""
    data = b"\x89PNG\r\n\x1a\n" + os.urandom(3000)  # every base64 character, likely
    (tmp_path / "a.png").write_bytes(data)
    (tmp_path / "b.png").write_bytes(data[::-1])
    md = "## Fig\n\n![a *fig*](a.png)\n\ntext dpexp-embedded-image-0.png\n\n![b](b.png)\n"
    uri = {n: "data:image/png;base64," + base64.b64encode((tmp_path / n).read_bytes()).decode()
           for n in ("a.png", "b.png")}
    inline = md.replace("(a.png)", f"({uri['a.png']})").replace("(b.png)", f"({uri['b.png']})")
    parser = MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")
    assert render_block(Block(md), tmp_path) == parser.render(inline)
