"""Ctrl-C and SIGTERM while a command runs: both stop it the same way, and neither is lost.

A command stops on Ctrl-C (``KeyboardInterrupt``) or SIGTERM (:class:`Terminated`, raised
where Ctrl-C would be): its workers stopped, its finished cells kept, one line saying how
to resume, and the exit status a shell expects (:data:`INTERRUPTED`, :data:`TERMINATED`).

Python runs a signal's handler in the main thread at the next bytecode boundary. When that
boundary lies in a Python function called back from C -- llvmlite calls its object-cache
hooks so while numba compiles or loads a kernel, which a first run does for minutes -- the
exception the handler raises cannot propagate: the C caller reports it to
``sys.unraisablehook`` and goes on, and the run ignored the signal. While a command runs,
such a swallowed interrupt is sent again shortly after (:class:`_ResendSwallowed`), until
it lands in ordinary Python code.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

#: Exit status after Ctrl-C (128 + SIGINT), as a shell reports a process it interrupted.
INTERRUPTED = 130
#: Exit status after SIGTERM (128 + 15).
TERMINATED = 143
#: Seconds before a swallowed interrupt is sent again: long enough for the C call that
#: swallowed it to return to Python code, short beside a person waiting.
RESEND_AFTER = 0.05


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be, so a terminated run stops the same way."""


def _raise_terminated(signum, frame) -> None:  # noqa: ARG001 - a signal handler's signature
    raise Terminated


class _ResendSwallowed:
    """An unraisable hook that sends an interrupt swallowed by a C callback again (the
    module docstring), from a timer thread: sent from the hook itself, its handler would
    run within the hook, where it is swallowed once more. Other reports go to
    ``previous``. :meth:`cancel` stops the resends still pending when the command ends
    (it has stopped, as the interrupt asked; a late one would hit its caller)."""

    def __init__(self, previous: Callable) -> None:
        self.previous = previous
        self.pending: list[threading.Timer] = []

    def __call__(self, unraisable) -> None:
        exc_type = unraisable.exc_type
        if exc_type is None or not issubclass(exc_type, KeyboardInterrupt):
            self.previous(unraisable)
            return
        signum = signal.SIGTERM if issubclass(exc_type, Terminated) else signal.SIGINT
        timer = threading.Timer(RESEND_AFTER, os.kill, (os.getpid(), signum))
        timer.daemon = True
        self.pending.append(timer)
        timer.start()

    def cancel(self) -> None:
        for timer in self.pending:
            timer.cancel()


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """While a command runs: SIGTERM raises :class:`Terminated`, and an interrupt that a C
    callback swallowed is sent again. Main thread only: signal handlers cannot be set
    elsewhere (e.g. under a test runner's thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous_term = signal.signal(signal.SIGTERM, _raise_terminated)
    previous_hook = sys.unraisablehook
    resend = sys.unraisablehook = _ResendSwallowed(previous_hook)
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        resend.cancel()
        signal.signal(signal.SIGTERM, previous_term)
