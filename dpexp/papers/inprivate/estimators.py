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
  and passes the ensemble on (Eq. 16, no shrinkage by default: the text implies none, and
  with depth-10 trees of ~2 records per leaf the full-step leaf noise adds up over the
  trees, so the regression error of Fig. 5 grows with N; ``quality_control`` is the
  corrective step the text does describe, ``learning_rate < 1`` an ablation -- see
  ``docs/estimators/inprivate.md``). **Rounds** (Section
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
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from dpexp.boosting.base import Boosted, BoostingEstimator, BoostingFit, store_params
from dpexp.boosting.gbdt import (
    ScaledScoreRegressorMixin,
    make_bin_mapper,
    not_dp_reasons,
    prepare_predict_matrix,
)
from dpexp.boosting.labels import BinaryScoreClassifierMixin
from dpexp.papers.inprivate.formulas import (
    BINNINGS,
    DOWNSAMPLE_REASON,
    SCHEDULES,
    SHARE_FROM_N_REASON,
    DataDependentShareWarning,
    assign_chunks,
    participant_share,
    round_shares,
)
from dpexp.papers.inprivate.protocol import (
    ParticipantNode,
    ProtocolConfig,
    accepted_trees,
    replay_ledgers,
    run_inline,
    tree_contribution,
)
from dpexp.papers.inprivate.schedule import run_parallel
from dpexp.privacy import record_ids
from dpexp.privacy.public import warn_outside_package
from dpexp.privacy.randomness import EstimatorStreams
from dpexp.trees.binning import MAX_BINS, BinMapper

# ----------------------------------------------------------------------------- estimators


def _as_float64(X):
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    return np.ascontiguousarray(X, dtype=np.float64)


class _InPrivateBase(BoostingEstimator):
    """Algorithm 2's protocol on the shared boosting fit; see the module docstring."""

    _fit_dtype = [np.float64, np.float32]
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

    def _validate_training_data(self, X, y):
        X, y = super()._validate_training_data(X, y)
        return _as_float64(X), y

    def _bin(self, X):
        """The public grid (``binning="domain"``; the participants bin their own chunks),
        or none: ``"downsample"`` reads the split values from the private chunks."""
        if self.binning != "domain":
            return None, None, self.binning == "downsample"
        mapper, leaked = make_bin_mapper(
            X, binning="domain", feature_domain=self.feature_domain,
            categorical_features=self.categorical_features, n_categories=self.n_categories,
            max_bins=int(self.max_bins), private=self._private)
        return mapper, None, leaked

    def _not_dp_reasons(self, leaked: bool) -> list[str]:
        """Why this fit is not DP: public input read from the private data (label set,
        label or feature domain), or the paper's down-sampled split values (shares read
        from the private ``n``: marked by :meth:`_boost`)."""
        downsample = self.binning == "downsample"
        reasons = not_dp_reasons(
            classes=getattr(self, "_classes_from_data", False),
            label_domain=getattr(self, "_label_domain_from_data", False),
            feature_domain=leaked and not downsample)
        if downsample:
            reasons.append(DOWNSAMPLE_REASON)
        return reasons

    def _protocol_config(self, epsilon: float, mapper: BinMapper | None) -> ProtocolConfig:
        """The protocol's configuration: the promised ``epsilon`` (of every chunk) and the
        public grid ``mapper`` (None: the participants down-sample their chunks)."""
        return ProtocolConfig(
            task=self._task, private=self._private, epsilon=epsilon, depth=int(self.depth),
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

    def _declared_size(self, n: int) -> tuple[int | None, bool]:
        """``(n_records, from_data)``: the declared size the shares refer to, or -- when
        ``records_per_participant`` is given without it -- the private ``n`` with a
        :class:`DataDependentShareWarning` (``from_data`` True: the fit is not DP)."""
        if self.records_per_participant is None or self.n_records is not None:
            return (None if self.n_records is None else int(self.n_records)), False
        if self._private:
            warn_outside_package(
                "records_per_participant given without n_records: the participants' shares "
                "come from the private number of training records (not differentially "
                "private); declare n_records (the runner passes the training-set size)",
                DataDependentShareWarning)
        return n, True

    def _make_nodes(self, X, z, cfg: ProtocolConfig, streams: EstimatorStreams,
                    n_records: int | None) -> tuple[list[ParticipantNode], float]:
        """The participants: chunks of a record-stable partition with public shares (from
        the structure stream), and one noise generator per tree slot (noise stream).
        Returns the nodes and the expected records per participant."""
        n = X.shape[0]
        share = participant_share(cfg.n_participants, self.records_per_participant, n_records)
        # chunks keyed by each record's content (features, target), never its row
        owner, rnd = assign_chunks(record_ids(X, z), cfg.n_participants, share,
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

    def _run_protocol(self, nodes: list[ParticipantNode], cfg: ProtocolConfig):
        """``(messages, schedule result)``: in-process (``n_jobs=1``) or one worker process
        per participant (Section VI-C)."""
        if self.n_jobs in (None, 1):
            return run_inline(nodes, cfg), None
        n_jobs = int(self.n_jobs)
        if 1 < n_jobs < cfg.n_participants:
            raise ValueError(
                f"n_jobs={n_jobs}: the parallel schedule needs one live worker per participant "
                f"({cfg.n_participants}); use n_jobs=-1 or n_jobs=1 (in-process)")
        result = run_parallel(nodes, cfg, schedule=self.schedule, backend=self.backend)
        return result.messages, result

    def _boost(self, fit: BoostingFit) -> Boosted:
        """Algorithm 2 across the participants; the chunks' ledgers are composed in the
        fit's accountant (parallel composition of disjoint chunks)."""
        cfg = self._protocol_config(fit.epsilon, fit.mapper)
        n_records, share_from_n = self._declared_size(fit.n_rows)
        nodes, expected = self._make_nodes(fit.X, fit.target, cfg, fit.streams, n_records)
        messages, result = self._run_protocol(nodes, cfg)
        if cfg.private:
            if share_from_n:
                fit.accountant.mark_not_dp(SHARE_FROM_N_REASON)
            replay_ledgers(fit.accountant, messages)
        self.messages_ = messages
        self.schedule_result_ = result  # ScheduleResult (timeline, bytes) of a parallel fit
        trees = accepted_trees(messages)
        n_rejected = sum(1 for m in messages if m.verdict_prev is False)
        advances = [m.advance for m in messages if m.advance is not None]
        diag = {
            "n_trees_built": float(len(messages)),
            "n_trees_used": float(len(trees)),
            "n_trees_rejected": float(n_rejected),
            "n_rounds_run": float(math.ceil(len(messages) / cfg.n_participants)),
            "last_advance": float(advances[-1]) if advances else float("nan"),
            "records_per_participant_expected": float(expected),
            "epsilon_per_tree": cfg.budget.tree if cfg.private else float("inf"),
            "binning_is_data_dependent": float(fit.grid_from_data),
        }
        return Boosted(trees, diag, len(messages))

    def _predict_matrix(self, X):
        return _as_float64(super()._predict_matrix(X))

    def _staged_decision(self, X) -> Iterator[np.ndarray]:
        X = prepare_predict_matrix(self._predict_matrix(X))
        F = np.zeros(X.shape[0])
        lr = float(self.learning_rate)
        for t in self.trees_:
            F = F + tree_contribution(t, X, lr)
            yield F

    def _decision(self, X) -> np.ndarray:
        X = prepare_predict_matrix(self._predict_matrix(X))
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


class _RegressorPart(ScaledScoreRegressorMixin, RegressorMixin):
    """Regression, labels scaled to [-1, 1] with the public label domain (Section VII-A)."""

    _task = "regression"


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
    learning_rate: 1.0 = Eq. (16) as printed (full step; Section III-B: "an accumulation
        of ... the steps"). < 1 is Friedman's shrinkage (the paper's ref. [21], Section 5),
        which the paper never mentions: an ablation, not the paper's algorithm.
    quality_control: the control of Section VI-B ("each data owner trains a new tree ...
        and tests its performance", Fig. 3): reject a tree whose released improvement on
        the next owner's chunk is below quality_tolerance per record -- the only corrective
        step of Algorithm 2 the text describes; advance_threshold: p (None = run all
        rounds); quality_fraction: share of each chunk's epsilon for these releases.
    binning: "domain" (public grid of max_bins bins, private) or "downsample" (Section V-A,
        NOT private). leaf_denominator_floor: post-processing of the noisy denominator
        (None: the scale of its Laplace noise, at least 1).
    n_jobs: 1 = in-process; otherwise one worker per participant running ``schedule``
        ("speedup" of Section VI-C or "baseline" of VI-A) on ``backend`` ("loky"|"dask").
    feature_domain, categorical_features, n_categories, label_domain: the public schema
        (the runner passes the dataset's); classes (classifiers): the declared label set
        (two labels; classes_, predict_proba's columns).
    random_state: structure randomness (the record partition into owners and rounds).
    noise_rng (private estimators): None = fresh OS entropy (never derived from
        random_state), a SeedSequence for reproducible experiments
        (dpexp.privacy.seeded_noise(seed): a research result, not a release), or a
        Generator, e.g. dpexp.privacy.secure_generator() for a model that is published; all
        mechanism noise comes from it.
"""


class InPrivateClassifier(_ClassifierPart, _InPrivateBase):
    __doc__ = "InPrivate Digging binary classifier (Sections V-A and VI).\n" + _DOC_PARAMS

    def __init__(self, *, epsilon=1.0, n_participants=10, records_per_participant=None,
                 n_records=None, n_rounds=1, final_round="rest", depth=10, internal_fraction=0.5,
                 residual_clip=1.0, learning_rate=1.0, quality_control=False,
                 advance_threshold=None, quality_fraction=0.1, quality_tolerance=0.0,
                 binning="domain", max_bins=32, leaf_denominator_floor=None, n_jobs=1,
                 schedule="speedup", backend="loky", feature_domain=None,
                 categorical_features=None, n_categories=None, label_domain=None, classes=None,
                 random_state=None, noise_rng=None, accountant=None):
        store_params(self, locals())


class InPrivateRegressor(_RegressorPart, _InPrivateBase):
    __doc__ = "InPrivate Digging regressor (Sections V-B and VI).\n" + _DOC_PARAMS

    def __init__(self, *, epsilon=1.0, n_participants=10, records_per_participant=None,
                 n_records=None, n_rounds=1, final_round="rest", depth=10, internal_fraction=0.5,
                 residual_clip=1.0, learning_rate=1.0, quality_control=False,
                 advance_threshold=None, quality_fraction=0.1, quality_tolerance=0.0,
                 binning="domain", max_bins=32, leaf_denominator_floor=None, n_jobs=1,
                 schedule="speedup", backend="loky", feature_domain=None,
                 categorical_features=None, n_categories=None, label_domain=None,
                 random_state=None, noise_rng=None, accountant=None):
        store_params(self, locals())


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
        store_params(self, locals())


class InPrivateNPRegressor(_NoPrivacy, _RegressorPart, _InPrivateBase):
    """No-Priv regressor; see :class:`InPrivateNPClassifier`."""

    def __init__(self, *, n_participants=10, records_per_participant=None, n_records=None,
                 n_rounds=1, final_round="rest", depth=10, residual_clip=1.0, learning_rate=1.0,
                 quality_control=False, advance_threshold=None, quality_tolerance=0.0,
                 binning="domain", max_bins=32, n_jobs=1, schedule="speedup", backend="loky",
                 feature_domain=None, categorical_features=None, n_categories=None,
                 label_domain=None, random_state=None):
        store_params(self, locals())
