"""The Table 2 comparators of Shi et al. 2021: a DP random forest and a DP AdaBoost built
from the same DP tree as XGBoost-DP (:func:`dpexp.papers.xgbdp.estimators.grow_xgbdp_tree`),
and their non-private twins for the ``no_noise`` row.

The paper names the comparators ("Random forest", "Adaboost", Table 2, depth 7, same
budgets) but does not describe them; these are our constructions, stated here and in the
captions:

* **DP random forest** (``dp_rf_xgbdp``): ``n_trees`` trees, each on all training records
  with ``eps / n_trees`` (sequential composition, as for XGBoost-DP's trees), fitted to the
  labels mapped to ``{-1, +1}`` (``g = -y``, so the Eq. (9) score is the variance/Gini
  reduction and a leaf is the noisy mean label). Diversity comes from ``max_features``
  features drawn per node uniformly at random ("sqrt"; data-independent, no privacy cost)
  and from the noise; no bootstrap (a bootstrap would let one record appear several times
  and multiply the sensitivities). The forest averages the leaf values:
  ``P(1) = (1 + mean) / 2``.
* **DP AdaBoost** (``dp_adaboost``): binary AdaBoost (SAMME, ``alpha = ln((1-err)/err)``)
  by *Poisson resampling*: in round ``t`` record ``i`` is kept with probability
  ``w_i = exp(sum_s alpha_s (miss_is - 1))`` in ``(0, 1]`` (the AdaBoost weight divided by
  the public constant ``exp(sum_s alpha_s)``), independently of the other records, and the
  round's DP tree is grown on the kept records. Every ``w_i`` depends only on record ``i``
  and on released values, so a neighbouring dataset changes one record's inclusion only
  and the tree keeps its guarantee. The weighted error ``sum w miss / sum w`` is released
  with two Laplace noises (sensitivity 1 each, since ``w <= 1``). Budget of a round
  ``eps / n_trees``: the tree gets ``(d+1)/(d+2)`` of it (its ``d + 1`` layers), the error
  estimate one more layer's share, ``1/(d+2)``, halved between the two sums.
* Randomness: the forest's per-node feature draws and AdaBoost's resampling come from
  ``random_state``'s structure stream; the resampling of record ``i`` compares a keyed
  uniform of the record's content id (:func:`dpexp.privacy.record_ids`, never its row;
  :func:`dpexp.privacy.partition.keyed_uniform`, one key per round) with ``w_i``, so
  adding or removing a record anywhere changes no other record's inclusion. Every
  Laplace/exponential draw comes from ``noise_rng``. ``mean_rows_per_round`` (an exact
  count of the resampled private rows) is a diagnostic, not part of the release.
* The non-private twins (``np_xgb_tree_rf``, ``np_xgb_tree_adaboost``) run the same
  loops with greedy splits, exact leaves and exact errors.

Ablation knobs (``experiments/xgbdp-ablation-comparators.yaml``, issue 22), the Table 2
setting first; they are passed to :func:`grow_xgbdp_tree` exactly as XGBoost-DP's knobs:

* ``count_share`` (0.5, Section 5.1's "two halves"): the share of a node's layer budget
  spent on its noisy count, the rest on its split or leaf. Still DP at the same total.
* ``noiseless`` (``""``): ``"split"``, ``"count"``, ``"leaf"`` or a comma-separated list
  compute those releases of every tree without noise (charged as if noised) to show where
  the accuracy goes; AdaBoost also accepts ``"error"`` (its two error sums exact). **Not
  DP**: the fit calls ``accountant_.mark_not_dp`` and the runner records
  ``private = false``.
"""

from __future__ import annotations

import math

import numpy as np

from dpexp.papers.xgbdp.estimators import XGBDPEnsembleBase
from dpexp.papers.xgbdp.tree import (
    NOISE_SOURCES,
    grow_xgbdp_tree,
    parse_noiseless,
    per_node_budgets,
    per_tree_budget,
    resolve_max_features,
)
from dpexp.privacy.partition import RecordIds, keyed_uniform, record_ids
from dpexp.privacy.randomness import EstimatorStreams

ERR_CLIP = 1e-6
#: AdaBoost's own release that ``noiseless`` may switch off (ablation): its error sums.
ERROR_SOURCE = "error"


def adaboost_round_budgets(eps_round: float, max_depth: int) -> tuple[float, float]:
    """``(tree budget, budget of each of the two error sums)`` of one AdaBoost round."""
    layers = int(max_depth) + 2
    return eps_round * (layers - 1) / layers, eps_round / (2.0 * layers)


def samme_alpha(err: float) -> float:
    """SAMME weight of a binary weak learner, ``ln((1-err)/err)``, 0 when ``err >= 1/2``."""
    err = min(max(float(err), ERR_CLIP), 1.0 - ERR_CLIP)
    return max(0.0, math.log((1.0 - err) / err))


