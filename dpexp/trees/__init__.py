"""Tree representation, binned data and the histogram tree grower shared by all algorithms.

Modules, by concern (the layout of scikit-learn's ``_hist_gradient_boosting``):

* :mod:`~dpexp.trees.tree` -- the array tree (:class:`ArrayTree`) and its builder;
* :mod:`~dpexp.trees.binning` -- features to ``uint8`` codes (public domains or quantiles);
* :mod:`~dpexp.trees.grower` -- :func:`~dpexp.trees.grower.grow_tree`, one step per depth,
  with pluggable split/leaf policies (:mod:`~dpexp.trees.policies`);
* :mod:`~dpexp.trees.row_stores` -- where a tree keeps its rows (in place, statistics
  moved with the rows, column-sparse) behind one ``RowStore`` interface;
* compiled kernels: :mod:`~dpexp.trees.histograms` (histogram builds, and the plain-numpy
  reference the tests use), :mod:`~dpexp.trees.partition` (row partitions),
  :mod:`~dpexp.trees.levels` (per-depth bookkeeping, sibling subtraction),
  :mod:`~dpexp.trees.split_search` (gains, greedy best split), :mod:`~dpexp.trees.predict`
  (routing rows: leaf ids, score updates), :mod:`~dpexp.trees.parallel` (when to use the
  thread pool, how work is cut).
"""

from dpexp.trees.tree import CATEGORICAL, LEAF, NUMERIC, ArrayTree, TreeBuilder

__all__ = ["ArrayTree", "TreeBuilder", "LEAF", "NUMERIC", "CATEGORICAL"]
