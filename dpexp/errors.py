"""User-facing errors.

Anything a user can cause (a typo in a name, a bad spec, a corrupted download, an
epsilon <= 0) raises a subclass of :class:`DpexpError`. The CLI prints its message as
one paragraph and exits non-zero, without a traceback. Programming errors are left as
ordinary exceptions so that they do show a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class DpexpError(Exception):
    """An error caused by the user's input or environment, reported without traceback."""

    exit_code = 2


class UnknownNameError(DpexpError):
    """A dataset, experiment, algorithm or audit target that is not registered."""

    def __init__(self, kind: str, name: str, known: Iterable[str], *, where: str = ""):
        known = sorted(known)
        # Names that merely add a prefix (fig11 -> fletcher-fig11) are the likeliest intent.
        suffixed = [k for k in known if k.endswith(f"-{name}") or k.endswith(f"_{name}")]
        close = (suffixed + [c for c in difflib.get_close_matches(name, known, n=3, cutoff=0.5)
                             if c not in suffixed])[:3]
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = ", ".join(known) if len(known) <= 30 else ", ".join(known[:30]) + ", ..."
        super().__init__(f"Unknown {kind} {name!r}{where}.{hint} Known {kind}s{where}: {listing}.")
        self.kind, self.name, self.suggestions = kind, name, close


class SpecError(DpexpError):
    """A malformed YAML spec (experiment or dataset registry); the message names the key."""


class DatasetError(DpexpError):
    """A dataset that cannot be had: checksum mismatch, missing local file, wrong shape."""


class DatasetUnavailableError(DatasetError):
    """A dataset this machine cannot get: no network or mirror that serves it, no public URL,
    or a user-supplied file not supplied (a corrupted download is a plain DatasetError)."""


class BudgetExceededError(DpexpError):
    """A run tried to spend more privacy budget than it was given. Never caught by runners."""

    exit_code = 3


def check_epsilon(epsilon: float, *, name: str = "epsilon", allow_inf: bool = False) -> float:
    """Validate a privacy parameter: a finite number > 0 (or +inf when ``allow_inf``)."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number > 0, got {epsilon!r}") from None
    if value != value:  # NaN
        raise ValueError(f"{name} must be a number > 0, got NaN")
    if value == float("inf") and allow_inf:
        return value
    if not (0.0 < value < float("inf")):
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return value


class DpexpWarning(UserWarning):
    """Something a user should know that does not stop the command (the CLI prints it as one
    ``warning:`` line)."""


class WorkerDiedWarning(DpexpWarning):
    """A worker process of a run died (killed, out of memory); its cells run again."""


class CorruptCellWarning(DpexpWarning):
    """A cached cell file that is not a finished cell (unreadable, edited after it was
    written, rows missing): skipped, or moved aside and recomputed by ``dpexp run``."""


class CellConflictWarning(DpexpWarning):
    """A cached cell whose numbers differ from the committed table's and that this code did
    not compute: the committed values stand (:mod:`dpexp.experiments.reconcile`)."""


class PrivacyLeakWarning(DpexpWarning):
    """A fit released something of the private data that no accountant charged, so it is
    not differentially private (diffprivlib's warning of the same name, for the same
    thing): e.g. a scikit-learn scaler that learned its bounds from the data, ahead of a
    DP estimator in a ``Pipeline``."""


class RunWaitsWarning(DpexpWarning):
    """Another run is computing the same experiment in the same results directory: this one
    waits for it, then computes only what is left."""
