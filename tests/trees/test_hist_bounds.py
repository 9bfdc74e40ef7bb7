"""The histogram build indexes only inside its buffers.

Compiled numba code does not check bounds: an index past an empty buffer (a task's
``wb[j]`` when a table has no bundles) goes unnoticed there, and
``NUMBA_BOUNDSCHECK=1`` reports only that some index was out of bounds. The same code
run as Python (``NUMBA_DISABLE_JIT=1``, in a subprocess so this process keeps its
compiled kernels) checks every index and names the line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

_SCRIPT = textwrap.dedent("""
    import numpy as np
    import dpexp.trees.histograms as H
    from dpexp.trees.binning import fit_bin_mapper
    from dpexp.trees.sparse_features import sparse_feature_codes

    rng = np.random.default_rng(0)
    X = rng.random((300, 6))
    X[rng.random((300, 6)) < 0.7] = 0.0
    X[:, 5] = (X[:, 5] > 0).astype(float)
    stats = np.column_stack([rng.normal(size=300), np.ones(300)])
    order = rng.permutation(300).astype(np.int64)
    starts, ends = np.array([0, 90, 200]), np.array([90, 200, 300])
    m = fit_bin_mapper(X, feature_domain=np.tile([0.0, 1.0], (6, 1)), max_bins=16)
    H.HIST_CHUNK_ROWS = 64  # several row chunks per node: the partial-sum buffers
    codes = m.transform(X).codes
    expect = H.reference_histograms(codes, stats, order, starts, ends, 16)
    kinds = set()
    for sparse_codes in (None, sparse_feature_codes(codes)):
        lay = H.dense_layout(codes, sparse_codes)
        kinds.add(lay.bundles.codes.shape[1] > 0)
        for plan in (H.hist_serial, H.hist_parallel):
            out = np.zeros((3, 6, 16, 2))
            plan(codes, stats, order, starts, ends, out, np.arange(3), np.empty((2, 300)),
                 lay.feats, *lay.plain_tuples, H.plan_settings(lay))
            np.testing.assert_allclose(out, expect, atol=1e-9)
    assert kinds == {False, True}, kinds  # a table without bundles and one with
    print("ok")
""")


@pytest.mark.slow
def test_histogram_build_stays_in_bounds_as_python():
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")