def ablation_tree_kwargs(est, acc, extra: tuple[str, ...] = ()) -> tuple[dict, frozenset[str]]:
    """The DP tree's ablation keywords (``count_share``, ``exact``) of a private comparator,
    checked, and the sources of ``extra`` (a comparator's own releases, e.g. AdaBoost's
    ``"error"``) that ``noiseless`` lists; a ``noiseless`` fit is marked not DP on ``acc``
    (module docstring)."""
    share = float(est.count_share)
    per_node_budgets(1.0, 0, share)  # raises on a share outside (0, 1)
    parts = {p.strip() for p in str(est.noiseless or "").split(",") if p.strip()}
    allowed = set(NOISE_SOURCES) | set(extra)
    if parts - allowed:
        raise ValueError(f"noiseless must list some of {sorted(allowed)} (comma-separated), "
                         f"got {sorted(parts - allowed)}")
    own = frozenset(parts & set(extra))
    exact = parse_noiseless(",".join(sorted(parts - own)))
    if parts:
        acc.mark_not_dp(f"ablation: {', '.join(sorted(parts))} noise switched off "
                        "(noiseless); charged as if noised")
    return {"count_share": share, "exact": exact}, own


class _ForestPart:
    """Average of leaf values in [-1, 1]; class 1 iff the mean > 0."""

    _threshold = 0.0

    def _finish(self, summed, n_trees):
        return summed / n_trees

    def _proba1(self, score):
        return np.clip((1.0 + score) / 2.0, 0.0, 1.0)

    def _ensemble(self, data, X, y01, streams: EstimatorStreams, acc):
        private = self._private
        T, D = int(self.n_trees), int(self.max_depth)
        k = resolve_max_features(self.max_features, X.shape[1])
        g = -(2.0 * y01 - 1.0)
        rows = np.arange(data.n_rows)
        eps_t = per_tree_budget(acc.epsilon, T) if private else None
        knobs = ablation_tree_kwargs(self, acc)[0] if private else {}
        trees = []
        # feature draws: structure (data-independent); noisy counts/splits/leaves: noise
        structure = [np.random.default_rng(c) for c in streams.structure.spawn(T)]
        noise = streams.noise_generators(T)
        for t in range(T):
            kw = dict(max_depth=D, eps_tree=eps_t, rng=noise[t], structure_rng=structure[t],
                      label=f"tree {t}", reg_lambda=float(self.reg_lambda), max_features=k)
            if private:
                with acc.sequential(f"tree {t}"):
                    grown = grow_xgbdp_tree(data, g, rows, self.mapper_, accountant=acc,
                                            min_noisy_count=self.min_noisy_count, **knobs, **kw)
            else:
                grown = grow_xgbdp_tree(data, g, rows, self.mapper_, accountant=None,
                                        min_samples_leaf=int(self.min_samples_leaf), **kw)
            trees.append(grown.tree)
        diag = {"max_features": float(k or X.shape[1])}
        if private:
            diag["epsilon_per_tree"] = eps_t
        return trees, [1.0] * T, diag


