"""A package's exported names, each imported from its module on first use (PEP 562).

``dpexp.privacy`` and ``dpexp.datasets`` export names whose modules load numba, scipy or
pandas; commands that only read the catalogue (``dpexp list``) must not pay for them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str], names: Callable[[], Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) for ``package``: ``homes`` maps an exported name to
    the module defining it; ``names`` returns the package's own globals."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home), name)

    def dir_() -> list[str]:
        return sorted({*names(), *homes})

    return getattr_, dir_
