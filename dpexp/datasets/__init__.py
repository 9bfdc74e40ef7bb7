"""Dataset registry (datasets.yaml), checksummed downloads, parsers and generators.

The names below are loaded when first used (PEP 562 ``__getattr__``): reading the registry
(:mod:`dpexp.datasets.registry`, as every spec does) does not load the parsers and their
pandas and scipy, so ``dpexp list`` stays fast; ``from dpexp.datasets import
load_dataset`` works as before.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from dpexp.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the same names, for type checkers and the import-graph test
    from dpexp.datasets.core import Dataset, load_dataset
    from dpexp.datasets.registry import DatasetInfo, all_datasets, get_dataset_info

#: Exported name -> the module that defines it (loaded by :func:`__getattr__` on first use).
_HOMES = MappingProxyType({
    "Dataset": "dpexp.datasets.core",
    "load_dataset": "dpexp.datasets.core",
    "DatasetInfo": "dpexp.datasets.registry",
    "all_datasets": "dpexp.datasets.registry",
    "get_dataset_info": "dpexp.datasets.registry",
})


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals)


__all__ = ["Dataset", "DatasetInfo", "all_datasets", "get_dataset_info", "load_dataset"]
