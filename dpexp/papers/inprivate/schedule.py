"""Algorithm 2 with one real worker per participant: the baseline chain (Section VI-A) and
the speed-up schedule (Section VI-C) of InPrivate Digging (Zhao et al. 2018).

Each participant is a process (joblib/loky, or a dask worker with ``backend="dask"``)
holding only her own records. Trees travel as pickled :class:`TreeMessage` bytes through
one inbox per participant (a ``multiprocessing.Manager`` queue, or a
``distributed.Queue`` on dask):

* ``"baseline"``: participant ``i`` waits for the message of participant ``i - 1``, which
  carries *all* trees so far (Algorithm 2 line 10); only then she evaluates them on her
  records (``(i-1) c_1``) and trains her tree (``c_2``). Total time Eq. (18):
  ``c(n) = (n^2 - n)/2 c_1 + n c_2``.
* ``"speedup"``: every new tree is broadcast to all other participants, who evaluate it as
  soon as it arrives, while they wait. Total time Eq. (19): ``c(n) = (n-1) c_1 + n c_2``.

All participants pass a barrier before the clock starts; each logs a wall-clock timeline
(``time.time()``, comparable across processes of one machine) of ``recv``/``eval``/
``train``/``send`` events. The protocol itself (quality checks, rounds, stop) is
:class:`dpexp.papers.inprivate.estimators.ParticipantNode`, so the trees equal those of the
in-process run with the same seeds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpexp.papers.inprivate.formulas import SCHEDULES
from dpexp.papers.inprivate.protocol import (
    ParticipantNode,
    ProtocolConfig,
    TreeMessage,
    grow_inprivate_tree,
    tree_contribution,
)

_DONE = b"DONE"


@dataclass(frozen=True)
class Event:
    """One timeline entry: ``t`` seconds after the common start."""

    participant: int
    kind: str  # recv | eval_start | eval_end | train_start | train_end | send
    slot: int
    t: float
    n_bytes: int = 0


@dataclass
class ScheduleResult:
    messages: list[TreeMessage]
    timeline: list[Event]
    schedule: str
    n_participants: int
    total_seconds: float = 0.0
    n_sends: int = 0
    bytes_sent: int = 0
    extras: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- channels


class ManagerChannel:
    """Inboxes as ``multiprocessing.Manager`` queues (picklable proxies)."""

    def __init__(self, n: int):
        import multiprocessing as mp

        self._manager = mp.Manager()
        self.queues = [self._manager.Queue() for _ in range(n)]
        self.barrier = self._manager.Barrier(n)

    def endpoint(self) -> tuple[list, Any]:
        return self.queues, self.barrier

    def close(self) -> None:
        self._manager.shutdown()


class DaskChannel:
    """Inboxes as ``distributed.Queue`` objects named per run (dask workers)."""

    def __init__(self, n: int, client):
        from distributed import Queue

        run = uuid.uuid4().hex
        self.names = [f"inprivate-{run}-{i}" for i in range(n)]
        self.start = f"inprivate-{run}-start"
        self._keep = [Queue(name, client=client) for name in [*self.names, self.start]]

    def endpoint(self) -> tuple[list, Any]:
        return self.names, self.start

    def close(self) -> None:
        for q in self._keep:
            with contextlib.suppress(Exception):  # best-effort cleanup
                q.close()


class _Inboxes:
    """Worker-side view of either channel."""

    def __init__(self, queues, sync, n: int):
        self.n = n
        if queues and isinstance(queues[0], str):
            from distributed import Queue

            self.kind = "dask"
            self.queues = [Queue(name) for name in queues]
            self.start = Queue(sync)
        else:
            self.kind = "manager"
            self.queues, self.barrier = queues, sync

    def wait_all(self, pid: int) -> None:
        """Block until every participant is ready (so the clock starts together)."""
        if self.kind == "manager":
            self.barrier.wait()
            return
        self.start.put(pid)  # nobody consumes these: the size counts the ready workers
        while self.start.qsize() < self.n:
            time.sleep(0.001)

    def put(self, to: int, payload: bytes) -> None:
        self.queues[to].put(payload)

    def get(self, pid: int) -> bytes:
        return self.queues[pid].get()


# ----------------------------------------------------------------------------- worker


def warm_up(node: ParticipantNode) -> None:
    """Load the compiled kernels (numba) before the clock starts: grow and apply a
    non-private tree on a few of the node's rows, touching none of its state or noise
    generators (a non-private tree draws no noise; its rng argument goes unused)."""
    cfg = dataclasses.replace(node.cfg, private=False)
    X = node.X[: min(8, node.X.shape[0])]
    if X.shape[0] == 0:
        return
    tree = grow_inprivate_tree(cfg, X, np.zeros(X.shape[0]), np.random.default_rng(0), None, "warm-up")
    tree_contribution(tree, X, 1.0)


def participant_worker(node: ParticipantNode, schedule: str, queues, sync) -> dict:
    """Run one participant until her last slot or a stop; returns her messages, timeline
    and the number of bytes she sent."""
    cfg: ProtocolConfig = node.cfg
    N, K, pid = cfg.n_participants, cfg.n_slots, node.pid
    box = _Inboxes(queues, sync, N)
    warm_up(node)
    box.wait_all(pid)
    t0 = time.time()
    events: list[Event] = []
    sent: list[TreeMessage] = []
    history: list[TreeMessage] = []  # baseline: the trees received so far, passed on
    n_sends = n_bytes = 0

    def log(kind: str, slot: int, nb: int = 0) -> None:
        events.append(Event(pid, kind, slot, time.time(), nb))  # absolute; shifted in collect

    def absorb_all() -> None:
        while node.can_absorb():
            k = node.n_absorbed
            log("eval_start", k)
            node.absorb_next()
            log("eval_end", k)

    my_slots = list(range(pid, K, N))
    done = False
    for k in my_slots:
        while node.n_absorbed < k and not done:
            absorb_all()
            if node.n_absorbed >= k or node.stopped:
                break
            payload = box.get(pid)
            if payload == _DONE:
                done = True
                break
            msgs: list[TreeMessage] = pickle.loads(payload)
            log("recv", msgs[-1].slot, len(payload))
            if schedule == "baseline":
                history = msgs
            node.receive(msgs)
        if done or node.stopped:
            break
        log("train_start", k)
        msg = node.train(k)
        log("train_end", k)
        sent.append(msg)
        msg = dataclasses.replace(msg, ledger=[])  # the ledger stays with its owner
        if schedule == "baseline":
            history = [*history, msg]
            if k + 1 < K and not msg.stop:
                data = pickle.dumps(history, protocol=pickle.HIGHEST_PROTOCOL)
                box.put((pid + 1) % N, data)
                n_sends, n_bytes = n_sends + 1, n_bytes + len(data)
                log("send", k, len(data))
        else:
            data = pickle.dumps([msg], protocol=pickle.HIGHEST_PROTOCOL)
            for other in range(N):
                if other != pid and k + 1 < K and not msg.stop:
                    box.put(other, data)
                    n_sends, n_bytes = n_sends + 1, n_bytes + len(data)
            log("send", k, len(data))
        if msg.stop or k == K - 1:
            for other in range(N):
                if other != pid:
                    box.put(other, _DONE)
            break
    return {"pid": pid, "messages": sent, "events": events, "n_sends": n_sends, "bytes": n_bytes,
            "t0": t0}


# ----------------------------------------------------------------------------- driver


def run_parallel(nodes: list[ParticipantNode], cfg: ProtocolConfig, *, schedule: str = "speedup",
                 backend: str = "loky", client=None) -> ScheduleResult:
    """Run Algorithm 2 with one worker per participant and collect trees and timeline.

    ``backend="loky"``: joblib processes (``n_jobs = N``). ``backend="dask"``: one task per
    participant on a dask.distributed cluster (``client`` or the current default client),
    which must offer at least ``N`` worker threads, since every participant stays alive
    waiting for the trees of the others.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    N = cfg.n_participants
    if backend == "loky":
        from joblib import Parallel, delayed

        channel = ManagerChannel(N)
        try:
            queues, sync = channel.endpoint()
            out = Parallel(n_jobs=N, backend="loky")(
                delayed(participant_worker)(node, schedule, queues, sync) for node in nodes)
        finally:
            channel.close()
    elif backend == "dask":
        from distributed import default_client

        client = client or default_client()
        slots = sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())
        if slots < N:
            raise ValueError(f"the dask cluster has {slots} worker threads; the schedule needs one "
                             f"per participant ({N})")
        channel = DaskChannel(N, client)
        try:
            queues, sync = channel.endpoint()
            futures = [client.submit(participant_worker, node, schedule, queues, sync, pure=False)
                       for node in nodes]
            out = client.gather(futures)
        finally:
            channel.close()
    else:
        raise ValueError(f"backend must be 'loky' or 'dask', got {backend!r}")
    return collect(out, schedule, N)


