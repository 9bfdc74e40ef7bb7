"""InPrivate Digging (Zhao et al. 2018), the formulas: residuals (Eq. 6, 13), Newton
leaves (Eq. 8, 14), the square-error gain, sensitivities (Section V-A), the budget split
(Theorem 7), round and participant shares (Section VI-B) and the paper's down-sampled
binning. Pure functions, no estimator state; see :mod:`dpexp.papers.inprivate.estimators`
for the privacy notes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpexp.privacy import RecordIds, record_partition
from dpexp.privacy.public import DataDependentWarning
from dpexp.privacy.randomness import Rng
from dpexp.trees.binning import MAX_BINS, BinMapper, categorical_thresholds

TASKS = ("classification", "regression")
FINAL_ROUNDS = ("rest", "half")
BINNINGS = ("domain", "downsample")
SCHEDULES = ("baseline", "speedup")

# ----------------------------------------------------------------------------- formulas


def classification_residuals(y: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Eq. (6): ``y~ = 2y / (1 + exp(2 y F))`` for labels ``y`` in {-1, 1} (|y~| < 2)."""
    return 2.0 * y / (1.0 + np.exp(np.clip(2.0 * y * F, -700.0, 700.0)))


def regression_residuals(y: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Eq. (13): ``y~ = y - F`` (square loss, Eq. 12)."""
    return y - F


def newton_denominator(r: np.ndarray) -> np.ndarray:
    """Per-record term ``|y~| (2 - |y~|)`` of the Newton-Raphson step, Eq. (8)."""
    a = np.abs(r)
    return a * (2.0 - a)


def newton_leaf(residuals: np.ndarray) -> float:
    """Eq. (8): ``gamma = sum y~ / sum |y~|(2 - |y~|)`` over the records of one leaf."""
    r = np.asarray(residuals, dtype=np.float64)
    return float(r.sum() / newton_denominator(r).sum())


def square_error_gain(s_left, n_left, s_total, n_total):
    """``gain = E - E_L - E_R`` (Section III-B) from residual sums and counts.

    With ``E = sum (y~ - mean)^2 = sum y~^2 - S^2 / n`` the ``sum y~^2`` terms cancel, so
    ``gain = S_L^2/n_L + S_R^2/n_R - S^2/n`` (a term is 0 when its count is 0).
    """

    def term(s, n):
        # one masked division instead of where(): this runs on every (node, candidate)
        # of every level, the largest array of a depth-10 fit
        s, n = np.asarray(s, dtype=np.float64), np.asarray(n, dtype=np.float64)
        out = np.zeros(np.broadcast_shapes(s.shape, n.shape))
        return np.divide(s * s, n, out=out, where=n > 0)

    s_right, n_right = s_total - s_left, n_total - n_left
    return term(s_left, n_left) + term(s_right, n_right) - term(s_total, n_total)


@dataclass(frozen=True)
class Sensitivities:
    """Sensitivities of the releases for residuals clipped to ``[-clip, clip]``."""

    split: float  # Delta of the gain (Section V-A: 4 for residuals in [-1, 1])
    leaf_numerator: float  # sum of residuals (Eq. 11 / 15: 1)
    leaf_denominator: float  # sum |r|(2-|r|) (Eq. 11) or count (Eq. 15): 1
    quality_delta: float  # improvement of correct count (1) or of sum |err| (2)
    count: float = 1.0


def sensitivities(task: str, residual_clip: float) -> Sensitivities:
    """Sensitivities for clip ``c``: ``4 c^2`` (gain; Section V-A gives 4 at c = 1), ``c``
    (residual sum), ``max_{|r|<=c} |r|(2-|r|)`` or 1 (denominator), and for the quality
    check 1 (correct predictions) or 2 (absolute errors clipped to [0, 2])."""
    c = float(residual_clip)
    den = (1.0 if c >= 1.0 else c * (2.0 - c)) if task == "classification" else 1.0
    quality = 1.0 if task == "classification" else 2.0
    return Sensitivities(split=4.0 * c * c, leaf_numerator=c, leaf_denominator=den,
                         quality_delta=quality)


def leaf_bound(task: str, residual_clip: float) -> float:
    """The range ``[-b, b]`` an exact leaf lies in: ``c`` (mean residual, Eq. 14) or
    ``1 / (2 - c)`` (Newton step Eq. 8, since ``|r| / |r|(2-|r|) = 1/(2-|r|)``)."""
    c = float(residual_clip)
    return c if task == "regression" else 1.0 / (2.0 - c)


@dataclass(frozen=True)
class Budget:
    """Per-chunk budget (Theorem 7 plus our quality-check share)."""

    epsilon: float
    quality: float  # quality check on the chunk (0 when off)
    tree: float  # Algorithm 1's epsilon
    internal: float  # epsilon_1
    per_level: float  # epsilon_1 / (d - 1)
    leaves: float  # epsilon_2
    per_leaf_query: float  # epsilon_2 / 2


def budget_split(epsilon: float, depth: int, internal_fraction: float,
                 quality_fraction: float = 0.0) -> Budget:
    """Theorem 7: ``epsilon_1 / (d - 1) * (d - 1) + epsilon_2 / 2 * 2 = epsilon_tree``.

    A tree of ``depth = 1`` is a single leaf, so ``epsilon_1 = 0``.
    """
    eps_q = epsilon * quality_fraction
    eps_t = epsilon - eps_q
    eps1 = eps_t * internal_fraction if depth > 1 else 0.0
    eps2 = eps_t - eps1
    return Budget(epsilon=epsilon, quality=eps_q, tree=eps_t, internal=eps1,
                  per_level=eps1 / (depth - 1) if depth > 1 else 0.0, leaves=eps2,
                  per_leaf_query=eps2 / 2.0)


def round_shares(n_rounds: int, final_round: str = "rest") -> np.ndarray:
    """Share of a participant's records used in round ``r = 0..R-1`` (Section VI-B):
    ``2^-(r+1)`` (use and remove half of the remainder); with ``"rest"`` the last round
    takes the whole remainder ``2^-(R-1)``."""
    if final_round not in FINAL_ROUNDS:
        raise ValueError(f"final_round must be one of {FINAL_ROUNDS}, got {final_round!r}")
    shares = 0.5 ** np.arange(1, n_rounds + 1, dtype=np.float64)
    if final_round == "rest":
        shares[-1] = 0.5 ** (n_rounds - 1)
    return shares


class DataDependentShareWarning(DataDependentWarning):
    """``records_per_participant`` was given without ``n_records``: the participants'
    shares were computed from the private number of training records (not DP)."""


#: accountant_.mark_not_dp reason of binning="downsample" (Section V-A's split values).
DOWNSAMPLE_REASON = (
    "split values are averages of three sorted private values (binning='downsample', "
    "Section V-A)"
)

#: accountant_.mark_not_dp reason of a fit whose shares came from the private n.
SHARE_FROM_N_REASON = (
    "participant shares records_per_participant / n from the private number of training "
    "records (n_records not given)"
)


def participant_share(n_participants: int, records_per_participant: int | None = None,
                      n_records: int | None = None) -> float:
    """Share of the training records one participant holds (Section VII-B's subsets).

    ``1 / N`` without ``records_per_participant``; else ``records_per_participant /
    n_records`` (at most ``1 / N``, so the ``N`` participants fit). Both arguments are
    public input, fixed before the data is seen: the share must be the same for
    neighbouring datasets, or adding one record would move other records between chunks
    and void the parallel composition of Section VI-B.
    """
    N = int(n_participants)
    if N < 1:
        raise ValueError(f"n_participants must be >= 1, got {n_participants!r}")
    if records_per_participant is None:
        return 1.0 / N
    if n_records is None:
        raise ValueError("records_per_participant needs n_records (the declared, public number "
                         "of training records the shares refer to)")
    if int(n_records) < 1:
        raise ValueError(f"n_records must be >= 1, got {n_records!r}")
    return min(float(records_per_participant) / int(n_records), 1.0 / N)


def assign_chunks(ids: RecordIds, n_participants: int, share: float,
                  shares_per_round: np.ndarray, rng: Rng) -> tuple[np.ndarray, np.ndarray]:
    """Participant and round of every record (``-1`` = unused), drawn per record with
    :func:`dpexp.privacy.record_partition` (one call for all ``N x R`` disjoint chunks).
    ``ids`` are the records' content ids (:func:`dpexp.privacy.record_ids`), ``share``
    and ``shares_per_round`` are public, and ``rng`` is structure randomness: then a
    record's chunk depends on that record only, not on its row or the other records."""
    R = shares_per_round.size
    props = (share * shares_per_round[None, :]).repeat(n_participants, axis=0).ravel()
    props = props / max(1.0, float(props.sum()) * (1 + 1e-12))
    part = record_partition(ids, props, rng)
    owner = np.where(part >= 0, part // R, -1)
    rnd = np.where(part >= 0, part % R, -1)
    return owner, rnd


def downsample_thresholds(column: np.ndarray, max_bins: int = MAX_BINS) -> np.ndarray:
    """Section V-A down-sampling: sort the values (non-descending) and average every three,
    ``(a1+a2+a3)/3, (a4+a5+a6)/3, ...``. NOT differentially private (the averages are
    functions of individual values). At most ``max_bins - 1`` thresholds are kept (evenly
    spaced among the averages) because the grower stores ``uint8`` bin codes."""
    col = np.sort(np.asarray(column, dtype=np.float64)[np.isfinite(column)])
    if col.size == 0:
        return np.empty(0)
    groups = np.arange(col.size) // 3
    sums = np.bincount(groups, weights=col)
    avg = np.unique(sums / np.bincount(groups))
    if avg.size > max_bins - 1:
        avg = avg[np.unique(np.linspace(0, avg.size - 1, max_bins - 1).round().astype(int))]
    return avg


def downsample_mapper(X, categorical_features, n_categories, max_bins: int) -> BinMapper:
    """A :class:`BinMapper` with :func:`downsample_thresholds` for continuous features and
    one bin per public category code for categorical ones."""
    d = X.shape[1]
    cat = np.zeros(d, bool) if categorical_features is None else np.asarray(categorical_features, bool)
    ncat = np.zeros(d, np.int64) if n_categories is None else np.asarray(n_categories)
    dense = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    thr = []
    for f in range(d):
        if cat[f] and 0 < ncat[f] <= MAX_BINS:
            thr.append(categorical_thresholds(int(ncat[f])))
        else:
            thr.append(downsample_thresholds(dense[:, f], max_bins))
    return BinMapper(thresholds=thr, strategy="downsample")
