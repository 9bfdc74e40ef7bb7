"""What this machine offers a run: the code revision, writable output folders, the optional
packages that import, and the datasets that load without the network.

Read by the runner (up-front checks), the plan (what can run here) and the report (which
series have no results because a package or dataset is missing here)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from dpexp.datasets.registry import DatasetInfo, get_dataset_info
from dpexp.errors import DpexpError
from dpexp.paths import data_dir, mirror_setting, project_root
from dpexp.registry import package_unavailable


def git_revision() -> str:
    try:
        root = project_root()
        rev = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True,
            timeout=10,
        )
        if rev.returncode != 0:
            return "unknown"
        dirty = subprocess.run(
            # results/ is what runs write: a campaign's own tables do not make the code dirty
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
             ":(exclude)results"], cwd=root,
            capture_output=True, text=True, timeout=10,
        )
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError, DpexpError):
        return "unknown"


def check_writable(directory: Path, what: str) -> None:
    """Fail before any computation when ``directory`` cannot hold outputs (one-line error)."""
    directory = Path(directory)
    for p in (directory, *directory.parents):
        if p.exists():
            if not p.is_dir():
                raise DpexpError(f"{what} {directory} is not usable: {p} is a file, not a directory.")
            break
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".dpexp-write-check.", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise DpexpError(f"{what} {directory} is not writable ({exc.strerror or exc}).") from None


def optional_unavailable(requires: tuple[str, ...]) -> str | None:
    """The first optional package of ``requires`` that cannot be used here (it does not
    import and no side environment provides it), with why and how to get it; or None."""
    for package in requires:
        why = package_unavailable(package)
        if why is not None:
            return f"{package} ({why})"
    return None


def dataset_available(name: str) -> bool:
    """Whether ``name`` can be loaded here without the network: synthetic, in the local data
    cache, or in a folder mirror (``DPEXP_DATA_MIRROR``) that holds its files.

    Presence only (:func:`files_present`): a count of what this machine can compute reads
    no data (hashing SUSY's 2 GB would take seconds); loading a file verifies its checksum."""
    info = get_dataset_info(name)
    if files_present(info):
        return True
    mirror = mirror_setting(None)
    if not mirror or "://" in str(mirror) or info.local_only is not None:
        return False
    return all((Path(mirror) / f.mirror_path).exists() for f in info.files if f.mirror_path)


def files_present(info: DatasetInfo) -> bool:
    """Synthetic, or every file of ``info`` in the data directory (checksums not read)."""
    if info.parser == "synthetic":
        return True
    local = data_dir() / info.name
    if info.local_only is not None:  # a file the user puts there by hand
        return (local / info.local_only["file"]).exists()
    return all((local / f.name).exists() for f in info.files)


def downloaded(name: str, info: DatasetInfo | None = None) -> bool:
    """Synthetic, or every file in the data directory with a verifying checksum."""
    info = info or get_dataset_info(name)
    if info.parser == "synthetic":
        return True
    # lazy: download imports the parsers (pandas), which counting what can run never needs
    from dpexp.datasets import download

    return all(f["status"] in ("ok", "unverified") for f in download.checksum_status(info))
