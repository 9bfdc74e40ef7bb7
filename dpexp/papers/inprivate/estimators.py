"""InPrivate Digging (Zhao et al. 2018): differentially private GBDT across data owners.

Paper: "InPrivate Digging: Enabling Tree-based Distributed Data Mining with Differential
Privacy" (INFOCOM 2018), ``shared/papers/inprivate-digging-zhao-2018.txt``.

* **One tree** (Section V, Algorithm 1) on the shared histogram grower
  (:func:`dpexp.trees.grower.grow_tree`). Residuals: Eq. (6) for binary classification
  (negative binomial log-likelihood, Eq. 5, labels in {-1, 1}), Eq. (13) for regression
  (square loss, Eq. 12, labels scaled to [-1, 1] with the public label domain). Splits:
  the exponential mechanism (Eq. 10) over every candidate with utility
  ``gain = E - E_L - E_R`` (square error of the residuals) and ``Delta = 4`` for residuals
  in [-1, 1] (Section V-A). Leaves: the one-step Newton coefficient Eq. (8) perturbed as
  Eq. (11) (classification) or the mean residual Eq. (14) perturbed as Eq. (15)
  (regression); both leaf queries have sensitivity 1. Budget (Theorem 7):
  ``epsilon_1`` split equally over the ``d - 1`` split levels, ``epsilon_2 = epsilon -
  epsilon_1`` split equally over the two leaf queries; nodes of one level and leaves hold
  disjoint records (parallel composition).
* **Boosting across owners** (Section VI-A, Algorithm 2): ``N`` participants in a fixed
  order; each trains one tree on her own records with the residuals of all previous trees
  and passes the ensemble on (Eq. 16, no shrinkage by default). **Rounds** (Section
  VI-B): round ``r`` uses and removes half of each participant's remaining records, so
  every tree sees a disjoint chunk; ``final_round="rest"`` (our default) lets the last
  permitted round use the whole remainder, ``"half"`` is the strict halving rule.
  **Quality control** (Section VI-B): the accuracy (classification) or MAE (regression,
  Eq. 17) improvement of each received tree on the next participant's own fresh chunk,
  released with the Laplace mechanism; a tree that makes it worse can be rejected, and
  the *advance* of a round (the sum of those improvements per record) is compared with
  the threshold ``p`` to stop.
* **Speed-up** (Section VI-C): :mod:`dpexp.papers.inprivate.schedule` runs the same
  protocol with one worker process per participant (``n_jobs != 1``).

Privacy notes (see also the spec captions):

* The paper's bounds assume residuals in [-1, 1], but Eq. (6) gives ``|y~| < 2``; we
  enforce the assumption by clipping the residuals to ``[-residual_clip, residual_clip]``
  (default 1) and derive the sensitivities from the clip: ``Delta_split = 4 c^2``, leaf
  numerator ``c``, Newton denominator ``max_{|r|<=c} |r|(2-|r|)`` (1 for c >= 1), count 1.
* The quality check and the advance are data-dependent decisions the paper does not
  charge; we release them with the Laplace mechanism from a share ``quality_fraction`` of
  the chunk's budget (sequential composition with the tree trained on the same chunk), so
  every chunk costs exactly ``epsilon`` and the disjoint chunks compose in parallel.
* The paper's down-sampling of continuous features (``binning="downsample"``: averages of
  every three sorted values of the participant's chunk) publishes data-dependent split
  values and is **not** differentially private; the default ``binning="domain"`` uses a
  grid over the public feature domain.
* Participants and rounds are chunks of one :func:`dpexp.privacy.record_partition`
  (each record draws its chunk independently from the *structure* stream), so adding or
  removing a record changes one chunk only -- the premise of the parallel composition of
  Section VI-B. The shares of that partition are public: ``1 / N`` per participant, or
  ``records_per_participant / n_records`` with ``n_records`` the *declared* size of the
  training data (the paper's setup, Section VII-B: "20 subsets, each of which has 1,000
  records", is a design fixed before the data is seen). The private ``n`` never sets a
  share: when ``records_per_participant`` is given without ``n_records`` the fit falls
  back on ``n`` with a :class:`DataDependentShareWarning` and is marked not DP
  (``accountant_.mark_not_dp``): with ``share = rpp / n`` adding one record moves the
  chunk boundaries, so other records change chunk too (measured by the audit target
  ``inprivate_share_from_n``, :mod:`dpexp.papers.inprivate.audit`).
* Randomness (:func:`dpexp.privacy.randomness.estimator_streams`): the record partition
  comes from the structure stream (``random_state``), every mechanism draw -- exponential
  splits, Laplace leaves, the quality releases -- from the noise stream (``noise_rng``;
  ``noise_rng=dpexp.privacy.secure_generator()`` for a published model), one child per
  tree slot.
* Public input: ``classes`` (the declared label set, classifiers), ``label_domain``
  (regressors), ``feature_domain`` (``binning="domain"``) and ``n_records``. Any of them
  missing is read from the private data with a warning and the fit is marked not DP.
* Noisy leaves: a noisy denominator is floored at ``leaf_denominator_floor`` and the
  coefficient clipped to the range its exact value lies in (post-processing, free).
"""

