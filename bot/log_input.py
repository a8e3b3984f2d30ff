"""Turn what users and Cloud Logging hand us into LogLines.

Accepted, detected automatically:
- plain log text (one line per line);
- a JSON array of LogEntry objects, as `gcloud logging read --format=json` prints them;
- JSON Lines, one LogEntry per line.
A LogEntry's text is `textPayload`, or `jsonPayload.message` (else the whole jsonPayload); the replica is
`resource.labels.task_name` (or `labels["ml.googleapis.com/task_name"]`, as legacy AI Platform wrote it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from bot.errors import LogInputError
from bot.models import LogLine

MAX_LINE_CHARS = 20_000


def parse_timestamp(value: Any) -> datetime | None:
    """RFC 3339 with up to nanoseconds ("2026-02-23T23:54:05.123456789Z") -> aware datetime, else None."""
    if not isinstance(value, str) or len(value) < 19:
        return None
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    if "." in text:
        head, _, rest = text.partition(".")
        digits = ""
        for char in rest:
            if not char.isdigit():
                break
            digits += char
        text = f"{head}.{digits[:6].ljust(6, '0')}{rest[len(digits):]}"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def entry_text(entry: Mapping[str, Any]) -> str:
    if isinstance(entry.get("textPayload"), str):
        return entry["textPayload"]
    payload = entry.get("jsonPayload")
    if isinstance(payload, Mapping):
        message = payload.get("message")
        if isinstance(message, str):
            return message
        return json.dumps(payload, sort_keys=True)
    if isinstance(payload, str):
        return payload
    proto = entry.get("protoPayload")
    if isinstance(proto, Mapping):
        status = proto.get("status")
        if isinstance(status, Mapping) and isinstance(status.get("message"), str):
            return status["message"]
    return ""


def entry_labels(entry: Mapping[str, Any]) -> dict[str, str]:
    resource = entry.get("resource")
    labels = resource.get("labels") if isinstance(resource, Mapping) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def entry_lines(entry: Mapping[str, Any]) -> list[LogLine]:
    """One LogEntry -> one LogLine per text line (Vertex puts a whole traceback in one entry)."""
    if not isinstance(entry, Mapping):
        raise LogInputError("a log entry must be a JSON object")
    labels = entry_labels(entry)
    entry_label_map = entry.get("labels") if isinstance(entry.get("labels"), Mapping) else {}
    replica = labels.get("task_name") or entry_label_map.get("ml.googleapis.com/task_name") or None
    timestamp = parse_timestamp(entry.get("timestamp")) or parse_timestamp(entry.get("receiveTimestamp"))
    severity = entry.get("severity") if isinstance(entry.get("severity"), str) else None
    insert_id = entry.get("insertId") if isinstance(entry.get("insertId"), str) else None
    common = {
        "timestamp": timestamp,
        "replica": replica,
        "severity": severity,
        "job_id": labels.get("job_id"),
        "project_id": labels.get("project_id"),
        "insert_id": insert_id,
    }
    return [LogLine(text=text[:MAX_LINE_CHARS], **common) for text in entry_text(entry).splitlines() if text.strip()]


def entries_to_lines(entries: Iterable[Mapping[str, Any]]) -> list[LogLine]:
    lines: list[LogLine] = []
    for entry in entries:
        lines.extend(entry_lines(entry))
    return lines


def text_to_lines(text: str) -> list[LogLine]:
    return [LogLine(text=line[:MAX_LINE_CHARS]) for line in text.splitlines() if line.strip()]


def _looks_like_entry(value: Any) -> bool:
    return isinstance(value, dict) and any(
        key in value for key in ("textPayload", "jsonPayload", "protoPayload", "resource", "logName", "insertId")
    )


def parse_log_text(text: str) -> list[LogLine]:
    """Detect the format of `text` and return its lines (oldest first for entries with timestamps)."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, list) and data and all(_looks_like_entry(item) for item in data):
            return _ordered(entries_to_lines(data))
        if isinstance(data, list) and not data:
            return []
    if stripped.startswith("{"):
        entries = []
        for raw in stripped.splitlines():
            if not raw.strip():
                continue
            try:
                item = json.loads(raw)
            except json.JSONDecodeError:
                entries = None
                break
            if not _looks_like_entry(item):
                entries = None
                break
            entries.append(item)
        if entries:
            return _ordered(entries_to_lines(entries))
    return text_to_lines(text)


def _ordered(lines: list[LogLine]) -> list[LogLine]:
    """`gcloud logging read` prints newest first: put lines in time order, keeping each entry's line order."""
    if all(line.timestamp is not None for line in lines):
        indexed = sorted(enumerate(lines), key=lambda pair: (pair[1].timestamp, pair[0]))
        return [line for _, line in indexed]
    return lines
