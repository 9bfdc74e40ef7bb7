"""The report says how to get a series' missing optional package the way the registry
does (``registry.install_hint``): diffprivlib through its side environment (``dpexp peers
setup diffprivlib``), never the stale ``pip install "dpexp[peers]"``."""

from __future__ import annotations

from dpexp.experiments.catalog import resolve
from dpexp.experiments.completion import Completion
from dpexp.render.section import Section, _counted
from dpexp.render.section_markdown import _unavailable_md
from dpexp.side_envs import get_side_env


def test_a_missing_diffprivlib_points_at_its_side_environment(monkeypatch):
    monkeypatch.delenv(get_side_env("diffprivlib").python_variable, raising=False)
    sec = _counted(Section(resolve("fletcher-fig11"), "paper"), Completion(0, 0, 0),
                   {"diffprivlib RF (IBM)": "diffprivlib", "diffprivlib RF (peer)": "diffprivlib"})
    assert sec.packages_unavailable == ["diffprivlib"]
    text = "\n".join(_unavailable_md(sec))
    assert text.startswith("**Series not run on this machine:** diffprivlib RF (IBM) (needs diffprivlib)")
    assert "for diffprivlib, run `dpexp peers setup diffprivlib`" in text
    assert text.count("peers setup") == 1  # one hint per package
    assert "dpexp[peers]" not in text
