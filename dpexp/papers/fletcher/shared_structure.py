"""The forest with one random structure for all its trees: the ``fletcher_shared_structure``
ablation (:mod:`dpexp.papers.fletcher.ablations`), which tests whether the alternative
forests of Figs. 5 and 6 behave like a forest whose trees share one structure. As private
as the shipped forest: the structure is data-independent either way (Section 4)."""

from __future__ import annotations

import numpy as np

from dpexp.papers.fletcher.forest import FletcherForestClassifier


class SharedStructureForest(FletcherForestClassifier):
    """The forest with one random structure for all its trees (ablation only)."""

    @staticmethod
    def _tree_seeds(ss_struct: np.random.SeedSequence, n_trees: int) -> np.ndarray:
        first = FletcherForestClassifier._tree_seeds(ss_struct, 1)
        return np.repeat(first, n_trees)
