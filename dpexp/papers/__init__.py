"""Paper packages: one subpackage per paper, each exporting a ``MANIFEST``.

A subpackage ``dpexp.papers.<paper>`` (name not starting with ``_``) is discovered with
:mod:`pkgutil`; packages installed separately register through the entry-point group
``dpexp.papers``. See :mod:`dpexp.registry` (the loader and :class:`PaperManifest`) and
the README's "Add your own DP tree method".
"""

from dpexp.registry import AlgorithmInfo, PaperManifest

__all__ = ["AlgorithmInfo", "PaperManifest"]
