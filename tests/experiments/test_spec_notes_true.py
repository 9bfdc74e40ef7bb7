"""Spec text stays true (issue 42): a note that says an experiment was not run at paper
scale, or has no verdict, fails once its paper-scale cells are committed."""

from __future__ import annotations

import re

import pytest

from dpexp.experiments.catalog import all_specs
from dpexp.experiments.committed import table_path
from dpexp.paths import project_root

#: What a note says when it claims the paper-scale run does not exist.
NOT_RUN = re.compile(r"not (yet )?run at paper scale|no verdict from us|not been run at paper", re.I)


def _texts(spec) -> list[str]:
    """The spec's prose: caption, notes and every claim's text and notes."""
    out = [spec.caption or "", spec.notes or ""]
    for claim in spec.claims or []:
        out += [str(v) for v in (claim.values() if isinstance(claim, dict) else [claim])]
    return out


def test_the_pattern_catches_the_stale_wording():
    assert NOT_RUN.search("Verdict (issue 20): not yet run at paper scale (5,000 trees x 5 folds")
    assert NOT_RUN.search("so the claim below has no verdict from us")
    assert not NOT_RUN.search("run at paper scale (every cell of the grid, committed in results/)")


@pytest.mark.parametrize("spec", sorted(all_specs().values(), key=lambda s: s.id), ids=lambda s: s.id)
def test_notes_do_not_deny_committed_results(spec):
    if not table_path(project_root() / "results", spec.cells_id, "paper").exists():
        pytest.skip(f"{spec.id} has no committed paper-scale results")
    stale = [m.group(0) for text in _texts(spec) for m in [NOT_RUN.search(text)] if m]
    assert not stale, f"{spec.path.name} says {stale} but results/{spec.cells_id} has paper-scale cells"
