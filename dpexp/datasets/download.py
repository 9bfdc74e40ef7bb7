"""Checksummed downloads with pooch, from the official host or a mirror.

``DPEXP_DATA_MIRROR`` (or ``mirror=``) replaces the official host: either a folder or an
``http(s)://`` base URL holding ``<mirror>/<mirror_path>`` (``<dataset>/<file>``).
Files are verified against the registry's sha256; a mismatch deletes nothing that was
already verified and raises :class:`~dpexp.errors.DatasetError` with the path and how to
retry. Files without a published checksum are trusted on first use, but only once the
first download has been decompressed, parsed and found to have the registry's row and
feature counts: then its hash is recorded next to the file (with those counts) and enforced
afterwards. A first download that does not parse (truncated, corrupt) is deleted with a
one-line :class:`~dpexp.errors.DatasetError`, and nothing is recorded.
"""

from __future__ import annotations

import hashlib
import shutil
import warnings
from pathlib import Path

import pooch

from dpexp.datasets.parsed import check_shape
from dpexp.datasets.parsers import PARSERS
from dpexp.datasets.registry import DatasetInfo, FileInfo
from dpexp.errors import DatasetError, DatasetUnavailableError
from dpexp.paths import data_dir, mirror_setting


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class _RichBar:
    """A pooch progress bar (tqdm-like protocol) drawn with rich."""

    def __init__(self, label: str):
        from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

        self._progress = Progress(
            *Progress.get_default_columns(), DownloadColumn(), TransferSpeedColumn(),
            transient=True,
        )
        self._task = self._progress.add_task(label, total=None)
        self._progress.start()
        self._total = None

    @property
    def total(self):
        return self._total

    @total.setter
    def total(self, value):
        self._total = value or None
        self._progress.update(self._task, total=self._total)

    def update(self, n):
        self._progress.update(self._task, advance=n)

    def reset(self):
        self._progress.reset(self._task, total=self._total)

    def close(self):
        self._progress.stop()


def _copy_downloader(source: Path):
    """A pooch downloader that copies ``source`` from a mirror folder."""

    def download(url, output_file, pooch_obj, check_only=False):  # noqa: ARG001
        if check_only:
            return source.exists()
        if not source.exists():
            raise FileNotFoundError(str(source))
        shutil.copyfile(source, output_file)
        return None

    return download


def _source(info: DatasetInfo, f: FileInfo, mirror: str | None) -> tuple[str, object | None]:
    """(url, downloader) for file ``f``."""
    if mirror:
        if mirror.startswith(("http://", "https://")):
            return mirror.rstrip("/") + "/" + f.mirror_path, None
        src = Path(mirror).expanduser() / f.mirror_path
        return src.resolve().as_uri(), _copy_downloader(src)
    if not f.url:
        how = info.local_instructions or "Put the file in the data directory."
        raise DatasetUnavailableError(
            f"Dataset {info.name!r}: file {f.name} has no public download URL. {how}"
        )
    return f.url, None


def fetch_file(
    info: DatasetInfo,
    f: FileInfo,
    *,
    mirror: str | None = None,
    root: Path | None = None,
    progress: bool = True,
) -> Path:
    """Return the local path of ``f``, downloading and verifying it if needed."""
    target_dir = (root or data_dir()) / info.name
    target = target_dir / f.name
    tofu = _record_path(target)
    mirror = mirror_setting(mirror)
    if f.sha256 is None and target.exists() and tofu.exists():
        if sha256_of(target) != _read_record(tofu)[0]:
            raise DatasetError(
                f"Dataset {info.name!r}: {target} no longer matches the checksum recorded at "
                f"its first download ({tofu}). Delete both files and run "
                f"`dpexp datasets download {info.name}` to fetch it again."
            )
        return target
    stale = _stale_copy_note(target, f.sha256)
    if f.sha256 is not None and target.exists() and not stale:
        return target
    url, downloader = _source(info, f, mirror)
    if downloader is None:
        downloader = pooch.HTTPDownloader(
            progressbar=_RichBar(f"{info.name}/{f.name}") if progress else False, timeout=60
        )
    known = f"sha256:{f.sha256}" if f.sha256 else None
    target_dir.mkdir(parents=True, exist_ok=True)
    pooch.get_logger().setLevel("WARNING")  # our own progress bar says what is downloading
    try:
        path = Path(
            pooch.retrieve(
                url, known_hash=known, fname=f.name, path=target_dir,
                downloader=downloader, progressbar=False,
            )
        )
    except ValueError as exc:
        if "hash" in str(exc).lower():
            raise DatasetError(
                f"Dataset {info.name!r}: the download of {f.name} from {url} failed its "
                f"sha256 check (expected {f.sha256}); the corrupted or truncated file was "
                f"discarded and nothing in {target_dir} was changed. Retry with `dpexp "
                f"datasets download {info.name}`; if it keeps failing, the source or mirror "
                f"serves a different file."
            ) from None
        raise
    except (OSError, Exception) as exc:  # network errors come from requests
        if isinstance(exc, DatasetError):
            raise
        # a corrupted cached copy stays an error even where unreachable data is skipped
        error = DatasetError if stale else DatasetUnavailableError
        raise error(
            f"Dataset {info.name!r}: {stale}could not download {f.name} from {url} "
            f"({type(exc).__name__}: {exc}). Check your connection, or set DPEXP_DATA_MIRROR "
            f"to a folder or http(s) URL holding <dataset>/<file> (e.g. {info.name}/{f.name}), then "
            f"retry `dpexp datasets download {info.name}`."
        ) from None
    return path


