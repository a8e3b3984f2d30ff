"""Each match of a compiled google-re2 pattern as the spans of its groups, without google-re2's match objects
(bot.diagnosis.signal_lines locates signals with it, bot.diagnosis.curves.reader finds metric lines)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import re2

# google-re2's finditer makes a generator, then a match object for each match, whose start() asks the program for its
# group count again: a third of the time of locating a signal's lines on a noisy log. The compiled program behind a
# pattern (its `_regexp`, not public API) gives each match's group spans directly. `match_spans` uses it where this
# google-re2 has it (tests/test_re2_spans.py checks both ways agree), else the public finditer.
_ANCHOR = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)


def match_spans(compiled: Any, data: bytes, begin: int, end: int) -> Iterator[Sequence[tuple[int, int]]]:
    """Each match of `compiled` in data[begin:end] as finditer finds them: the (start, end) of the match and of
    each group (-1, -1 for a group that did not take part)."""
    program = getattr(compiled, "_regexp", None) if _ANCHOR is not None else None
    if program is None:
        yield from public_match_spans(compiled, data, begin, end)
        return
    pos: int | None = begin
    while pos is not None:  # finditer(data, begin, end) as google-re2 iterates it, without a match object
        group_spans = program.Match(_ANCHOR, data, pos, end)
        start, stop = group_spans[0]
        if start < 0:
            return
        pos = None if pos == end else pos + 1 if pos == stop else stop
        yield group_spans


def public_match_spans(compiled: Any, data: bytes, begin: int, end: int) -> Iterator[Sequence[tuple[int, int]]]:
    """match_spans through google-re2's public finditer."""
    for match in compiled.finditer(data, begin, end):
        yield [match.span(group) for group in range(compiled.groups + 1)]
