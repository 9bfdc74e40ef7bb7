"""Empirical privacy audit: a statistical lower bound on the real epsilon of a release.

Method (two stages on independent draws, so the reported bound is a valid test)

1. *Selection.* For every neighbouring pair of tiny datasets (both orders) draw a first
   batch of outputs and build candidate events (:mod:`dpexp.audit.events`): for real
   outputs ``X > t`` and ``X <= t`` with ``t`` at quantiles of the pooled batch; for
   discrete outputs, sets of outcomes ordered by their empirical likelihood ratio
   (prefixes), and the single most likely outcomes. Keep the (pair, event) with the best
   lower bound on this batch.
2. *Test.* On a second, fresh batch, compute one-sided Clopper-Pearson bounds for the
   chosen event, ``p_A >= p_A_lower`` and ``p_B <= p_B_upper``, each at level alpha/2
   (alpha = 1e-6), and report (:mod:`dpexp.audit.statistics`)

   * pure epsilon claims: ``epsilon_lower_bound = ln(p_A_lower) - ln(p_B_upper)``
     (with a delta claim: ``ln((p_A_lower - delta) / p_B_upper)``);
   * Gaussian releases: the whole (epsilon, delta(epsilon)) curve is tested at once
     through Gaussian DP (Dong, Roth & Su 2019): a Gaussian mechanism is mu-GDP, and
     mu-GDP gives ``p_A <= Phi(mu + Phi^-1(p_B))`` for every event, so
     ``mu_lower = Phi^-1(p_A_lower) - Phi^-1(p_B_upper)``. The claim (epsilon, delta)
     allows at most ``mu_claim = 1 / analytic_gaussian_sigma(epsilon, delta, 1)`` (the
     analytic Gaussian of Balle & Wang 2018 is the least noisy Gaussian meeting the
     headline pair). The test fails when ``mu_lower > mu_claim``, i.e. when the
     observations violate *some* point of the claimed curve -- this is how a halved
     sigma is caught near epsilon = 0 where the headline (epsilon, delta) pair alone
     would need far more draws. ``epsilon_lower_bound`` is then the epsilon at the
     headline delta of a ``mu_lower``-GDP mechanism.

   The target fails when the bound exceeds the claim. If the mechanism is private, the
   probability of a false alarm is at most alpha per tested release (Bonferroni over the
   releases of a multi-release target), whatever happened in stage 1. The bound is a
   *lower* bound: passing does not prove privacy, it only fails to refute it.

Modules, by concern

* :mod:`~dpexp.audit.targets`: :class:`AuditTarget` (the kinds of target are described
  there), :class:`AuditResult`, and the builders the paper packages use,
  :func:`end_to_end_target` and :func:`ledger_entry_target`;
* :mod:`~dpexp.audit.statistics`, :mod:`~dpexp.audit.events`: the method above;
* :mod:`~dpexp.audit.run`: :func:`run_target`, :func:`run_audit`, :func:`run_targets`,
  :func:`run_all`; :mod:`~dpexp.audit.record`: the outcome of ``dpexp audit --all
  --record`` kept in ``results/audit/audit.json`` (read by the report's leaderboard);
* :mod:`~dpexp.audit.catalogue`: the targets, collected from the audit's own lists and
  every paper manifest's ``audit_targets`` / ``broken_audit_targets`` (nothing is
  registered at import time);
* the audit's own targets: :mod:`~dpexp.audit.mechanism_targets` (mechanisms, the demo
  forest of :mod:`~dpexp.audit.tiny_forest`), :mod:`~dpexp.audit.domain_targets` (the DP
  feature-domain estimate), :mod:`~dpexp.audit.broken_targets` (broken fixtures that
  test the audit itself), with the datasets of :mod:`~dpexp.audit.fixtures`;
* shared by the papers' end-to-end targets: :mod:`~dpexp.audit.estimator_releases`
  (tiny fits of real estimators encoded as releases), and the release paths users run
  (issue #38): :mod:`~dpexp.audit.paths` (the paths and the target covering each),
  :mod:`~dpexp.audit.defaults_path` and :mod:`~dpexp.audit.runner_path` (the runner's
  fit).

``dpexp audit`` (its output and exit codes) is :func:`dpexp.cli.audit.cli_audit`.
This package imports :mod:`dpexp.privacy` and :mod:`dpexp.registry`, never
:mod:`dpexp.papers` (the paper packages import it for the target builders). Import the
names from their modules: this ``__init__`` imports nothing, so that a paper's audit
module (``dpexp.audit.targets``, numpy only) and the command line
(``dpexp.audit.catalogue``) stay cheap to import.
"""
