"""numba's ``njit`` and ``prange`` for dpexp's kernels, with an on-disk cache that sees
every kernel's source.

numba keeps a compiled function beside its file (``__pycache__/*.nbi``, ``*.nbc``) and
reuses it while that one file is unchanged. A kernel, though, compiles in the kernels it
calls from other files: after a ``git pull`` that changed only a callee's file, the caller
loaded its old machine code and computed with the old callee -- silently (numba documents
this: its cache does not see changes in functions defined in other files). Every dpexp
kernel module imports ``njit`` from here, which puts dpexp's own cache locators first in
numba's list: the same places (``NUMBA_CACHE_DIR`` if set, else the file's
``__pycache__``, else the user-wide cache) and the same per-file stamp, joined with the
sha256 of every module the kernels may call or read constants from (all of dpexp but the
layers above the estimators, :data:`NOT_KERNEL_CODE`). A change to any of them makes every
cached kernel stale: numba compiles it again and overwrites the old entry. Functions
outside dpexp's package keep numba's own locators.

Registering the locators changes numba's process-wide list once, when this module is
first imported (idempotent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from numba import njit, prange
from numba.core import caching

from dpexp.paths import source_digest

__all__ = ["NOT_KERNEL_CODE", "kernel_code_digest", "njit", "prange"]

#: The package's root folder: only functions defined below it use the locators here.
PACKAGE_ROOT = Path(__file__).resolve().parent
#: dpexp's folders that no kernel calls or reads (the layers above the estimators).
NOT_KERNEL_CODE = ("cli", "experiments", "datasets", "render", "audit")


def kernel_code_digest(root: Path = PACKAGE_ROOT) -> str:
    """The sha256 of every ``.py`` file under ``root`` but those of :data:`NOT_KERNEL_CODE`."""
    return source_digest(root, NOT_KERNEL_CODE)


def _below(py_file: str, root: Path) -> bool:
    try:
        Path(py_file).resolve().relative_to(root)
    except (OSError, ValueError):
        return False
    return True


class _WholeCodeStamp:
    """A numba cache locator for the functions of :attr:`root`'s files whose freshness
    stamp is the file's (numba's) and the digest of all kernel code."""

    root: Path = PACKAGE_ROOT

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> Any:
        if not _below(py_file, cls.root):
            return None
        return super().from_function(py_func, py_file)  # type: ignore[misc]

    def get_source_stamp(self) -> Any:
        return super().get_source_stamp(), kernel_code_digest(self.root)  # type: ignore[misc]


class _UserProvided(_WholeCodeStamp, caching.UserProvidedCacheLocator):
    """``NUMBA_CACHE_DIR``, when set."""


class _InTree(_WholeCodeStamp, caching.InTreeCacheLocator):
    """The file's ``__pycache__``, when writable."""


class _UserWide(_WholeCodeStamp, caching.UserWideCacheLocator):
    """The user-wide cache folder (a read-only installation)."""


#: dpexp's locators, in numba's own order of preference.
LOCATORS = (_UserProvided, _InTree, _UserWide)


def _register() -> None:
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # the older name
    locators = impl._locator_classes
    for cls in reversed(LOCATORS):
        if cls not in locators:
            locators.insert(0, cls)


_register()
