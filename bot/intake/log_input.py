"""Turn what users and Cloud Logging hand us into LogLines.

Accepted, detected automatically:
- plain log text (one line per line);
- a JSON array of LogEntry objects, as `gcloud logging read --format=json` prints them;
- JSON Lines, one LogEntry per line.
A LogEntry's text is `textPayload`, or `jsonPayload.message` (else the whole jsonPayload), or an audit entry's
status and refused permissions (bot.intake.audit_entry); the replica is
`resource.labels.task_name` (or `labels["ml.googleapis.com/task_name"]`, as legacy AI Platform wrote it).

`read_log_bytes` is the front door for files and stdin: it decodes the bytes (UTF-8, or UTF-16 with a byte
order mark) and refuses, with the reason, input that is empty or looks binary.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from bot.errors import LogInputError
from bot.intake.audit_entry import audit_text
from bot.intake.line_prefix import split_line_prefix
from bot.models import LogLine

MAX_LINE_CHARS = 20_000
BINARY_SAMPLE_BYTES = 64 * 1024  # how much of the input is looked at to tell text from binary
BINARY_SHARE = 0.10  # more NUL/control bytes or undecodable bytes than this share: not a log
# control bytes a text log does not hold (tab, newline, vertical tab, form feed, carriage return and the escape
# that starts ANSI colours are fine)
_BINARY_BYTES = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27)) + b"\x7f"


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
        return audit_text(proto)
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
    lines = []
    for raw in entry_text(entry).splitlines():
        text, named = split_line_prefix(raw)
        if text.strip():
            lines.append(LogLine(text=text[:MAX_LINE_CHARS], **{**common, "replica": replica or named}))
    return lines


def entries_to_lines(entries: Iterable[Mapping[str, Any]]) -> list[LogLine]:
    lines: list[LogLine] = []
    for entry in entries:
        lines.extend(entry_lines(entry))
    return lines


def text_to_lines(text: str) -> list[LogLine]:
    """One LogLine per non-blank line, collector prefixes and colour codes taken off (bot.intake.line_prefix); the
    replica a prefix names is the line's replica."""
    lines = []
    for raw in text.splitlines():
        line, replica = split_line_prefix(raw)
        if line.strip():
            lines.append(LogLine(text=line[:MAX_LINE_CHARS], replica=replica))
    return lines


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


def decode_log_bytes(data: bytes) -> str:
    """The text of a log file's bytes.

    UTF-8 (a stray undecodable byte becomes U+FFFD), or UTF-16 when it starts with a byte order mark (as
    PowerShell writes files). NUL bytes are dropped (logrotate's copytruncate leaves NUL padding).

    Raises:
        LogInputError: "the input is empty", or "looks binary (...)" when a good share of its first
            BINARY_SAMPLE_BYTES is NUL/control bytes or not UTF-8 (an image, a gzip file, an archive...).
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise LogInputError("looks binary (a UTF-16 byte order mark, then bytes that are not UTF-16)") from None
        if not text.replace("\x00", "").strip():
            raise LogInputError("the input is empty")
        return text.replace("\x00", "")
    if not data.strip():
        raise LogInputError("the input is empty")
    if data.startswith(b"\x1f\x8b"):
        raise LogInputError(
            "looks binary (gzip-compressed: decompress it first, e.g. gunzip -c FILE | trainmedic diagnose -)"
        )
    sample = data.lstrip(b"\x00")[:BINARY_SAMPLE_BYTES]
    if not sample.strip():
        raise LogInputError("looks binary (nothing but NUL bytes)")
    controls = len(sample) - len(sample.translate(None, _BINARY_BYTES))
    undecodable = sample.decode("utf-8", errors="replace").count("\ufffd")
    if controls + undecodable > BINARY_SHARE * len(sample):
        raise LogInputError(
            f"looks binary ({controls} NUL/control and {undecodable} undecodable bytes in its first "
            f"{len(sample)}): give a text log, or LogEntry JSON"
        )
    return data.decode("utf-8", errors="replace").replace("\x00", "")


def read_log_bytes(data: bytes) -> list[LogLine]:
    """Decode and parse a log file's bytes (see decode_log_bytes and parse_log_text).

    Raises:
        LogInputError: the input is empty (no bytes, only blank lines, an empty JSON array, or LogEntries
            without text), or looks binary.
    """
    text = decode_log_bytes(data)
    lines = parse_log_text(text)
    if lines:
        return lines
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith("]") and not stripped[1:-1].strip():
        raise LogInputError("the input is empty: a JSON array with no log entries (did the log filter match none?)")
    if not stripped:
        raise LogInputError("the input is empty")
    raise LogInputError("the input is empty: its log entries hold no text")
