"""InPrivate Digging (Zhao et al. 2018), the protocol: the split and leaf policies of one
DP tree (Algorithm 1) on the shared grower, the protocol configuration, the messages
passed between participants, one participant's node (Algorithm 2, quality control) and
the in-process runner. The multi-process schedules (Section VI-C) are in
:mod:`dpexp.papers.inprivate.schedule`; the estimators in
:mod:`dpexp.papers.inprivate.estimators`.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpexp.boosting.gbdt import (
    apply_tree,
    prepare_predict_matrix,
)
from dpexp.papers.inprivate.formulas import (
    Budget,
    Sensitivities,
    budget_split,
    classification_residuals,
    downsample_mapper,
    leaf_bound,
    newton_denominator,
    regression_residuals,
    sensitivities,
    square_error_gain,
)
from dpexp.privacy import Accountant
from dpexp.privacy.randomness import Rng, spawn_generators
from dpexp.trees.binning import BinMapper
from dpexp.trees.grower import LeafContext, SplitContext, grow_tree
from dpexp.trees.tree import ArrayTree

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
    # gather through the flat candidate index (``take`` on a contiguous axis is cheaper than
    # a 2-D fancy index; this runs at every level of every tree)
    flat = np.flatnonzero(valid.ravel())
    s_left = np.cumsum(hist[..., 0], axis=2).reshape(J, d * B).take(flat, axis=1)
    n_left = np.cumsum(hist[..., 1], axis=2).reshape(J, d * B).take(flat, axis=1)
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
        # the nodes of one level hold disjoint records (parallel composition, Theorem 7): one
        # ledger entry for all of them (``releases``), not one spend per node -- the
        # per-node spends and their replay were half of a depth-10 fit's time
        choice = np.atleast_1d(ctx.accountant.exponential(
            gains, epsilon=self.epsilon, sensitivity=self.sensitivity, rng=ctx.rng,
            releases=ctx.n_nodes, what=f"{ctx.label} level {ctx.depth + 1} split"))
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
        # Theorem 7: the leaves hold disjoint records, so each of the two queries costs its
        # epsilon_2 / 2 once over all leaves (``releases``); the two queries add up
        # (sequential), the same epsilon_2 as a parallel scope of per-leaf sequential pairs
        acc, k = ctx.accountant, ctx.n_leaves
        with acc.sequential(f"{ctx.label} leaves"):
            num = np.atleast_1d(acc.laplace(
                num, epsilon=self.epsilon, sensitivity=self.sens_numerator, rng=ctx.rng,
                releases=k, what=f"{ctx.label} leaves numerator"))
            den = np.atleast_1d(acc.laplace(
                den, epsilon=self.epsilon, sensitivity=self.sens_denominator, rng=ctx.rng,
                releases=k, what=f"{ctx.label} leaves denominator"))
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
                    delta = float(acc.laplace(exact, epsilon=half, sensitivity=sens.quality_delta,
                                              rng=q_rng, what=f"{label} quality of tree {slot - 1}"))
                    count = float(acc.discrete_laplace(int(rows.size), epsilon=half, rng=q_rng,
                                                       what=f"{label} chunk size"))
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
            accountant.absorb_ledger(m.ledger)


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
