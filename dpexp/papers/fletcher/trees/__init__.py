"""Data-independent random decision trees of Fletcher & Islam (2017), Algorithm 2.

``BuildTree`` (Algorithm 2, lines 1-19) draws the whole tree structure without looking at
the data: each node picks a feature uniformly at random among the continuous features and
the discrete features not yet used on its root-to-leaf path (line 12: a discrete feature
is tested once per path); a continuous feature splits at a uniformly random point of the
node's current *public* domain, which then narrows for the children (lines 6-10); a
discrete feature with ``k`` values gets ``k`` children (lines 13-15). Growth stops at the
depth of Theorem 2 (:func:`~dpexp.papers.fletcher.trees.depth.theorem2_depth`), or earlier
on a path that has no feature left (only discrete features, all used).

Why keyed ("seed-addressed") trees instead of materialised :class:`~dpexp.trees.ArrayTree`
arrays: the full trees are far too big to store. A discrete split has one child per
value, so the expected number of leaves of one tree is about 1.9 million on Adult (depth
9, 8 discrete features with up to 41 values) and 33 million on Mushroom (depth 11), for
100 trees. Storing only the nodes that training records reach would make the stored
structure depend on the data (it would reveal which regions are empty). So every node is
identified by a 64-bit key and all of its random choices are hashes of that key: the tree
is a fixed, fully specified random function of its seed, identical to materialising it.

Modules, in import order:

* :mod:`.keys` -- the public schema (:class:`TreeSchema`) and the SplitMix64 hashes of a
  node's key (child keys, feature choice, split point): the specification;
* :mod:`.empty_leaves` -- the noise of leaves no record reached (Section 4.2.1; JPW),
  keyed by a secret of the fit's noise stream;
* :mod:`.depth` -- the forest's depth (Theorem 2, Eqs. 15-16, Section 4.3) and JPW's;
* :mod:`.routing` -- compiled routing of samples to leaf keys, the leaf tables, the votes;
* :mod:`.leaf_count` -- the number of leaves of a full tree (Table 3);
* :mod:`.materialise` -- small forests written out as arrays (:class:`MaterialisedCache`);
* :mod:`.materialised_routing` -- routing by array descent through them (same leaves).
"""

from dpexp.papers.fletcher.trees.depth import expected_untested, jpw_depth, theorem2_depth
from dpexp.papers.fletcher.trees.empty_leaves import (
    draw_empty_leaf_secret,
    empty_leaf_label,
    empty_leaf_laplace,
    siphash24_words,
)
from dpexp.papers.fletcher.trees.keys import TreeSchema, child_keys, choose_feature, key_uniform
from dpexp.papers.fletcher.trees.leaf_count import count_leaves
from dpexp.papers.fletcher.trees.materialise import (
    MAX_MATERIALISED_NODES,
    MaterialisedCache,
    MaterialisedForest,
    materialise_forest,
)
from dpexp.papers.fletcher.trees.materialised_routing import (
    dense_leaf_labels,
    materialised_grid,
    materialised_route,
)
from dpexp.papers.fletcher.trees.routing import (
    forest_leaf_labels,
    leaf_index,
    route,
    route_forest,
    vote_counts,
)

__all__ = [
    "MAX_MATERIALISED_NODES",
    "MaterialisedCache",
    "MaterialisedForest",
    "TreeSchema",
    "child_keys",
    "choose_feature",
    "count_leaves",
    "dense_leaf_labels",
    "draw_empty_leaf_secret",
    "empty_leaf_label",
    "empty_leaf_laplace",
    "expected_untested",
    "forest_leaf_labels",
    "jpw_depth",
    "key_uniform",
    "leaf_index",
    "materialise_forest",
    "materialised_grid",
    "materialised_route",
    "route",
    "route_forest",
    "siphash24_words",
    "theorem2_depth",
    "vote_counts",
]
