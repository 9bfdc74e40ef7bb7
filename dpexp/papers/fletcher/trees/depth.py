"""Tree depths: the forest's (Section 4.3, Theorem 2, Eqs. 15-16) and JPW's (Section 5.2).

The forest's depth follows from the public schema only: enough levels that fewer than half
of the ``s`` continuous features are expected to stay untested on a path (Theorem 2), plus
``r / 2`` for the ``r`` discrete features (Section 4.3).
"""

from __future__ import annotations

import math


def expected_untested(s: int, d: int) -> float:
    """Theorem 2, Eq. 15: E[X | d] = s ((s - 1) / s)^d continuous features never tested."""
    if s <= 0:
        return 0.0
    return s * ((s - 1) / s) ** d


def theorem2_depth(n_continuous: int, n_discrete: int) -> int:
    """Tree depth of Section 4.3 (Theorem 2, Eq. 16, plus r/2 for discrete features).

    Convention that reproduces Table 4 exactly (all 14 datasets, see
    ``tests/papers/fletcher/test_depth_and_formulas.py``): with ``d*`` the smallest ``d`` for which
    ``E[X | d] = s((s-1)/s)^d <= s/2`` (fewer than half the ``s`` continuous features left
    untested, Eq. 16), the depth is ``d* + 1`` when ``s > 0`` (0 when ``s = 0``), plus
    ``floor(r / 2)`` for the ``r`` discrete features. The "+1" is an off-by-one of a loop
    that evaluates ``E[X | d]`` and then increments ``d`` before testing the condition
    (equivalently: depth counted in node levels including the leaf level); the literal
    reading (depth ``d*``) gives 4, 7, 11, 14, 3, 11, 4 (+r/2) instead of Table 4's 5, 8,
    12, 15, 4, 12, 9. Equivalent on Table 4: "smallest d with E[X | d] < (s - 1) / 2".
    """
    s, r = int(n_continuous), int(n_discrete)
    if s < 0 or r < 0:
        raise ValueError("feature counts must be >= 0")
    depth = 0
    if s > 0:
        expected = float(s)
        while expected > s / 2:
            expected = expected_untested(s, depth)
            depth += 1
    return depth + r // 2


def jpw_depth(n_features: int, n_records: int, mean_domain_size: float) -> int:
    """JPW depth min(m/2, log_b(n) - 1) (Jagannathan et al. 2012; Fletcher & Islam §5.2)."""
    b = max(float(mean_domain_size), 2.0)
    d = min(n_features / 2.0, math.log(max(n_records, 1), b) - 1.0)
    return max(1, int(math.floor(d)))

