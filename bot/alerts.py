"""The alert path: log entries (and monitoring incidents) in, exactly one Slack message per failed job out.

Rules:
- Entries are grouped by job (key "PROJECT/JOB_ID") and stored; duplicates are dropped by entry id.
- A job is posted once it has failed: Vertex's "Job failed." entry, or the CustomJob in JOB_STATE_FAILED.
  Error entries of a job that is still running (a worker restart) are held; a job that then succeeds or is
  cancelled is never reported.
- Posting is claimed atomically in the store, so concurrent deliveries and instances post once. A claim that
  another instance holds makes this delivery fail softly (transient) so Pub/Sub redelivers it later, when it
  becomes an update: evidence is never dropped.
- Later evidence re-renders the same message with chat.update, only when the rendering changed.
- The Vertex AI and Cloud Logging look-ups enrich the diagnosis; when they fail the alert is still posted from
  the log evidence, saying what could not be fetched.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.classifier import Classifier
from bot.config import RoutingConfig
from bot.errors import (
    ApiError,
    ApiPermissionDenied,
    ApiUnavailable,
    InvalidPushMessage,
    JobNotFound,
    StoreUnavailable,
)
from bot.event_log import event
from bot.log_input import entries_to_lines, entry_labels, entry_text, parse_timestamp
from bot.models import Diagnosis, JobInfo
from bot.render_slack import AlertContext, diagnosis_message, message_digest
from bot.routing import destination_for
from bot.slack_poster import ChannelUnavailable, SlackPoster
from bot.store import AlertRecord, ClaimOutcome, Store

JOB_FAILED_TEXT = "Job failed."
MAX_FETCHED_ENTRIES = 200  # newest entries from Cloud Logging kept with the job's pushed entries
TERMINAL_OK_STATES = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING"})
_ATTEMPT = re.compile(r"exited with a non-zero status|ran out-of-memory and exited|Replicas low on memory")
_JOB_ID = re.compile(r"^[0-9]{1,30}$")
_PROJECT = re.compile(r"^[a-z0-9][a-z0-9.:-]{2,62}$")


class PostInProgress(ApiUnavailable):
    """Another delivery holds the claim to post this job's message; retry later (it will be an update)."""


@dataclass(frozen=True)
class Outcome:
    status: str  # posted | updated | unchanged | held | recovered | duplicate | irrelevant
    reason: str
    job_key: str | None = None
    channel: str | None = None
    message_ts: str | None = None
    failure_class: str | None = None


