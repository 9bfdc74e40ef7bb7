"""Registered procedures of InPrivate Digging (Zhao et al. 2018).

``inprivate_schedule_timing`` (Fig. 4): runs Algorithm 2 with one real worker process per
participant (:mod:`dpexp.papers.inprivate.schedule`), either as the baseline chain of
Section VI-A or with the speed-up of Section VI-C, and reports the measured wall-clock
total next to Eq. (18) / Eq. (19) evaluated with the ``c_1`` (evaluate one tree on the
own records) and ``c_2`` (train one tree) measured in the same run.
"""

from __future__ import annotations

_ESTIMATOR_KEYS = {
    "records_per_participant", "n_records", "depth", "binning", "max_bins", "internal_fraction",
    "residual_clip", "learning_rate",
}


def inprivate_schedule_timing(ctx) -> dict[str, float]:
    """Fig. 4: total boosting time of ``n_participants`` owners (one tree each, one round).

    Params: ``n_participants`` (x axis), ``schedule`` (``"baseline"``|``"speedup"``),
    ``report`` (``"measured"``: ``seconds`` is the measured total; ``"equation"``: Eq. 18
    for the baseline, Eq. 19 for the speed-up, with this run's mean ``c_1``, ``c_2``),
    ``tree_epsilon`` (budget of each tree, default 1; timing does not depend on it),
    ``private`` (default true), ``backend`` (``"loky"``|``"dask"``) and the estimator's
    ``records_per_participant``, ``n_records``, ``depth``, ``binning``, ``max_bins``, ...

    ``n_records`` (the size ``records_per_participant`` is a share of) defaults to the
    training set's row count, declared public here: the timing experiment releases
    seconds, not a model (the runner records it as not a DP release), and its training
    set's size follows from the registered dataset and the spec's ``max_rows``.
    """
    p = dict(ctx.params)
    n = int(p.pop("n_participants", 5))
    schedule = p.pop("schedule", "speedup")
    report = p.pop("report", "measured")
    backend = p.pop("backend", "loky")
    private = bool(p.pop("private", True))
    eps = float(p.pop("tree_epsilon", 1.0))
    unknown = set(p) - _ESTIMATOR_KEYS
    if unknown:
        raise ValueError(f"inprivate_schedule_timing: unknown params {sorted(unknown)}")
    if report not in ("measured", "equation"):
        raise ValueError(f"report must be 'measured' or 'equation', got {report!r}")
    # lazy: the estimators load scikit-learn and numba; `dpexp list` and `plan` import this module only to read the procedures' flags
    from dpexp.papers.inprivate.estimators import (
        InPrivateClassifier,
        InPrivateNPClassifier,
        InPrivateNPRegressor,
        InPrivateRegressor,
    )
    from dpexp.papers.inprivate.schedule import durations, eq18_seconds, eq19_seconds

    ds = ctx.dataset
    cls = {("classification", True): InPrivateClassifier, ("regression", True): InPrivateRegressor,
           ("classification", False): InPrivateNPClassifier,
           ("regression", False): InPrivateNPRegressor}[(ds.task, private)]
    p.setdefault("n_records", int(ctx.X_train.shape[0]))
    kwargs = dict(n_participants=n, n_rounds=1, n_jobs=-1, schedule=schedule, backend=backend,
                  random_state=ctx.random_state, **p)
    if private:
        kwargs.update(epsilon=eps, noise_rng=ctx.seeded_noise)
    est = cls(**kwargs)
    public = ds.public_metadata()
    est.set_params(**{k: v for k, v in public.items() if k in est.get_params()})
    est.fit(ctx.X_train, ctx.y_train)
    res = est.schedule_result_
    c1s, c2s = durations(res.timeline, "eval"), durations(res.timeline, "train")
    c1 = float(c1s.mean()) if c1s.size else 0.0
    c2 = float(c2s.mean()) if c2s.size else 0.0
    eq = eq18_seconds(n, c1, c2) if schedule == "baseline" else eq19_seconds(n, c1, c2)
    return {
        "seconds": res.total_seconds if report == "measured" else eq,
        "measured_seconds": res.total_seconds,
        "equation_seconds": eq,
        "eq18_seconds": eq18_seconds(n, c1, c2),
        "eq19_seconds": eq19_seconds(n, c1, c2),
        "c1_seconds": c1,
        "c2_seconds": c2,
        "n_sends": float(res.n_sends),
        "megabytes_sent": res.bytes_sent / 1e6,
        "n_trees": float(len(res.messages)),
    }


inprivate_schedule_timing.uses_epsilon = False

PROCEDURES = {"inprivate_schedule_timing": inprivate_schedule_timing}
