"""The core stays framework-free: bot/ never imports handlers/, Bolt or the web stack (only the process entry
point bot/__main__.py reaches the command line in handlers/)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parent.parent / "bot"
FORBIDDEN = ("handlers", "slack_bolt", "starlette", "uvicorn")


@pytest.mark.parametrize(
    "path",
    sorted(p for p in BOT.rglob("*.py") if p.name != "__main__.py"),
    ids=lambda p: str(p.relative_to(BOT)),
)
def test_core_module_imports_no_edge(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & set(FORBIDDEN), f"{path.name} imports {sorted(imported & set(FORBIDDEN))}"


MAX_MODULE_LINES = 400
EDGES = BOT.parent / "handlers"


@pytest.mark.parametrize(
    "path",
    sorted([*BOT.rglob("*.py"), *EDGES.rglob("*.py")]),
    ids=lambda p: str(p.relative_to(BOT.parent)),
)
def test_every_module_does_one_job_in_at_most_400_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines; split it by job"


@pytest.mark.parametrize(
    "pattern",
    [r"[0-9]{1,30}", r"(customJobs|pipelineJobs)", r"[a-z0-9][a-z0-9-]{0,127}", r"[a-z]+-[a-z]+[0-9]{1,2}"],
)
def test_each_id_format_is_defined_once_in_the_job_identity_module(pattern: str) -> None:
    defined_in = sorted(
        str(p.relative_to(BOT.parent))
        for p in [*BOT.rglob("*.py"), *EDGES.rglob("*.py")]
        if pattern in p.read_text(encoding="utf-8")
    )
    assert defined_in == ["bot/jobs/identity.py"]
