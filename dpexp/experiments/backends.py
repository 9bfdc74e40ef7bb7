"""Where the cells of a run execute: a joblib pool (loky processes or threads) or a dask
cluster, and the progress display of the run."""

from __future__ import annotations

import contextlib
import sys

from dpexp.errors import DpexpError
from dpexp.experiments.config import BACKENDS, RunConfig
from dpexp.experiments.progress import LineProgress

#: Environment variables sizing the thread pools of numba, OpenMP, the BLAS libraries and
#: numexpr; read once, when a process imports the library (joblib's list for loky workers).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS",
                    "NUMEXPR_NUM_THREADS")


def single_threaded_env() -> dict[str, str]:
    """The environment of a worker process that shares the cores with other workers: one
    thread per library, so two workers on two cores do not oversubscribe them. The tree
    kernels sum in an order their data fixes, never by the thread count
    (:mod:`dpexp.trees.parallel`), so this changes no result, only the time."""
    return dict.fromkeys(THREAD_VARIABLES, "1")


@contextlib.contextmanager
def backend(cfg: RunConfig):
    """The joblib backend of a run. With several worker processes (loky, a local dask
    cluster) each worker runs single-threaded (:func:`single_threaded_env`, set before it
    imports numba); in-process threads and a remote dask cluster keep their settings."""
    import joblib

    if cfg.backend not in BACKENDS:
        raise DpexpError(f"Unknown backend {cfg.backend!r}; use one of {', '.join(BACKENDS)}.")
    if cfg.backend == "loky":
        # jobs -1 (every core) or more than one: several workers
        threads = {"inner_max_num_threads": 1} if cfg.jobs != 1 else {}
        with joblib.parallel_config(backend="loky", n_jobs=cfg.jobs, **threads):
            yield
        return
    if cfg.backend == "threading":
        with joblib.parallel_config(backend="threading", n_jobs=cfg.jobs):
            yield
        return
    workers = max(cfg.jobs, 1)
    with (dask_client(cfg.scheduler, workers, single_threaded=workers > 1),
          joblib.parallel_config(backend="dask", n_jobs=-1)):
        yield


@contextlib.contextmanager
def dask_client(scheduler: str | None, n_workers: int, *, single_threaded: bool = False):
    """A dask.distributed client: to ``scheduler`` if given, else to a new LocalCluster
    (of ``n_workers`` processes of one task each; ``single_threaded``: each with
    :func:`single_threaded_env`)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise DpexpError("The dask backend needs dask.distributed: pip install 'dpexp[dask]'.") from None
    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout="20s")
        else:
            env = single_threaded_env() if single_threaded else {}
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None, env=env)
            client = Client(cluster)
    except OSError as exc:
        if cluster is not None:
            cluster.close()
        raise DpexpError(f"Cannot reach the dask scheduler {scheduler!r}: {exc}") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def progress_bar(enabled: bool):
    """Cells done / total, elapsed time and ETA: a bar on a terminal, else a line every
    30 s (dpexp.experiments.progress), so a run in a pipe or under nohup is not silent."""
    if enabled and not sys.stderr.isatty():

        return LineProgress()
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("cells"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        disable=not enabled,
    )
