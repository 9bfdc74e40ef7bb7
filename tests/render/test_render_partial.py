"""Rendering whatever subset of cells is cached (issue 17 items 2 and 4, issue 16 item 5).

The caches here are written directly (real ``Cell`` objects, rows in the results schema,
synthetic values), so these tests exercise the renderer and ``cached_results`` without
fitting anything.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from render.cached_cells import NOT_DP, cache_cells, result_rows
from typer.testing import CliRunner

from dpexp.cli import app
from dpexp.experiments import cache
from dpexp.experiments.catalog import resolve
from dpexp.experiments.cells import expand
from dpexp.experiments.results import ResultFilter
from dpexp.render import figures
from dpexp.render.markup import SMOKE_LABEL
from dpexp.render.render import NothingCachedError, filter_tag, render_experiment


@pytest.fixture
def captured(monkeypatch):
    """The titles of every figure rendered (panel titles and the figure's title), its
    legend and caption."""
    seen: list[dict] = []
    save = figures._save

    def spy(fig, out_base, *args):
        legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
        seen.append({"panels": [ax.get_title() for ax in fig.axes if ax.get_title()],
                     "title": fig._suptitle.get_text() if fig._suptitle else "",
                     "legend": legend, "name": out_base.name, "caption": args[0] if args else ""})
        return save(fig, out_base, *args)

    monkeypatch.setattr(figures, "_save", spy)
    return seen


def test_extra_dataset_and_epsilons_render_in_paper_order(tmp_path, captured):
    r, f = tmp_path / "results", tmp_path / "figures"
    # cod-rna and epsilon 4 are outside fig2's smoke grid (adult, abalone; epsilons 1, 10)
    cache_cells(r, datasets=["cod-rna", "abalone", "adult"], epsilons=[4, 1])
    rep = render_experiment(resolve("fig2").at_scale("smoke"), "smoke", r, f)
    # the paper lists adult, ..., cod-rna, ..., abalone: not the command line's order
    assert rep.context.order == ["adult", "cod-rna", "abalone"]
    assert captured[-1]["panels"] == ["(a) adult", "(b) cod-rna", "(c) abalone"]
    assert SMOKE_LABEL in captured[-1]["title"]
    md = next(p for p in rep.files if p.suffix == ".md").read_text()
    rows = [line.split("|")[1].strip() for line in md.splitlines() if line.startswith("| ") and "·" in line]
    assert [x.split(" · ")[0] for x in rows[1:]] == ["adult"] * 3 + ["cod-rna"] * 3 + ["abalone"] * 3
    assert "adult · 4" in md and SMOKE_LABEL in md.splitlines()[0]


def test_empty_cache_is_a_message_not_a_traceback(tmp_path):
    with pytest.raises(NothingCachedError, match=r"Nothing cached for dpboost-fig2 at smoke scale; run `dpexp run"):
        render_experiment(resolve("fig2").at_scale("smoke"), "smoke", tmp_path, tmp_path)
    res = CliRunner().invoke(app, ["render", "fig2", "--results-dir", str(tmp_path / "r"),
                                   "--figures-dir", str(tmp_path / "f")])
    assert res.exit_code != 0
    assert "Nothing cached for dpboost-fig2" in res.output and "Traceback" not in res.output
    assert not isinstance(res.exception, KeyError)


def test_later_override_run_keeps_earlier_cells_and_filtered_renders_are_tagged(tmp_path):
    r, f = tmp_path / "results", tmp_path / "figures"
    spec = resolve("fig2").at_scale("smoke")
    first = cache_cells(r, datasets=["cod-rna"], epsilons=[1])
    render_experiment(spec, "smoke", r, f)
    second = cache_cells(r, datasets=["cod-rna"], epsilons=[4], seed=1)
    rep = render_experiment(spec, "smoke", r, f)
    md = (r / "dpboost-fig2" / "dpboost-fig2-smoke.md").read_text()
    assert "cod-rna · 1" in md and "cod-rna · 4" in md  # the first run's cells are kept
    assert rep.done_cells == first + second
    assert "seeds 0, 1" in md  # the replicates pooled are named
    only4 = ResultFilter(datasets=("cod-rna",), epsilons=(4.0,))
    tagged = render_experiment(spec, "smoke", r, f, filters=only4)
    assert filter_tag(only4) == "dataset=cod-rna_eps=4"
    names = {p.name for p in tagged.files}
    assert "dpboost-fig2-smoke--dataset=cod-rna_eps=4.md" in names
    assert "dpboost-fig2-smoke--dataset=cod-rna_eps=4.png" in names
    # the unfiltered files still hold the union
    assert "cod-rna · 1" in (r / "dpboost-fig2" / "dpboost-fig2-smoke.md").read_text()
    tagged_md = (r / "dpboost-fig2" / "dpboost-fig2-smoke--dataset=cod-rna_eps=4.md").read_text()
    assert "cod-rna · 4" in tagged_md and "cod-rna · 1" not in tagged_md
    assert filter_tag(ResultFilter(algorithms=("Ours (2017 smooth sensitivity)",), epsilons=(0.5,))) \
        == "algorithms=Ours-2017-smooth-sensitivity_eps=0.5"


def test_not_dp_rows_and_domain_source_are_stated(tmp_path, captured):
    r, f = tmp_path / "results", tmp_path / "figures"
    cache_cells(r, datasets=["adult", "abalone"], epsilons=[1])
    rep = render_experiment(resolve("fig2").at_scale("smoke"), "smoke", r, f)
    md = next(p for p in rep.files if p.suffix == ".md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| dataset"))
    assert "| PARA (not DP) |" in header and "| DPBoost |" in header
    assert "PARA (not DP)" in captured[-1]["legend"]
    assert "NP (not DP)" not in md  # a non-private baseline claims no budget: not flagged
    assert f"> - PARA on adult (ε = 1): {NOT_DP}" in md
    # DP-accounted rows on a data-derived domain are in the box too (their split
    # candidates depend on the private data)
    assert "> - every budgeted row on abalone: not DP: domain from data (observed)" in md
    assert "every budgeted row on adult" not in md
    assert "public feature domain for adult; not DP: domain from data (observed) for abalone" in md
    # the caveat is the figure's caption, never its title (issue 42)
    assert "not DP: domain from data" in captured[-1]["caption"]
    assert "domain" not in captured[-1]["title"]


# ------------------------------------------------------------------ parameters are columns


def _cache_grid(results_dir, spec_id: str) -> None:
    """Every smoke cell of ``spec_id``, with a synthetic value for each metric it may show
    (the task's metrics, the plotted and the tabulated one)."""
    from dpexp.datasets.registry import get_dataset_info

    spec = resolve(spec_id).at_scale("smoke")
    rng = np.random.default_rng(0)
    for c in expand(spec, "smoke", 0):
        task = get_dataset_info(c.dataset.name).task
        wanted = [*spec.metrics_for(task), (spec.table or {}).get("metric"), spec.plot.get("y")]
        wanted = [m.get(task) if isinstance(m, dict) else m for m in wanted]
        rows = []
        for m in dict.fromkeys(w for w in wanted if isinstance(w, str)):
            rows += result_rows(c, metric=m, kind="metric", value=float(rng.uniform(0.1, 0.9)),
                          private=not math.isinf(c.epsilon), domain="declared")
        cache.write_cell(results_dir, c, {"cell": c.to_dict(), "rows": rows})


class _NoJson:
    """Stands in for ``json`` in dpexp.render's modules: the renderer must not parse params."""

    def __getattr__(self, name):
        raise AssertionError(f"dpexp.render called json.{name}: parameters are p_ columns")


@pytest.mark.parametrize("spec_id, needle", [
    ("xgbdp-fig3", "XGBoost-DP (max\\_depth=3)"),  # series named from a grid parameter
    ("fletcher-table2", "| 500 |"),                # table rows over param:j (paper values)
    ("fletcher-fig7", "synthA · 300"),             # figure x axis over param:n_trees
    ("inprivate-fig5", "Abalone · 4 (mae)"),       # claims over param:n_participants
])
def test_render_reads_parameters_from_p_columns_never_from_params(tmp_path, monkeypatch, spec_id, needle):
    import importlib
    import pkgutil

    import dpexp.render
    from dpexp.experiments.results import cached_results
    from dpexp.render.claims import check_claims
    from dpexp.render.render import render_frame

    r = tmp_path / "results"
    _cache_grid(r, spec_id)
    spec = resolve(spec_id).at_scale("smoke")
    plain = render_experiment(spec, "smoke", r, tmp_path / "figures")
    expected = {p.suffix: p.read_text() for p in plain.files if p.suffix in (".md", ".csv", ".tex")}
    assert needle in expected[".md"]
    # params stays the cell's identity, but as an opaque token nothing can parse (sorting
    # as the JSON does: entries are grouped, so ordered, by params)
    frame = cached_results(spec, "smoke", r).frame
    assert any(c.startswith("p_") for c in frame.columns)
    tokens = {p: f"cell-params-{i:04d}" for i, p in enumerate(sorted(frame["params"].unique()))}
    opaque = frame.assign(params=frame["params"].map(tokens))
    for info in pkgutil.iter_modules(dpexp.render.__path__):
        monkeypatch.setattr(importlib.import_module(f"dpexp.render.{info.name}"), "json", _NoJson(),
                            raising=False)
    other = tmp_path / "other"
    again = render_frame(spec, "smoke", opaque, other, tmp_path / "figures2",
                         missing=plain.missing_cells, done=plain.done_cells)
    assert {p.suffix: p.read_text() for p in again.files if p.suffix in expected} == expected
    assert again.done_cells == plain.done_cells
    claims = [(c.status, c.detail) for c in check_claims(spec.claims, plain.agg, plain.context.tasks, "paper")]
    assert [(c.status, c.detail) for c in check_claims(spec.claims, again.agg, again.context.tasks, "paper")] == claims
    if spec_id == "inprivate-fig5":  # the trend was computed along the parameter
        assert any("rank corr." in detail for _, detail in claims)