class _AdaBoostPart:
    """Score ``sum_t alpha_t h_t(x)`` with ``h_t = sign(leaf value)``; class 1 iff > 0."""

    _threshold = 0.0

    def _contribution(self, values, weight):
        return weight * np.where(values > 0, 1.0, -1.0)

    def _proba1(self, score):
        return 1.0 / (1.0 + np.exp(-np.clip(score, -700, 700)))

    def _ensemble(self, data, X, y01, streams: EstimatorStreams, acc):
        private = self._private
        T, D = int(self.n_trees), int(self.max_depth)
        n = data.n_rows
        ids = record_ids(X, y01)  # by content, not row: a record's inclusion is its own
        ypm = 2.0 * y01 - 1.0
        g = -ypm
        logw = np.zeros(n)
        if private:
            eps_tree, eps_err = adaboost_round_budgets(per_tree_budget(acc.epsilon, T), D)
            knobs, own = ablation_tree_kwargs(self, acc, extra=(ERROR_SOURCE,))
            exact_error = ERROR_SOURCE in own
        else:
            eps_tree = eps_err = None
        trees, alphas, kept = [], [], []
        sample_rngs = [np.random.default_rng(c) for c in streams.structure.spawn(T)]
        noise = streams.noise_generators(2 * T)  # per round: the tree, the error sums
        for t in range(T):
            w = np.exp(logw)
            rows = np.flatnonzero(self._resample_uniforms(ids, sample_rngs[t]) < w)
            kept.append(rows.size)
            kw = dict(max_depth=D, eps_tree=eps_tree, rng=noise[2 * t],
                      label=f"round {t} tree", reg_lambda=float(self.reg_lambda))
            if private:
                with acc.sequential(f"round {t}"):
                    with acc.sequential(f"round {t} tree"):
                        grown = grow_xgbdp_tree(data, g, rows, self.mapper_, accountant=acc,
                                                min_noisy_count=self.min_noisy_count,
                                                **knobs, **kw)
                    miss = self._miss(grown, data, ypm)
                    e_sum, w_sum = self._noisy_error_sums(w, miss, eps_err, acc, t,
                                                          noise[2 * t + 1], exact_error)
            else:
                grown = grow_xgbdp_tree(data, g, rows, self.mapper_, accountant=None,
                                        min_samples_leaf=int(self.min_samples_leaf), **kw)
                miss = self._miss(grown, data, ypm)
                e_sum, w_sum = float(np.sum(w * miss)), float(np.sum(w))
            alpha = samme_alpha(e_sum / max(w_sum, 1.0))
            logw += alpha * (miss - 1.0)
            trees.append(grown.tree)
            alphas.append(alpha)
        # mean_rows_per_round: an exact count of private rows, a diagnostic (not released)
        diag = {"mean_rows_per_round": float(np.mean(kept)), "mean_alpha": float(np.mean(alphas))}
        return trees, alphas, diag

    @staticmethod
    def _resample_uniforms(ids: RecordIds, rng) -> np.ndarray:
        """One uniform per record from a keyed hash of its id (key from ``rng``): a record's
        inclusion never depends on which other records are present."""
        key = np.frombuffer(rng.bytes(16), dtype=np.uint64)
        return keyed_uniform(ids, key)

    @staticmethod
    def _miss(grown, data, ypm) -> np.ndarray:
        values = np.zeros(data.n_rows)
        grown.add_to_scores(values, 1.0, data)  # each row's leaf value
        h = np.where(values > 0, 1.0, -1.0)
        return (h != ypm).astype(np.float64)

    @staticmethod
    def _noisy_error_sums(w, miss, eps_err, acc, t, rng, exact=False) -> tuple[float, float]:
        """Laplace-noised ``(sum w miss, sum w)``; ``exact`` (ablation, not DP): no noise,
        still charged."""
        sums = (float(np.sum(w * miss)), float(np.sum(w)))
        whats = (f"round {t} weighted error sum", f"round {t} weight sum")
        with acc.sequential(f"round {t} error"):
            if exact:  # the ablation: no noise, still charged
                return tuple(acc.release(lambda v=v: v, epsilon=eps_err, what=what,
                                         mechanism="none (ablation)")
                             for v, what in zip(sums, whats, strict=True))
            return tuple(float(acc.laplace(v, epsilon=eps_err, sensitivity=1.0, rng=rng, what=what))
                         for v, what in zip(sums, whats, strict=True))


def _common_init(self, kw: dict) -> None:
    for k, v in kw.items():
        if k not in ("self", "__class__"):
            setattr(self, k, v)


class DPRandomForestXGBDPClassifier(_ForestPart, XGBDPEnsembleBase):
    """DP random forest from the XGBoost-DP tree (Table 2 comparator; module docstring)."""

    def __init__(self, *, epsilon=1.0, n_trees=5, max_depth=7, max_features="sqrt",
                 reg_lambda=1.0, min_noisy_count="auto", count_share=0.5, noiseless="",
                 binning="domain", max_bins=32,
                 feature_domain=None, categorical_features=None, n_categories=None,
                 classes=None, random_state=None, noise_rng=None, accountant=None):
        _common_init(self, locals())


class NPRandomForestXGBDPClassifier(_ForestPart, XGBDPEnsembleBase):
    """Non-private twin of :class:`DPRandomForestXGBDPClassifier` (``no_noise`` row)."""

    _private = False

    def __init__(self, *, n_trees=5, max_depth=7, max_features="sqrt", reg_lambda=1.0,
                 min_samples_leaf=1, binning="domain", max_bins=32, feature_domain=None,
                 categorical_features=None, n_categories=None, classes=None,
                 random_state=None):
        _common_init(self, locals())


class DPAdaBoostXGBDPClassifier(_AdaBoostPart, XGBDPEnsembleBase):
    """DP AdaBoost from the XGBoost-DP tree (Table 2 comparator; module docstring)."""

    def __init__(self, *, epsilon=1.0, n_trees=5, max_depth=7, reg_lambda=1.0,
                 min_noisy_count="auto", count_share=0.5, noiseless="", binning="domain",
                 max_bins=32, feature_domain=None,
                 categorical_features=None, n_categories=None, classes=None,
                 random_state=None, noise_rng=None, accountant=None):
        _common_init(self, locals())


class NPAdaBoostXGBDPClassifier(_AdaBoostPart, XGBDPEnsembleBase):
    """Non-private twin of :class:`DPAdaBoostXGBDPClassifier` (``no_noise`` row)."""

    _private = False

    def __init__(self, *, n_trees=5, max_depth=7, reg_lambda=1.0, min_samples_leaf=1,
                 binning="domain", max_bins=32, feature_domain=None,
                 categorical_features=None, n_categories=None, classes=None,
                 random_state=None):
        _common_init(self, locals())
