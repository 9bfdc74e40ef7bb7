"""Field checks of an experiment spec: each raises a :class:`~dpexp.errors.SpecError`
naming the file and the key (docs/SPEC_FORMAT.md). The spec owns its keys: the claim
keys, the printed values' kinds and selectors are defined here, once."""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import Any

from dpexp.errors import SpecError, check_epsilon

#: Keys of a claim mapping (judged by :mod:`dpexp.render.claims`).
CLAIM_KEYS = {"text", "better", "than", "metric", "direction", "epsilon", "mode", "datasets",
              "series", "trend", "over", "explained", "margin", "close", "to", "within", "share",
              "spread", "max_std", "note", "after", "at_step", "by", "shown", "post_hoc"}


def spec_error(path: Path, msg: str) -> SpecError:
    return SpecError(f"{path.name}: {msg}")


def check_keys(path: Path, where: str, got: dict, allowed: set[str]) -> None:
    unknown = sorted(set(got) - allowed)
    if unknown:
        hints = []
        for u in unknown:
            close = difflib.get_close_matches(u, allowed, n=1)
            hints.append(f"{u!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise spec_error(path, f"unknown key(s) in {where}: {', '.join(hints)}.")


#: Keys of the ``paper_values`` mapping and of one of its ``values`` entries (besides
#: ``param:NAME``): selectors pick our row, the rest describe the paper's value and how it
#: is judged (docs/SPEC_FORMAT.md, "Verdicts on printed values").
_PAPER_VALUES_KEYS = {"source", "kind", "tolerance", "tolerance_reason", "values"}
_PAPER_ENTRY_KEYS = {"dataset", "algorithm", "epsilon", "metric", "step", "value", "std", "note",
                     "explained", "kind", "tolerance", "tolerance_reason", "calibration", "same_as",
                     "shown", "post_hoc", "not_judged", "refuted"}
#: Selectors of a paper value (besides ``param:NAME``), also those of ``same_as`` and of a
#: ``shown`` explanation's ``cells``.
_SELECTOR_KEYS = {"dataset", "algorithm", "epsilon", "metric", "step"}

#: What a printed value is, and so which rule judges it (dpexp.render.paper_values.judge_value):
#: facts about the data and deterministic computations are equal at the printed precision
#: or not; a stochastic outcome of a run (a model's performance, or a diagnostic such as a
#: filtered-row count) is judged by an equivalence test within a stated tolerance; a
#: timing is hardware-bound and shown, never judged.
VALUE_KINDS = ("descriptor", "formula", "diagnostic", "performance", "timing")
#: The kinds judged by the equivalence test (they need a tolerance with its reason).
EQUIVALENCE_KINDS = ("diagnostic", "performance")


def _number(path: Path, where: str, v: Any, *, minimum: float | None = None) -> None:
    """``v`` must be a finite number (>= ``minimum`` if given), else a SpecError naming ``where``."""
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    if not ok or (minimum is not None and v < minimum):
        bound = f" >= {minimum:g}" if minimum is not None else ""
        raise spec_error(path, f"key {where!r} must be a finite number{bound}, got {v!r}.")


def _explained_text(path: Path, where: str, v: Any) -> None:
    """``explained:`` is the evidence for a miss (name the ablation/experiment and its
    numbers): non-empty text, so a bare ``explained: true`` cannot excuse a miss."""
    if not isinstance(v, str) or not v.strip():
        raise spec_error(path, f"key {where!r} must be non-empty text naming the evidence (the "
                         f"ablation or experiment and its numbers), got {v!r}.")


def _text(path: Path, where: str, v: Any, what: str) -> None:
    """``v`` must be non-empty text (``what`` says what it should say)."""
    if not isinstance(v, str) or not v.strip():
        raise spec_error(path, f"key {where!r} must be non-empty text ({what}), got {v!r}.")


def _selector(path: Path, where: str, v: Any, extra: frozenset[str] = frozenset()) -> None:
    """A mapping of selectors (dataset, algorithm, epsilon, metric, step, param:NAME)."""
    if not isinstance(v, dict) or not v:
        raise spec_error(path, f"key {where!r} must be a mapping of selectors "
                         f"({', '.join(sorted(_SELECTOR_KEYS))}, param:NAME).")
    check_keys(path, where, {k: x for k, x in v.items() if not str(k).startswith("param:")},
                _SELECTOR_KEYS | extra)


def _check_shown(path: Path, where: str, v: Any, *, cells: bool = True) -> None:
    """``shown:`` names the committed experiment (and, for a value, the cells) that land on
    the paper's value: ``{experiment: ID, cells: {selectors}}``."""
    keys = {"experiment", "cells"} if cells else {"experiment"}
    if not isinstance(v, dict):
        raise spec_error(path, f"key {where!r} must be a mapping with {', '.join(sorted(keys))}.")
    check_keys(path, where, v, keys)
    for key in sorted(keys):
        if key not in v:
            raise spec_error(path, f"key {where!r} needs {key!r} (a shown explanation names the "
                             "committed experiment and the cells that land).")
    _text(path, f"{where}.experiment", v["experiment"], "an experiment id")
    if cells:
        _selector(path, f"{where}.cells", v["cells"])


def entry_kind(pv: dict, entry: dict) -> str:
    """The kind of a paper value: its own ``kind``, else the ``paper_values`` default."""
    return str(entry.get("kind") or pv.get("kind") or "")


def _check_entry_rule(path: Path, where: str, pv: dict, v: dict) -> None:
    """The kind, the tolerance and its reason of one entry (docs/SPEC_FORMAT.md)."""
    kind = entry_kind(pv, v)
    if kind not in VALUE_KINDS:
        raise spec_error(path, f"key {where}.kind (or paper_values.kind) must be one of "
                         f"{', '.join(VALUE_KINDS)}, got {kind or None!r}.")
    if "tolerance" in v:
        _number(path, f"{where}.tolerance", v["tolerance"], minimum=0)
    if "tolerance_reason" in v:
        _text(path, f"{where}.tolerance_reason", v["tolerance_reason"], "why this tolerance")
    own = v.get("tolerance", pv.get("tolerance") if kind in EQUIVALENCE_KINDS else None)
    if kind not in EQUIVALENCE_KINDS and "tolerance" in v:
        # equality at the printed precision leaves nothing to widen
        raise spec_error(path, f"key {where}.tolerance: a {kind} value is judged equal at the printed "
                         "precision (or, a timing, never); tolerances are for "
                         f"{' and '.join(EQUIVALENCE_KINDS)} values.")
    if kind in EQUIVALENCE_KINDS and own is None and "not_judged" not in v:
        raise spec_error(path, f"key {where}.tolerance (or paper_values.tolerance) is required: a "
                         f"{kind} value is judged by an equivalence test within it.")
    if "tolerance" in v and not (v.get("tolerance_reason") or pv.get("tolerance_reason")):
        raise spec_error(path, f"key {where}.tolerance_reason is required with a tolerance.")


def _check_entry_annotations(path: Path, where: str, v: dict) -> None:
    """``explained`` / ``shown`` / ``post_hoc``, ``calibration``, ``same_as``, ``not_judged``."""
    if "explained" in v:
        _explained_text(path, f"{where}.explained", v["explained"])
    for key in ("shown", "post_hoc"):
        if key in v and "explained" not in v:
            raise spec_error(path, f"key {where}.{key} qualifies an explanation: it needs 'explained'.")
    if "shown" in v:
        _check_shown(path, f"{where}.shown", v["shown"])
    texts = {"post_hoc": "the choice made after seeing the miss",
             "calibration": "what was chosen with this value",
             "not_judged": "why no verdict is possible",
             "refuted": "the arithmetic showing the paper's own numbers exclude this value"}
    for key, what in texts.items():
        if key in v:
            _text(path, f"{where}.{key}", v[key], what)
    if "same_as" in v:
        _selector(path, f"{where}.same_as", v["same_as"], frozenset({"experiment"}))


def check_paper_values(path: Path, pv: Any) -> None:
    """The printed values: a mapping with ``values`` entries (docs/SPEC_FORMAT.md)."""
    if not isinstance(pv, dict):
        raise spec_error(path, "key 'paper_values' must be a mapping with 'values'.")
    check_keys(path, "paper_values", pv, _PAPER_VALUES_KEYS)
    if pv.get("tolerance") is not None:
        _number(path, "paper_values.tolerance", pv["tolerance"], minimum=0)
        if not pv.get("tolerance_reason"):
            raise spec_error(path, "key 'paper_values.tolerance_reason' is required with a tolerance "
                             "(the printed precision plus the variation the paper reports).")
    if "tolerance_reason" in pv:
        _text(path, "paper_values.tolerance_reason", pv["tolerance_reason"], "why this tolerance")
    if "kind" in pv and pv["kind"] not in VALUE_KINDS:
        raise spec_error(path, f"key 'paper_values.kind' must be one of {', '.join(VALUE_KINDS)}, "
                         f"got {pv['kind']!r}.")
    values = pv.get("values") or []
    if not isinstance(values, list):
        raise spec_error(path, "key 'paper_values.values' must be a list of mappings.")
    for i, v in enumerate(values):
        where = f"paper_values.values[{i}]"
        if not isinstance(v, dict) or "value" not in v:
            raise spec_error(path, f"{where} must be a mapping with a 'value'.")
        check_keys(path, where, {k: x for k, x in v.items() if not str(k).startswith("param:")},
                    _PAPER_ENTRY_KEYS)
        _number(path, f"{where}.value", v["value"])
        if "std" in v:
            _number(path, f"{where}.std", v["std"], minimum=0)
        _check_entry_rule(path, where, pv, v)
        _check_entry_annotations(path, where, v)
    _check_local_reprints(path, values)


def _same_selector_value(a: Any, b: Any) -> bool:
    """Selector values as written in two specs: numbers by value (1 == 1.0), else text."""
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def selects(selector: dict, entry: dict) -> bool:
    """Whether a ``same_as`` selector names ``entry`` (every selector key equal)."""
    return all(k in entry and _same_selector_value(entry[k], x)
               for k, x in selector.items() if k != "experiment")


def reprint_target(path: Path, where: str, selector: dict, values: list[dict]) -> dict:
    """The one entry of ``values`` that ``selector`` names (an original, not a reprint)."""
    hits = [e for e in values if selects(selector, e)]
    if len(hits) != 1:
        raise spec_error(path, f"key {where}.same_as must name exactly one printed value, "
                         f"it names {len(hits)}.")
    if "same_as" in hits[0]:
        raise spec_error(path, f"key {where}.same_as must name the original, not another reprint.")
    return hits[0]


def _check_local_reprints(path: Path, values: list[dict]) -> None:
    """A ``same_as`` within the spec names one original with the same printed value (one
    naming another spec is checked when the catalog loads, :func:`_check_reprints`)."""
    for i, v in enumerate(values):
        link = v.get("same_as")
        if not link or link.get("experiment", path.stem) != path.stem:
            continue
        where = f"paper_values.values[{i}]"
        target = reprint_target(path, where, link, values)
        if target is v or float(target["value"]) != float(v["value"]):
            raise spec_error(path, f"key {where}.same_as names a value that is not the same number.")


def check_claims(path: Path, claims: Any) -> None:
    """Claims: text, or mappings with :data:`CLAIM_KEYS` (judged by dpexp.render.claims;
    docs/SPEC_FORMAT.md)."""
    if not isinstance(claims, list):
        raise spec_error(path, "key 'claims' must be a list of texts or mappings.")
    for i, c in enumerate(claims):
        if isinstance(c, str):
            continue
        if not isinstance(c, dict):
            raise spec_error(path, f"claims[{i}] must be text or a mapping.")
        check_keys(path, f"claims[{i}]", c, CLAIM_KEYS)
        needed = (("series", "metric", "trend", "over") if "trend" in c else
                  ("close", "to", "metric", "within") if "close" in c else
                  ("spread", "metric", "max_std") if "spread" in c else ("better", "than", "metric"))
        for key in needed:
            if key not in c:
                raise spec_error(path, f"claims[{i}] needs key {key!r}.")
        if c.get("direction", "lower") not in ("lower", "higher"):
            raise spec_error(path, f"claims[{i}].direction must be 'lower' or 'higher'.")
        for key in ("explained", "note"):
            if key in c:
                _explained_text(path, f"claims[{i}].{key}", c[key])
        for key in ("shown", "post_hoc"):
            if key in c and "explained" not in c:
                raise spec_error(path, f"key claims[{i}].{key} qualifies an explanation: it needs 'explained'.")
        if "shown" in c:
            _check_shown(path, f"claims[{i}].shown", c["shown"], cells=False)
        if "post_hoc" in c:
            _text(path, f"claims[{i}].post_hoc", c["post_hoc"], "the choice made after seeing the miss")
        for key in ("margin", "within"):
            if key in c:
                _number(path, f"claims[{i}].{key}", c[key], minimum=0)
        for key in ("by", "over"):
            axis = c.get(key, "epsilon")
            if not (axis in ("epsilon", "step") or (isinstance(axis, str) and axis.startswith("param:"))):
                raise spec_error(path, f"claims[{i}].{key} must be epsilon, step or param:NAME, got {axis!r}.")
        if c.get("at_step", "last") != "last":
            raise spec_error(path, f"claims[{i}].at_step must be 'last'.")
        if "share" in c:
            _number(path, f"claims[{i}].share", c["share"], minimum=0)
            if float(c["share"]) > 1:
                raise spec_error(path, f"claims[{i}].share must be at most 1.")


def epsilon_list(path: Path, where: str, values: Any) -> tuple[float, ...]:
    """A non-empty list of privacy budgets, each checked by :func:`dpexp.errors.check_epsilon`."""
    if not isinstance(values, list) or not values:
        raise spec_error(path, f"key {where!r} must be a non-empty list of numbers > 0.")
    out = []
    for v in values:
        try:
            out.append(check_epsilon(v))
        except ValueError as exc:
            raise spec_error(path, f"key {where!r}: {exc}.") from None
    return tuple(out)
