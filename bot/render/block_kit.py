"""Block Kit basics for the alert's messages: Slack's limits, the text budget, and the small block and token builders.

Everything here is pure. The only `<...>` sequences the messages contain are built here or next to a call of
these helpers: user mentions from ids matching `^[UW][A-Z0-9]+$` (`mention`), `<!date^...>` timestamps
(`slack_date`) and links to percent-encoded console URLs (at most LINK_URL_CAP long); every other string from
logs or the job goes through `bot.render.mrkdwn`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from bot.render.mrkdwn import inline_code, truncate

# Slack's limits (platform-facts 6.5) and our own, stricter, message budget.
MAX_BLOCKS = 50


MAX_SECTION_TEXT = 3000


MAX_HEADER_TEXT = 150


MAX_BUTTON_TEXT = 75


MAX_BUTTON_VALUE = 2000


MAX_CONTEXT_ELEMENTS = 10


MAX_FALLBACK_TEXT = 3000


#: Sum of every "text" string in the blocks. Slack rejects messages at an undocumented ~12-13k aggregate
#: (msg_blocks_too_long; one report of a rejection at 11.3k counted text only), so stay well below.
MAX_MESSAGE_TEXT = 10_000


_USER_ID = re.compile(r"[UW][A-Z0-9]{1,30}")


LINK_URL_CAP = 600


def message_digest(message: dict) -> str:
    """A stable sha256 of the message JSON: equal digests mean a chat.update would change nothing.

    Never fails on odd text: a lone surrogate is hashed as itself (surrogatepass), not raised as an error.
    """
    encoded = json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()


def text_length(blocks: Sequence[dict]) -> int:
    """The number of characters in every "text" string of `blocks` (what MAX_MESSAGE_TEXT bounds)."""
    return sum(_text_length(b) for b in blocks)


def _text_length(node: object) -> int:
    if isinstance(node, dict):
        return sum(len(v) if k == "text" and isinstance(v, str) else _text_length(v) for k, v in node.items())
    if isinstance(node, list):
        return sum(_text_length(v) for v in node)
    return 0


def mention(user_id: str | None) -> str:
    if user_id is not None and _USER_ID.fullmatch(user_id):
        return f"<@{user_id}>"
    return inline_code(user_id or "someone", 40)


def count_text(value: int) -> str:
    return str(value) if 0 <= value < 100_000 else "many"


def percent(value: float) -> str:
    """A confidence as a whole percent; a share above zero that rounds to nothing reads "<1%" (an alternative beside
    a 99% answer shares the 1% left: "0%" would say it was ruled out)."""
    if not math.isfinite(value):
        return "?%"
    value = min(max(value, 0.0), 1.0)
    whole = round(value * 100)
    return "<1%" if whole == 0 and value > 0.0 else f"{whole}%"


def utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def slack_date(moment: datetime) -> str:
    """A `<!date>` token: shown in each reader's time zone, with a UTC fallback."""
    moment = utc(moment)
    fallback = moment.strftime("%Y-%m-%d %H:%M UTC")
    seconds = int(moment.timestamp())
    if seconds < 0:  # not a real job time; Slack's token takes Unix seconds
        return fallback
    return f"<!date^{seconds}^{{date_short_pretty}} {{time}}|{fallback}>"


def plain_text(text: str) -> dict:
    return {"type": "plain_text", "text": text, "emoji": True}


def mrkdwn_text(text: str) -> dict:
    return {"type": "mrkdwn", "text": text}


def section(text: str) -> dict:
    return {"type": "section", "text": mrkdwn_text(truncate(text, MAX_SECTION_TEXT))}


def divider() -> dict:
    return {"type": "divider"}


def button(text: str, action_id: str, value: str) -> dict:
    return {"type": "button", "text": plain_text(text[:MAX_BUTTON_TEXT]), "action_id": action_id, "value": value}
