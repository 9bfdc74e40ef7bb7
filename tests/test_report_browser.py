"""The report reads in a browser (issue 19): headless Chromium renders ``report.html``, the
page is not blank, it opens with the verdict table whose links reach the sections, and
every figure of the rendered experiments is embedded as a PNG data URI.

Chromium is Debian's ``chromium`` package. Without it the test skips and says so, except
with ``DPEXP_TEST_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where a missing browser fails.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.paths import project_root
from dpexp.render.report import write_report

#: Two committed paper-scale figures and a table: small enough to render in seconds.
COMMITTED = ("xgbdp-fig1", "xgbdp-fig2", "fletcher-table5")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: The verdict table's green (reproduced / pass) and grey (not run), as rgb
#: (dpexp/render/html.py).
GREEN, GREY = (0xD4, 0xEF, 0xD4), (0xEC, 0xEC, 0xEC)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    reason = ("headless Chromium is not installed (apt-get install chromium); "
              "the browser check of the report is skipped")
    if os.environ.get("DPEXP_TEST_REQUIRE_BROWSER") == "1":
        pytest.fail(f"DPEXP_TEST_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


def _browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(cmd, capture_output=True, timeout=180, check=False)


def _results(tmp_path: Path) -> tuple[Path, Path, bool]:
    """A results folder holding a copy of a few committed tables (or, in a checkout
    without them, a smoke run of the quick start; the flag says which)."""
    r, f = tmp_path / "results", tmp_path / "figures"
    committed = [e for e in COMMITTED if (project_root() / "results" / e / "results-paper.csv.gz").exists()]
    for exp in committed:
        (r / exp).mkdir(parents=True)
        shutil.copy(project_root() / "results" / exp / "results-paper.csv.gz", r / exp)
    if not committed:
        res = CliRunner().invoke(app, ["run", "quickstart", "--results-dir", str(r), "--figures-dir",
                                       str(f), "--no-render", "-q"])
        assert res.exit_code == 0, res.output
    return r, f, bool(committed)


class _Page(HTMLParser):
    """What the test reads from the DOM: images, ids, the verdict table's links and cells."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.verdict_links: list[str] = []
        self.verdict_classes: list[str] = []
        self.first_table_class: str | None = None
        self.text: list[str] = []
        self._in_verdicts = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "img":
            self.images.append(a.get("src") or "")
        if tag == "table":
            if self.first_table_class is None:
                self.first_table_class = a.get("class") or ""
            self._in_verdicts = a.get("class") == "verdicts"
        if self._in_verdicts and tag == "a":
            self.verdict_links.append(a.get("href") or "")
        if self._in_verdicts and tag == "td" and a.get("class"):
            self.verdict_classes += a["class"].split()

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_verdicts = False

    def handle_data(self, data):
        self.text.append(data)


def test_report_renders_in_headless_chromium(tmp_path):
    from PIL import Image

    _chromium()  # skip (or fail) before rendering anything
    r, f, paper = _results(tmp_path)
    _, html_path = write_report(r, f)
    url = html_path.resolve().as_uri()

    shot = tmp_path / "report.png"
    run = _browser(tmp_path, f"--screenshot={shot}", "--window-size=1280,4000", url)
    assert run.returncode == 0 and shot.exists(), run.stderr.decode()[-2000:]
    assert shot.stat().st_size > 0
    with Image.open(shot) as im:
        rgb = im.convert("RGB")
        assert rgb.size == (1280, 4000)
        assert any(lo < hi for lo, hi in rgb.getextrema()), "the page rendered as one flat colour"
        # the verdict table is at the top and its colours render: grey "not run" rows and,
        # from the committed tables (fletcher-table5 reproduces 3 of 4 values), green
        top = {c for _, c in rgb.crop((0, 0, 1280, 2500)).getcolors(maxcolors=1 << 22)}
        assert GREY in top and (GREEN in top or not paper), "verdict colours missing on the first screen"

    dom = _browser(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr.decode()[-2000:]
    page = _Page()
    page.feed(dom.stdout.decode())
    # the page opens with the verdict table, whose every link reaches its section
    assert page.first_table_class == "verdicts"
    assert page.verdict_links and all(h.startswith("#") and h[1:] in page.ids for h in page.verdict_links)
    assert {"v-good", "v-none"} <= set(page.verdict_classes) if paper else ("v-none" in page.verdict_classes)
    # every figure is embedded, and only figures of the rendered experiments
    figures = sorted(f.rglob("*.png"))
    assert figures, "nothing rendered"
    assert len(page.images) == len(figures)
    for src in page.images:
        assert src.startswith("data:image/png;base64,"), src[:80]
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_MAGIC)
    # spec text shows literally (dpboost-fig2's notes, as a not-run section) and maths renders
    text = "".join(page.text)
    assert "g*_l = 1" in text and "ε" in text
    assert text.index("Verdicts") < text.index("Appendix: environment")
