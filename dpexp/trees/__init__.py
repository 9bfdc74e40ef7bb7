"""Tree representation, binned data and the histogram tree grower shared by all algorithms."""

from dpexp.trees.tree import CATEGORICAL, LEAF, NUMERIC, ArrayTree, TreeBuilder

__all__ = ["ArrayTree", "TreeBuilder", "LEAF", "NUMERIC", "CATEGORICAL"]