def _stale_copy_note(target: Path, expected: str | None) -> str:
    """A sentence about a cached copy that fails its published checksum ('' if none), so
    that a failed re-download does not hide why a download was attempted at all."""
    if expected is None or not target.exists():
        return ""
    got = sha256_of(target)
    if got == expected:
        return ""
    return (
        f"the cached copy {target} failed its sha256 check (expected {expected}, got {got}: "
        f"truncated or corrupted); fetching a fresh copy failed: "
    )


def fetch_dataset(info: DatasetInfo, *, mirror: str | None = None, progress: bool = True) -> list[Path]:
    """Fetch every file of a downloadable dataset; a file without a published checksum is
    parsed and its shape checked before its hash is recorded (:func:`_check_first_download`)."""
    if info.local_only is not None:
        return [local_only_path(info)]
    paths = [fetch_file(info, f, mirror=mirror, progress=progress) for f in info.files]
    unchecked = [p for f, p in zip(info.files, paths, strict=True)
                 if f.sha256 is None and not _read_record(_record_path(p))[1]]
    if unchecked:
        _check_first_download(info, paths, unchecked)
    return paths


def _record_path(target: Path) -> Path:
    """Where the hash of a file without a published checksum is recorded."""
    return target.parent / f".{target.name}.sha256"


def _read_record(record: Path) -> tuple[str | None, bool]:
    """(recorded sha256, whether the file was parsed and its shape checked when recorded).
    A record holding only a hash was written by a dpexp that did not parse the file first."""
    if not record.exists():
        return None, False
    fields = record.read_text().split()
    return (fields[0] if fields else None), len(fields) > 1


def _check_first_download(info: DatasetInfo, paths: list[Path], unchecked: list[Path]) -> None:
    """Decompress and parse the dataset, check its rows and features against the registry,
    then record the hash of each file in ``unchecked``; if that fails, delete them (and any
    record) and raise one line: a truncated file must never get a trusted hash."""
    try:
        parsed = PARSERS[info.parser](paths, info.options)
        check_shape(info, parsed, info.rows)
    except DatasetError as exc:
        for path in unchecked:
            path.unlink(missing_ok=True)
            _record_path(path).unlink(missing_ok=True)
        names = ", ".join(p.name for p in unchecked)
        raise DatasetError(
            f"Dataset {info.name!r}: the download of {names} (no published checksum) failed to "
            f"parse, so it was deleted and no checksum was recorded: {str(exc).rstrip('.')}. "
            f"Retry with `dpexp datasets download {info.name}`."
        ) from None
    for path in unchecked:
        digest = sha256_of(path)
        _record_path(path).write_text(f"{digest} rows={parsed.X.shape[0]} features={parsed.X.shape[1]}\n")
        warnings.warn(
            f"{info.name}/{path.name}: no published checksum; parsed it ({parsed.X.shape[0]} rows, "
            f"{parsed.X.shape[1]} features, as the registry says) and recorded sha256 {digest}, "
            f"enforced from now on.",
            stacklevel=3,
        )


def local_only_path(info: DatasetInfo) -> Path:
    """Path of a user-supplied file; a clear error with instructions if it is missing."""
    assert info.local_only is not None
    path = data_dir() / info.name / info.local_only["file"]
    if not path.exists():
        raise DatasetUnavailableError(
            f"Dataset {info.name!r} cannot be downloaded publicly and has not been supplied. "
            f"{info.local_only.get('instructions', '').strip()} (expected at {path})"
        )
    return path


def file_state(info: DatasetInfo, f: FileInfo) -> dict:
    """Local state of one registered file, without downloading or copying anything.

    ``status``: ``ok`` (cached, checksum verified), ``missing``, ``checksum mismatch``
    (cached copy is truncated or corrupted), or ``unverified`` (cached, no checksum known).
    """
    path = data_dir() / info.name / f.name
    expected, parsed_first = f.sha256, True
    if expected is None:
        expected, parsed_first = _read_record(_record_path(path))
    row = {"file": f.name, "path": str(path), "sha256": f.sha256, "url": f.url, "page": f.page,
           "mirror_path": f.mirror_path, "status": "missing", "detail": "not in the data directory"}
    if not path.exists():
        return row
    if expected is None or not parsed_first:
        row.update(status="unverified", detail="cached; no checksum known yet" if expected is None else
                   "cached; its sha256 was recorded without parsing the file (an older dpexp): "
                   "it is parsed and checked at the next download or load")
        return row
    got = sha256_of(path)
    if got == expected:
        row.update(status="ok", detail="cached, sha256 verified")
    else:
        row.update(status="checksum mismatch",
                   detail=f"cached copy failed its sha256 check (expected {expected}, got {got}): "
                          f"truncated or corrupted; delete it and run `dpexp datasets download {info.name}`")
    return row


def checksum_status(info: DatasetInfo) -> list[dict]:
    """Per file: cached path and whether its checksum verifies (see :func:`file_state`).
    Reads only the data directory: never downloads or copies."""
    return [file_state(info, f) for f in info.files]


def local_only_state(info: DatasetInfo) -> dict | None:
    """Where a user-supplied file must go and whether it is there (None if not local-only)."""
    if info.local_only is None:
        return None
    path = data_dir() / info.name / info.local_only["file"]
    return {"file": info.local_only["file"], "path": str(path),
            "status": "present" if path.exists() else "missing",
            "instructions": info.local_only.get("instructions", "").strip()}
