"""Make untrusted text and JSON safe to keep, hash, encode and show: the one sanitiser for every renderer.

- `UNSAFE_CHARS`: characters that must never reach a reader as themselves: C0 controls except tab and newline
  (NUL, ESC and the rest of ANSI escape sequences), DEL, C1 controls, and the Unicode bidirectional controls
  (embeddings, overrides, isolates and marks) that make text read differently from what it is ("Trojan
  Source"). Slack output strips them (`strip_unsafe`); terminal output shows them as `\\xNN` (`show_unsafe`).
- Lone surrogates (JSON may carry `"\\ud800"`) cannot be encoded as UTF-8, so they become U+FFFD.
- `clean_json` applies the surrogate fix to every string (and key) of decoded JSON without recursion, and
  replaces what is nested deeper than `MAX_JSON_DEPTH` with a note, so that nothing downstream (hashing,
  storing, rendering) can fail on it.
"""

from __future__ import annotations

import re
from typing import Any

UNSAFE_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
REPLACEMENT = "\ufffd"
MAX_JSON_DEPTH = 32
TOO_DEEP = f"…(nested deeper than {MAX_JSON_DEPTH} levels)"
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def fix_surrogates(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (a str Python can encode as UTF-8)."""
    if text.isascii():
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def strip_unsafe(text: str) -> str:
    """`text` without unsafe characters (see the module docstring) and with lone surrogates replaced."""
    text = fix_surrogates(text)
    return UNSAFE_CHARS.sub("", text) if UNSAFE_CHARS.search(text) else text


def show_unsafe(text: str) -> str:
    """`text` with unsafe characters shown as `\\xNN` / `\\uNNNN` (for terminals) and lone surrogates replaced."""
    return UNSAFE_CHARS.sub(_visible, fix_surrogates(text))


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean_json(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """A copy of decoded JSON with lone surrogates replaced in every string and key, and every object or
    array nested deeper than `max_depth` replaced by the string `TOO_DEEP`. Iterative: any depth is fine."""
    holder: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, holder, 0, 0)]  # (source, target, key in target, depth)
    while stack:
        source, target, key, depth = stack.pop()
        if isinstance(source, str):
            target[key] = fix_surrogates(source)
        elif isinstance(source, dict):
            if depth >= max_depth:
                target[key] = TOO_DEEP
                continue
            out: dict[Any, Any] = {}
            target[key] = out
            for name, item in source.items():
                clean_name = fix_surrogates(name) if isinstance(name, str) else name
                out[clean_name] = None  # keeps the key order
                stack.append((item, out, clean_name, depth + 1))
        elif isinstance(source, list):
            if depth >= max_depth:
                target[key] = TOO_DEEP
                continue
            items: list[Any] = [None] * len(source)
            target[key] = items
            stack.extend((item, items, index, depth + 1) for index, item in enumerate(source))
        else:
            target[key] = source
    return holder[0]
