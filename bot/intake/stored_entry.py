"""What trainmedic keeps of a LogEntry: what classification and evidence need, within a fixed size.

A pushed or fetched entry may be megabytes (a whole traceback or a huge jsonPayload); memory and store
documents must not follow that. `shrink_entry` keeps the entry's identity, time, severity, resource labels
and text, with text longer than `TEXT_HEAD + TEXT_TAIL` characters cut to its first `TEXT_HEAD` and last
`TEXT_TAIL` characters (a Python traceback ends in the exception; a Vertex AI service entry starts with the
reason). `entry_key` gives every entry id a short, store-safe key: long ids are hashed.

Bound: a shrunk entry holds at most about TEXT_HEAD + TEXT_TAIL + MAX_LABELS * (MAX_LABEL_KEY +
MAX_LABEL_VALUE) + 2 KiB of characters (≈ 16 KiB), whatever was pushed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from bot.intake.audit_entry import audit_text

TEXT_HEAD = 1024
TEXT_TAIL = 3072
MAX_LABELS = 16
MAX_LABEL_KEY = 64
MAX_LABEL_VALUE = 256
MAX_FIELD = 256  # logName, timestamps, severity, resource type
MAX_KEY = 128  # entry ids up to this long, of safe characters, are kept as they are
_SAFE_KEY = re.compile(r"[A-Za-z0-9._:@+=-]{1,128}")
_KEPT_FIELDS = ("logName", "timestamp", "receiveTimestamp", "severity")


def entry_key(raw: object) -> str:
    """A key for an entry (or message, incident) id: the id itself when short and plain, else a hash."""
    text = str(raw)
    if _SAFE_KEY.fullmatch(text):
        return text
    return "sha256-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def cut_middle(text: str, head: int = TEXT_HEAD, tail: int = TEXT_TAIL) -> str:
    """`text`, or its first `head` and last `tail` characters around a line saying how much was cut."""
    if len(text) <= head + tail + 64:
        return text
    cut = len(text) - head - tail
    return f"{text[:head]}\n… [{cut} characters cut] …\n{text[-tail:]}"


def shrink_entry(entry: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The part of `entry` trainmedic stores, with `insertId` set to `key` (see the module docstring)."""
    kept: dict[str, Any] = {"insertId": key}
    for name in _KEPT_FIELDS:
        value = entry.get(name)
        if isinstance(value, str):
            kept[name] = value[:MAX_FIELD]
    resource = entry.get("resource")
    if isinstance(resource, Mapping):
        small: dict[str, Any] = {}
        if isinstance(resource.get("type"), str):
            small["type"] = resource["type"][:MAX_FIELD]
        if isinstance(resource.get("labels"), Mapping):
            small["labels"] = _labels(resource["labels"])
        kept["resource"] = small
    if isinstance(entry.get("labels"), Mapping):
        kept["labels"] = _labels(entry["labels"])
    text_payload = entry.get("textPayload")
    json_payload = entry.get("jsonPayload")
    proto_payload = entry.get("protoPayload")
    if isinstance(text_payload, str):
        kept["textPayload"] = cut_middle(text_payload)
    elif isinstance(json_payload, Mapping):
        kept["jsonPayload"] = _json_payload(json_payload)
    elif isinstance(json_payload, str):
        kept["jsonPayload"] = cut_middle(json_payload)
    elif isinstance(proto_payload, Mapping) and (text := audit_text(proto_payload)):
        kept["protoPayload"] = {"status": {"message": cut_middle(text)}}  # its text: status and refused checks
    return kept


def _labels(labels: Mapping[Any, Any]) -> dict[str, str]:
    return {
        str(name)[:MAX_LABEL_KEY]: str(value)[:MAX_LABEL_VALUE]
        for name, value in list(labels.items())[:MAX_LABELS]
    }


def _json_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """jsonPayload's text is its `message`, else the whole payload as JSON (bot.intake.log_input.entry_text)."""
    message = payload.get("message")
    if isinstance(message, str):
        return {"message": cut_middle(message)}
    text = json.dumps(payload, sort_keys=True)
    if len(text) <= TEXT_HEAD + TEXT_TAIL:
        return dict(payload)
    return {"message": cut_middle(text)}


def stored_entry(entry: Mapping[str, Any], fallback_id: str | None = None) -> dict[str, Any]:
    """What is stored of a LogEntry, under its id (`fallback_id`, e.g. the Pub/Sub message id, when it has none;
    else a digest of its content), hashed when long."""
    raw_id = entry.get("insertId") or fallback_id or _content_digest(entry)
    return shrink_entry(entry, entry_key(raw_id))


def _content_digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:32]
