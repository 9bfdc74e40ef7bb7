"""Read and validate ``datasets.yaml`` (see the comments at the top of that file)."""

from __future__ import annotations

import functools
import hashlib
import json
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
    "test_rows", "classes",
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
    classes: tuple[Any, ...] | None = None

    @property
    def downloadable(self) -> bool:
        return bool(self.files) and self.local_only is None

    @property
    def data_version(self) -> str:
        """A short fingerprint of everything in this entry that shapes the rows a cell sees
        and their public domain: task, parser and its options (a generator's settings, the
        categories), the files' checksums, declared classes and domains. Descriptions and
        paper references are left out. Part of every cell's cache identity, so a changed
        generator or domain never reuses results computed under the old one."""
        shape = {
            "task": self.task, "parser": self.parser, "options": self.options,
            "files": [f.sha256 for f in self.files], "classes": self.classes,
            "feature_domain": self.feature_domain, "label_domain": self.label_domain,
        }
        text = json.dumps(shape, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def declares_every_domain(self) -> bool:
        """Whether this entry declares every public domain its task needs, before any file
        is read: every feature's range (``declared``, a ``declared_columns`` list, or named
        columns plus the categorical ones with documented categories covering all
        ``features``) and, for regression, the label range. The runner pays for the
        others only when asked (``dp_domain_share``, :mod:`dpexp.experiments.paid_domains`)."""
        spec = self.feature_domain
        if self.task == "regression" and not isinstance(self.label_domain, dict):
            return False
        if isinstance(spec, dict) and ("declared" in spec or isinstance(spec.get("declared_columns"), list)):
            return True
        named = set(spec["declared_columns"]) if isinstance(spec, dict) else set()
        named |= set(self.options.get("categories") or {})
        return self.features is not None and len(named) >= self.features

    def domain_declaration(self) -> dict[str, str]:
        """What the registry declares about the public domain, before any file is read."""
        spec, out = self.feature_domain, {}
        cats = sorted(self.options.get("categories") or {})
        if isinstance(spec, dict) and "declared" in spec:
            d = spec["declared"]
            out["features"] = f"declared: every feature in [{d['low']}, {d['high']}]" + (
                " (binary)" if d.get("binary") else "")
        elif isinstance(spec, dict) and isinstance(spec.get("declared_columns"), list):
            out["features"] = "declared: one [low, high] per feature"
        else:
            named = list(spec["declared_columns"]) if isinstance(spec, dict) else []
            declared = [*named, *(f"{c} (categories)" for c in cats)]
            listed = ", ".join(declared) if len(declared) <= 10 else (
                f"{len(declared)} features ({', '.join(declared[:5])}, ...)")
            out["features"] = (
                (f"declared for {listed}; other features " if declared else "")
                + "observed (not DP: domain from data)"
            )
            if not named and cats and len(cats) == (self.features or -1):
                out["features"] = "declared: every feature is categorical with documented categories"
        if self.task == "classification":
            out["classes"] = "declared: " + ", ".join(str(c) for c in self.classes or ())
        elif isinstance(self.label_domain, dict):
            d = self.label_domain["declared"]
            out["label"] = f"declared: [{d['low']}, {d['high']}]"
        else:
            out["label"] = "observed (not DP: label range from data)"
        return out


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
        classes = _check_classes(entry.get("classes"), task, where)
        if parser == "csv":
            _check_csv_column_types(entry.get("options") or {}, where)
        _check_feature_domain(entry.get("feature_domain", "observed"), where)
        _check_label_domain(entry.get("label_domain"), task, where)
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
            classes=classes,
        )
    return out


def _check_classes(value: Any, task: str, where: str) -> tuple[Any, ...] | None:
    """The public label set of a classification dataset: required, a list of >= 2
    distinct labels as they appear in the file (after ``label_map``)."""
    if task == "regression":
        if value is not None:
            raise SpecError(f"{where}: key 'classes' is for classification datasets only.")
        return None
    if not isinstance(value, list) or len(value) < 2:
        raise SpecError(
            f"{where}: key 'classes' must list the public label set (>= 2 labels); it is "
            f"declared, not read from the data, so that the release does not depend on it."
        )
    if len({str(v) for v in value}) != len(value):
        raise SpecError(f"{where}: key 'classes' has duplicate labels: {value}.")
    return tuple(value)


