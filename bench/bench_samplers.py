"""Speed of the exact samplers beside numpy's textbook ones and OpenDP's.

Run as ``python bench/bench_samplers.py [--sizes 1000 100000 1000000] [--opendp-max 100000]``.
Prints one table of nanoseconds per sample (best of a few repeats; numba compilation is
excluded by a warm-up call). OpenDP is optional (``pip install opendp``; not a dependency
of dpexp): it is a speed and correctness reference only -- it draws from its own
unseedable OS CSPRNG, while dpexp's noise must be reproducible from a seeded Generator (or
come from dpexp's SecureGenerator). Its float samplers cost tens of microseconds a
sample, so it is timed only up to ``--opendp-max`` samples.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np

from dpexp.privacy.mechanisms import (
    discrete_laplace_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
)
from dpexp.privacy.randomness import secure_generator

EPS, DELTA = 1.0, 1e-5


def best_ns(fn: Callable[[int], object], n: int, budget_s: float = 0.5) -> float:
    """Best time per sample over repeats that fit in ``budget_s`` (at least one)."""
    fn(min(n, 10))  # warm-up: compiles numba kernels, fills caches
    best, spent = float("inf"), 0.0
    while spent < budget_s or best == float("inf"):
        t0 = time.perf_counter()
        fn(n)
        dt = time.perf_counter() - t0
        best, spent = min(best, dt), spent + dt
        if spent > budget_s:
            break
    return best / n * 1e9


def ours() -> dict[str, Callable[[int], object]]:
    rng = np.random.default_rng(0)
    sec = secure_generator()
    return {
        "dpexp discrete Laplace ints (eps=1)": lambda n: discrete_laplace_mechanism(
            np.zeros(n, dtype=np.int64), epsilon=EPS, rng=rng),
        "dpexp discrete Laplace ints, SecureGenerator": lambda n: discrete_laplace_mechanism(
            np.zeros(n, dtype=np.int64), epsilon=EPS, rng=sec),
        "dpexp grid Laplace reals (eps=1, sens=1)": lambda n: laplace_mechanism(
            np.zeros(n), epsilon=EPS, sensitivity=1.0, rng=rng),
        "dpexp grid discrete Gaussian reals (analytic)": lambda n: gaussian_mechanism(
            np.zeros(n), epsilon=EPS, delta=DELTA, sensitivity=1.0, rng=rng, calibration="analytic"),
        "numpy rng.laplace (not float-safe)": lambda n: rng.laplace(0.0, 1.0 / EPS, size=n),
        "numpy rng.normal (not float-safe)": lambda n: rng.normal(0.0, 3.73, size=n),
    }


def opendp_samplers() -> dict[str, Callable[[int], object]] | str:
    try:
        import opendp.prelude as dp
    except ImportError:
        return "OpenDP not importable (pip install opendp): its rows are skipped"
    with warnings.catch_warnings():  # "floating-point" is "idealized-numerics" in new releases
        warnings.simplefilter("ignore", DeprecationWarning)
        dp.enable_features("contrib", "floating-point", "idealized-numerics")

    def make(T: type, distance, then, scale: float):
        atom = dp.atom_domain(T=T, nan=False) if T is float else dp.atom_domain(T=T)
        meas = (dp.vector_domain(atom), distance(T=T)) >> then(scale=scale)
        return lambda n: meas([T(0)] * n)

    return {
        "OpenDP then_laplace ints (discrete)": make(int, dp.l1_distance, dp.m.then_laplace, 1.0 / EPS),
        "OpenDP then_laplace floats": make(float, dp.l1_distance, dp.m.then_laplace, 1.0 / EPS),
        "OpenDP then_gaussian floats": make(float, dp.l2_distance, dp.m.then_gaussian, 3.73),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--opendp-max", type=int, default=100_000)
    args = parser.parse_args()
    rows = [(name, fn, None) for name, fn in ours().items()]
    other = opendp_samplers()
    if isinstance(other, str):
        print(other)
    else:
        rows += [(name, fn, args.opendp_max) for name, fn in other.items()]
    width = max(len(name) for name, _, _ in rows)
    header = f"{'ns per sample':<{width}}" + "".join(f"{f'n={n:.0e}':>12}" for n in args.sizes)
    print(header)
    print("-" * len(header))
    for name, fn, cap in rows:
        cells = []
        for n in args.sizes:
            cells.append(f"{'(skipped)':>12}" if cap is not None and n > cap else f"{best_ns(fn, n):>12.0f}")
        print(f"{name:<{width}}" + "".join(cells), flush=True)


if __name__ == "__main__":
    main()