from __future__ import annotations

import math
import pickle
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpexp.boosting.gbdt import (
    ScaledScoreRegressorMixin,
    apply_tree,
    make_bin_mapper,
    not_dp_reasons,
    prepare_predict_matrix,
)
from dpexp.boosting.labels import BinaryScoreClassifierMixin
from dpexp.errors import check_epsilon
from dpexp.privacy import Accountant, exponential_mechanism, laplace_mechanism, record_partition
from dpexp.privacy.public import DataDependentWarning
from dpexp.privacy.randomness import EstimatorStreams, Rng, estimator_streams, spawn_generators
from dpexp.trees.binning import MAX_BINS, BinMapper, categorical_thresholds
from dpexp.trees.grower import LeafContext, SplitContext, grow_tree
from dpexp.trees.tree import ArrayTree

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
        return np.where(n > 0, s * s / np.maximum(n, 1e-300), 0.0)

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


def assign_chunks(n: int, n_participants: int, share: float, shares_per_round: np.ndarray,
                  rng: Rng) -> tuple[np.ndarray, np.ndarray]:
    """Participant and round of every record (``-1`` = unused), drawn per record with
    :func:`dpexp.privacy.record_partition` (one call for all ``N x R`` disjoint chunks).
    ``share`` and ``shares_per_round`` are public, and ``rng`` is structure randomness:
    then a record's chunk does not depend on the other records."""
    R = shares_per_round.size
    props = (share * shares_per_round[None, :]).repeat(n_participants, axis=0).ravel()
    props = props / max(1.0, float(props.sum()) * (1 + 1e-12))
    part = record_partition(n, props, rng)
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


# ----------------------------------------------------------------------------- policies


