"""Log input formats are detected: plain text, a JSON array of LogEntry (gcloud logging read), JSON Lines."""

from __future__ import annotations

import gzip
import json

import pytest

from bot.errors import LogInputError
from bot.intake.log_input import decode_log_bytes, entry_lines, parse_log_text, parse_timestamp, read_log_bytes

ENTRIES = [
    {
        "insertId": "b",
        "resource": {"type": "ml_job", "labels": {"job_id": "123", "project_id": "acme", "task_name": "workerpool0-0"}},
        "severity": "ERROR",
        "jsonPayload": {"message": "second\nthird", "levelname": "ERROR"},
        "timestamp": "2026-02-23T23:54:06.000000001Z",
    },
    {
        "insertId": "a",
        "resource": {"type": "ml_job", "labels": {"job_id": "123", "project_id": "acme", "task_name": "service"}},
        "severity": "INFO",
        "textPayload": "first",
        "timestamp": "2026-02-23T23:54:05.123456789Z",
    },
]


def test_plain_text() -> None:
    lines = parse_log_text("one\n\n  two  \n")
    assert [line.text for line in lines] == ["one", "  two  "]
    assert all(line.replica is None for line in lines)


def test_json_array_as_gcloud_prints_it_newest_first_is_put_in_time_order() -> None:
    lines = parse_log_text(json.dumps(ENTRIES, indent=2))
    assert [line.text for line in lines] == ["first", "second", "third"]
    assert [line.replica for line in lines] == ["service", "workerpool0-0", "workerpool0-0"]
    assert lines[0].job_id == "123" and lines[0].project_id == "acme"
    assert lines[1].severity == "ERROR"


def test_json_lines() -> None:
    text = "\n".join(json.dumps(entry) for entry in ENTRIES)
    assert [line.text for line in parse_log_text(text)] == ["first", "second", "third"]


def test_json_that_is_not_log_entries_is_treated_as_text() -> None:
    lines = parse_log_text('{"loss": 0.5}\n{"loss": 0.4}')
    assert [line.text for line in lines] == ['{"loss": 0.5}', '{"loss": 0.4}']


def test_json_payload_without_message_keeps_its_fields() -> None:
    lines = entry_lines({"jsonPayload": {"event": "oom", "pid": 7}})
    assert lines[0].text == '{"event": "oom", "pid": 7}'


def test_legacy_task_name_label() -> None:
    lines = entry_lines({"textPayload": "x", "labels": {"ml.googleapis.com/task_name": "master-replica-0"}})
    assert lines[0].replica == "master-replica-0"


def test_timestamps_with_nanoseconds_and_garbage() -> None:
    parsed = parse_timestamp("2026-02-23T23:54:05.123456789Z")
    assert parsed is not None and parsed.microsecond == 123456 and parsed.tzinfo is not None
    assert parse_timestamp("yesterday") is None
    assert parse_timestamp(None) is None


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "the input is empty"),
        (b" \n\t\r\n", "the input is empty"),
        (b"[]\n", "the input is empty: a JSON array with no log entries"),
        (b'[{"insertId": "1", "resource": {"type": "ml_job"}}]', "the input is empty: its log entries hold no text"),
        (b"\x7fELF\x02\x01\x01" + b"\x00" * 64 + b"CUDA out of memory", "looks binary ("),
        (b"\x00" * 4096, "looks binary (nothing but NUL bytes)"),
        (bytes(range(128, 256)) * 8, "looks binary ("),
        (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "looks binary ("),
        (gzip.compress(b"CUDA out of memory\n"), "looks binary (gzip-compressed"),
        ("no BOM, so UTF-16 reads as NUL bytes".encode("utf-16-le"), "looks binary ("),
    ],
)
def test_empty_and_binary_input_is_refused_with_the_reason(data: bytes, reason: str) -> None:
    with pytest.raises(LogInputError) as caught:
        read_log_bytes(data)
    assert str(caught.value).startswith(reason)


def test_text_with_stray_bytes_is_still_a_log() -> None:
    latin1 = "Epoch 1: données chargées\nRuntimeError: CUDA out of memory\n".encode("latin-1")
    assert [line.text for line in read_log_bytes(latin1)][1] == "RuntimeError: CUDA out of memory"
    padded = b"\x00" * 5000 + b"RuntimeError: CUDA out of memory\n"  # logrotate copytruncate leaves NUL padding
    assert [line.text for line in read_log_bytes(padded)] == ["RuntimeError: CUDA out of memory"]
    coloured = b"\x1b[31mERROR\x1b[0m step 3\r\nRuntimeError: CUDA out of memory\n"
    assert len(read_log_bytes(coloured)) == 2
    powershell = "RuntimeError: CUDA out of memory\r\n".encode("utf-16")  # with a byte order mark
    assert decode_log_bytes(powershell).strip() == "RuntimeError: CUDA out of memory"
    entries = json.dumps(ENTRIES).encode()
    assert [line.text for line in read_log_bytes(entries)] == ["first", "second", "third"]
