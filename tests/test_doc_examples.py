"""Every ```python block of README.md, docs/*.md and docs/estimators/*.md runs (issue #42).

Convention (stated in docs/ARCHITECTURE.md, "Code examples in the docs"):

* a ```python block is a complete example: it runs on its own in a fresh interpreter
  whose working directory is an empty temporary directory;
* a block whose first line is ``# fragment: <reason>`` is an API sketch: it is only
  compiled, not run;
* a block whose first line is ``# continues: <reason>`` runs after the runnable blocks
  of the same file that precede it (it reuses their ``X``, ``y``, imports);
* a classifier example (it fits a ``...Classifier``) prints at least one line
  ``accuracy A  majority rate M`` (held-out accuracy and the majority-class rate of the
  same held-out labels), and every such line must have A > M.

Non-Python blocks (```bash, ```text, ```toml, ```yaml, ...) are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "estimators").glob("*.md")),
]
FENCE = re.compile(r"^\s*```(\S*)\s*$")
SCORE = re.compile(r"accuracy\s+([0-9]*\.[0-9]+)\s+majority rate\s+([0-9]*\.[0-9]+)")
CLASSIFIER_FIT = re.compile(r"\w+Classifier\((?s:.)*?\.fit\(")
TIMEOUT_S = 120  # generous: the interpreter's import of dpexp/sklearn on a loaded machine


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    code: str
    kind: str  # "run", "fragment", "continues"

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            i += 1
        assert i < len(lines), f"{path}:{start + 1}: unclosed code fence"
        if lang == "python":
            body = lines[start + 1 : i]
            indent = min((len(s) - len(s.lstrip()) for s in body if s.strip()), default=0)
            code = "\n".join(s[indent:] for s in body) + "\n"
            first = code.lstrip().splitlines()[0] if code.strip() else ""
            kind = (
                "fragment"
                if first.startswith("# fragment:")
                else "continues"
                if first.startswith("# continues:")
                else "run"
            )
            blocks.append(Block(path, start + 1, code, kind))
        i += 1
    return blocks


ALL_BLOCKS = [b for f in DOC_FILES for b in python_blocks(f)]


def program(block: Block) -> str:
    """The code to run for ``block``: its file's earlier runnable blocks first if it continues."""
    if block.kind != "continues":
        return block.code
    earlier = [
        b
        for b in ALL_BLOCKS
        if b.path == block.path and b.line < block.line and b.kind != "fragment"
    ]
    assert earlier, f"{block.id}: '# continues:' but no runnable block before it"
    return "\n".join(b.code for b in earlier) + "\n" + block.code


def test_docs_have_python_examples():
    assert sum(b.kind != "fragment" for b in ALL_BLOCKS) >= 10


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[b.id for b in ALL_BLOCKS])
def test_block_compiles(block: Block):
    compile(block.code, block.id, "exec")
    if block.kind == "fragment":
        reason = block.code.lstrip().splitlines()[0].removeprefix("# fragment:").strip()
        assert reason, f"{block.id}: '# fragment:' needs a reason"


RUNNABLE = [b for b in ALL_BLOCKS if b.kind != "fragment"]


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_example_runs_and_beats_majority(block: Block, tmp_path: Path):
    code = program(block)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert proc.returncode == 0, f"{block.id} failed:\n{proc.stdout}\n{proc.stderr}"
    scores = [(float(a), float(m)) for a, m in SCORE.findall(proc.stdout)]
    if CLASSIFIER_FIT.search(block.code):
        assert scores, (
            f"{block.id} fits a classifier but prints no "
            f"'accuracy A  majority rate M' line:\n{proc.stdout}"
        )
    for acc, maj in scores:
        assert acc > maj, f"{block.id}: accuracy {acc} does not beat the majority rate {maj}"


def test_block_parser_and_score_line():
    assert SCORE.findall("accuracy 0.712  majority rate 0.502\n") == [("0.712", "0.502")]
    assert CLASSIFIER_FIT.search("m = FooClassifier(\n  epsilon=1.0,\n).fit(X, y)")
    assert not CLASSIFIER_FIT.search("m = FooRegressor(epsilon=1.0).fit(X, y)")
