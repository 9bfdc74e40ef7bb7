"""The reference the partition tests compare against: a depth's nodes split stably."""

from __future__ import annotations

import numpy as np


def stable_split(codes, order, starts, ends, feats, bins):
    """Each node ``order[s:e]`` split stably into the rows with ``codes[:, f] <= b`` then
    the rest (``f < 0``: a leaf, kept whole); returns the new order and each node's left count."""
    expect = order.copy()
    n_left = []
    for s, e, f, b in zip(starts, ends, feats, bins, strict=True):
        seg = order[s:e]
        go = np.ones(seg.size, bool) if f < 0 else codes[seg, f] <= b
        expect[s:e] = np.concatenate([seg[go], seg[~go]])
        n_left.append(int(go.sum()))
    return expect, np.array(n_left)