def candidate_gains(ctx: SplitContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gains of every public candidate ``(feature, bin)`` of every open node.

    Statistics: column 0 the residual, column 1 the count. Returns ``gains (J, C)``,
    ``features (C,)``, ``bins (C,)`` with only the candidates of the bin mapper.
    """
    hist = ctx.hist
    J, d, B = hist.shape[:3]
    valid = np.arange(B)[None, :] < ctx.n_candidates[:, None]  # (d, B)
    feats, bins = np.nonzero(valid)
    s_left = np.cumsum(hist[..., 0], axis=2)[:, feats, bins]
    n_left = np.cumsum(hist[..., 1], axis=2)[:, feats, bins]
    gains = square_error_gain(s_left, n_left, ctx.totals[:, 0:1], ctx.totals[:, 1:2])
    return gains, feats, bins


@dataclass
class SquareErrorSplit:
    """Algorithm 1 lines 5-11: the exponential mechanism over all candidates with
    ``P(v) ∝ exp(epsilon_1 / (d-1) * gain / (2 Delta))`` (Eq. 10), one release per node in
    a parallel scope per level. ``epsilon=None`` is the non-private greedy split (No-Priv),
    which makes a leaf when no candidate has a positive gain."""

    epsilon: float | None
    sensitivity: float

    def __call__(self, ctx: SplitContext) -> tuple[np.ndarray, np.ndarray]:
        none = np.full(ctx.n_nodes, -1, dtype=np.int64)
        gains, feats, bins = candidate_gains(ctx)
        if feats.size == 0:
            return none, none.copy()
        if self.epsilon is None:
            best = np.argmax(gains, axis=1)
            ok = gains[np.arange(ctx.n_nodes), best] > 1e-12
            return np.where(ok, feats[best], -1), np.where(ok, bins[best], -1)
        acc = ctx.accountant
        with acc.parallel(f"{ctx.label} level {ctx.depth + 1} splits"):
            for node in ctx.node_ids:
                acc.spend(self.epsilon, what=f"{ctx.label} level {ctx.depth + 1} node {int(node)} split",
                          mechanism="exponential", sensitivity=self.sensitivity)
        choice = np.atleast_1d(exponential_mechanism(
            gains, epsilon=self.epsilon, sensitivity=self.sensitivity, rng=ctx.rng))
        return feats[choice].astype(np.int64), bins[choice].astype(np.int64)


@dataclass
class InPrivateLeaf:
    """Leaf coefficients: Eq. (8) / Eq. (14) exactly (``epsilon=None``) or perturbed as
    Eq. (11) / Eq. (15): ``(sum y~ + Lap) / (denominator + Lap)`` with ``epsilon_2 / 2``
    per query. Statistic column 0 is the residual, column ``den_col`` the denominator
    (``|y~|(2-|y~|)`` for classification, the count for regression)."""

    epsilon: float | None
    den_col: int
    sens_numerator: float = 1.0
    sens_denominator: float = 1.0
    denominator_floor: float = 1.0
    bound: float = 1.0

    def __call__(self, ctx: LeafContext) -> np.ndarray:
        num = ctx.totals[:, 0].copy()
        den = ctx.totals[:, self.den_col].copy()
        if self.epsilon is None:
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
        acc = ctx.accountant
        with acc.parallel(f"{ctx.label} leaves"):
            for node in ctx.node_ids:
                with acc.sequential(f"{ctx.label} leaf {int(node)}"):
                    acc.spend(self.epsilon, what=f"{ctx.label} leaf {int(node)} numerator",
                              mechanism="laplace", sensitivity=self.sens_numerator)
                    acc.spend(self.epsilon, what=f"{ctx.label} leaf {int(node)} denominator",
                              mechanism="laplace", sensitivity=self.sens_denominator)
        num = np.atleast_1d(laplace_mechanism(num, epsilon=self.epsilon,
                                              sensitivity=self.sens_numerator, rng=ctx.rng))
        den = np.atleast_1d(laplace_mechanism(den, epsilon=self.epsilon,
                                              sensitivity=self.sens_denominator, rng=ctx.rng))
        value = num / np.maximum(den, self.denominator_floor)
        return np.clip(value, -self.bound, self.bound)


# ----------------------------------------------------------------------------- protocol


@dataclass(frozen=True)
class ProtocolConfig:
    """Everything a participant needs to run Algorithms 1-2 (all public)."""

    task: str
    private: bool
    epsilon: float
    depth: int
    internal_fraction: float
    residual_clip: float
    learning_rate: float
    n_participants: int
    n_rounds: int
    quality_control: bool
    advance_threshold: float | None
    quality_fraction: float
    quality_tolerance: float
    binning: str
    max_bins: int
    leaf_denominator_floor: float | None
    mapper: BinMapper | None = None  # public-domain mapper (binning="domain")
    categorical_features: Any = None
    n_categories: Any = None

    @property
    def n_slots(self) -> int:
        return self.n_participants * self.n_rounds

    @property
    def measures_quality(self) -> bool:
        return self.quality_control or self.advance_threshold is not None

    @property
    def budget(self) -> Budget:
        qf = self.quality_fraction if (self.private and self.measures_quality) else 0.0
        return budget_split(self.epsilon, self.depth, self.internal_fraction, qf)

    def trainer(self, slot: int) -> int:
        return slot % self.n_participants

    def round_of(self, slot: int) -> int:
        return slot // self.n_participants


@dataclass
class TreeMessage:
    """What slot ``slot``'s participant publishes (Algorithm 2 line 6/10): the tree, her
    verdict on the previous tree and the released quality numbers, and the stop flag."""

    slot: int
    sender: int
    tree: ArrayTree
    verdict_prev: bool | None = None
    delta: float | None = None  # released improvement of tree slot-1 on the sender's chunk
    count: float | None = None  # released size of that chunk
    advance: float | None = None  # released advance of the round (last slot of a round)
    stop: bool = False
    ledger: list[dict] = field(default_factory=list)


def tree_contribution(tree: ArrayTree, X, learning_rate: float) -> np.ndarray:
    """``learning_rate * gamma`` of the leaf each row reaches (Eq. 16)."""
    if X.shape[0] == 0:
        return np.zeros(0)
    return learning_rate * tree.value[apply_tree(tree, prepare_predict_matrix(X)), 0]


def quality_improvement(task: str, z: np.ndarray, F: np.ndarray, contrib: np.ndarray) -> float:
    """Improvement from adding a tree, on records with labels ``z``: the change of the number
    of correct predictions (``F > 0`` predicts +1, Eq. 9) or the decrease of the sum of
    absolute errors, each clipped to [0, 2] (Eq. 17 without the 1/n)."""
    G = F + contrib
    if task == "classification":
        return float(np.sum((G > 0) == (z > 0)) - np.sum((F > 0) == (z > 0)))
    return float(np.sum(np.minimum(np.abs(z - F), 2.0)) - np.sum(np.minimum(np.abs(z - G), 2.0)))


def denominator_floor(cfg: ProtocolConfig, sens: Sensitivities) -> float:
    """Floor of a noisy leaf denominator: ``leaf_denominator_floor``, or (None) the scale
    ``Delta / (epsilon_2 / 2)`` of its Laplace noise, at least 1 -- our post-processing:
    a leaf whose noisy count is within the noise is shrunk towards 0 instead of divided
    by a near-zero (or negative) number. Not in the paper."""
    if cfg.leaf_denominator_floor is not None:
        return float(cfg.leaf_denominator_floor)
    b = cfg.budget
    if not cfg.private or b.per_leaf_query <= 0:
        return 1.0
    return max(1.0, sens.leaf_denominator / b.per_leaf_query)


def grow_inprivate_tree(cfg: ProtocolConfig, X, residuals: np.ndarray, rng: np.random.Generator,
                        accountant: Accountant | None, label: str) -> ArrayTree:
    """Algorithm 1 on one chunk: bin (public grid or down-sampling), then grow ``depth - 1``
    split levels with :class:`SquareErrorSplit` and :class:`InPrivateLeaf`."""
    mapper = cfg.mapper
    if mapper is None:
        mapper = downsample_mapper(X, cfg.categorical_features, cfg.n_categories, cfg.max_bins)
    data = mapper.transform(X)
    r = np.asarray(residuals, dtype=np.float64)
    cols = [r, np.ones_like(r)]
    if cfg.task == "classification":
        cols.append(newton_denominator(r))
    stats = np.column_stack(cols) if r.size else np.zeros((0, len(cols)))
    sens = sensitivities(cfg.task, cfg.residual_clip)
    b = cfg.budget
    split = SquareErrorSplit(b.per_level if cfg.private else None, sens.split)
    leaf = InPrivateLeaf(
        b.per_leaf_query if cfg.private else None, den_col=2 if cfg.task == "classification" else 1,
        sens_numerator=sens.leaf_numerator, sens_denominator=sens.leaf_denominator,
        denominator_floor=denominator_floor(cfg, sens), bound=leaf_bound(cfg.task, cfg.residual_clip),
    )
    grown = grow_tree(data, stats, np.arange(data.n_rows), mapper, max_depth=cfg.depth - 1,
                      split_policy=split, leaf_policy=leaf, rng=rng, accountant=accountant,
                      label=label)
    return grown.tree


class ParticipantNode:
    """One data owner running Algorithm 2: absorbs the published trees in slot order
    (evaluating each on her own records: the ``c_1`` work of Section VI-C) and trains the
    trees of her slots (the ``c_2`` work)."""

    def __init__(self, pid: int, X, z: np.ndarray, rounds: np.ndarray, cfg: ProtocolConfig,
                 slot_noise: dict[int, Rng]):
        self.pid, self.X, self.z, self.rounds, self.cfg = pid, X, z, rounds, cfg
        # one noise generator per slot she trains (children of the estimator's noise stream)
        self.slot_noise = slot_noise
        self.F = np.zeros(z.shape[0])  # accepted ensemble on own records
        self.pending: np.ndarray | None = None  # contribution of the last absorbed tree
        self.n_absorbed = 0
        self.buffer: dict[int, TreeMessage] = {}
        self.released: dict[int, tuple[float | None, float | None]] = {}
        self.stopped = False

    # -- receiving
    def receive(self, messages: list[TreeMessage]) -> None:
        for m in messages:
            if m.slot >= self.n_absorbed:
                self.buffer[m.slot] = m

    def can_absorb(self) -> bool:
        return self.n_absorbed in self.buffer

    def absorb_next(self) -> int:
        """Process the next message in slot order: apply the verdict on the previous tree,
        evaluate the new tree on the own records. Returns the slot."""
        m = self.buffer.pop(self.n_absorbed)
        self._settle(m.verdict_prev)
        self.pending = tree_contribution(m.tree, self.X, self.cfg.learning_rate)
        self.released[m.slot] = (m.delta, m.count)
        self.stopped = self.stopped or m.stop
        self.n_absorbed += 1
        return m.slot

    def _settle(self, verdict: bool | None) -> None:
        if self.pending is not None and verdict is not False:
            self.F += self.pending
        self.pending = None

    # -- training
    def train(self, slot: int) -> TreeMessage:
        """Slot ``slot`` (all earlier messages absorbed): quality check of the previous tree on
        this round's chunk, residuals, Algorithm 1, and the advance/stop decision."""
        cfg = self.cfg
        if self.n_absorbed != slot:
            raise RuntimeError(f"participant {self.pid}: slot {slot} before absorbing its predecessors")
        r = cfg.round_of(slot)
        rows = np.flatnonzero(self.rounds == r)
        q_rng, t_rng = spawn_generators(self.slot_noise[slot], 2)  # quality, tree
        acc = Accountant(epsilon=cfg.epsilon if cfg.private else float("inf"))
        b, sens = cfg.budget, sensitivities(cfg.task, cfg.residual_clip)
        label = f"slot {slot} (participant {self.pid}, round {r})"
        verdict = delta = count = None
        with acc.sequential(label):
            if slot > 0 and cfg.measures_quality and self.pending is not None:
                exact = quality_improvement(cfg.task, self.z[rows], self.F[rows], self.pending[rows])
                delta, count = exact, float(rows.size)
                if cfg.private:
                    half = b.quality / 2.0
                    acc.spend(half, what=f"{label} quality of tree {slot - 1}", mechanism="laplace",
                              sensitivity=sens.quality_delta)
                    acc.spend(half, what=f"{label} chunk size", mechanism="laplace", sensitivity=1.0)
                    delta = float(laplace_mechanism(exact, epsilon=half, sensitivity=sens.quality_delta,
                                                    rng=q_rng))
                    count = float(laplace_mechanism(float(rows.size), epsilon=half, sensitivity=1.0,
                                                    rng=q_rng))
                verdict = (not cfg.quality_control) or delta >= cfg.quality_tolerance * max(count, 1.0)
            self._settle(verdict)
            self.released[slot] = (delta, count)
            if cfg.task == "classification":
                res = classification_residuals(self.z[rows], self.F[rows])
            else:
                res = regression_residuals(self.z[rows], self.F[rows])
            res = np.clip(res, -cfg.residual_clip, cfg.residual_clip)
            with acc.sequential(f"{label} tree"):
                tree = grow_inprivate_tree(cfg, self.X[rows], res, t_rng, acc if cfg.private else None,
                                           label=f"tree {slot}")
        advance, stop = None, False
        last_of_round = (slot + 1) % cfg.n_participants == 0
        if cfg.advance_threshold is not None and last_of_round:
            vals = [self.released.get(k, (None, None)) for k in range(slot - cfg.n_participants + 1, slot + 1)]
            num = sum(d for d, _ in vals if d is not None)
            den = sum(c for _, c in vals if c is not None)
            advance = num / max(den, 1.0)
            stop = advance < cfg.advance_threshold
        msg = TreeMessage(slot=slot, sender=self.pid, tree=tree, verdict_prev=verdict, delta=delta,
                          count=count, advance=advance, stop=stop, ledger=acc.ledger())
        # her own tree: evaluated like any other (kept pending until the next verdict)
        self.buffer[slot] = msg
        self.n_absorbed = slot
        self.pending = None
        self.absorb_next()
        return msg


def replay_ledgers(accountant: Accountant, messages: list[TreeMessage]) -> None:
    """Compose the per-chunk ledgers in ``accountant``: the chunks are disjoint (parallel
    composition, Section VI-B privacy analysis); inside a chunk every release keeps the
    scopes it was recorded in (consecutive releases of one scope share it)."""
    with accountant.parallel("disjoint chunks (participants x rounds)"):
        for m in messages:
            opened: list[tuple[tuple[str, str], Any]] = []
            try:
                for e in m.ledger:
                    path = list(zip(e["scope"], e["scope_kinds"], strict=True))
                    k = 0
                    while k < min(len(path), len(opened)) and path[k] == opened[k][0]:
                        k += 1
                    while len(opened) > k:
                        opened.pop()[1].__exit__(None, None, None)
                    for lbl, kind in path[k:]:
                        cm = accountant.sequential(lbl) if kind == "sequential" else accountant.parallel(lbl)
                        cm.__enter__()
                        opened.append(((lbl, kind), cm))
                    info = {key: v for key, v in e.items()
                            if key not in ("index", "what", "epsilon", "delta", "scope", "scope_kinds")}
                    accountant.spend(e["epsilon"], what=e["what"], delta=e["delta"], **info)
            finally:
                while opened:
                    opened.pop()[1].__exit__(None, None, None)


def run_inline(nodes: list[ParticipantNode], cfg: ProtocolConfig) -> list[TreeMessage]:
    """Algorithm 2 in one process: slot ``k`` is trained by participant ``k mod N`` after she
    absorbed every earlier tree; stops after a round whose advance is below ``p``."""
    messages: list[TreeMessage] = []
    for k in range(cfg.n_slots):
        node = nodes[cfg.trainer(k)]
        node.receive(messages[node.n_absorbed:])
        while node.can_absorb():
            node.absorb_next()
        msg = node.train(k)
        messages.append(msg)
        if msg.stop:
            break
    return messages


def accepted_trees(messages: list[TreeMessage]) -> list[ArrayTree]:
    """Trees of the final ensemble: every tree not rejected by its successor's check."""
    by_slot = sorted(messages, key=lambda m: m.slot)
    out = []
    for i, m in enumerate(by_slot):
        nxt = by_slot[i + 1].verdict_prev if i + 1 < len(by_slot) else None
        if nxt is not False:
            out.append(m.tree)
    return out


def message_bytes(messages: list[TreeMessage]) -> int:
    return len(pickle.dumps(messages, protocol=pickle.HIGHEST_PROTOCOL))


# ----------------------------------------------------------------------------- estimators


def _as_float64(X):
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    return np.ascontiguousarray(X, dtype=np.float64)


class _InPrivateBase(BaseEstimator):
    """Shared fit/predict; see the module docstring."""

    _private = True
    _task = "classification"

    def _check_params(self) -> None:
        if int(self.n_participants) < 1:
            raise ValueError(f"n_participants must be >= 1, got {self.n_participants!r}")
        if int(self.n_rounds) < 1:
            raise ValueError(f"n_rounds must be >= 1, got {self.n_rounds!r}")
        if self.records_per_participant is not None and int(self.records_per_participant) < 1:
            raise ValueError("records_per_participant must be >= 1 or None")
        if self.n_records is not None and int(self.n_records) < 1:
            raise ValueError(f"n_records must be >= 1 or None, got {self.n_records!r}")
        if int(self.depth) < 1:
            raise ValueError(f"depth must be >= 1 (levels, root included), got {self.depth!r}")
        if not 0.0 < float(self.internal_fraction) < 1.0:
            raise ValueError(f"internal_fraction must be in (0, 1), got {self.internal_fraction!r}")
        if not 0.0 < float(self.residual_clip) < 2.0:
            raise ValueError(f"residual_clip must be in (0, 2), got {self.residual_clip!r}")
        if not float(self.learning_rate) > 0.0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        if not 0.0 < float(self.quality_fraction) < 1.0:
            raise ValueError(f"quality_fraction must be in (0, 1), got {self.quality_fraction!r}")
        if self.binning not in BINNINGS:
            raise ValueError(f"binning must be one of {BINNINGS}, got {self.binning!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if not 2 <= int(self.max_bins) <= MAX_BINS:
            raise ValueError(f"max_bins must be in [2, {MAX_BINS}], got {self.max_bins!r}")
        if self.leaf_denominator_floor is not None and float(self.leaf_denominator_floor) <= 0:
            raise ValueError("leaf_denominator_floor must be > 0")

    def _protocol_config(self, X) -> tuple[ProtocolConfig, bool]:
        eps = check_epsilon(self.epsilon, name="epsilon") if self._private else float("inf")
        leaked = self.binning == "downsample"
        mapper = None
        if self.binning == "domain":
            mapper, leaked = make_bin_mapper(
                X, binning="domain", feature_domain=self.feature_domain,
                categorical_features=self.categorical_features, n_categories=self.n_categories,
                max_bins=int(self.max_bins), private=self._private)
        cfg = ProtocolConfig(
            task=self._task, private=self._private, epsilon=eps, depth=int(self.depth),
            internal_fraction=float(self.internal_fraction), residual_clip=float(self.residual_clip),
            learning_rate=float(self.learning_rate), n_participants=int(self.n_participants),
            n_rounds=int(self.n_rounds), quality_control=bool(self.quality_control),
            advance_threshold=None if self.advance_threshold is None else float(self.advance_threshold),
            quality_fraction=float(self.quality_fraction), quality_tolerance=float(self.quality_tolerance),
            binning=self.binning, max_bins=int(self.max_bins),
            leaf_denominator_floor=None if self.leaf_denominator_floor is None
            else float(self.leaf_denominator_floor), mapper=mapper,
            categorical_features=self.categorical_features, n_categories=self.n_categories,
        )
        return cfg, leaked

    def _declared_size(self, n: int) -> tuple[int | None, bool]:
        """``(n_records, from_data)``: the declared size the shares refer to, or -- when
        ``records_per_participant`` is given without it -- the private ``n`` with a
        :class:`DataDependentShareWarning` (``from_data`` True: the fit is not DP)."""
        if self.records_per_participant is None or self.n_records is not None:
            return (None if self.n_records is None else int(self.n_records)), False
        if self._private:
            warnings.warn(
                "records_per_participant given without n_records: the participants' shares "
                "come from the private number of training records (not differentially "
                "private); declare n_records (the runner passes the training-set size)",
                DataDependentShareWarning, stacklevel=3)
        return n, True

    def _make_nodes(self, X, z, cfg: ProtocolConfig, streams: EstimatorStreams,
                    n_records: int | None) -> tuple[list[ParticipantNode], float]:
        """The participants: chunks of a record-stable partition with public shares (from
        the structure stream), and one noise generator per tree slot (noise stream).
        Returns the nodes and the expected records per participant."""
        n = X.shape[0]
        share = participant_share(cfg.n_participants, self.records_per_participant, n_records)
        owner, rnd = assign_chunks(n, cfg.n_participants, share,
                                   round_shares(cfg.n_rounds, self.final_round),
                                   np.random.default_rng(streams.structure))
        noise = streams.noise_generators(cfg.n_slots)
        nodes = []
        for p in range(cfg.n_participants):
            idx = np.flatnonzero(owner == p)
            nodes.append(ParticipantNode(
                p, X[idx], z[idx], rnd[idx], cfg,
                {k: noise[k] for k in range(p, cfg.n_slots, cfg.n_participants)}))
        return nodes, share * (n if n_records is None else n_records)

    def fit(self, X, y):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             ensure_all_finite=True)
        self._check_params()
        X = _as_float64(X)
        z = self._fit_targets(X, y)
        cfg, leaked = self._protocol_config(X)
        n_records, share_from_n = self._declared_size(X.shape[0])
        streams = estimator_streams(self.random_state, getattr(self, "noise_rng", None))
        nodes, expected = self._make_nodes(X, z, cfg, streams, n_records)
        t0 = time.perf_counter()
        result = None
        if self.n_jobs in (None, 1):
            messages = run_inline(nodes, cfg)
        else:
            from dpexp.papers.inprivate.schedule import run_parallel

            n_jobs = int(self.n_jobs)
            if 1 < n_jobs < cfg.n_participants:
                raise ValueError(
                    f"n_jobs={n_jobs}: the parallel schedule needs one live worker per participant "
                    f"({cfg.n_participants}); use n_jobs=-1 or n_jobs=1 (in-process)")
            result = run_parallel(nodes, cfg, schedule=self.schedule, backend=self.backend)
            messages = result.messages
        elapsed = time.perf_counter() - t0
        self.accountant_ = Accountant(epsilon=cfg.epsilon)
        if cfg.private:
            replay_ledgers(self.accountant_, messages)
            for reason in self._not_dp_reasons(leaked, share_from_n):
                self.accountant_.mark_not_dp(reason)
        self.messages_ = messages
        self.schedule_result_ = result  # ScheduleResult (timeline, bytes) of a parallel fit
        self.trees_ = accepted_trees(messages)
        n_rejected = sum(1 for m in messages if m.verdict_prev is False)
        advances = [m.advance for m in messages if m.advance is not None]
        self.diagnostics_ = {
            "n_trees_built": float(len(messages)),
            "n_trees_used": float(len(self.trees_)),
            "n_trees_rejected": float(n_rejected),
            "n_rounds_run": float(math.ceil(len(messages) / cfg.n_participants)),
            "last_advance": float(advances[-1]) if advances else float("nan"),
            "records_per_participant_expected": float(expected),
            "epsilon_per_tree": cfg.budget.tree if cfg.private else float("inf"),
            "binning_is_data_dependent": float(leaked),
            "seconds_per_tree": elapsed / max(1, len(messages)),
        }
        return self

    def _not_dp_reasons(self, leaked: bool, share_from_n: bool) -> list[str]:
        """Why this fit is not DP: public input read from the private data (label set,
        label or feature domain, shares), or the paper's down-sampled split values."""
        downsample = self.binning == "downsample"
        reasons = not_dp_reasons(
            classes=getattr(self, "_classes_from_data", False),
            label_domain=getattr(self, "_label_domain_from_data", False),
            feature_domain=leaked and not downsample)
        if downsample:
            reasons.append(DOWNSAMPLE_REASON)
        if share_from_n:
            reasons.append(SHARE_FROM_N_REASON)
        return reasons

    def _raw(self, X):
        check_is_fitted(self, "trees_")
        return _as_float64(validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                                         reset=False))

    def _staged_decision(self, X) -> Iterator[np.ndarray]:
        X = prepare_predict_matrix(self._raw(X))
        F = np.zeros(X.shape[0])
        lr = float(self.learning_rate)
        for t in self.trees_:
            F = F + tree_contribution(t, X, lr)
            yield F

    def _decision(self, X) -> np.ndarray:
        X = prepare_predict_matrix(self._raw(X))
        F = np.zeros(X.shape[0])
        for t in self.trees_:
            F += tree_contribution(t, X, float(self.learning_rate))
        return F


