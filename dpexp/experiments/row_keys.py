"""The row key of a result row: the cell it belongs to, as it is shown (no pandas here:
``dpexp list`` and the timings read keys without reading a table)."""

from __future__ import annotations

from typing import Any

from dpexp.experiments.cells import canonical_params, format_epsilon, view_key_text

__all__ = ["KEY_FIELDS", "row_key"]


#: The fields of a row its key is made of.
KEY_FIELDS = ("experiment", "scale", "dataset", "algorithm", "label", "params", "epsilon",
              "fold", "repeat", "seed", "data_version")


def row_key(values: dict[str, Any], parsed: dict[str, tuple[Any, str]] | None = None) -> str:
    """:attr:`dpexp.experiments.cells.Cell.view_key` of a result row's cell (experiment,
    scale, label and the cell columns: unique within a results table). ``parsed``: the
    caller's memo of :func:`canonical_params` by params text (a table has few texts)."""
    text = values["params"]
    if parsed is None:
        params, params_json = canonical_params(text)
    elif text in parsed:
        params, params_json = parsed[text]
    else:
        params, params_json = parsed[text] = canonical_params(text)
    version = values.get("data_version")
    return view_key_text(
        experiment=values["experiment"], scale=values["scale"], dataset=values["dataset"],
        algorithm=values["algorithm"], label=values["label"], params=params,
        params_json=params_json, epsilon=format_epsilon(float(values["epsilon"])),
        fold=int(values["fold"]), repeat=int(values["repeat"]), seed=int(values["seed"]),
        data=version if isinstance(version, str) else "")
