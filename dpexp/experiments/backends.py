"""Where the cells of a run execute: a joblib pool (loky processes or threads) or a dask
cluster driven directly (:func:`dask_map_unordered`), and the progress display of the run."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

import joblib
from joblib.externals.loky.process_executor import TerminatedWorkerError

from dpexp.errors import DpexpError
from dpexp.experiments.config import BACKENDS, RunConfig
from dpexp.experiments.progress import LineProgress

#: Environment variables sizing the thread pools of numba, OpenMP, the BLAS libraries and
#: numexpr; read once, when a process imports the library (joblib's list for loky workers).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS",
                    "NUMEXPR_NUM_THREADS")

#: Cells submitted to a dask cluster per thread at a time (joblib's ``pre_dispatch`` of 2).
CELLS_AHEAD = 2
#: Seconds a run waits for the first worker of a remote dask scheduler that has none yet.
DASK_WORKER_WAIT = 60


def single_threaded_env() -> dict[str, str]:
    """The environment of a worker process that shares the cores with other workers: one
    thread per library, so two workers on two cores do not oversubscribe them. The tree
    kernels sum in an order their data fixes, never by the thread count
    (:mod:`dpexp.trees.parallel`), so this changes no result, only the time."""
    return dict.fromkeys(THREAD_VARIABLES, "1")


@dataclass(frozen=True)
class CellPool:
    """The workers of a run. ``map_unordered(fn, items, *shared)`` calls
    ``fn(item, *shared)`` for every item there, yielding the results as they finish;
    ``worker_died`` are the exceptions saying a worker process died (the runner starts that
    worker's cells again on new workers)."""

    #: A dask.distributed Client, or None: the joblib backend :func:`backend` configured.
    client: Any = None
    worker_died: tuple[type[BaseException], ...] = (TerminatedWorkerError,)

    def map_unordered(self, fn: Callable[..., Any], items: Iterable[Any], *shared: Any) -> Iterator[Any]:
        if self.client is not None:
            return dask_map_unordered(self.client, fn, items, *shared)
        return joblib.Parallel(return_as="generator_unordered")(
            joblib.delayed(fn)(item, *shared) for item in items)


@contextlib.contextmanager
def backend(cfg: RunConfig) -> Iterator[CellPool]:
    """The workers of a run (:class:`CellPool`). With several worker processes (loky, a
    local dask cluster) each worker runs single-threaded (:func:`single_threaded_env`, set
    before it imports numba); in-process threads and a remote dask cluster keep their
    settings."""
    if cfg.backend not in BACKENDS:
        raise DpexpError(f"Unknown backend {cfg.backend!r}; use one of {', '.join(BACKENDS)}.")
    if cfg.backend == "loky":
        # jobs -1 (every core) or more than one: several workers
        threads = {"inner_max_num_threads": 1} if cfg.jobs != 1 else {}
        with joblib.parallel_config(backend="loky", n_jobs=cfg.jobs, **threads):
            yield CellPool()
        return
    if cfg.backend == "threading":
        with joblib.parallel_config(backend="threading", n_jobs=cfg.jobs):
            yield CellPool()
        return
    workers = max(cfg.jobs, 1)
    with dask_client(cfg.scheduler, workers, single_threaded=workers > 1) as client:
        # lazy: dask.distributed is optional; dask_client has just imported it
        from distributed import KilledWorker

        yield CellPool(client=client, worker_died=(KilledWorker,))


def in_worker(fn: Callable[..., Any], item: Any, *shared: Any) -> Any:
    """``fn(item, *shared)`` in a dask worker, its own joblib calls on threads of this
    process, as in a loky worker (whose nested backend is joblib's threading backend).

    Issue 43: through joblib's dask bridge a cell ran under ``parallel_config("dask")``, so
    scikit-learn's forests (which build and predict their trees through ``joblib.Parallel``,
    even at ``n_jobs=1``: the dask backend takes every core of the cluster) sent their
    trees to the cluster as tasks, the training data pickled for each, the cell's thread
    seceding meanwhile and its worker starting a second cell (bench/README.md, "dask against loky")."""
    with joblib.parallel_config(backend="threading"):
        return fn(item, *shared)


def dask_map_unordered(client: Any, fn: Callable[..., Any], items: Iterable[Any],
                       *shared: Any) -> Iterator[Any]:
    """``fn(item, *shared)`` for each item on the dask cluster of ``client``, results as
    they finish.

    ``shared`` (the spec, the run's configuration) is sent to every worker once, not with
    each cell. At most :data:`CELLS_AHEAD` cells per thread of the cluster are submitted at
    a time, in ``items``' order (longest first) and with that priority, the next as one
    finishes: a worker has its next cell at hand when one ends (no round trip to the
    client in between), and the scheduler does not spread the whole run over the workers
    ahead of time, by durations it does not know yet (the imbalance loky's pool, which
    hands the next cell to the first worker free, does not have). Each cell runs through
    :func:`in_worker`."""
    pending = iter(items)
    first = list(islice(pending, 1))
    if not first:
        return
    threads = _cluster_threads(client)
    shared_on_workers = client.scatter(list(shared), broadcast=True, hash=False) if shared else []
    running: set[Any] = set()
    order = iter(range(0, -(1 << 62), -1))  # dask runs the higher priority first

    def submit(item: Any) -> Any:
        future = client.submit(in_worker, fn, item, *shared_on_workers, pure=False,
                               priority=next(order))
        running.add(future)
        return future

    # lazy: dask.distributed is optional (pip install 'dpexp[dask]')
    from distributed import as_completed

    done = as_completed([submit(item) for item in [*first, *islice(pending, CELLS_AHEAD * threads - 1)]])
    try:
        for future in done:
            result = future.result()  # a cell's error is raised here, as joblib does
            running.discard(future)
            for item in islice(pending, 1):  # before yielding: the worker waits for nothing
                done.add(submit(item))
            yield result
    finally:
        if running:  # an error or a consumer that stopped: no cell keeps running
            client.cancel(list(running))
        if shared_on_workers:
            client.cancel(shared_on_workers)


def _cluster_threads(client: Any) -> int:
    """Threads of the dask cluster (waiting for a first worker if it has none yet)."""
    threads = sum(client.ncores().values())
    if threads:
        return threads
    try:
        client.wait_for_workers(1, timeout=DASK_WORKER_WAIT)
    except TimeoutError:
        raise DpexpError(f"The dask scheduler has no worker after {DASK_WORKER_WAIT} s; "
                         "start workers with `dask worker SCHEDULER_ADDRESS`.") from None
    return max(1, sum(client.ncores().values()))


@contextlib.contextmanager
def dask_client(scheduler: str | None, n_workers: int, *, single_threaded: bool = False):
    """A dask.distributed client: to ``scheduler`` if given, else to a new LocalCluster
    (of ``n_workers`` processes of one task each; ``single_threaded``: each with
    :func:`single_threaded_env`)."""
    try:
        # lazy: dask.distributed is optional (pip install 'dpexp[dask]')
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise DpexpError("The dask backend needs dask.distributed: pip install 'dpexp[dask]'.") from None
    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout="20s")
        else:
            env = single_threaded_env() if single_threaded else {}
            # memory_limit=0: no per-worker cap, as a loky worker has none. dask's default
            # (the machine's memory / workers) pauses a worker at 80% and kills it at 95%,
            # which the paper-scale draw of synthetic_cls (1M x 400) comes close to; `dpexp
            # plan` recommends a worker count that fits the memory instead.
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None, env=env,
                                   memory_limit=0)
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
