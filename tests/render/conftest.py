"""Fixtures shared by the render tests."""

from __future__ import annotations

import pytest

from dpexp.render import figures


@pytest.fixture
def drawn(monkeypatch):
    """The figures built (the experiment id of each call of ``build_figure``)."""
    calls: list[str] = []
    build = figures.build_figure

    def spy(spec, agg, ctx):
        calls.append(spec.id)
        return build(spec, agg, ctx)

    monkeypatch.setattr(figures, "build_figure", spy)
    return calls
