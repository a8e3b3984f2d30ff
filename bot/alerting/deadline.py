"""Time budgets for request work: a request's own deadline, shortened for everyone when shutdown begins.

Cloud Run gives an instance 10 s between SIGTERM and SIGKILL. `Shutdown.begin()` (called on SIGTERM) caps every
`Deadline` linked to it at `SHUTDOWN_WORK_SECONDS` from then on, and every Slack and Google call is made with
`Deadline.call_timeout()`, so in-flight work finishes or gives up (and answers) inside that window.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

SHUTDOWN_WORK_SECONDS = 6.0  # in-flight work after SIGTERM; uvicorn waits 8 s, Cloud Run kills at 10 s
CALL_MARGIN = 0.5  # seconds kept back from every call, to settle (release a claim, answer) afterwards


class Shutdown:
    """Whether, and since when, the process is shutting down (thread-safe: one attribute, set once)."""

    def __init__(self, work_seconds: float = SHUTDOWN_WORK_SECONDS) -> None:
        self.work_seconds = work_seconds
        self._ends_at: float | None = None

    def begin(self) -> None:
        """Start the shutdown window (idempotent: the first call counts). Takes no lock: safe in a signal
        handler, which may interrupt this very method."""
        if self._ends_at is None:
            self._ends_at = time.monotonic() + self.work_seconds

    @property
    def started(self) -> bool:
        return self._ends_at is not None

    def remaining(self) -> float:
        """Seconds of the shutdown window left; infinite before shutdown begins."""
        ends_at = self._ends_at
        return math.inf if ends_at is None else ends_at - time.monotonic()


@dataclass
class Deadline:
    """Work left for one request: enrichment is skipped when little time remains, calls are bounded."""

    seconds: float
    started: float = field(default_factory=time.monotonic)
    shutdown: Shutdown | None = None

    def remaining(self) -> float:
        left = self.seconds - (time.monotonic() - self.started)
        if self.shutdown is not None:
            left = min(left, self.shutdown.remaining())
        return left

    @property
    def ends_at(self) -> float:
        """The deadline as a time.monotonic() value."""
        return time.monotonic() + self.remaining()

    def call_timeout(self, cap: float) -> float:
        """The timeout for one call: at most `cap`, and ending CALL_MARGIN before the deadline (at least 0.1 s)."""
        return max(0.1, min(cap, self.remaining() - CALL_MARGIN))
