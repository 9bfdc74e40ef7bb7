"""``dpexp cluster``: the dask.distributed cluster that ``--backend dask`` uses."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from dpexp.cli._common import guarded, out

app = typer.Typer(help="Inspect the dask.distributed cluster used by --backend dask.", no_args_is_help=True)


@app.command("info")
@guarded
def cluster_info(
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="tcp://HOST:PORT of a running scheduler; default: start a LocalCluster.")] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Workers of the LocalCluster (without --scheduler).")] = 2,
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """Workers, threads and memory of a dask cluster (the one `--backend dask` would use)."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.experiments.backends import dask_client

    with dask_client(scheduler, workers) as client:
        info = client.scheduler_info()
        rows = [{"worker": addr, "name": str(w.get("name")), "threads": w.get("nthreads"),
                 "memory_gib": round(w.get("memory_limit", 0) / 2**30, 2)}
                for addr, w in sorted(info.get("workers", {}).items())]
        summary = {"scheduler": info.get("address"), "workers": len(rows),
                   "threads": sum(r["threads"] or 0 for r in rows), "detail": rows}
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    out.print(f"scheduler {summary['scheduler']}: {summary['workers']} workers, {summary['threads']} threads")
    for r in rows:
        out.print(f"  {r['worker']}  name={r['name']}  threads={r['threads']}  memory={r['memory_gib']} GiB")