class _ClassifierPart(BinaryScoreClassifierMixin, ClassifierMixin):
    """Binary classification, labels mapped to {-1, +1} (Section V-A)."""

    _task = "classification"

    def predict_proba(self, X) -> np.ndarray:
        """Eq. (9): ``P_+ = 1 / (1 + exp(-2 f(x)))``; columns in the order of the declared
        ``classes_`` (two, whatever the training labels hold)."""
        check_is_fitted(self, "trees_")
        F = self._decision(X)
        p = 1.0 / (1.0 + np.exp(np.clip(-2.0 * F, -700, 700)))
        return np.column_stack([1.0 - p, p])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags


class _RegressorPart(ScaledScoreRegressorMixin, RegressorMixin):
    """Regression, labels scaled to [-1, 1] with the public label domain (Section VII-A)."""

    _task = "regression"


    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


_DOC_PARAMS = """
    Parameters (paper defaults where it gives them)
    ----------
    epsilon: budget of every chunk, hence of the whole ensemble (Section VI-B).
    n_participants: N data owners (Fig. 5: 1-20). records_per_participant: expected
        records per owner (Fig. 6: 100-2,000); None = all records split equally (1/N each).
    n_records: declared (public) number of training records; each owner holds each record
        with probability records_per_participant / n_records (at most 1/N). Needed with
        records_per_participant: without it the private n is used, with a
        DataDependentShareWarning, and the fit is not DP.
    n_rounds: maximum number of rounds R (Fig. 7); final_round: "rest" (the last round
        uses the remainder) or "half" (strict halving rule).
    depth: levels of a tree, root included (Section VII: 10); d - 1 split levels.
    internal_fraction: epsilon_1 / epsilon_tree (the paper does not fix it).
    residual_clip: residuals clipped to [-c, c]; the paper's sensitivities hold for c = 1.
    learning_rate: 1.0 = Eq. (16) without shrinkage.
    quality_control: reject a tree whose released improvement on the next owner's chunk
        is below quality_tolerance per record; advance_threshold: p (None = run all rounds);
        quality_fraction: share of each chunk's epsilon for these releases.
    binning: "domain" (public grid of max_bins bins, private) or "downsample" (Section V-A,
        NOT private). leaf_denominator_floor: post-processing of the noisy denominator
        (None: the scale of its Laplace noise, at least 1).
    n_jobs: 1 = in-process; otherwise one worker per participant running ``schedule``
        ("speedup" of Section VI-C or "baseline" of VI-A) on ``backend`` ("loky"|"dask").
    feature_domain, categorical_features, n_categories, label_domain: the public schema
        (the runner passes the dataset's); classes (classifiers): the declared label set
        (two labels; classes_, predict_proba's columns).
    random_state: structure randomness (the record partition into owners and rounds).
    noise_rng (private estimators): None = noise derived from random_state (reproducible
        experiments), or a Generator, e.g. dpexp.privacy.secure_generator() for a model
        that is published; all mechanism noise comes from it.
"""