def _check_csv_column_types(options: Any, where: str) -> None:
    """``options.categorical`` of a CSV entry: ``all`` or a list of column names (absent:
    every feature column is numeric). Types are declared, never guessed from the values,
    so that one stray or empty field cannot turn a numeric column categorical."""
    if not isinstance(options, dict):
        raise SpecError(f"{where}: key 'options' must be a mapping.")
    value = options.get("categorical", [])
    if value == "all" or (isinstance(value, list) and all(isinstance(c, str) for c in value)):
        return
    hint = (" ('auto' guessed the type from the values, so one empty or stray field could "
            "retype a whole column)") if value == "auto" else ""
    raise SpecError(
        f"{where}: key 'options.categorical' must be 'all' or a list of the categorical "
        f"column names (every other feature column is numeric), got {value!r}{hint}."
    )


def _check_bounds(pair: Any, where: str) -> None:
    ok = isinstance(pair, list | tuple) and len(pair) == 2 and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in pair)
    if not ok or pair[0] > pair[1]:
        raise SpecError(f"{where}: expected [low, high] with low <= high, got {pair!r}.")


def _check_feature_domain(spec: Any, where: str) -> None:
    """``observed`` | ``{declared: {low, high[, binary]}}`` | ``{declared_columns: [[l, h], ...]}``
    | ``{declared_columns: {feature: [l, h], ...}}`` (features not named: observed)."""
    key = f"{where}: key 'feature_domain'"
    if spec == "observed":
        return
    if not isinstance(spec, dict) or len(spec) != 1:
        raise SpecError(f"{key} must be 'observed', {{declared: ...}} or {{declared_columns: ...}}.")
    if "declared" in spec:
        d = spec["declared"]
        if not isinstance(d, dict) or not {"low", "high"} <= set(d) or set(d) - {"low", "high", "binary"}:
            raise SpecError(f"{key}: 'declared' needs exactly low, high (and optionally binary).")
        _check_bounds([d["low"], d["high"]], f"{key}.declared")
    elif "declared_columns" in spec:
        cols = spec["declared_columns"]
        pairs = cols.items() if isinstance(cols, dict) else enumerate(cols or [])
        if not isinstance(cols, dict | list) or not cols:
            raise SpecError(f"{key}: 'declared_columns' must be a list or a mapping of [low, high].")
        for col, pair in pairs:
            _check_bounds(pair, f"{key}.declared_columns[{col!r}]")
    else:
        raise SpecError(f"{key}: unknown form {sorted(spec)}; use declared or declared_columns.")


def _check_label_domain(spec: Any, task: str, where: str) -> None:
    key = f"{where}: key 'label_domain'"
    if spec is None or spec == "observed":
        return
    if task != "regression":
        raise SpecError(f"{key} is for regression datasets only.")
    if not isinstance(spec, dict) or "declared" not in spec or not isinstance(spec["declared"], dict):
        raise SpecError(f"{key} must be 'observed' or {{declared: {{low: L, high: H}}}}.")
    d = spec["declared"]
    _check_bounds([d.get("low"), d.get("high")], f"{key}.declared")


def load_registry(path: Path | None = None) -> dict[str, DatasetInfo]:
    path = Path(path or datasets_yaml())
    try:
        stat = path.stat()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the dataset registry: {exc.strerror}") from None
    # Parsed once per file version (path, mtime, size): a report asks hundreds of times.
    return dict(_parsed_registry(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=8)
def _parsed_registry(path: str, mtime_ns: int, size: int) -> dict[str, DatasetInfo]:  # noqa: ARG001
    try:
        # the C loader where PyYAML has it: the same documents, ten times faster (dpexp list)
        raw = yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {exc}") from None
    return parse_registry(raw, source=Path(path).name)


def all_datasets() -> dict[str, DatasetInfo]:
    return load_registry()


def get_dataset_info(name: str) -> DatasetInfo:
    reg = load_registry()
    if name not in reg:
        raise UnknownNameError("dataset", name, reg)
    return reg[name]
