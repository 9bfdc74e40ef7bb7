"""``dpexp audit``: empirical lower bounds on epsilon (dpexp.privacy.audit does the work)."""

from __future__ import annotations

from typing import Annotated

import typer

from dpexp.cli._common import guarded


@guarded
def audit(
    name: Annotated[str | None, typer.Argument(help="Audit target (a registered estimator end to end, a mechanism, a demo or ledger entries).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Audit every registered target.")] = False,
    broken: Annotated[bool, typer.Option("--broken", help="Use the deliberately broken fixtures.")] = False,
    epsilon: Annotated[float | None, typer.Option("--epsilon", help="Claimed epsilon to test.")] = None,
    samples: Annotated[int | None, typer.Option("--samples", help="Draws per dataset and stage.")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    quick: Annotated[bool, typer.Option("--quick", help="Each target's CI size (fewer draws); the default is the full size.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """Empirically lower-bound the epsilon of a release (mechanisms and real estimators).

    With NAME: exits 1 when the lower bound exceeds the claimed epsilon (the release is
    not as private as claimed), even for targets known to be unprivate. With --all: exits
    1 only on unexpected outcomes (a correct target flagged, or a known-unprivate one
    not flagged). --json lists kind, algorithm, claim, lower bound and outcome.
    Implemented by dpexp.privacy.audit.cli_audit.
    """
    from dpexp.privacy.audit import cli_audit

    code = cli_audit(name, all_targets=all_, broken=broken, epsilon=epsilon, samples=samples,
                     seed=seed, quick=quick, as_json=as_json, echo=typer.echo)
    raise typer.Exit(code)
