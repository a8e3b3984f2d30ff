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