@dataclass
class Deadline:
    """Work left for this request: enrichment is skipped when little time remains before the ack deadline."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float:
        return self.seconds - (time.monotonic() - self.started)


@dataclass
class _JobLookup:
    job: JobInfo | None
    unavailable: list[str]
    fetched_at: float


class AlertService:
    def __init__(
        self,
        *,
        store: Store,
        poster: SlackPoster,
        classifier: Classifier,
        routing: RoutingConfig,
        jobs: Any | None = None,
        logs: Any | None = None,
        owner: str = "trainmedic",
        lease_seconds: float = 60.0,
        job_cache_seconds: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.poster = poster
        self.classifier = classifier
        self.routing = routing
        self.jobs = jobs
        self.logs = logs
        self.owner = owner
        self.lease_seconds = lease_seconds
        self.job_cache_seconds = job_cache_seconds
        self.clock = clock
        self._job_cache: dict[str, _JobLookup] = {}
        self._cache_lock = threading.Lock()

    # ------------------------------------------------------------------------------------------ entry points

    def handle_log_entry(
        self, entry: Any, *, message_id: str | None = None, deadline: Deadline | None = None
    ) -> Outcome:
        """Process one Cloud Logging LogEntry (the data of a sink's Pub/Sub message)."""
        if not isinstance(entry, dict):
            raise InvalidPushMessage("message data is not a JSON object (a LogEntry was expected)")
        resource = entry.get("resource")
        if not isinstance(resource, dict) or resource.get("type") != "ml_job":
            return Outcome(
                "irrelevant",
                f"resource.type is {resource.get('type') if isinstance(resource, dict) else None!r}, not ml_job",
            )
        labels = entry_labels(entry)
        job_id, project = labels.get("job_id", ""), labels.get("project_id", "")
        if not _JOB_ID.match(job_id) or not _PROJECT.match(project):
            raise InvalidPushMessage(f"ml_job entry without a valid job_id/project_id label: {labels!r}")
        job_key = f"{project}/{job_id}"
        entry_id = str(entry.get("insertId") or message_id or _digest(entry))
        new_entry = self.store.add_entry(job_key, entry_id, entry)
        deadline = deadline or Deadline(30.0)

        existing = self.store.get_alert(job_key)
        if existing is not None and existing.posted:
            outcome = self._update(existing, deadline=deadline)
            return outcome if new_entry or outcome.status != "unchanged" else _as_duplicate(outcome)

        failed_marker = _is_failure_marker(entry) or any(_is_failure_marker(e) for e in self._entries(job_key))
        lookup = self._lookup_job(project, job_id, fresh=failed_marker, deadline=deadline)
        state = lookup.job.state if lookup.job else None
        if state in TERMINAL_OK_STATES:
            return Outcome("recovered", f"job is {state}: not a failure", job_key)
        if not (failed_marker or state == "JOB_STATE_FAILED"):
            reason = f"job is {state}" if state else "no 'Job failed.' entry yet and the job state is unknown"
            return Outcome("held" if new_entry else "duplicate", f"held: {reason}", job_key)
        return self._post(job_key, lookup, deadline=deadline)

    def handle_incident(
        self, payload: Any, *, message_id: str | None = None, deadline: Deadline | None = None
    ) -> Outcome:
        """Process a Cloud Monitoring incident notification (schema 1.2) about a training job."""
        incident = payload.get("incident") if isinstance(payload, dict) else None
        if not isinstance(incident, dict):
            raise InvalidPushMessage("monitoring notification without an 'incident' object")
        state = str(incident.get("state", "")).lower()
        if state != "open":
            return Outcome("irrelevant", f"incident state is {state or 'missing'!r}, only open incidents are diagnosed")
        project, job_id = _incident_job(incident)
        incident_id = str(incident.get("incident_id") or message_id or _digest(incident))
        if not project:
            raise InvalidPushMessage("incident names no project (resource.labels.project_id / scoping_project_id)")
        text = " | ".join(
            str(part)
            for part in (incident.get("policy_name"), incident.get("condition_name"), incident.get("summary"))
            if part
        )
        synthetic = {
            "insertId": f"incident-{incident_id}",
            "resource": {
                "type": "ml_job",
                "labels": {"project_id": project, "job_id": job_id or "", "task_name": "monitoring"},
            },
            "severity": "WARNING",
            "textPayload": text or "Cloud Monitoring incident",
            "timestamp": _epoch_to_rfc3339(incident.get("started_at")),
        }
        job_key = f"{project}/{job_id}" if job_id else f"{project}/incident-{incident_id}"
        new_entry = self.store.add_entry(job_key, synthetic["insertId"], synthetic)
        deadline = deadline or Deadline(30.0)
        existing = self.store.get_alert(job_key)
        if existing is not None and existing.posted:
            outcome = self._update(existing, deadline=deadline)
            return outcome if new_entry or outcome.status != "unchanged" else _as_duplicate(outcome)
        lookup = (
            self._lookup_job(project, job_id, fresh=True, deadline=deadline)
            if job_id
            else _JobLookup(None, [], self.clock())
        )
        return self._post(job_key, lookup, deadline=deadline)

    # ---------------------------------------------------------------------------------------- posting

    def _post(self, job_key: str, lookup: _JobLookup, *, deadline: Deadline) -> Outcome:
        owner = f"{self.owner}/{uuid.uuid4().hex[:12]}"  # one claim per attempt, even within one instance
        claim = self.store.claim_post(job_key, owner=owner, lease_seconds=self.lease_seconds)
        if claim is ClaimOutcome.POSTED:
            record = self.store.get_alert(job_key)
            if record is not None and record.posted:
                return self._update(record, deadline=deadline)
        if claim is ClaimOutcome.BUSY:
            raise PostInProgress(f"{job_key}: another delivery is posting this job's message; retry later")
        try:
            project, job_id = job_key.split("/", 1)
            fetched, unavailable = self._job_logs(project, job_id, deadline)
            for extra in fetched[-MAX_FETCHED_ENTRIES:]:
                self.store.add_entry(job_key, str(extra.get("insertId") or _digest(extra)), extra)
            entries = self._entries(job_key)
            unavailable = lookup.unavailable + unavailable
            diagnosis, context = self._diagnose(job_key, lookup.job, entries, unavailable)
            destination = destination_for(lookup.job or JobInfo(project=project), diagnosis.failure_class, self.routing)
            message = diagnosis_message(diagnosis, context)
            try:
                channel, ts = self.poster.post(destination.channel, message)
                routed = destination.reason
            except ChannelUnavailable as exc:
                if destination.channel == self.routing.default_channel:
                    raise ApiUnavailable(f"{exc}; the default channel is not usable either") from exc
                event(
                    logging.WARNING,
                    "routed channel unusable, posting to the default channel",
                    job_key=job_key,
                    channel=destination.channel,
                    reason=str(exc),
                )
                channel, ts = self.poster.post(self.routing.default_channel, message)
                routed = f"default_channel ({destination.channel}: {exc})"
        except BaseException:
            self.store.release_post(job_key, owner=owner)
            raise
        try:
            self.store.record_post(
                job_key,
                owner=owner,
                channel=channel,
                message_ts=ts,
                diagnosis=_stored(diagnosis, context, destination.rerun_allowed),
                fingerprint=message_digest(message),
                job=(lookup.job or JobInfo(project=project, job_id=job_id)).model_dump(mode="json"),
            )
        except StoreUnavailable:
            # Posted but not recorded: a redelivery would post again. Withdraw this message so that the
            # redelivery's post is the only one.
            self._withdraw(job_key, owner, channel, ts)
            raise
        event(
            logging.INFO,
            "failure posted",
            job_key=job_key,
            channel=channel,
            ts=ts,
            route=routed,
            failure_class=diagnosis.failure_class,
            confidence=diagnosis.confidence,
        )
        # Entries that arrived while we were posting were refused as BUSY and will be redelivered, but they are
        # already stored: fold them in now.
        record = self.store.get_alert(job_key)
        if record is not None and len(self._entries(job_key)) != len(entries):
            self._update(record, deadline=deadline)
        return Outcome("posted", f"posted via {routed}", job_key, channel, ts, diagnosis.failure_class)

    def _withdraw(self, job_key: str, owner: str, channel: str, ts: str) -> None:
        try:
            self.poster.delete(channel, ts)
        except ApiError as exc:
            event(
                logging.ERROR,
                "posted message could not be recorded nor withdrawn: a redelivery may post again",
                job_key=job_key,
                channel=channel,
                ts=ts,
                reason=str(exc),
            )
            return
        event(
            logging.WARNING,
            "posted message withdrawn: the store could not record it",
            job_key=job_key,
            channel=channel,
            ts=ts,
        )
        try:
            self.store.release_post(job_key, owner=owner)
        except StoreUnavailable:
            pass  # the claim expires after its lease

    def _update(self, record: AlertRecord, *, deadline: Deadline) -> Outcome:
        """Re-diagnose with everything now known and update the message if its rendering changed."""
        stored = record.diagnosis or {}
        job = JobInfo.model_validate(record.job) if record.job else None
        context_data = stored.get("context", {})
        diagnosis, context = self._diagnose(
            record.job_key, job, self._entries(record.job_key), list(context_data.get("unavailable", []))
        )
        context = with_record_state(context, record)
        message = diagnosis_message(diagnosis, context)
        fingerprint = message_digest(message)
        if fingerprint == record.fingerprint:
            return Outcome(
                "unchanged",
                "no new evidence changes the message",
                record.job_key,
                record.channel,
                record.message_ts,
                diagnosis.failure_class,
            )
        assert record.channel and record.message_ts
        self.poster.update(record.channel, record.message_ts, message)
        self.store.update_post(
            record.job_key,
            diagnosis=_stored(diagnosis, context, tuple(stored.get("rerun_allowed", []))),
            fingerprint=fingerprint,
        )
        event(logging.INFO, "failure message updated", job_key=record.job_key, failure_class=diagnosis.failure_class)
        return Outcome(
            "updated",
            "new evidence updated the message",
            record.job_key,
            record.channel,
            record.message_ts,
            diagnosis.failure_class,
        )

    def render_record(self, record: AlertRecord) -> dict:
        """The current Block Kit message for a stored alert (after an acknowledgement or a rerun)."""
        stored = record.diagnosis or {}
        diagnosis = Diagnosis.model_validate(stored["diagnosis"])
        context = with_record_state(AlertContext.model_validate(stored["context"]), record)
        return diagnosis_message(diagnosis, context)

    # ---------------------------------------------------------------------------------------- diagnosis

    def _diagnose(
        self, job_key: str, job: JobInfo | None, entries: list[dict], unavailable: list[str]
    ) -> tuple[Diagnosis, AlertContext]:
        project, job_id = job_key.split("/", 1)
        unique = {str(e.get("insertId") or _digest(e)): e for e in entries}
        ordered = sorted(unique.values(), key=lambda e: str(e.get("timestamp", "")))
        diagnosis = self.classifier.classify(entries_to_lines(ordered), job)
        failed_at = job.end_time if job and job.end_time else None
        if failed_at is None:
            marks = [parse_timestamp(e.get("timestamp")) for e in ordered if _is_failure_marker(e)]
            failed_at = next((m for m in marks if m is not None), None)
        attempts = sum(1 for e in ordered if _ATTEMPT.search(entry_text(e)))
        context = AlertContext(
            job=job or JobInfo(project=project, job_id=job_id),
            project=(job.project if job and job.project else project),
            region=job.region if job else None,
            job_id=job_id,
            display_name=job.display_name if job else None,
            first_failing_replica=diagnosis.first_failing_replica,
            failed_at=failed_at,
            attempt=attempts or None,
            unavailable=unavailable,
            job_key=job_key,
        )
        return diagnosis, context

    def _entries(self, job_key: str) -> list[dict]:
        return self.store.entries(job_key)

    def _job_logs(self, project: str, job_id: str, deadline: Deadline) -> tuple[list[dict], list[str]]:
        if self.logs is None or job_id.startswith("incident-"):
            return [], []
        if deadline.remaining() < 8:
            return [], ["the job's full logs: skipped, too little time left before the push deadline"]
        try:
            return self.logs.job_entries(project=project, job_id=job_id, max_entries=500), []
        except ApiPermissionDenied as exc:
            missing = exc.permission or "logging.logEntries.list"
            return [], [f"the job's full logs: the bot lacks {missing}"]
        except ApiError as exc:
            return [], [f"the job's full logs: {exc}"]

    def _lookup_job(self, project: str, job_id: str, *, fresh: bool, deadline: Deadline) -> _JobLookup:
        key = f"{project}/{job_id}"
        now = self.clock()
        with self._cache_lock:
            cached = self._job_cache.get(key)
        if cached is not None and now - cached.fetched_at < self.job_cache_seconds:
            terminal = cached.job is not None and cached.job.state in TERMINAL_OK_STATES | {"JOB_STATE_FAILED"}
            if not fresh or terminal or cached.job is None:
                return cached
        lookup = self._fetch_job(project, job_id, deadline)
        with self._cache_lock:
            self._job_cache[key] = lookup
            if len(self._job_cache) > 1000:
                self._job_cache.pop(next(iter(self._job_cache)))
        return lookup

    def _fetch_job(self, project: str, job_id: str, deadline: Deadline) -> _JobLookup:
        if self.jobs is None:
            return _JobLookup(None, ["job details: no Vertex AI client configured"], self.clock())
        problems: list[str] = []
        for region in self.routing.regions:
            if deadline.remaining() < 5:
                problems.append("job details: skipped, too little time left before the push deadline")
                break
            try:
                return _JobLookup(self.jobs.get_job(project=project, region=region, job_id=job_id), [], self.clock())
            except JobNotFound:
                continue
            except ApiPermissionDenied as exc:
                problems.append(f"job details: the bot lacks {exc.permission or 'aiplatform.customJobs.get'}")
                break
            except ApiError as exc:
                problems.append(f"job details: Vertex AI unavailable ({exc})")
                break
            except ValueError as exc:
                problems.append(f"job details: {exc}")
                break
        else:
            problems.append(f"job details: not found in the configured regions ({', '.join(self.routing.regions)})")
        event(logging.WARNING, "job lookup failed", job_key=f"{project}/{job_id}", problems=problems)
        return _JobLookup(None, problems, self.clock())


# ------------------------------------------------------------------------------------------------ helpers


def with_record_state(context: AlertContext, record: AlertRecord) -> AlertContext:
    """The context with the record's acknowledgement and rerun state."""
    acknowledged_at = datetime.fromtimestamp(record.acknowledged_at).astimezone() if record.acknowledged_at else None
    return context.model_copy(
        update={
            "acknowledged_by": record.acknowledged_by,
            "acknowledged_at": acknowledged_at,
            "rerun_by": record.rerun_by if record.rerun_state == "done" else None,
            "rerun_job_id": record.rerun_job_id if record.rerun_state == "done" else None,
        }
    )


def _stored(diagnosis: Diagnosis, context: AlertContext, rerun_allowed: tuple[str, ...]) -> dict:
    """What the store keeps to re-render the message later (acknowledge, rerun) without re-fetching."""
    return {
        "diagnosis": diagnosis.model_dump(mode="json"),
        "context": context.model_dump(mode="json"),
        "rerun_allowed": list(rerun_allowed),
    }


def _is_failure_marker(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    return entry_text(entry).strip() == JOB_FAILED_TEXT and entry_labels(entry).get("task_name") in (None, "service")


def _as_duplicate(outcome: Outcome) -> Outcome:
    return Outcome(
        "duplicate",
        "entry already processed",
        outcome.job_key,
        outcome.channel,
        outcome.message_ts,
        outcome.failure_class,
    )


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _epoch_to_rfc3339(value: Any) -> str | None:
    if isinstance(value, int | float) and value > 0:
        return datetime.fromtimestamp(value).astimezone().isoformat()
    return None


_CUSTOM_JOB_NAME = re.compile(r"customJobs/(\d+)")


def _incident_job(incident: dict) -> tuple[str | None, str | None]:
    """(project, job id) named by an incident, looking where Monitoring puts them."""
    resource = incident.get("resource") if isinstance(incident.get("resource"), dict) else {}
    resource_labels = resource.get("labels") if isinstance(resource.get("labels"), dict) else {}
    metric = incident.get("metric") if isinstance(incident.get("metric"), dict) else {}
    metric_labels = metric.get("labels") if isinstance(metric.get("labels"), dict) else {}
    metadata = incident.get("metadata") if isinstance(incident.get("metadata"), dict) else {}
    user_labels = metadata.get("user_labels") if isinstance(metadata.get("user_labels"), dict) else {}
    policy_labels = incident.get("policy_user_labels") if isinstance(incident.get("policy_user_labels"), dict) else {}
    project = resource_labels.get("project_id") or incident.get("scoping_project_id")
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
        for text in (incident.get("resource_name"), incident.get("resource_display_name"), incident.get("summary")):
            found = _CUSTOM_JOB_NAME.search(str(text or ""))
            if found:
                job_id = found.group(1)
                break
    if job_id is not None and not _JOB_ID.match(job_id):
        job_id = None
    return (str(project) if project else None), job_id
