"""Cloud Monitoring incident notifications (schema 1.2) about training jobs.

An open incident becomes a synthetic LogEntry (its text: policy | condition | summary; its facts in entry labels,
bot.alerting.incidents) kept with the job's evidence, and is posted whatever the job's state (an incident on a
running job is posted as what it is). The notification that closes it only updates the alert of the same job.
An incident that names no job gets an alert of its own, keyed by the incident id.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Any

from bot.alerting.incidents import closing_entry_id, incident_labels
from bot.errors import InvalidPushMessage
from bot.intake.stored_entry import entry_key
from bot.jobs.identity import CUSTOM_JOB_ID, INCIDENT_ID, PROJECT, JobRef, custom_job, incident, is_valid
from bot.jobs.lookup import JobLookup, Lookup
from bot.sources.base import Gate, Irrelevant, Sighting, Subject

_CUSTOM_JOB_NAME = re.compile(r"customJobs/(\d+)")


class MonitoringSource:
    name = "monitoring"

    def recognise(self, data: Any, *, message_id: str | None) -> Sighting | None:
        if not isinstance(data, dict) or "incident" not in data:
            return None
        incident_data = data.get("incident")
        if not isinstance(incident_data, dict):
            raise InvalidPushMessage("monitoring notification without an 'incident' object")
        state = str(incident_data.get("state", "")).lower()
        not_open = f"incident state is {state[:40] or 'missing'!r}, only open incidents are diagnosed"
        if state not in ("open", "closed"):
            raise Irrelevant(not_open)
        project, job_id = incident_job(incident_data)
        raw_id = str(incident_data.get("incident_id") or message_id or _digest(incident_data))
        incident_id = raw_id if is_valid(raw_id, INCIDENT_ID) else entry_key(raw_id)
        if state == "closed" and not (project and is_valid(project, PROJECT)):
            raise Irrelevant(f"{not_open}; the closed incident names no project with an alert")
        if not project:
            raise InvalidPushMessage("incident names no project (resource.labels.project_id / scoping_project_id)")
        if not is_valid(project, PROJECT):
            raise InvalidPushMessage(f"incident names an invalid project id: {project[:80]!r}")
        text = " | ".join(
            str(part)
            for part in (
                incident_data.get("policy_name"),
                incident_data.get("condition_name"),
                incident_data.get("summary"),
            )
            if part
        )
        entry = {
            "insertId": f"incident-{incident_id}" if state == "open" else closing_entry_id(incident_id),
            "resource": {
                "type": "ml_job",
                "labels": {"project_id": project, "job_id": job_id or "", "task_name": "monitoring"},
            },
            "labels": incident_labels(incident_data, incident_id=incident_id, state=state),
            "severity": "WARNING" if state == "open" else "INFO",
            "textPayload": text or "Cloud Monitoring incident",
            "timestamp": _epoch_to_rfc3339(incident_data.get("started_at" if state == "open" else "ended_at")),
        }
        ref = custom_job(project, job_id) if job_id else incident(project, incident_id)
        closed = f"{not_open}; no alert of incident {incident_id} to update" if state == "closed" else None
        return Sighting(ref=ref, entry=entry, updates_only=closed)

    def marks_failure(self, entry: dict) -> bool:
        return False

    def gate(self, ref: JobRef, lookup: Lookup, failed_marker: bool) -> Gate:
        return Gate("post")  # an open incident is news whatever the job's state

    def subject(self, sighting: Sighting, lookup: Lookup, jobs: JobLookup, *, deadline: Any) -> Subject:
        ref = sighting.ref
        return Subject(job=lookup.job, logs_of=ref if ref.is_job else None, unavailable=list(lookup.unavailable))


def is_incident(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("incident"), dict)


def incident_job(incident_data: dict) -> tuple[str | None, str | None]:
    """(project, job id) named by an incident, looking where Monitoring puts them."""
    resource = _dict(incident_data.get("resource"))
    resource_labels = _dict(resource.get("labels"))
    metric_labels = _dict(_dict(incident_data.get("metric")).get("labels"))
    user_labels = _dict(_dict(incident_data.get("metadata")).get("user_labels"))
    policy_labels = _dict(incident_data.get("policy_user_labels"))
    project = resource_labels.get("project_id") or incident_data.get("scoping_project_id")
    job_id = next(
        (
            str(source.get(key))
            for source in (resource_labels, metric_labels, user_labels, policy_labels)
            for key in ("job_id", "custom_job_id", "job")
            if source.get(key)
        ),
        None,
    )
    if job_id is None:
        for text in (
            incident_data.get("resource_name"),
            incident_data.get("resource_display_name"),
            incident_data.get("summary"),
        ):
            found = _CUSTOM_JOB_NAME.search(str(text or ""))
            if found:
                job_id = found.group(1)
                break
    if job_id is not None and not is_valid(job_id, CUSTOM_JOB_ID):
        job_id = None
    return (str(project) if project else None), job_id


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _epoch_to_rfc3339(value: Any) -> str | None:
    if isinstance(value, int | float) and value > 0:
        return datetime.fromtimestamp(value).astimezone().isoformat()
    return None
