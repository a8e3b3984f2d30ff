"""The audit trail of chat actions: who did what to which alert, when, and how it ended (kept in the store,
shown by `trainmedic history`)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime

from bot.alerting.event_log import event
from bot.errors import ActionRefused, BotError
from bot.store import Store

_MARKUP = re.compile(r"<(@|!subteam\^|#)([A-Z0-9]+)(?:\|[^>]*)?>")


class AuditTrail:
    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store, self.clock = store, clock

    def record(self, job_key: str, who: str, what: str, result: str, detail: str = "") -> None:
        action = {"who": who, "what": what, "when": _now(self.clock()), "result": result}
        if detail:
            action["detail"] = detail
        try:
            self.store.record_action(job_key, action)
        except BotError as exc:  # the action itself happened: losing its audit line must not undo it
            event(logging.ERROR, "action not recorded", job_key=job_key, action=action, reason=str(exc))

    def action(self, job_key: str, who: str, what: str) -> AuditedAction:
        """A block whose end records the action (see AuditedAction)."""
        return AuditedAction(self, job_key, who, what)


class AuditedAction:
    """Records one action when the block ends: its result, or "refused: why" for an ActionRefused."""

    def __init__(self, trail: AuditTrail, job_key: str, who: str, what: str) -> None:
        self.trail, self.job_key, self.who, self.what = trail, job_key, who, what
        self.result = "ok"
        self.detail = ""
        self.skip = False

    def __enter__(self) -> AuditedAction:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, ActionRefused):
            self.trail.record(self.job_key, self.who, self.what, f"refused: {plain(str(exc))}", self.detail)
        elif exc is not None:
            self.trail.record(self.job_key, self.who, self.what, "failed", f"{type(exc).__name__}: {exc}")
        elif not self.skip:
            self.trail.record(self.job_key, self.who, self.what, self.result, self.detail)
        event(
            logging.INFO,
            f"action {self.what}",
            job_key=self.job_key,
            who=self.who,
            result=self.result if exc is None else str(exc),
        )


def plain(text: str) -> str:
    """Slack mentions as readable text, for the audit log: <@U1> -> @U1, <!subteam^S1> -> @S1, <#C1> -> #C1."""
    return _MARKUP.sub(lambda m: ("#" if m.group(1) == "#" else "@") + m.group(2), text)


def _now(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
