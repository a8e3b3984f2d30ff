"""The alert-source interface and what flows through it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from bot.gcp.pipeline_resource import PipelineInfo
from bot.jobs.identity import JobRef
from bot.jobs.lookup import JobLookup, Lookup
from bot.models import JobInfo


class Irrelevant(Exception):
    """The message is the source's but asks for nothing (a closed incident of no known job, another state)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Sighting:
    """What a source read from one pushed message: the job it is about and the LogEntry to keep as evidence
    (a synthetic one for messages that are not log entries)."""

    ref: JobRef
    entry: dict
    updates_only: str | None = None  # it can only change an existing alert (a closed incident): why, if none
    marks_failure: bool = False  # this message itself says the job failed
    job: JobInfo | None = None  # what the message itself says of the job (a refused create's request)


@dataclass(frozen=True)
class Gate:
    """Whether a job's alert should be posted now: "post", "held" (not yet failed), "recovered" (ended well) or
    "owned" (another alert speaks for this failure)."""

    decision: Literal["post", "held", "recovered", "owned"]
    reason: str = ""


@dataclass(frozen=True)
class Subject:
    """What the alert diagnoses: the job whose spec and logs are the evidence (for a pipeline: its failed task's
    CustomJob), the pipeline when there is one, and what could not be fetched."""

    job: JobInfo | None
    logs_of: JobRef | None
    pipeline: PipelineInfo | None = None
    unavailable: list[str] = field(default_factory=list)
    notify_email: str | None = None  # tell this person directly (found in Slack by email), not the routed channel


class AlertSource(Protocol):
    name: str

    def recognise(self, data: Any, *, message_id: str | None) -> Sighting | None:
        """The sighting in a pushed message's data; None when the message is not this source's.

        Raises:
            InvalidPushMessage: the message is this source's but malformed (acknowledged, never retried).
        """
        ...

    def marks_failure(self, entry: dict) -> bool:
        """Whether a stored entry of this source says its job failed."""
        ...

    def gate(self, ref: JobRef, lookup: Lookup, failed_marker: bool) -> Gate:
        """Post, hold, or drop the alert, from the job as looked up and whether an entry said it failed."""
        ...

    def subject(self, sighting: Sighting, lookup: Lookup, jobs: JobLookup, *, deadline: Any) -> Subject:
        """The job to diagnose and whose logs to read."""
        ...
