"""Structured logs: one JSON object per line on stdout with `severity`, as Cloud Run / Cloud Logging expect."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from bot.intake.sanitize import fix_surrogates

LOGGER_NAME = "trainmedic"
_SEVERITY = {"DEBUG": "DEBUG", "INFO": "INFO", "WARNING": "WARNING", "ERROR": "ERROR", "CRITICAL": "CRITICAL"}


def get_logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)


def event(level: int, message: str, **fields: Any) -> None:
    """Log one event; `fields` become top-level JSON keys (job_key, reason, status, ...)."""
    get_logger().log(level, message, extra={"fields": fields})


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "severity": _SEVERITY.get(record.levelname, "DEFAULT"),
            "message": record.getMessage(),
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "logger": record.name,
        }
        payload.update(getattr(record, "fields", {}) or {})
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return fix_surrogates(json.dumps(payload, default=str, ensure_ascii=False))  # always encodable


def configure_json_logging(level: int = logging.INFO, stream: Any = None) -> None:
    """Send every log record (ours and the libraries') to `stream` (stdout) as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