def _init(self, **kwargs):
    for k, v in kwargs.items():
        setattr(self, k, v)


class InPrivateClassifier(_ClassifierPart, _InPrivateBase):
    __doc__ = "InPrivate Digging binary classifier (Sections V-A and VI).\n" + _DOC_PARAMS

    def __init__(self, *, epsilon=1.0, n_participants=10, records_per_participant=None,
                 n_records=None, n_rounds=1, final_round="rest", depth=10, internal_fraction=0.5,
                 residual_clip=1.0, learning_rate=1.0, quality_control=False,
                 advance_threshold=None, quality_fraction=0.1, quality_tolerance=0.0,
                 binning="domain", max_bins=32, leaf_denominator_floor=None, n_jobs=1,
                 schedule="speedup", backend="loky", feature_domain=None,
                 categorical_features=None, n_categories=None, label_domain=None, classes=None,
                 random_state=None, noise_rng=None):
        _init(self, **{k: v for k, v in locals().items() if k not in ("self", "__class__")})


class InPrivateRegressor(_RegressorPart, _InPrivateBase):
    __doc__ = "InPrivate Digging regressor (Sections V-B and VI).\n" + _DOC_PARAMS

    def __init__(self, *, epsilon=1.0, n_participants=10, records_per_participant=None,
                 n_records=None, n_rounds=1, final_round="rest", depth=10, internal_fraction=0.5,
                 residual_clip=1.0, learning_rate=1.0, quality_control=False,
                 advance_threshold=None, quality_fraction=0.1, quality_tolerance=0.0,
                 binning="domain", max_bins=32, leaf_denominator_floor=None, n_jobs=1,
                 schedule="speedup", backend="loky", feature_domain=None,
                 categorical_features=None, n_categories=None, label_domain=None,
                 random_state=None, noise_rng=None):
        _init(self, **{k: v for k, v in locals().items() if k not in ("self", "__class__")})


