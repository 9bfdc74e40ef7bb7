"""Lemma 1 / Lemma 2 / Corollary 2 bounds hold on random neighbouring datasets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpexp.boosting.gbdt import split_sensitivity
from dpexp.papers.dpboost.formulas import glc_threshold, leaf_sensitivity

grads = st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=0, max_size=60)


def gain(gl, gr, lam):
    """Eq. (3) with h = 1 (counts)."""
    return gl.sum() ** 2 / (gl.size + lam) + gr.sum() ** 2 / (gr.size + lam)


def leaf(g, lam):
    """Eq. (4)."""
    return -g.sum() / (g.size + lam)


@settings(max_examples=300, deadline=None)
@given(grads, grads, st.floats(-1.0, 1.0), st.booleans(), st.floats(0.01, 5.0))
def test_gain_sensitivity_lemma1(left, right, gs, to_left, lam):
    gl, gr = np.array(left), np.array(right)
    g2l = np.append(gl, gs) if to_left else gl
    g2r = gr if to_left else np.append(gr, gs)
    assert abs(gain(gl, gr, lam) - gain(g2l, g2r, lam)) <= split_sensitivity(1.0) + 1e-9


@settings(max_examples=300, deadline=None)
@given(grads, st.floats(-1.0, 1.0), st.floats(0.01, 5.0), st.integers(1, 2000))
def test_leaf_sensitivity_lemma2_and_corollary2(g, gs, lam, t):
    g = np.array(g)
    v1, v2 = leaf(g, lam), leaf(np.append(g, gs), lam)
    assert abs(v1 - v2) <= 1.0 / (1.0 + lam) + 1e-12  # Lemma 2
    c = glc_threshold(1.0, 0.01, t)
    clipped = abs(np.clip(v1, -c, c) - np.clip(v2, -c, c))
    assert clipped <= leaf_sensitivity(1.0, lam, 0.01, t, glc=True) + 1e-12  # Corollary 2
