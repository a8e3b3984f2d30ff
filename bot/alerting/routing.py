"""Which Slack channel owns a failed job, and who may rerun it: the first matching route wins."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.config import Route, RoutingConfig
from bot.models import JobInfo


@dataclass(frozen=True)
class Destination:
    channel: str
    rerun_allowed: tuple[str, ...]
    reason: str  # which rule chose it, for the event log


def _matches(route: Route, job: JobInfo, failure_class: str) -> bool:
    match = route.match
    if match.project is not None and match.project != job.project:
        return False
    if match.region is not None and match.region != job.region:
        return False
    if match.failure_class is not None and match.failure_class != failure_class:
        return False
    if match.display_name is not None and not re.search(match.display_name, job.display_name or ""):
        return False
    return all(job.labels.get(key) == value for key, value in match.labels.items())


def destination_for(job: JobInfo, failure_class: str, routing: RoutingConfig) -> Destination:
    """Route a job's alert.

    `class_channels` come first: failures that are the platform's to fix (quota, say) go to the platform's
    channel whoever owns the job. Then `routes` in order; then `default_channel`. The rerun allow-list is the
    matching route's, else the file's top-level `rerun_allowed`.
    """
    matched = next((r for i, r in enumerate(routing.routes) if _matches(r, job, failure_class)), None)
    allowed = tuple(matched.rerun_allowed if matched and matched.rerun_allowed else routing.rerun_allowed)
    if failure_class in routing.class_channels:
        return Destination(routing.class_channels[failure_class], allowed, f"class_channels.{failure_class}")
    if matched is not None:
        return Destination(matched.channel, allowed, f"routes[{routing.routes.index(matched)}]")
    return Destination(routing.default_channel, allowed, "default_channel")
