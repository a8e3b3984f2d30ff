"""What handling one pushed message came to (the push endpoint answers with it), and the soft failure of a post
another delivery is making."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bot.errors import ApiUnavailable


class PostInProgress(ApiUnavailable):
    """Another delivery holds the claim to post this job's message; retry later (it will be an update)."""


@dataclass(frozen=True)
class Outcome:
    status: str  # posted | updated | unchanged | held | recovered | owned | duplicate | irrelevant
    reason: str
    job_key: str | None = None
    channel: str | None = None
    message_ts: str | None = None
    failure_class: str | None = None

    def as_duplicate(self) -> Outcome:
        """The same alert, for a message already processed."""
        return replace(self, status="duplicate", reason="entry already processed")