class _NoPrivacy:
    """No-Priv's fixed, non-tunable pieces of the shared engine (no budget, fixed splits
    of each participant's records, leaf denominators floored at one record)."""

    _private = False
    epsilon = None
    internal_fraction = 0.5
    quality_fraction = 0.5
    leaf_denominator_floor = 1.0


class InPrivateNPClassifier(_NoPrivacy, _ClassifierPart, _InPrivateBase):
    """No-Priv (Fig. 5): the same protocol with greedy splits and exact leaves."""

    def __init__(self, *, n_participants=10, records_per_participant=None, n_records=None,
                 n_rounds=1, final_round="rest", depth=10, residual_clip=1.0, learning_rate=1.0,
                 quality_control=False, advance_threshold=None, quality_tolerance=0.0,
                 binning="domain", max_bins=32, n_jobs=1, schedule="speedup", backend="loky",
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, classes=None, random_state=None):
        _init(self, **{k: v for k, v in locals().items() if k not in ("self", "__class__")})


class InPrivateNPRegressor(_NoPrivacy, _RegressorPart, _InPrivateBase):
    """No-Priv regressor; see :class:`InPrivateNPClassifier`."""

    def __init__(self, *, n_participants=10, records_per_participant=None, n_records=None,
                 n_rounds=1, final_round="rest", depth=10, residual_clip=1.0, learning_rate=1.0,
                 quality_control=False, advance_threshold=None, quality_tolerance=0.0,
                 binning="domain", max_bins=32, n_jobs=1, schedule="speedup", backend="loky",
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, random_state=None):
        _init(self, **{k: v for k, v in locals().items() if k not in ("self", "__class__")})
