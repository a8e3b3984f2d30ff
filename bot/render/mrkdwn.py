"""Slack mrkdwn helpers: make untrusted text inert and fit it into Slack's length limits.

Slack treats only `&`, `<` and `>` as control characters (`<!channel>`, `<@U1>`, `<https://x|label>`), so
`escape` replaces exactly those three and nothing else; it also drops the characters no reader should get
(NUL, ESC, other control characters, bidi overrides: `bot.intake.sanitize`, the sanitiser the terminal renderer
uses too). Every helper here returns text that is already escaped, and every length is a Python `len()` of
the escaped text: the same count slack_sdk validates. Truncation never cuts an entity such as `&amp;` in half.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.intake.sanitize import strip_unsafe

ELLIPSIS = "…"
FENCE = "```"
_ZERO_WIDTH_SPACE = "\u200b"
_FENCE_OVERHEAD = len(FENCE + "\n") + len("\n" + FENCE)
_BACKTICK_RUN = re.compile(r"`{3,}")
_ENTITY_MAX = len("&amp;")
_MIN_PARTIAL_LINE = 24  # below this, a cut-down line says too little to be worth showing
_MAX_LIST_ITEM = 1000

#: The smallest `limit` `code_block` accepts: fences, a truncated line and a "more lines" marker.
MIN_CODE_BLOCK = 64


def escape(text: str) -> str:
    """Replace `&`, `<` and `>` with `&amp;`, `&lt;` and `&gt;` (and nothing else), after dropping unsafe
    characters (control characters, bidi overrides; tab and newline stay)."""
    return strip_unsafe(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def truncate(text: str, limit: int) -> str:
    """Shorten `text` to at most `limit` characters, ending in "…" when something was cut.

    A cut that would split an `&amp;`/`&lt;`/`&gt;` entity backs off to before the `&`.
    """
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    cut = text[: limit - len(ELLIPSIS)]
    amp = cut.rfind("&", max(0, len(cut) - _ENTITY_MAX + 1))
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut + ELLIPSIS


def safe_text(text: str, limit: int, *, flatten: bool = True) -> str:
    """Untrusted text for a mrkdwn field: escaped, fences broken, at most `limit` characters.

    With `flatten` (the default) all whitespace, newlines included, collapses to single spaces.
    """
    raw = text[: limit * 2]
    return truncate(break_fences(escape(one_line(raw) if flatten else raw)), limit)


def break_fences(text: str) -> str:
    """Put zero-width spaces between backticks in runs of three or more, so the text cannot open or close
    a ``` code block."""
    return _BACKTICK_RUN.sub(lambda m: _ZERO_WIDTH_SPACE.join(m.group(0)), text)


def one_line(text: str) -> str:
    """Collapse all whitespace (newlines included) to single spaces."""
    return " ".join(text.split())


def inline_code(text: str, limit: int) -> str:
    """`text` as an escaped inline code span of at most `limit` characters (including the backticks).

    Newlines are collapsed and backticks become `ˋ`, since an inline span can hold neither.
    """
    inner = escape(one_line(text[: limit * 2]).replace("`", "ˋ"))
    return "`" + truncate(inner, max(limit - 2, 1)) + "`"


def code_block(lines: list[str], limit: int) -> str:
    """A fenced code block of the escaped `lines`, at most `limit` characters long.

    Whole lines are kept while they fit. The first line that does not fit is cut short (when enough room
    is left for it to say something), and a last line "… (N more lines)" counts the lines left out.
    A run of three or more backticks inside a line gets zero-width spaces between the backticks, so a
    log line cannot close the fence. Returns "" when `lines` is empty.

    Raises:
        ValueError: `limit` is below `MIN_CODE_BLOCK`.
    """
    if limit < MIN_CODE_BLOCK:
        raise ValueError(f"code_block limit must be at least {MIN_CODE_BLOCK}, got {limit}")
    if not lines:
        return ""
    room = limit - _FENCE_OVERHEAD
    whole = _all_lines_within(lines, room)
    if whole is not None:
        return FENCE + "\n" + "\n".join(whole) + "\n" + FENCE
    total = len(lines)
    reserve = len("\n" + _more_lines(total))  # room for the marker, whatever count it ends up showing
    body: list[str] = []
    used = 0
    shown = 0
    for raw in lines:
        line = _code_line(raw, room)
        separator = 1 if body else 0
        last = shown == total - 1
        if used + separator + len(line) + (0 if last else reserve) <= room:
            body.append(line)
            used += separator + len(line)
            shown += 1
            continue
        left_for_line = room - used - separator - (reserve if shown < total - 1 else 0)
        if left_for_line >= _MIN_PARTIAL_LINE or (not body and left_for_line > len(ELLIPSIS)):
            body.append(truncate(line, left_for_line))
            shown += 1
        break
    if shown < total:
        body.append(_more_lines(total - shown))
    return FENCE + "\n" + "\n".join(body) + "\n" + FENCE


def _all_lines_within(lines: list[str], room: int) -> list[str] | None:
    """Every line, prepared, if together they fit in `room`; else None (stops as soon as they cannot)."""
    prepared: list[str] = []
    used = -1
    for raw in lines:
        line = _code_line(raw, room)
        used += 1 + len(line)
        if used > room:
            return None
        prepared.append(line)
    return prepared


def _code_line(raw: str, room: int) -> str:
    # Only a prefix can ever be shown, so never escape more than that (a line may be megabytes long).
    return break_fences(escape(raw[: room + 1]).replace("\r", ""))


def _more_lines(count: int) -> str:
    return f"{ELLIPSIS} ({count} more line{'' if count == 1 else 's'})"


def fit_list(heading: str, items: Sequence[str], limit: int, *, numbered: bool = False) -> str:
    """`heading` then one line per escaped item ("1. " or "• "), at most `limit` characters.

    Items that do not fit are counted in a last line "_…and N more_"; the first of them is shown cut
    short when there is room for it to say something. Returns "" when there are no items or not even
    one fits.
    """
    if not items:
        return ""
    lines = [heading]
    used = len(heading)
    for i, raw in enumerate(items):
        bullet = f"{i + 1}. " if numbered else "• "
        lines.append(bullet + safe_text(raw, _MAX_LIST_ITEM))
        used += 1 + len(lines[-1])
        if used > limit:
            break
    else:
        return "\n".join(lines)  # everything fits
    reserve = len("\n" + _more_items(len(items)))
    overflow = lines.pop()
    used -= 1 + len(overflow)
    while len(lines) > 1 and used + reserve > limit:
        overflow = lines.pop()
        used -= 1 + len(overflow)
    room = limit - used - 1 - reserve
    if room >= _MIN_PARTIAL_LINE:
        lines.append(truncate(overflow, room))
    shown = len(lines) - 1
    if shown == 0:
        return ""
    if shown < len(items):  # the last item may be the one shown cut short: then none is left out
        lines.append(_more_items(len(items) - shown))
    return "\n".join(lines)


def _more_items(count: int) -> str:
    return f"_{ELLIPSIS}and {count} more_"
