"""Read and validate ``datasets.yaml`` (see the comments at the top of that file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dpexp.errors import SpecError, UnknownNameError
from dpexp.paths import datasets_yaml

TASKS = ("classification", "regression")
PARSERS = ("libsvm", "csv", "claves", "synthetic")
_ENTRY_KEYS = {
    "description", "task", "papers", "files", "parser", "options", "rows", "features",
    "feature_domain", "label_domain", "local_only", "local_instructions", "paper_rows",
    "test_rows",
}
_FILE_KEYS = {"name", "url", "sha256", "mirror_path", "page"}


@dataclass(frozen=True)
class FileInfo:
    name: str
    url: str | None
    sha256: str | None
    mirror_path: str
    page: str | None = None


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    description: str
    task: str
    papers: dict[str, str]
    parser: str
    files: tuple[FileInfo, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    rows: int | None = None
    features: int | None = None
    test_rows: int | None = None
    paper_rows: int | None = None
    feature_domain: Any = "observed"
    label_domain: Any = None
    local_only: dict[str, str] | None = None
    local_instructions: str | None = None

    @property
    def downloadable(self) -> bool:
        return bool(self.files) and self.local_only is None


def _require(entry: dict, key: str, where: str):
    if key not in entry:
        raise SpecError(f"{where}: missing required key {key!r}.")
    return entry[key]


def parse_registry(raw: Any, source: str = "datasets.yaml") -> dict[str, DatasetInfo]:
    """Validate the parsed YAML of a dataset registry; errors name the offending key."""
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: expected a mapping of dataset names to entries.")
    out: dict[str, DatasetInfo] = {}
    for name, entry in raw.items():
        where = f"{source}: dataset {name!r}"
        if not isinstance(entry, dict):
            raise SpecError(f"{where}: expected a mapping, got {type(entry).__name__}.")
        unknown = set(entry) - _ENTRY_KEYS
        if unknown:
            raise SpecError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}.")
        task = _require(entry, "task", where)
        if task not in TASKS:
            raise SpecError(f"{where}: key 'task' must be one of {TASKS}, got {task!r}.")
        parser = _require(entry, "parser", where)
        if parser not in PARSERS:
            raise SpecError(f"{where}: key 'parser' must be one of {PARSERS}, got {parser!r}.")
        files = []
        for i, f in enumerate(entry.get("files") or []):
            fw = f"{where}, files[{i}]"
            if not isinstance(f, dict):
                raise SpecError(f"{fw}: expected a mapping.")
            bad = set(f) - _FILE_KEYS
            if bad:
                raise SpecError(f"{fw}: unknown key(s) {', '.join(sorted(bad))}.")
            sha = f.get("sha256")
            if sha is not None and (len(str(sha)) != 64 or any(c not in "0123456789abcdef" for c in str(sha))):
                raise SpecError(f"{fw}: key 'sha256' must be 64 lowercase hex digits or null.")
            files.append(
                FileInfo(
                    name=_require(f, "name", fw),
                    url=f.get("url"),
                    sha256=sha,
                    mirror_path=_require(f, "mirror_path", fw),
                    page=f.get("page"),
                )
            )
        if parser != "synthetic" and not files and not entry.get("local_only"):
            raise SpecError(f"{where}: needs 'files' or 'local_only'.")
        for key in ("rows", "features", "test_rows", "paper_rows"):
            v = entry.get(key)
            if v is not None and (not isinstance(v, int) or v <= 0):
                raise SpecError(f"{where}: key {key!r} must be a positive integer.")
        out[name] = DatasetInfo(
            name=name,
            description=str(entry.get("description", "")).strip(),
            task=task,
            papers=dict(entry.get("papers") or {}),
            parser=parser,
            files=tuple(files),
            options=dict(entry.get("options") or {}),
            rows=entry.get("rows"),
            features=entry.get("features"),
            test_rows=entry.get("test_rows"),
            paper_rows=entry.get("paper_rows"),
            feature_domain=entry.get("feature_domain", "observed"),
            label_domain=entry.get("label_domain"),
            local_only=entry.get("local_only"),
            local_instructions=entry.get("local_instructions"),
        )
    return out


def load_registry(path: Path | None = None) -> dict[str, DatasetInfo]:
    path = path or datasets_yaml()
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {exc}") from None
    return parse_registry(raw, source=str(path.name))


def all_datasets() -> dict[str, DatasetInfo]:
    return load_registry()


def get_dataset_info(name: str) -> DatasetInfo:
    reg = load_registry()
    if name not in reg:
        raise UnknownNameError("dataset", name, reg)
    return reg[name]
