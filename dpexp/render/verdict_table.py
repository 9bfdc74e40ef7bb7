"""The verdict table of ``dpexp report``: one row per artefact, grouped by paper, a totals
row per paper and one over every paper, in Markdown (REPORT.md) and as coloured HTML with
each artefact linked to its section (issue 42)."""

from __future__ import annotations

from dpexp.experiments.completion import COMPLETION_HEADER
from dpexp.render.html import BAD, GOOD, NONE, TOTAL, WARN, Block, Cell, verdict_table
from dpexp.render.markup import SMOKE_LABEL, md_escape
from dpexp.render.verdict_rows import VerdictRow, paper_title, total_row

_HEADER = [("artefact", ["artefact"]), ("scale", ["scale"]), ("cells", [COMPLETION_HEADER]),
           ("printed values (each number counted once)",
            ["printed", "reprints / calibration", "model performance reproduced",
             "reproduced", "shown", "refuted", "plausible", "unexplained", "not judged (why)"]),
           ("claims", ["pass", "fail (shown / plausible / unexplained)", "not evaluated"]),
           ("unavailable here", ["unavailable here"]), ("not-DP caveats", ["not-DP caveats"])]

#: How many value and claim cells follow the "printed" one (grey when not run).
_VALUE_CELLS, _CLAIM_CELLS = 8, 3

#: The value columns' text at smoke scale (nothing is compared there).
SMOKE_VALUES = "not compared"


def _count(n: int, cls: str) -> Cell:
    return Cell(str(n), cls if n else None, numeric=True)


def verdict_cells(row: VerdictRow) -> list[Cell]:
    """The verdict table's cells of ``row``, with their colour (see dpexp.render.html)."""
    name = Cell(f"{row.name} ({row.artefact})", link=row.artefact)
    missing = [*row.datasets_unavailable, *row.algorithms_unavailable]
    unavailable = Cell(", ".join(missing) or "—", NONE if missing else None)
    cells = f"{row.cells_done} / {row.cells_total} / {row.cells_grid}"
    if row.scale is None:
        grey = [Cell("—", NONE)] * (_VALUE_CELLS + _CLAIM_CELLS)
        state = Cell("spec error", BAD) if row.problem else Cell("not run", NONE)
        return [name, state, Cell(cells, NONE, numeric=True),
                Cell(str(row.values_total), NONE, numeric=True), *grey, unavailable,
                Cell("—", NONE)]
    smoke = row.scale == "smoke"
    return [name, Cell(SMOKE_LABEL if smoke else f"{row.scale}", NONE if smoke else None),
            Cell(cells, numeric=True), Cell(str(row.values_total), numeric=True),
            *_value_cells(row), *_claim_cells(row), unavailable,
            Cell(str(row.not_dp_caveats) if row.not_dp_caveats else "—", WARN if row.not_dp_caveats else None)]


def _performance_cell(row: VerdictRow) -> Cell:
    """"R of N": model-performance values reproduced of those counted (once, calibration apart)."""
    perf = row.performance
    if not perf.get("printed"):
        return Cell("—")
    good = perf.get("reproduced", 0)
    return Cell(f"{good} of {perf['printed']}", GOOD if good == perf["printed"] else BAD if not good else WARN,
                numeric=True)


def _value_cells(row: VerdictRow) -> list[Cell]:
    """Reprints / calibration, model performance, then the statuses of the counted values:
    "—" when the paper prints none, grey at smoke."""
    if not row.values_total:
        return [Cell("—")] * _VALUE_CELLS
    if row.scale == "smoke":
        return [Cell(SMOKE_VALUES, NONE)] * _VALUE_CELLS
    plausible = str(row.values_plausible) + (f" ({row.values_landed_post_hoc} land post hoc)"
                                             if row.values_landed_post_hoc else "")
    return [Cell(f"{row.values_reprinted} / {row.values_calibration}", NONE, numeric=True),
            _performance_cell(row), _count(row.values_reproduced, GOOD),
            _count(row.values_shown, WARN), _count(row.values_refuted, WARN),
            Cell(plausible, BAD if row.values_plausible else None, numeric=True),
            _count(row.values_unexplained, BAD),
            _not_judged_cell(row)]


def _not_judged_cell(row: VerdictRow) -> Cell:
    """How many counted values have no verdict, and why (the reasons in a tooltip-free
    parenthesis, so Markdown shows them too)."""
    if not row.values_not_judged:
        return _count(0, NONE)
    why = f" ({row.not_judged_why})" if row.not_judged_why else ""
    return Cell(f"{row.values_not_judged}{why}", NONE, numeric=not why)


def _claim_cells(row: VerdictRow) -> list[Cell]:
    """Pass / fail (split by how the failure is explained) / not evaluated; "—" for none."""
    if not row.claims_pass + row.claims_fail + row.claims_not_evaluated:
        return [Cell("—")] * _CLAIM_CELLS
    fail = str(row.claims_fail) + (f" ({row.claims_fail_shown} / {row.claims_fail_plausible} / "
                                   f"{row.claims_fail_unexplained})" if row.claims_fail else "")
    fail_cls = None if not row.claims_fail else WARN if row.claims_fail == row.claims_fail_shown else BAD
    return [_count(row.claims_pass, GOOD), Cell(fail, fail_cls, numeric=True),
            _count(row.claims_not_evaluated, NONE)]


def _grouped(rows: list[VerdictRow]) -> list[tuple[str, list[VerdictRow]]]:
    groups: dict[str, list[VerdictRow]] = {}
    for r in rows:
        groups.setdefault(r.paper, []).append(r)
    return [(f"{paper_title(p)} ({p})", rs) for p, rs in groups.items()]


def _md_cell(c: Cell) -> str:
    text = md_escape(c.text)
    return f"[{text}](#{c.link})" if c.link else text

def total_cells(rows: list[VerdictRow], name: str) -> list[Cell]:
    """A totals row of the verdict table: ``name``, the number of artefacts, the sums."""
    cells = verdict_cells(total_row(rows, name))
    run = sum(r.scale is not None for r in rows)
    return [Cell(name), Cell(f"{run} of {len(rows)} run", numeric=True), *cells[2:]]


def verdict_block(rows: list[VerdictRow]) -> Block:
    """The verdict table: Markdown (a bold row per paper) and coloured HTML, same rows; a
    totals row closes each paper, and one over every paper closes the table."""
    cols = [c for _, cs in _HEADER for c in cs]
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    groups = []
    for title, rs in _grouped(rows):
        md.append(f"| **{md_escape(title)}** |" + " |" * (len(cols) - 1))
        cells = [verdict_cells(r) for r in rs] + [total_cells(rs, f"{TOTAL}, {rs[0].paper}")]
        md += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in cells[:-1]]
        md.append("| " + " | ".join(f"**{_md_cell(c)}**" for c in cells[-1]) + " |")
        groups.append((title, cells))
    if rows:
        overall = total_cells(rows, f"{TOTAL}, all papers")
        md.append("| " + " | ".join(f"**{_md_cell(c)}**" for c in overall) + " |")
        groups.append(("All papers", [overall]))
    return Block("\n".join(md), html=verdict_table(_HEADER, groups))

