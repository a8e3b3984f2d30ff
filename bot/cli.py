"""The `trainmedic` command line (placeholder while the real one is written)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    return 0
