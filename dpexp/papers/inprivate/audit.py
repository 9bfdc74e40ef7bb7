"""End-to-end privacy audit targets of the InPrivate Digging estimators (Zhao et al. 2018).

Each target fits the *real* registered estimator (:class:`InPrivateClassifier`,
:class:`InPrivateRegressor`) once per draw on a tiny dataset, with every public input
passed explicitly (``classes``, ``feature_domain``, ``label_domain``, ``n_records``), and
treats what the fit publishes as the output: ``classes_``, the tree (split choice, leaf
values) and the predictions on fixed probe points. The noise comes from
``noise_rng=<child of the audit's rng>``; the structure randomness (the record partition
into participants and rounds) is the fixed public ``random_state``, so each target is
audited conditionally on it -- what the parallel-composition argument of Section VI-B
assumes (every record keeps its chunk whatever the other records are): the chunk of a
record is keyed by its content (:func:`dpexp.privacy.record_ids`), never by its row.

Neighbours (add/remove one record, :mod:`dpexp.audit`):

* ``inprivate_class_removal``: removing the only record of a class. With the declared
  ``classes`` the label set, the columns of ``predict_proba`` and the ``{-1, +1}`` targets
  stay the same; the split and the predicted classes are noisy (Theorem 7).
* ``inprivate_share_boundary``: ``n`` vs ``n + 1`` records where a share computed as
  ``records_per_participant / n`` would cross four records (the structure seed was
  chosen so): with the declared ``n_records`` only the added record changes chunk.
* ``inprivate_extreme_label``: a record far outside the public label and feature domains;
  the release is the regressor's prediction at a probe point (``output="real"``).

:data:`BROKEN_AUDIT_TARGETS` re-introduce each bug on the same data, and the audit must
flag them: the label set from the training labels (``classes=None``), the share from the
private ``n`` (``n_records=len(X)``, the pre-fix behaviour) and the label domain from the
private labels (``label_domain=None``). Every fit's budget is the claim: ``epsilon`` of
Theorem 7 per chunk, one chunk per record (Section VI-B).

The paths users run (issue #38, :mod:`dpexp.audit.paths`):
``inprivate_runner_share_boundary`` fits with the runner's parameters
(:func:`dpexp.audit.runner_path.runner_fit`: ``n_records`` from the declared rows, not
``len(X)``), ``inprivate_canary_positions`` inserts the canary at row 0, in the middle and
at the end, and ``inprivate_defaults`` (:mod:`dpexp.audit.defaults_path`) fits with the
default noise; their broken twins (``inprivate_runner_n_from_len_x``,
``inprivate_row_keyed_partition``, ``inprivate_defaults_noise_from_random_state``)
re-introduce ``n_records = len(X)``, chunks keyed by row position and noise keyed by
``random_state``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpexp.audit.defaults_path import defaults_targets
from dpexp.audit.paths import CANARY_POSITIONS, covering, insert_row
from dpexp.audit.runner_path import RunnerCase, runner_fit, tiny_info
from dpexp.audit.targets import AuditTarget, end_to_end_target
from dpexp.papers.inprivate.estimators import (
    InPrivateClassifier,
    InPrivateRegressor,
)
from dpexp.papers.inprivate.formulas import assign_chunks, participant_share, round_shares
from dpexp.papers.inprivate.protocol import ParticipantNode
from dpexp.privacy.partition import RecordIds
from dpexp.privacy.public import DataDependentWarning

__all__ = [
    "AUDIT_TARGETS",
    "BROKEN_AUDIT_TARGETS",
    "SHARE_N",
    "SHARE_RECORDS_PER_PARTICIPANT",
    "SHARE_STRUCTURE_SEED",
    "class_removal_data",
    "extreme_label_data",
    "share_boundary_data",
]

#: Public structure seed (``random_state``) of every audited fit but the share target's.
STRUCTURE_SEED = 0
#: Output row of a refused fit (one label left while ``classes`` is read from the data):
#: the refusal is observable, so it is an output too; no fitted model has 0 classes.
REFUSED = 0

FEATURE_DOMAIN = np.array([[0.0, 1.0]])
LABEL_DOMAIN = (0.0, 10.0)
CLASSES = (0, 1)


@dataclass(frozen=True)
class TinyData:
    """One neighbouring dataset of a target."""

    X: np.ndarray
    y: np.ndarray


def _tiny(x: list[float], y: list[float]) -> TinyData:
    return TinyData(np.asarray(x, dtype=np.float64)[:, None], np.asarray(y))


def _fits(rng: np.random.Generator, size: int) -> list[np.random.Generator]:
    """One child of the audit's rng per draw: each fit's ``noise_rng``."""
    return list(rng.spawn(int(size)))


# ----------------------------------------------------------------------------- class removal


def class_removal_data() -> tuple[TinyData, TinyData]:
    """Five records of class 0 and, last, the only record of class 1; then without it."""
    x = [0.1, 0.2, 0.3, 0.6, 0.7, 0.9]
    y = [0, 0, 0, 0, 0, 1]
    return _tiny(x, y), _tiny(x[:-1], y[:-1])


#: The public candidate thresholds of the class-removal fits (max_bins=4 on [0, 1]).
CLASS_CANDIDATES = np.array([0.25, 0.5, 0.75])
#: Probe points of the class-removal release (one in each bin of the public grid).
CLASS_PROBES = np.array([[0.1], [0.4], [0.6], [0.9]])


def _class_release(classes: Any) -> Callable[..., np.ndarray]:
    """Release ``(len(classes_), root threshold's index among the candidates, predicted
    class at each probe)`` of a depth-2 classifier (one split level: the whole tree but
    its leaf values, which the predictions show the sign of); ``REFUSED`` when fit
    refuses."""

    def release(data: TinyData, *, epsilon: float, delta: float, rng: np.random.Generator,
                size: int) -> np.ndarray:
        del delta  # pure epsilon-DP
        out = np.empty((int(size), 2 + len(CLASS_PROBES)), dtype=np.int64)
        for i, noise in enumerate(_fits(rng, size)):
            est = InPrivateClassifier(
                epsilon=epsilon, n_participants=1, n_rounds=1, depth=2, max_bins=4,
                feature_domain=FEATURE_DOMAIN, classes=classes, random_state=STRUCTURE_SEED,
                noise_rng=noise)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DataDependentWarning)
                    est.fit(data.X, data.y)
            except ValueError:
                out[i] = REFUSED  # the refusal is observable: part of the output
                continue
            tree = est.trees_[0]  # depth 2: a root split, always (no data-dependent stop)
            split = int(np.searchsorted(CLASS_CANDIDATES, tree.threshold[0]))
            # predicted class at each probe: the sign of the leaf it reaches (Eq. 9), read
            # off the published tree (predict would only add input validation per draw)
            positive = tree.value[tree.apply(CLASS_PROBES), 0] > 0
            out[i] = [est.classes_.size, split, *positive.astype(np.int64)]
        return out

    return release


# ----------------------------------------------------------------------------- share boundary

#: The share target's public structure seed: with it, the record partition's keyed
#: uniforms (of the records' content) put the class-1 records (0, 1, 4 and 5, all
#: ``x = 0.5``) in [6/8, 6/7) -- the four records a share ``records_per_participant / n``
#: drops when ``n`` goes from 7 to 8 -- and the class-0 records (2, 3, 6 and the added
#: copy 7) below 6/8. Found by scanning ``random_state`` (any fixed structure seed must
#: do: the privacy proof holds for each); the test suite checks the property.
SHARE_STRUCTURE_SEED = 34
SHARE_N = 7
SHARE_RECORDS_PER_PARTICIPANT = 6
#: Records of the share target whose chunk a share ``6 / n`` changes between n = 7 and 8.
SHARE_FLIPPED = (0, 1, 4, 5)


def share_boundary_data() -> tuple[TinyData, TinyData]:
    """``n = 7`` records and the same plus one (last, class 0). The four records a
    ``6 / n`` share would drop at ``n = 8`` are class 1 (residual +1), the others class 0
    (residual -1), so losing them moves the leaf from about +1/7 to -1."""
    y = [1 if i in SHARE_FLIPPED else 0 for i in range(SHARE_N)]
    x = [0.5] * SHARE_N
    return _tiny(x, y), _tiny([*x, 0.5], [*y, 0])


def _share_release(n_records: Callable[[TinyData], int]) -> Callable[..., np.ndarray]:
    """Release the whole model of a depth-1 classifier (one participant, one round, one
    leaf): its leaf value (Eq. 11), of which every prediction is a function.
    ``n_records(data)`` is the size the shares refer to."""

    def release(data: TinyData, *, epsilon: float, delta: float, rng: np.random.Generator,
                size: int) -> np.ndarray:
        del delta
        out = np.empty(int(size))
        for i, noise in enumerate(_fits(rng, size)):
            est = InPrivateClassifier(
                epsilon=epsilon, n_participants=1, n_rounds=1, depth=1,
                records_per_participant=SHARE_RECORDS_PER_PARTICIPANT,
                n_records=n_records(data), feature_domain=FEATURE_DOMAIN, classes=CLASSES,
                random_state=SHARE_STRUCTURE_SEED, noise_rng=noise)
            out[i] = est.fit(data.X, data.y).trees_[0].value[0, 0]
        return out

    return release


# ----------------------------------------------------------------------------- extreme value


def extreme_label_data() -> tuple[TinyData, TinyData]:
    """Five records inside the public domains; then plus one far outside both (last)."""
    x = [0.1, 0.3, 0.5, 0.7, 0.9]
    y = [1.0, 3.0, 5.0, 7.0, 9.0]
    return _tiny(x, y), _tiny([*x, 50.0], [*y, 1e4])


def _extreme_release(label_domain: Any) -> Callable[..., np.ndarray]:
    """Release the prediction (original label units) of a depth-2 regressor at x = 0.5."""
    probe = np.array([[0.5]])

    def release(data: TinyData, *, epsilon: float, delta: float, rng: np.random.Generator,
                size: int) -> np.ndarray:
        del delta
        out = np.empty(int(size))
        for i, noise in enumerate(_fits(rng, size)):
            est = InPrivateRegressor(
                epsilon=epsilon, n_participants=1, n_rounds=1, depth=2, max_bins=2,
                feature_domain=FEATURE_DOMAIN, label_domain=label_domain,
                random_state=STRUCTURE_SEED, noise_rng=noise)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataDependentWarning)
                out[i] = est.fit(data.X, data.y).predict(probe)[0]
        return out

    return release


# ----------------------------------------------------------------------------- runner path

#: The share target's setting as the runner passes it (issue #38): 7 declared rows of a
#: test-registered dataset; n_records, metadata, seeded noise and the row's verdict come
#: from :func:`dpexp.audit.runner_path.runner_fit`.
SHARE_RUNNER = RunnerCase(
    "inprivate", tiny_info("audit_inprivate_share", rows=SHARE_N, features=1, classes=CLASSES,
                           domain=(0.0, 1.0)),
    {"n_participants": 1, "n_rounds": 1, "depth": 1,
     "records_per_participant": SHARE_RECORDS_PER_PARTICIPANT}, SHARE_STRUCTURE_SEED)
#: Output of a fit whose row says not DP (no DP claim): one value for all, off the leaf range.
NOT_DP_VALUE = -1e9


def _runner_share_release(n_from_data: bool) -> Callable[..., np.ndarray]:
    """The leaf score of the runner's fit (every prediction is a function of it), or
    :data:`NOT_DP_VALUE` when the row says not DP. ``n_from_data``: the runner before the
    fix (``n_records = len(X)``)."""

    def release(data: TinyData, *, epsilon: float, delta: float, rng: np.random.Generator,
                size: int) -> np.ndarray:
        del delta
        out = np.empty(int(size))
        for i, seed in enumerate(rng.integers(0, 2**63, size=int(size))):
            fit = runner_fit(SHARE_RUNNER, data.X, data.y, epsilon=epsilon, noise_seed=int(seed),
                             n_from_data=n_from_data)
            out[i] = fit.estimator.trees_[0].value[0, 0] if fit.private else NOT_DP_VALUE
        return out

    return release


def _runner_target(broken: bool) -> AuditTarget:
    target = end_to_end_target(
        "inprivate_runner_n_from_len_x" if broken else "inprivate_runner_share_boundary",
        release=_runner_share_release(broken), datasets=share_boundary_data(), pairs=[(0, 1)],
        epsilon=1.0, output="real", expected_to_pass=not broken, algorithm="inprivate",
        description="InPrivateClassifier through the runner's cell path (7 declared rows), n vs "
                    "n + 1 across a share boundary: the leaf score, or the row's not-DP verdict" + (
                        " -- BROKEN: n_records = len(X) (the runner before the fix)" if broken else ""),
        samples=20_000, quick_samples=600)
    return target if broken else covering(target, "runner")


# ----------------------------------------------------------------------------- canary positions


class RowKeyedInPrivate(InPrivateClassifier):
    """BROKEN: the participants' chunks keyed by *row index* (the old partition): inserting
    a record at row 0 moves every later record to another chunk."""

    def _make_nodes(self, X, z, cfg, streams, n_records):
        n = X.shape[0]
        share = participant_share(cfg.n_participants, self.records_per_participant, n_records)
        owner, rnd = assign_chunks(RecordIds(np.arange(n, dtype=np.uint64)), cfg.n_participants,
                                   share, round_shares(cfg.n_rounds, self.final_round),
                                   np.random.default_rng(streams.structure))
        noise = streams.noise_generators(cfg.n_slots)
        nodes = [ParticipantNode(p, X[owner == p], z[owner == p], rnd[owner == p], cfg,
                                 {k: noise[k] for k in range(p, cfg.n_slots, cfg.n_participants)})
                 for p in range(cfg.n_participants)]
        return nodes, share * (n if n_records is None else n_records)


POSITION_N = 20
POSITION_RECORDS_PER_PARTICIPANT = 10
POSITION_STRUCTURE_SEED = 0


def _position_model(cls: type, epsilon: float, noise: Any) -> InPrivateClassifier:
    return cls(epsilon=epsilon, n_participants=1, n_rounds=1, depth=1,
               records_per_participant=POSITION_RECORDS_PER_PARTICIPANT, n_records=POSITION_N,
               feature_domain=FEATURE_DOMAIN, classes=CLASSES,
               random_state=POSITION_STRUCTURE_SEED, noise_rng=noise)


def position_data() -> tuple[TinyData, ...]:
    """20 records (distinct x) labelled 1 where the row-keyed partition uses the row, 0
    where it leaves it out (so, keyed by row, the one participant holds class 1 only); then
    the same with a class-0 canary inserted at row 0, in the middle, at the end."""
    x = np.linspace(0.05, 0.95, POSITION_N)[:, None]
    share = participant_share(1, POSITION_RECORDS_PER_PARTICIPANT, POSITION_N)
    # the twin's partition of the base, as its fit draws it (structure stream = random_state)
    owner, _ = assign_chunks(RecordIds(np.arange(POSITION_N, dtype=np.uint64)), 1, share,
                             round_shares(1, InPrivateClassifier().final_round),
                             np.random.default_rng(np.random.SeedSequence(POSITION_STRUCTURE_SEED)))
    y = (owner == 0).astype(np.int64)
    base = TinyData(x, y)
    return (base, *(TinyData(*insert_row(x, y, [0.5], 0, p)) for p in CANARY_POSITIONS))


def _position_release(cls: type) -> Callable[..., np.ndarray]:
    def release(data: TinyData, *, epsilon: float, delta: float, rng: np.random.Generator,
                size: int) -> np.ndarray:
        del delta
        return np.array([_position_model(cls, epsilon, noise).fit(data.X, data.y).trees_[0].value[0, 0]
                         for noise in _fits(rng, size)])

    return release


def _position_target(broken: bool) -> AuditTarget:
    target = end_to_end_target(
        "inprivate_row_keyed_partition" if broken else "inprivate_canary_positions",
        release=_position_release(RowKeyedInPrivate if broken else InPrivateClassifier),
        datasets=position_data(), pairs=[(0, 1), (0, 2), (0, 3)], epsilon=1.0, output="real",
        expected_to_pass=not broken, algorithm="inprivate",
        description="InPrivateClassifier (one participant, share 10/20 declared), a canary "
                    "inserted at row 0, in the middle, at the end: the leaf score" + (
                        " -- BROKEN: chunks keyed by row position" if broken else ""),
        samples=20_000, quick_samples=300)
    return target if broken else covering(target, *CANARY_POSITIONS)


# ----------------------------------------------------------------------------- targets


def _targets(broken: bool) -> list[AuditTarget]:
    """The three targets, correct (declared public input) or with the bug re-introduced.

    Quick sizes (each draw is a whole fit, a few milliseconds): a deterministic leak (the
    broken class-removal and label-domain targets: an output certain under one dataset
    and impossible under the other) is flagged from 500 draws (bound about 3 > 1); the
    share leak is four records' worth of Laplace noise, flagged from 1,000 draws (bound
    about 2 > 1).
    """
    tag = "_broken" if broken else ""
    declared = "" if not broken else " -- BROKEN: "
    return [
        end_to_end_target(
            f"inprivate_class_removal{tag}",
            release=_class_release(None if broken else CLASSES),
            datasets=class_removal_data(), pairs=[(0, 1)], epsilon=1.0,
            description="InPrivateClassifier without the only record of a class: classes_, "
                        "root split, predicted class at 4 probes" + (
                            declared + "classes read from the training labels" if broken else ""),
            output="discrete", expected_to_pass=not broken, algorithm="inprivate",
            samples=20_000, quick_samples=500),
        end_to_end_target(
            f"inprivate_share{'_from_n' if broken else '_boundary'}",
            release=_share_release((lambda d: d.X.shape[0]) if broken else (lambda d: SHARE_N)),
            datasets=share_boundary_data(), pairs=[(0, 1)], epsilon=1.0,
            description="InPrivateClassifier, n vs n + 1 records across a share boundary: the "
                        "leaf score" + (declared + "share records_per_participant / n from the "
                                        "private n" if broken else " (n_records declared)"),
            output="real", expected_to_pass=not broken, algorithm="inprivate",
            samples=20_000, quick_samples=1_000),
        end_to_end_target(
            f"inprivate_extreme_label{tag}",
            release=_extreme_release(None if broken else LABEL_DOMAIN),
            datasets=extreme_label_data(), pairs=[(0, 1)], epsilon=1.0,
            description="InPrivateRegressor plus a record far outside the domains: prediction "
                        "at a probe" + (declared + "label domain from the private labels"
                                        if broken else ""),
            output="real", expected_to_pass=not broken, algorithm="inprivate",
            samples=20_000, quick_samples=500),
    ]


AUDIT_TARGETS: list[AuditTarget] = [*_targets(broken=False), _runner_target(broken=False),
                                     _position_target(broken=False),
                                     *defaults_targets(("inprivate",))]
BROKEN_AUDIT_TARGETS: list[AuditTarget] = [*_targets(broken=True), _runner_target(broken=True),
                                            _position_target(broken=True),
                                            *defaults_targets(("inprivate",), broken=True)]
