"""The ``dpexp`` command line: parses arguments and delegates to the library.

One module per command group, each thin (parse, call the library, print):
``experiments`` (list, show, validate), ``run`` (run, plan), ``render`` (render, results,
report), ``algorithms``, ``audit``, ``datasets``, ``cluster`` and ``peers`` (sub-apps); ``_common``
holds the consoles, :func:`guarded` and the shared option types and parsing.
"""

from __future__ import annotations

from typing import Annotated

import typer

from dpexp.cli import (
    algorithms,
    audit,
    cluster,
    datasets,
    experiments,
    leaderboard,
    peers,
    render,
    run,
)
from dpexp.cli._common import OneLineErrors, guarded

__all__ = ["app", "guarded", "main"]

app = typer.Typer(
    cls=OneLineErrors,
    help="Reproduce the experiments of the papers on differentially private tree ensembles.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        import dpexp

        typer.echo(f"dpexp {dpexp.__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Reproduce the experiments of the papers on differentially private tree ensembles."""


# Registration order is the order of `dpexp --help`.
app.command("list")(experiments.list_experiments)
app.command()(experiments.show)
app.command()(experiments.validate)
app.command()(run.run)
app.command()(render.render)
app.command()(render.results)
app.command()(run.plan)
app.command()(render.report)
app.command("algorithms")(algorithms.list_algorithms)
app.command()(audit.audit)
app.command()(leaderboard.leaderboard)
app.add_typer(datasets.app, name="datasets")
app.add_typer(cluster.app, name="cluster")
app.add_typer(peers.app, name="peers")


def main() -> None:  # pragma: no cover - console entry point
    app()
