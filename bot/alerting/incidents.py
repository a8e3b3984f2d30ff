"""Cloud Monitoring incidents on training jobs: what an alert about one shows, kept in the job's stored entries.

A Monitoring notification (schema 1.2) about a job becomes a synthetic LogEntry (bot.alerting.alerts.handle_incident):
its text is what the incident says (policy | condition | summary), and its entry labels carry the incident's
facts (`incident_labels`). The notification that closes the incident adds a second entry for the same incident
id (`closing_entry_id`), which the classifier does not read. `incident_from_entries` reads the facts back, so an
alert re-rendered from its stored entries (a later update, an acknowledgement) still knows what it is about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

_PREFIX = "trainmedic/incident_"
LABEL_ID = _PREFIX + "id"
LABEL_STATE = _PREFIX + "state"
LABEL_POLICY = _PREFIX + "policy"
LABEL_CONDITION = _PREFIX + "condition"
LABEL_SUMMARY = _PREFIX + "summary"
LABEL_URL = _PREFIX + "url"
LABEL_STARTED = _PREFIX + "started_at"
LABEL_ENDED = _PREFIX + "ended_at"
MAX_LABEL_VALUE = 256  # bot.intake.stored_entry keeps label values up to this long
# Monitoring links its incidents in the Cloud console; anything else is not shown as a link.
_INCIDENT_URL = re.compile(r"https://console\.cloud\.google\.com/[^\s<>|\"`]*")


class Incident(BaseModel):
    """A Cloud Monitoring incident an alert is about (instead of a failure)."""

    model_config = ConfigDict(frozen=True)

    incident_id: str
    state: Literal["open", "closed"]
    policy_name: str | None = None
    condition_name: str | None = None
    summary: str | None = None
    url: str | None = None  # the incident in the Cloud console
    started_at: datetime | None = None
    ended_at: datetime | None = None


def incident_labels(incident: Mapping[str, Any], *, incident_id: str, state: str) -> dict[str, str]:
    """The entry labels that record a notification's incident (values cut to what the store keeps)."""
    labels = {LABEL_ID: incident_id[:MAX_LABEL_VALUE], LABEL_STATE: state}
    for label, key in (
        (LABEL_POLICY, "policy_name"),
        (LABEL_CONDITION, "condition_name"),
        (LABEL_SUMMARY, "summary"),
    ):
        value = incident.get(key)
        if isinstance(value, str) and value.strip():
            labels[label] = " ".join(value.split())[:MAX_LABEL_VALUE]
    url = incident.get("url")
    if isinstance(url, str) and len(url) <= MAX_LABEL_VALUE and _INCIDENT_URL.fullmatch(url):
        labels[LABEL_URL] = url
    for label, key in ((LABEL_STARTED, "started_at"), (LABEL_ENDED, "ended_at")):
        value = incident.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1e11:
            labels[label] = str(int(value))
    return labels


def closing_entry_id(incident_id: str) -> str:
    """The insertId of the entry that records an incident's closing."""
    return f"incident-{incident_id}-closed"


def is_closing_entry(entry: Any) -> bool:
    """True for the entry a closing notification added (its text repeats the opening one: not evidence)."""
    labels = entry.get("labels") if isinstance(entry, dict) else None
    return isinstance(labels, dict) and labels.get(LABEL_STATE) == "closed" and bool(labels.get(LABEL_ID))


def incident_from_entries(entries: Iterable[Any]) -> Incident | None:
    """The incident a job's stored entries record (None: none). With several, the latest open one is shown,
    else the latest closed one."""
    found: dict[str, Incident] = {}
    for entry in entries:
        labels = entry.get("labels") if isinstance(entry, dict) else None
        if not isinstance(labels, dict) or not labels.get(LABEL_ID):
            continue
        incident_id = str(labels[LABEL_ID])
        state = "closed" if labels.get(LABEL_STATE) == "closed" else "open"
        current = found.get(incident_id)
        if current is not None and current.state == "closed":
            continue  # a closed incident stays closed, whatever order its entries come in
        found[incident_id] = Incident(
            incident_id=incident_id,
            state=state,
            policy_name=labels.get(LABEL_POLICY) or (current.policy_name if current else None),
            condition_name=labels.get(LABEL_CONDITION) or (current.condition_name if current else None),
            summary=labels.get(LABEL_SUMMARY) or (current.summary if current else None),
            url=_url(labels.get(LABEL_URL)) or (current.url if current else None),
            started_at=_time(labels.get(LABEL_STARTED)) or (current.started_at if current else None),
            ended_at=_time(labels.get(LABEL_ENDED)) if state == "closed" else None,
        )
    if not found:
        return None
    never = datetime.min.replace(tzinfo=UTC)
    ranked = sorted(found.values(), key=lambda i: (i.state == "open", i.started_at or never))
    return ranked[-1]


def _url(value: Any) -> str | None:
    return value if isinstance(value, str) and _INCIDENT_URL.fullmatch(value) else None


def _time(value: Any) -> datetime | None:
    try:
        seconds = int(str(value))
    except ValueError:
        return None
    return datetime.fromtimestamp(seconds, UTC) if 0 < seconds < 1e11 else None