def collect(out: list[dict], schedule: str, n_participants: int) -> ScheduleResult:
    """Merge the workers' results; event times become seconds after the earliest start
    (wall clock of one machine, so comparable across the worker processes)."""
    messages = sorted((m for o in out for m in o["messages"]), key=lambda m: m.slot)
    start = min(o["t0"] for o in out)
    timeline = sorted((dataclasses.replace(e, t=e.t - start) for o in out for e in o["events"]),
                      key=lambda e: (e.t, e.participant))
    ends = [e.t for e in timeline if e.kind == "train_end"]
    return ScheduleResult(
        messages=messages, timeline=timeline, schedule=schedule, n_participants=n_participants,
        total_seconds=max(ends) if ends else 0.0, n_sends=sum(o["n_sends"] for o in out),
        bytes_sent=sum(o["bytes"] for o in out),
    )


# ----------------------------------------------------------------------------- analysis


def eq18_seconds(n: int, c1: float, c2: float) -> float:
    """Eq. (18), baseline: ``(n^2 - n)/2 c_1 + n c_2``."""
    return (n * n - n) / 2.0 * c1 + n * c2


def eq19_seconds(n: int, c1: float, c2: float) -> float:
    """Eq. (19), speed-up: ``(n - 1) c_1 + n c_2``."""
    return (n - 1) * c1 + n * c2


def durations(timeline: list[Event], kind: str) -> np.ndarray:
    """Durations of the ``kind`` (``"eval"`` or ``"train"``) intervals of a timeline."""
    starts = {(e.participant, e.slot): e.t for e in timeline if e.kind == f"{kind}_start"}
    return np.array([e.t - starts[(e.participant, e.slot)] for e in timeline
                     if e.kind == f"{kind}_end" and (e.participant, e.slot) in starts])


def schedule_order_ok(result: ScheduleResult) -> bool:
    """The event order Algorithm 2 / Section VI-C demands: tree ``k`` is trained only after
    tree ``k - 1`` was trained and every tree ``< k`` was evaluated by its trainer."""
    tl = result.timeline
    end = {e.slot: e.t for e in tl if e.kind == "train_end"}
    for e in tl:
        if e.kind != "train_start" or e.slot == 0:
            continue
        if end.get(e.slot - 1, np.inf) > e.t:
            return False
        evals = {x.slot for x in tl if x.kind == "eval_end" and x.participant == e.participant
                 and x.t <= e.t}
        own = {x.slot for x in tl if x.kind == "train_end" and x.participant == e.participant
               and x.t <= e.t}
        if not set(range(e.slot)) <= (evals | own):
            return False
    return True
