"""``dpexp peers``: side environments for optional peers that cannot share dpexp's
scikit-learn (today IBM diffprivlib 0.6.6, :mod:`dpexp.side_envs`)."""

from __future__ import annotations

from typing import Annotated

import typer

from dpexp.cli._common import err, guarded, out
from dpexp.errors import DpexpError
from dpexp.side_envs import SIDE_ENVS, get_side_env, setup_side_env, side_python

app = typer.Typer(help="Side environments of optional peers (diffprivlib).", no_args_is_help=True)


@app.command("setup")
@guarded
def setup(
    package: Annotated[str, typer.Argument(help=f"The peer package: {', '.join(SIDE_ENVS)}.")],
    python: Annotated[str | None, typer.Option("--python", help="The interpreter that makes the venv (default: this one).")] = None,
    best_effort: Annotated[bool, typer.Option("--best-effort", help="When it cannot be made (offline, no pip), print one line and exit 0 (make install-test).")] = False,
):
    """Make the side environment of PACKAGE (a venv with pinned versions); instant when it exists."""
    env = get_side_env(package)
    try:
        made = setup_side_env(package, base_python=python, log=err.print)
    except DpexpError as exc:
        if not best_effort:
            raise
        err.print(f"side environment for {env.package} not made (its peer stays unavailable): {exc}")
        return
    out.print(f"{env.package} {env.version} side environment: {made}")


@app.command("status")
@guarded
def status():
    """Where each side environment's interpreter is, or that it is missing."""
    for package, env in SIDE_ENVS.items():
        python = side_python(package)
        where = str(python) if python else f"missing (dpexp peers setup {package})"
        out.print(f"{package} {env.version}: {where}")
