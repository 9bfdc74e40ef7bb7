"""The row key of a result row: the cell it belongs to, as it is shown (no pandas here:
``dpexp list`` and the timings read keys without reading a table)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpexp.experiments.cells import (
    canonical_params,
    format_epsilon,
    view_key_parts,
    view_key_text,
)

__all__ = ["KEY_FIELDS", "row_key", "row_keys"]


#: The fields of a row its key is made of.
KEY_FIELDS = ("experiment", "scale", "dataset", "algorithm", "label", "params", "epsilon",
              "fold", "repeat", "seed", "data_version")


def row_key(values: dict[str, Any], parsed: dict[str, tuple[Any, str]] | None = None) -> str:
    """:attr:`dpexp.experiments.cells.Cell.view_key` of a result row's cell (experiment,
    scale, label and the cell columns: unique within a results table). ``parsed``: the
    caller's memo of :func:`canonical_params` by params text (a table has few texts)."""
    return view_key_text(**_setting(values, {} if parsed is None else parsed),
                         fold=int(values["fold"]), repeat=int(values["repeat"]))


def row_keys(columns: list[Sequence[Any]]) -> list[str]:
    """:func:`row_key` of many rows, given as the columns :data:`KEY_FIELDS` (in that
    order): the key is written into the template its cell's setting shares with the other
    folds and repeats (:func:`dpexp.experiments.cells.view_key_parts`), made once a setting
    -- the same text as :func:`row_key`'s."""
    parsed: dict[str, tuple[Any, str]] = {}
    templates: dict[tuple[Any, ...], tuple[str, str, str] | None] = {}
    keys = []
    for values in zip(*columns, strict=True):
        setting = values[:7] + values[9:]  # all but fold and repeat
        if setting not in templates:
            named = _setting(dict(zip(KEY_FIELDS, values, strict=True)), parsed)
            del named["params"]  # the template holds its canonical text
            templates[setting] = view_key_parts(**named)
        parts = templates[setting]
        if parts is None:
            keys.append(row_key(dict(zip(KEY_FIELDS, values, strict=True)), parsed))
        else:
            keys.append(f"{parts[0]}{int(values[7])}{parts[1]}{int(values[8])}{parts[2]}")
    return keys


def _setting(values: dict[str, Any], parsed: dict[str, tuple[Any, str]]) -> dict[str, Any]:
    """The key's values of ``values`` but fold and repeat, as the key writes them."""
    text = values["params"]
    if text not in parsed:
        parsed[text] = canonical_params(text)
    params, params_json = parsed[text]
    version = values.get("data_version")
    return {"experiment": values["experiment"], "scale": values["scale"],
            "dataset": values["dataset"], "algorithm": values["algorithm"],
            "label": values["label"], "params": params, "params_json": params_json,
            "epsilon": format_epsilon(float(values["epsilon"])), "seed": int(values["seed"]),
            "data": version if isinstance(version, str) else ""}
