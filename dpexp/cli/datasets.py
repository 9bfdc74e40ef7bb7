"""``dpexp datasets``: list, download and inspect the registered datasets."""

from __future__ import annotations

import functools
import json
from typing import Annotated

import typer
from rich.table import Table

from dpexp.cli._common import err, guarded, out
from dpexp.errors import DpexpError
from dpexp.paths import data_dir

app = typer.Typer(help="List, download and inspect the registered datasets.", no_args_is_help=True)


@app.command("list")
@guarded
def datasets_list(as_json: Annotated[bool, typer.Option("--json")] = False):
    """Every registered dataset."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.datasets.registry import all_datasets

    rows = [
        {"name": i.name, "task": i.task, "rows": i.rows, "features": i.features,
         "papers": i.papers, "source": "synthetic" if i.parser == "synthetic"
         else ("user-supplied" if i.local_only else "download"), "description": i.description,
         "public_domain": i.domain_declaration()}
        for i in all_datasets().values()
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    t = Table("dataset", "task", "rows", "features", "source", "domain", "papers")
    for r in rows:
        # "declared" only when nothing public is read from the data (issue 16 item 5)
        declared = not any("observed" in v for v in r["public_domain"].values())
        t.add_row(r["name"], r["task"], f"{r['rows']:,}" if r["rows"] else "?", str(r["features"]),
                  r["source"], "declared" if declared else "observed (not DP)",
                  ", ".join(f"{k}: {v}" for k, v in r["papers"].items()))
    out.print(t)


@app.command("download")
@guarded
def datasets_download(
    name: Annotated[str | None, typer.Argument(help="Dataset name.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every downloadable dataset.")] = False,
    mirror: Annotated[str | None, typer.Option("--mirror", help="Folder or http(s) URL holding <dataset>/<file> [env: DPEXP_DATA_MIRROR].")] = None,
):
    """Download (and verify) dataset files into the data cache."""
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.datasets import download
    from dpexp.datasets.registry import all_datasets, get_dataset_info

    if not name and not all_:
        raise DpexpError("name a dataset or pass --all.")
    infos = [i for i in all_datasets().values() if i.downloadable] if all_ else [get_dataset_info(name)]
    failures = []
    for info in infos:
        if info.parser == "synthetic":
            out.print(f"{info.name}: synthetic, generated on use (nothing to download)")
            continue
        try:
            for p in download.fetch_dataset(info, mirror=mirror):
                out.print(f"{info.name}: {p} (sha256 ok)")
        except DpexpError as exc:
            if not all_:
                raise
            failures.append(f"{info.name}: {exc}")
    if failures:
        for f in failures:
            err.print(f"[red]failed[/] {f}", highlight=False)
        raise typer.Exit(2)


@app.command("info")
@guarded
def datasets_info(
    name: Annotated[str, typer.Argument(help="Dataset name.")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
    load: Annotated[bool, typer.Option("--load/--no-load", help="Also load it (downloading or copying it into the data directory if needed) to report rows, class balance and the domain found.")] = False,
):
    """Registry entry, public domain, local state (cached? verified?) and where to get it.

    Reads only the registry and the data directory unless --load is given.
    """
    # lazy: a command loads its machinery (pandas, numba, scikit-learn) when it runs, so `dpexp --help` stays fast
    from dpexp.datasets import download, load_dataset
    from dpexp.datasets.registry import get_dataset_info

    info = get_dataset_info(name)
    loaded = load_dataset(name, progress=False).summary() if load else None  # before the file states
    data = {"name": info.name, "description": info.description, "task": info.task,
            "papers": info.papers, "registry_rows": info.rows, "registry_features": info.features,
            "paper_rows": info.paper_rows, "test_rows": info.test_rows,
            "source": "synthetic" if info.parser == "synthetic" else ("user-supplied" if info.local_only else "download"),
            "public_domain": info.domain_declaration(),
            "classes": None if info.classes is None else list(info.classes),
            "data_dir": str(data_dir()), "mirror": download.mirror_setting(),
            "files": download.checksum_status(info)}
    if info.local_only:
        data["user_supplied"] = download.local_only_state(info)
    if info.local_instructions:
        data["instructions"] = info.local_instructions.strip()
    if loaded is not None:
        data["loaded"] = loaded
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=str))
        return
    _print_dataset_info(info, data)


def _print_dataset_info(info, data: dict) -> None:
    """Human-readable `datasets info` (the same facts as --json)."""
    say = functools.partial(out.print, highlight=False)
    say(f"[bold]{info.name}[/] ({info.task}) — {info.description}")
    say("papers: " + "; ".join(f"{k} ({v})" for k, v in info.papers.items()))
    paper = f" (paper: {info.paper_rows:,})" if info.paper_rows else ""
    test = f", fixed test part {info.test_rows:,} rows" if info.test_rows else ""
    say(f"registry shape: {info.rows or '?'} rows{paper} x {info.features or '?'} features{test}; "
        f"source: {data['source']}")
    for key, text in data["public_domain"].items():
        say(f"public {key}: {text}")
    for f in data["files"]:
        where = f["url"] or (f"{f['page']} (login needed)" if f["page"] else "no public URL")
        say(f"file {f['file']}: {f['status']} — {f['detail']}; local path {f['path']}")
        say(f"  get it from {where}, or a mirror at <mirror>/{f['mirror_path']}"
            f" (mirror now: {data['mirror'] or 'none; set DPEXP_DATA_MIRROR'})")
    if data.get("user_supplied"):
        u = data["user_supplied"]
        say(f"user-supplied file {u['file']}: {u['status']} at {u['path']}")
        say(f"  {u['instructions']}")
    if data.get("instructions"):
        say(f"instructions: {data['instructions']}")
    if "loaded" not in data:
        if info.parser == "synthetic":
            say("synthetic: generated on use; `--load` generates it and reports the domain found")
        elif info.local_only:
            say("not loaded; once the file is in place, `--load` reports rows, class balance and the domain found")
        else:
            say(f"not loaded (nothing was downloaded or copied); `dpexp datasets download {info.name}` "
                f"fetches it, `--load` also reports rows, class balance and the domain found")
        return
    loaded = data["loaded"]
    balance = loaded.get("class_balance")
    extra = (", class balance " + ", ".join(f"{k}: {v:.1%}" for k, v in balance.items())) if balance \
        else f", label range {loaded.get('label_range')}"
    test = f", fixed test split {loaded['test_rows']} rows" if loaded.get("test_rows") else ""
    say(f"loaded: {loaded['rows']} rows x {loaded['features']} features "
        f"({loaded['categorical_features']} categorical, sparse={loaded['sparse']}, "
        f"domain {loaded['domain_source']}){test}{extra}")


