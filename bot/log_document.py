"""A job's log lines joined into one text, so that each regex scans it once (in C) instead of per line."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from bot.models import LogLine


class LogDocument:
    def __init__(self, lines: Sequence[LogLine]) -> None:
        self.lines: list[LogLine] = list(lines)
        starts: list[int] = []
        offset = 0
        for line in self.lines:
            starts.append(offset)
            offset += len(line.text) + 1
        self.starts = starts
        self.text = "\n".join(line.text for line in self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def line_at(self, offset: int) -> int:
        """Index of the line that holds character `offset` of the joined text."""
        return bisect_right(self.starts, offset) - 1

    def came_before(self, a: int, b: int) -> bool:
        """Whether line `a` was logged no later than line `b` (by timestamp when both have one)."""
        ta, tb = self.lines[a].timestamp, self.lines[b].timestamp
        if ta is not None and tb is not None and ta != tb:
            return ta < tb
        return a <= b

    def earliest(self, indices: Sequence[int]) -> int:
        """The line that came first: by timestamp where every candidate has one, else by position."""
        if all(self.lines[i].timestamp is not None for i in indices):
            return min(indices, key=lambda i: (self.lines[i].timestamp, i))
        return min(indices)
