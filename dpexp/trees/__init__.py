"""Tree representation, binned data and the histogram tree grower shared by all algorithms.

Modules, by concern (the layout of scikit-learn's ``_hist_gradient_boosting``):

* :mod:`~dpexp.trees.tree` -- the array tree (:class:`ArrayTree`) and its builder;
* :mod:`~dpexp.trees.binning` -- features to ``uint8`` codes (public domains or quantiles),
  into the table of :mod:`~dpexp.trees.binned_data`, whose sparse features get exclusive
  bundles or row-sparse lists (:mod:`~dpexp.trees.sparse_features`) and whose narrow
  tables get row-major codes (:mod:`~dpexp.trees.row_codes`);
* :mod:`~dpexp.trees.grower` -- :func:`~dpexp.trees.grower.grow_tree`, one step per depth,
  with pluggable split/leaf policies (:mod:`~dpexp.trees.policies`);
* :mod:`~dpexp.trees.row_stores` -- where a tree keeps its rows (in place, statistics
  moved with the rows, column-sparse) behind one ``RowStore`` interface;
* compiled kernels: :mod:`~dpexp.trees.histograms` (histogram builds, and the plain-numpy
  reference the tests use; a dense build's layout in :mod:`~dpexp.trees.hist_layout`, its
  tasks in :mod:`~dpexp.trees.hist_tasks`, its plan and runs in
  :mod:`~dpexp.trees.hist_plan`), :mod:`~dpexp.trees.partition` (row partitions),
  :mod:`~dpexp.trees.levels` (per-depth bookkeeping, sibling subtraction),
  :mod:`~dpexp.trees.fused_levels` (the grower's level loop compiled: one call per depth,
  or per tree with greedy splits),
  :mod:`~dpexp.trees.split_search` (gains, greedy best split), :mod:`~dpexp.trees.predict`
  (routing rows: leaf ids, score updates), :mod:`~dpexp.trees.parallel` (when to use the
  thread pool, how work is cut).
"""

from dpexp.trees.tree import CATEGORICAL, LEAF, NUMERIC, ArrayTree, TreeBuilder

__all__ = ["ArrayTree", "TreeBuilder", "LEAF", "NUMERIC", "CATEGORICAL"]
