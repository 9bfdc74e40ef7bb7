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
from dpexp.experiments.catalog import all_specs
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
            # the first table of a class (the headline's counts by kind are a plain table)
            if self.first_table_class is None and a.get("class"):
                self.first_table_class = a["class"]
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
    run = _browser(tmp_path, f"--screenshot={shot}", "--window-size=1280,8000", url)
    assert run.returncode == 0 and shot.exists(), run.stderr.decode()[-2000:]
    assert shot.stat().st_size > 0
    with Image.open(shot) as im:
        rgb = im.convert("RGB")
        assert rgb.size == (1280, 8000)
        assert any(lo < hi for lo, hi in rgb.getextrema()), "the page rendered as one flat colour"
        # the verdict table is at the top and its colours render: grey "not run" rows and,
        # from the committed tables (fletcher-table5 reproduces 3 of 4 values), green; every
        # spec has a row (and each paper a total), so the table runs to ~6,000 px at 1280
        top = {c for _, c in rgb.crop((0, 0, 1280, 8000)).getcolors(maxcolors=1 << 22)}
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


#: Committed experiments whose sections the page-layout test shows: one with thousands of
#: not-DP cells (Figure 11's data-derived domains), one without.
LAYOUT = ("fletcher-fig11", "xgbdp-fig2")
#: Where the layout test's screenshots are kept (under pytest's tmp dir: the test's artefacts).
SHOT_WIDTH = 1400


def _offsets(tmp_path: Path, html_path: Path, ids: tuple[str, ...]) -> dict[str, int]:
    """The page's height ("") and the top of each element of ``ids``, in CSS pixels at the
    screenshot width (a copy of the page with a script writing them into the DOM, read
    back with --dump-dom)."""
    import re

    js = ("const b=document.body;b.dataset.h=document.documentElement.scrollHeight;"
          "b.dataset.caveat=Math.max(0,...[...document.querySelectorAll('details.caveats')]"
          ".map(d=>d.getBoundingClientRect().height));"
          "b.dataset.overflow=Math.round(document.querySelector('table.verdicts')"
          ".getBoundingClientRect().right-b.getBoundingClientRect().right);"
          + "".join(f"b.dataset['at{i}']=document.getElementById('{e}').getBoundingClientRect().top;"
                    for i, e in enumerate(ids)))
    probe = tmp_path / "offsets.html"
    probe.write_text(html_path.read_text().replace("</body>", f"<script>{js}</script></body>"))
    dom = _browser(tmp_path, f"--window-size={SHOT_WIDTH},900", "--dump-dom", probe.as_uri()).stdout.decode()
    out = {"": int(re.search(r'data-h="(\d+)"', dom)[1]),
           "caveat": int(float(re.search(r'data-caveat="([\d.]+)"', dom)[1])),
           "overflow": int(re.search(r'data-overflow="(-?\d+)"', dom)[1])}
    out |= {e: int(float(re.search(f'data-at{i}="([\\d.]+)"', dom)[1])) for i, e in enumerate(ids)}
    return out


class _Layout(HTMLParser):
    """The verdict table's totals rows and every caveat block (open or not, its summary)."""

    def __init__(self) -> None:
        super().__init__()
        self.totals: list[str] = []
        self.details: list[dict] = []
        self._where: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and a.get("class") == "total":
            self.totals.append("")
            self._where = "total"
        elif tag == "details":
            self.details.append({"open": "open" in a, "summary": "", "class": a.get("class")})
        elif tag == "summary":
            self._where = "summary"

    def handle_endtag(self, tag):
        if tag in ("tr", "summary"):
            self._where = None

    def handle_data(self, data):
        if self._where == "total":
            self.totals[-1] += data
        elif self._where == "summary":
            self.details[-1]["summary"] += data


def test_report_reads_top_down_at_1400px(tmp_path):
    """Verdicts with totals first, then each artefact with its caveats collapsed under a
    one-line summary; screenshots of the top and two sections are kept as artefacts."""
    import re

    from PIL import Image

    _chromium()
    root = project_root() / "results"
    if not all((root / e / "results-paper.csv.gz").exists() for e in LAYOUT):
        pytest.skip("the committed paper-scale tables of " + ", ".join(LAYOUT) + " are not in this checkout")
    r, f = tmp_path / "results", tmp_path / "figures"
    for exp in LAYOUT:
        (r / exp).mkdir(parents=True)
        shutil.copy(root / exp / "results-paper.csv.gz", r / exp)
    _, html_path = write_report(r, f)
    # Screenshots (the test's artefacts) of the top and of each section, brought to the
    # top of a copy of the page (headless Chromium paints a scrolled-to fragment blank).
    at = _offsets(tmp_path, html_path, LAYOUT)
    assert 0 < at["caveat"] < 80  # collapsed: the one-line summary, not thousands of lines
    assert at["overflow"] <= 0  # the verdict table stays inside the page (it scrolls)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    for name in ("top", *LAYOUT):
        page = shots / f"{name}.html"
        cut = ("" if name == "top" else f"<script>const e=document.getElementById('{name}');"
               "while(e.previousElementSibling)e.previousElementSibling.remove();</script>")
        page.write_text(html_path.read_text().replace("</body>", f"{cut}</body>"))
        out = shots / f"{name}.png"
        run = _browser(tmp_path, f"--screenshot={out}", f"--window-size={SHOT_WIDTH},1100", page.as_uri())
        assert run.returncode == 0 and out.exists(), run.stderr.decode()[-2000:]
        with Image.open(out) as im:
            assert im.size == (SHOT_WIDTH, 1100)
            assert any(lo < hi for lo, hi in im.convert("RGB").getextrema()), f"{name} is blank"

    dom = _browser(tmp_path, f"--window-size={SHOT_WIDTH},900", "--dump-dom", html_path.resolve().as_uri())
    layout = _Layout()
    layout.feed(dom.stdout.decode())
    # a totals row per paper, then one over all papers, closing the verdict table
    papers = {s.paper for s in all_specs().values()}
    assert len(layout.totals) == len(papers) + 1 and layout.totals[-1].startswith("Total, all papers")
    assert any(t.startswith("Total, fletcher-islam-2017") for t in layout.totals)
    assert re.search(rf"\d+ of {len(all_specs())} run", layout.totals[-1]), layout.totals[-1]
    # caveats: collapsed, one block per artefact that has any, with a one-line summary
    caveats = [d for d in layout.details if d["class"] == "caveats"]
    assert caveats and not any(d["open"] for d in caveats)
    fig11 = next(d["summary"] for d in caveats if "not DP" in d["summary"])
    assert re.fullmatch(r"[\d,]+ cells not DP: [^;]+(; .+)? — details", fig11), fig11
    html = html_path.read_text()
    assert "Not-DP results in this report" not in html  # no global wall of caveats
    assert html.index('class="verdicts"') < html.index('id="fletcher-fig11"')
