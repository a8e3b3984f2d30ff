"""A job's log lines joined into one UTF-8 buffer, so that each regex scans it once (in C) instead of per line.

Offsets are byte offsets into `data` (RE2 works on bytes; converting offsets to characters costs more than
the matching itself).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from operator import attrgetter

from bot.models import LogLine

_TEXT = attrgetter("text")
_PLUS_ONE = (1).__add__


class LogDocument:
    def __init__(self, lines: Sequence[LogLine]) -> None:
        self.lines: list[LogLine] = list(lines)
        self.texts: list[str] = list(map(_TEXT, self.lines))
        joined = "\n".join(self.texts)
        if joined.isascii():  # one byte per character: one encode, and offsets from the lengths (all in C)
            self.data: bytes = joined.encode("ascii")
            self.starts: list[int] = [0, *accumulate(map(_PLUS_ONE, map(len, self.texts)))][: len(self.texts)]
        else:
            try:
                encoded = list(map(str.encode, self.texts))  # UTF-8, in C
            except UnicodeEncodeError:  # a lone surrogate (decoded with surrogateescape): replaced
                encoded = [text.encode("utf-8", "replace") for text in self.texts]
            self.data = b"\n".join(encoded)
            self.starts = [0, *accumulate(map(_PLUS_ONE, map(len, encoded)))][: len(encoded)]

    def chunks(self, size: int, overlap_lines: int = 0) -> list[tuple[int, int]]:
        """Byte ranges of about `size` bytes that start and end on line boundaries, covering `data`; each reaches
        `overlap_lines` lines into the next (a pattern spanning lines is whole in the range where it starts)."""
        ranges: list[tuple[int, int]] = []
        begin = 0
        total = len(self.data)
        starts = self.starts
        while begin < total:
            index = self.line_at(min(begin + size, total - 1))
            end = starts[index + 1] if index + 1 < len(starts) else total
            if end <= begin:
                end = total
            reach = index + 1 + overlap_lines
            ranges.append((begin, starts[reach] if reach < len(starts) else total))
            begin = end
        return ranges

    def __len__(self) -> int:
        return len(self.lines)

    def line_at(self, offset: int) -> int:
        """Index of the line that holds byte `offset` of the joined data."""
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
