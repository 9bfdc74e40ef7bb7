"""Rewrite the ``private`` / ``not_dp_reason`` columns of a committed results table.

Tables committed before issue #38 said ``private=True`` for fits whose public input came
from the data (an observed feature/label domain, an ``n_records`` read from ``len(X)``).
:func:`reflag_table` applies the runner's rule (:mod:`dpexp.experiments.flags`) to each
row of a registered private algorithm and rewrites those two fields only: every other
field, and every row it does not change, keeps its exact text, and the gzip is written as
:func:`dpexp.experiments.committed.write_table` writes it, so the table stays
deterministic and a second pass changes nothing. ``bench/reflag_committed.py`` runs it
over ``results/*/results-paper.csv.gz``.

``n_records``: the runner passed ``len(training fold)``; where that equals the registry's
declared row count and the CV arithmetic (:func:`dpexp.experiments.design.declared_training_rows`,
which the loader enforces), the release is the one the current runner computes, so the
row keeps the current runner's flag; otherwise it says :data:`~dpexp.experiments.design.N_FROM_DATA`.

A row whose ``domain_source`` says ``paid (...)`` (a cell with ``dp_domain_share``: the
observed domains released under DP with part of its budget) is public input here as in the
runner: the same :func:`~dpexp.experiments.flags.public_input_reasons` decides both.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from dpexp.errors import DpexpError
from dpexp.experiments.catalog import builtin_experiments_dir
from dpexp.experiments.committed import write_table_text
from dpexp.experiments.design import N_FROM_DATA, declared_training_rows, declares_size
from dpexp.experiments.flags import join_reasons, public_input_reasons, split_reasons
from dpexp.experiments.spec import CVScheme, DatasetRef
from dpexp.registry import all_algorithms

__all__ = ["Reflagged", "reflag_table", "reflag_text"]

_FIELDS = ("experiment", "dataset", "algorithm", "params", "fold", "private", "not_dp_reason",
           "domain_source", "n_train")


@dataclass(frozen=True)
class Reflagged:
    """What :func:`reflag_table` changed in one table."""

    path: Path
    rows: int
    #: Rows whose ``private`` or ``not_dp_reason`` changed.
    changed: int
    #: Rows that said ``private=True`` and now say False.
    now_not_private: int
    #: (reason added, rows) of the rows that were ``private=True``, most frequent first.
    reasons: tuple[tuple[str, int], ...] = ()


@functools.lru_cache(maxsize=256)
def _is_private_algorithm(algorithm: str) -> bool:
    info = all_algorithms().get(algorithm)
    return bool(info is not None and info.private)


@functools.lru_cache(maxsize=256)
def _cv(experiment: str) -> CVScheme:
    """The experiment's CV scheme: its ``cv`` mapping, read from the spec file alone (a
    spec that fails a later validation rule still says how its folds were cut)."""
    for path in sorted(builtin_experiments_dir().glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        if isinstance(raw, dict) and raw.get("id") == experiment:
            return CVScheme(**(raw.get("cv") or {}))
    raise DpexpError(f"no experiment spec with id {experiment!r}: cannot recompute its folds")


@functools.lru_cache(maxsize=1024)
def _ref(key: str) -> DatasetRef:
    """The DatasetRef of a dataset key (``name`` or ``name[k=v,...]``, :attr:`DatasetRef.key`)."""
    if "[" not in key:
        return DatasetRef(key)
    name, inner = key[:-1].split("[", 1)
    params = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in inner.split(","))}
    return DatasetRef(name, params)


def _n_reason(row: dict[str, str]) -> str:
    """:data:`N_FROM_DATA` when the row's ``n_records`` was not the declared size."""
    params = json.loads(row["params"])
    if not declares_size(row["algorithm"], params):
        return ""
    declared = declared_training_rows(_ref(row["dataset"]), _cv(row["experiment"]), None,
                                      int(row["fold"]))
    used = row["n_train"]
    same = declared is not None and used != "" and int(float(used)) == declared
    return "" if same else N_FROM_DATA


def row_flags(row: dict[str, str]) -> tuple[str, str, list[str]]:
    """(private, not_dp_reason, reasons added) of one row, as CSV text."""
    if not _is_private_algorithm(row["algorithm"]):
        return row["private"], row["not_dp_reason"], []  # baselines, procedures, peers
    old = split_reasons(row["not_dp_reason"])
    added = [r for r in public_input_reasons(row["domain_source"], _n_reason(row)) if r not in old]
    reason = join_reasons([*old, *added])
    return ("False" if reason else row["private"]), reason, added


def _line(fields: list[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(fields)  # pandas' to_csv quoting (minimal)
    return buf.getvalue()


def reflag_text(text: str) -> tuple[str, int, int, Counter]:
    """(new text, rows changed, rows private=True -> False, reasons added to those) of a
    table's CSV text; rows not changed keep their exact text."""
    lines = text.split("\n")
    header = next(csv.reader([lines[0]]))
    at = {name: header.index(name) for name in _FIELDS}
    changed = flipped = 0
    reasons: Counter = Counter()
    for i in range(1, len(lines)):
        if not lines[i]:
            continue
        fields = next(csv.reader([lines[i]]))
        if len(fields) != len(header) or _line(fields) != lines[i]:
            raise ValueError(f"line {i + 1}: not a one-line row this rewrite reproduces exactly")
        row = {name: fields[j] for name, j in at.items()}
        private, reason, added = row_flags(row)
        if (private, reason) == (row["private"], row["not_dp_reason"]):
            continue
        changed += 1
        if row["private"] == "True" and private == "False":
            flipped += 1
            reasons.update(r.split(" (", 1)[0] for r in added)
        fields[at["private"]], fields[at["not_dp_reason"]] = private, reason
        lines[i] = _line(fields)
    return "\n".join(lines), changed, flipped, reasons


def reflag_table(path: Path, *, write: bool = True) -> Reflagged:
    """Re-flag one committed table (``.csv`` or ``.csv.gz``); written only if it changed."""
    path = Path(path)
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode()
    new, changed, flipped, reasons = reflag_text(text)
    if write and new != text:
        write_table_text(path, new)
    rows = max(text.count("\n") - 1, 0)
    return Reflagged(path, rows, changed, flipped, tuple(reasons.most_common()))
