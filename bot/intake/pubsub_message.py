"""Decode a Pub/Sub push request (the default JSON wrapper) into the message's id, attributes and JSON data.

The data comes out sanitised (`bot.intake.sanitize.clean_json`): no lone surrogates, nothing nested deeper than
32 levels. JSON too deep to decode at all is malformed, like any other undecodable body.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from bot.errors import InvalidPushMessage
from bot.intake.sanitize import clean_json

MAX_PUSH_BYTES = 10 * 1024 * 1024  # Pub/Sub's message size limit, plus room for the wrapper


@dataclass(frozen=True)
class PushMessage:
    message_id: str
    subscription: str
    data: Any  # the decoded JSON payload: a LogEntry, or a Monitoring notification
    attributes: dict[str, str] = field(default_factory=dict)
    publish_time: str | None = None

    @property
    def kind(self) -> str:
        """"log_entry", "incident" or "other"."""
        if isinstance(self.data, dict) and isinstance(self.data.get("incident"), dict):
            return "incident"
        if isinstance(self.data, dict) and ("resource" in self.data or "logName" in self.data):
            return "log_entry"
        return "other"


def decode_push_envelope(body: bytes) -> PushMessage:
    """Raises InvalidPushMessage (a permanent problem: acknowledge and log it) for anything malformed."""
    if len(body) > MAX_PUSH_BYTES:
        raise InvalidPushMessage(f"push body of {len(body)} bytes is larger than any Pub/Sub message")
    try:
        envelope = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidPushMessage(f"push body is not JSON: {exc}") from None
    except RecursionError:
        raise InvalidPushMessage("push body is JSON nested too deeply to decode") from None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("message"), dict):
        raise InvalidPushMessage("push body has no 'message' object (is the subscription using the JSON wrapper?)")
    message = envelope["message"]
    message_id = message.get("messageId") or message.get("message_id")
    if not isinstance(message_id, str) or not message_id:
        raise InvalidPushMessage("push message has no messageId")
    message_id = clean_json(message_id)
    raw = message.get("data")
    if not isinstance(raw, str) or not raw:
        raise InvalidPushMessage(f"message {message_id} has no data")
    try:
        decoded = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidPushMessage(f"message {message_id}: data is not base64") from None
    try:
        data = clean_json(json.loads(decoded))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InvalidPushMessage(f"message {message_id}: data is not JSON (a LogEntry was expected)") from None
    except RecursionError:
        raise InvalidPushMessage(f"message {message_id}: data is JSON nested too deeply to decode") from None
    attributes = message.get("attributes") if isinstance(message.get("attributes"), dict) else {}
    return PushMessage(
        message_id=message_id,
        subscription=clean_json(str(envelope.get("subscription", ""))),
        data=data,
        attributes={str(k): str(v) for k, v in clean_json(attributes).items()},
        publish_time=clean_json(message.get("publishTime") or message.get("publish_time")),
    )
