"""The alert path: log entries (and monitoring incidents) in, exactly one Slack message per failed job out.

Rules:
- Entries are grouped by job (key "PROJECT/JOB_ID") and stored; duplicates are dropped by entry id.
- A job is posted once it has failed: Vertex's "Job failed." entry, or the CustomJob in JOB_STATE_FAILED.
  Error entries of a job that is still running (a worker restart) are held; a job that then succeeds or is
  cancelled is never reported.
- Posting is claimed atomically in the store, so concurrent deliveries and instances post once. A claim that
  another instance holds makes this delivery fail softly (transient) so Pub/Sub redelivers it later, when it
  becomes an update: evidence is never dropped.
- Every alert carries Slack message metadata naming its job. When a post's outcome is unknown (Slack's answer
  timed out or the connection dropped) or a claim is taken over from a poster that never settled it (it died
  or was cut off at shutdown), the message Slack may hold is looked for (conversations.history) and adopted
  before anything is posted again: one message per job even though Slack and Pub/Sub are at-least-once.
- Stored entries are shrunk (bot.intake.stored_entry: long text keeps its head and tail, long ids are hashed) and a
  job keeps at most MAX_JOB_ENTRIES; a push reads the job's entries once.
- Every Slack and Google call is bounded by the push's Deadline, which shutdown (SIGTERM) shortens; claims
  still held when the process stops are settled (`settle`).
- Later evidence re-renders the same message with chat.update, only when the rendering changed.
- An alert is two messages: the channel message (one screen: bot.render.slack_blocks.diagnosis_message) and the full
  diagnosis card, posted right after it as the first reply in its thread (`diagnosis_card`, with message
  metadata `trainmedic_card` naming the job). The card is posted under the same claim as the channel message,
  before the post is recorded, and its ts is stored with the alert (`card` in the stored diagnosis): a post that
  gets no further than the channel message is settled like any post in doubt, and whoever adopts the channel
  message looks for the card in its thread (conversations.replies) and adopts it too before posting one. The card
  is never posted anywhere else: later updates chat.update it, and an alert recorded without one stays so.
- A Cloud Monitoring incident about a job that has not failed (low GPU utilisation on a running job) is posted
  as what it is, with Acknowledge and no Rerun; the notification that closes it updates that message.
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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.alerting.deadline import Deadline, Shutdown
from bot.alerting.event_log import event
from bot.alerting.incidents import closing_entry_id, incident_from_entries, incident_labels, is_closing_entry
from bot.alerting.routing import Destination, destination_for
from bot.chat.rerun import rerun_offer
from bot.config import RoutingConfig
from bot.diagnosis.classifier import Classifier
from bot.errors import (
    ApiError,
    ApiPermissionDenied,
    ApiUnavailable,
    InvalidPushMessage,
    JobNotFound,
    StoreUnavailable,
)
from bot.intake.log_input import entries_to_lines, entry_labels, entry_text, parse_timestamp
from bot.intake.stored_entry import entry_key, shrink_entry
from bot.models import Diagnosis, JobInfo
from bot.render.slack_blocks import AlertContext, diagnosis_card, diagnosis_message, message_digest
from bot.slack.poster import ChannelUnavailable, PostOutcomeUnknown, SlackPoster, alert_metadata, card_metadata
from bot.store import AlertRecord, ClaimOutcome, Store

__all__ = ["AlertService", "Deadline", "Outcome", "PostInProgress", "Shutdown"]

JOB_FAILED_TEXT = "Job failed."
MAX_JOB_ENTRIES = 300  # entries kept per job (the store is opened with this cap; each entry is shrunk)
MAX_FETCHED_ENTRIES = 200  # newest entries from Cloud Logging kept with the job's pushed entries
FETCH_PAGE_SIZE = 50  # Cloud Logging entries per page: at most this many full-size entries in memory at once
# One Slack or Google call never takes longer than this, so that a call in flight when SIGTERM arrives still ends
# inside the shutdown window (bot.alerting.deadline.SHUTDOWN_WORK_SECONDS); later calls get what is left of the window.
SLACK_TIMEOUT = 5.0
GOOGLE_TIMEOUT = 5.0
MIN_POST_SECONDS = 2.0  # with less time left, do not start a post: release and let the redelivery post
MIN_SEARCH_SECONDS = 1.5  # with less time left, do not look for an earlier message now
TERMINAL_OK_STATES = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING"})
_ATTEMPT = re.compile(r"exited with a non-zero status|ran out-of-memory and exited|Replicas low on memory")
_JOB_ID = re.compile(r"^[0-9]{1,30}$")
_PROJECT = re.compile(r"^[a-z0-9][a-z0-9.:-]{2,62}$")
_INCIDENT_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


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
        shutdown: Shutdown | None = None,
        slack_timeout: float = SLACK_TIMEOUT,
        google_timeout: float = GOOGLE_TIMEOUT,
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
        self.shutdown = shutdown or Shutdown()
        self.slack_timeout = slack_timeout
        self.google_timeout = google_timeout
        self._job_cache: dict[str, _JobLookup] = {}
        self._cache_lock = threading.Lock()
        self._held: dict[str, str] = {}  # job key -> owner of a post claim this process holds right now
        self._held_lock = threading.Lock()

    def deadline(self, seconds: float) -> Deadline:
        """A deadline for one request's work, cut short when shutdown begins."""
        return Deadline(seconds, shutdown=self.shutdown)

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
            raise InvalidPushMessage(f"ml_job entry without a valid job_id/project_id label: {labels!r}"[:500])
        job_key = f"{project}/{job_id}"
        stored = _stored_entry(entry, fallback_id=message_id)
        new_entry = self.store.add_entry(job_key, stored["insertId"], stored)
        deadline = deadline or self.deadline(30.0)

        existing = self.store.get_alert(job_key)
        if existing is not None and existing.posted:
            outcome = self._update(existing, deadline=deadline)
            return outcome if new_entry or outcome.status != "unchanged" else _as_duplicate(outcome)

        entries = _with(self._entries(job_key), stored)  # read once for this push
        failed_marker = any(_is_failure_marker(e) for e in entries)
        lookup = self._lookup_job(project, job_id, fresh=failed_marker, deadline=deadline)
        state = lookup.job.state if lookup.job else None
        if state in TERMINAL_OK_STATES:
            return Outcome("recovered", f"job is {state}: not a failure", job_key)
        if not (failed_marker or state == "JOB_STATE_FAILED"):
            reason = f"job is {state}" if state else "no 'Job failed.' entry yet and the job state is unknown"
            return Outcome("held" if new_entry else "duplicate", f"held: {reason}", job_key)
        return self._post(job_key, lookup, entries, deadline=deadline)

    def handle_incident(
        self, payload: Any, *, message_id: str | None = None, deadline: Deadline | None = None
    ) -> Outcome:
        """Process a Cloud Monitoring incident notification (schema 1.2) about a training job.

        An open incident is diagnosed and posted (or updates the job's alert); the notification that closes it
        updates the alert of the same incident to say so. A closed incident without an alert is irrelevant.
        """
        incident = payload.get("incident") if isinstance(payload, dict) else None
        if not isinstance(incident, dict):
            raise InvalidPushMessage("monitoring notification without an 'incident' object")
        state = str(incident.get("state", "")).lower()
        not_open = f"incident state is {state[:40] or 'missing'!r}, only open incidents are diagnosed"
        if state not in ("open", "closed"):
            return Outcome("irrelevant", not_open)
        project, job_id = _incident_job(incident)
        raw_incident_id = str(incident.get("incident_id") or message_id or _digest(incident))
        incident_id = raw_incident_id if _INCIDENT_ID.match(raw_incident_id) else entry_key(raw_incident_id)
        if state == "closed" and not (project and _PROJECT.match(project)):
            return Outcome("irrelevant", f"{not_open}; the closed incident names no project with an alert")
        if not project:
            raise InvalidPushMessage("incident names no project (resource.labels.project_id / scoping_project_id)")
        if not _PROJECT.match(project):
            raise InvalidPushMessage(f"incident names an invalid project id: {project[:80]!r}")
        text = " | ".join(
            str(part)
            for part in (incident.get("policy_name"), incident.get("condition_name"), incident.get("summary"))
            if part
        )
        synthetic = {
            "insertId": f"incident-{incident_id}" if state == "open" else closing_entry_id(incident_id),
            "resource": {
                "type": "ml_job",
                "labels": {"project_id": project, "job_id": job_id or "", "task_name": "monitoring"},
            },
            "labels": incident_labels(incident, incident_id=incident_id, state=state),
            "severity": "WARNING" if state == "open" else "INFO",
            "textPayload": text or "Cloud Monitoring incident",
            "timestamp": _epoch_to_rfc3339(incident.get("started_at" if state == "open" else "ended_at")),
        }
        job_key = f"{project}/{job_id}" if job_id else f"{project}/incident-{incident_id}"
        deadline = deadline or self.deadline(30.0)
        existing = self.store.get_alert(job_key)
        if state == "closed" and (existing is None or not existing.posted):
            return Outcome("irrelevant", f"{not_open}; no alert of incident {incident_id} to update", job_key)
        stored = _stored_entry(synthetic)
        new_entry = self.store.add_entry(job_key, stored["insertId"], stored)
        if existing is not None and existing.posted:
            outcome = self._update(existing, deadline=deadline)
            return outcome if new_entry or outcome.status != "unchanged" else _as_duplicate(outcome)
        lookup = (
            self._lookup_job(project, job_id, fresh=True, deadline=deadline)
            if job_id
            else _JobLookup(None, [], self.clock())
        )
        return self._post(job_key, lookup, _with(self._entries(job_key), stored), deadline=deadline)

    def settle(self) -> None:
        """Release every post claim this process still holds, as in doubt (at shutdown: the work holding them
        is being cut off, and Slack may hold its message), so that a redelivery elsewhere can go ahead."""
        with self._held_lock:
            held = list(self._held.items())
        for job_key, owner in held:
            try:
                self.store.release_post(job_key, owner=owner, in_doubt=True)
            except Exception as exc:  # noqa: BLE001 - shutting down: the claim's lease expires anyway
                event(logging.WARNING, "claim not settled at shutdown", job_key=job_key, reason=str(exc))
            else:
                event(logging.WARNING, "claim settled at shutdown", job_key=job_key)

    # ---------------------------------------------------------------------------------------- posting

    def _post(self, job_key: str, lookup: _JobLookup, entries: list[dict], *, deadline: Deadline) -> Outcome:
        owner = f"{self.owner}/{uuid.uuid4().hex[:12]}"  # one claim per attempt, even within one instance
        claim = self.store.claim_post(job_key, owner=owner, lease_seconds=self.lease_seconds)
        if claim is ClaimOutcome.POSTED:
            record = self.store.get_alert(job_key)
            if record is not None and record.posted:
                return self._update(record, deadline=deadline, entries=entries)
        if claim is ClaimOutcome.BUSY:
            raise PostInProgress(f"{job_key}: another delivery is posting this job's message; retry later")
        with self._held_lock:
            self._held[job_key] = owner
        project, job_id = job_key.split("/", 1)
        posted: tuple[str, str] | None = None  # the channel message, once Slack has it
        try:
            try:
                claimed = self.store.get_alert(job_key)
                in_doubt = claimed is not None and claimed.post_in_doubt
                fetched, unavailable = self._job_logs(project, job_id, deadline)
                known = {str(e.get("insertId")) for e in entries}
                for extra in fetched:
                    self.store.add_entry(job_key, extra["insertId"], extra)
                    if extra["insertId"] not in known and len(entries) < MAX_JOB_ENTRIES:
                        entries.append(extra)
                        known.add(extra["insertId"])
                del fetched
                unavailable = lookup.unavailable + unavailable
                diagnosis, context = self._diagnose(job_key, lookup.job, entries, unavailable)
                job = lookup.job or JobInfo(project=project)
                destination = destination_for(job, diagnosis.failure_class, self.routing)
                message = diagnosis_message(diagnosis, context)
                card = diagnosis_card(diagnosis, context)
                fingerprint = message_digest(message)
                channel, ts, routed, adopted = self._deliver(
                    job_key, destination, message, in_doubt=in_doubt, deadline=deadline
                )
                posted = (channel, ts)
                card_ts = self._deliver_card(job_key, channel, ts, card, adopted=adopted, deadline=deadline)
            except PostOutcomeUnknown:
                self._release(job_key, owner, in_doubt=True)
                raise
            except BaseException:
                # Once the channel message is in Slack, whatever went wrong after it leaves the post in doubt: the
                # redelivery adopts the message (and its card, if Slack got it) rather than posting again.
                self._release(job_key, owner, in_doubt=posted is not None)
                raise
            try:
                self.store.record_post(
                    job_key,
                    owner=owner,
                    channel=channel,
                    message_ts=ts,
                    diagnosis=_stored(diagnosis, context, destination.rerun_allowed, card=_card_state(card_ts, card)),
                    fingerprint=fingerprint,
                    job=(lookup.job or JobInfo(project=project, job_id=job_id)).model_dump(mode="json"),
                )
            except StoreUnavailable:
                # Posted but not recorded: a redelivery would post again. Withdraw this message (and its card) so
                # that the redelivery's post is the only one.
                self._withdraw(job_key, owner, channel, ts, deadline, card_ts=card_ts)
                raise
        finally:
            with self._held_lock:
                if self._held.get(job_key) == owner:
                    del self._held[job_key]
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
        if self.store.count_entries(job_key) > len(entries):
            record = self.store.get_alert(job_key)
            if record is not None:
                self._update(record, deadline=deadline)
        return Outcome("posted", f"posted via {routed}", job_key, channel, ts, diagnosis.failure_class)

    def _deliver(
        self, job_key: str, destination: Destination, message: dict, *, in_doubt: bool, deadline: Deadline
    ) -> tuple[str, str, str, bool]:
        """Post the job's message, or adopt the one an earlier attempt may have posted: (channel, ts, how, whether
        it was adopted)."""
        if in_doubt:
            earlier = self._find_earlier(job_key, destination, deadline)
            if earlier is not None:
                return self._adopt(job_key, earlier, message, deadline)
        if deadline.remaining() < MIN_POST_SECONDS:
            raise ApiUnavailable(f"{job_key}: too little time left to post (shutting down?); a redelivery will post")
        metadata = alert_metadata(job_key)
        try:
            try:
                channel, ts = self.poster.post(
                    destination.channel,
                    message,
                    metadata=metadata,
                    timeout=deadline.call_timeout(self.slack_timeout),
                    ends_at=deadline.ends_at,
                )
                return channel, ts, destination.reason, False
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
                channel, ts = self.poster.post(
                    self.routing.default_channel,
                    message,
                    metadata=metadata,
                    timeout=deadline.call_timeout(self.slack_timeout),
                    ends_at=deadline.ends_at,
                )
                return channel, ts, f"default_channel ({destination.channel}: {exc})", False
        except PostOutcomeUnknown as exc:
            event(logging.WARNING, "Slack did not answer a post: looking for it", job_key=job_key, reason=str(exc))
            if deadline.remaining() >= MIN_SEARCH_SECONDS:
                try:
                    earlier = self._find_earlier(job_key, destination, deadline)
                except ApiError:
                    earlier = None
                if earlier is not None:
                    return self._adopt(job_key, earlier, message, deadline)
            raise

    def _find_earlier(self, job_key: str, destination: Destination, deadline: Deadline) -> tuple[str, str] | None:
        """The message an earlier attempt posted for the job, in the routed or the default channel, if any.

        Raises:
            ApiUnavailable: Slack could not be searched now (the redelivery will look again).
        """
        channels = list(dict.fromkeys([destination.channel, self.routing.default_channel]))
        for channel in channels:
            try:
                found = self.poster.find_alert(
                    channel,
                    job_key=job_key,
                    timeout=deadline.call_timeout(self.slack_timeout),
                    ends_at=deadline.ends_at,
                )
            except ApiUnavailable:
                raise
            except ApiError as exc:  # e.g. missing_scope (channels:history) or an unknown channel: post anyway
                event(
                    logging.ERROR,
                    "cannot look for an earlier message; posting may duplicate it",
                    job_key=job_key,
                    channel=channel,
                    reason=str(exc),
                )
                continue
            if found is not None:
                return found
        return None

    def _adopt(
        self, job_key: str, found: tuple[str, str], message: dict, deadline: Deadline
    ) -> tuple[str, str, str, bool]:
        """Make an earlier attempt's message the job's message, showing what we would have posted."""
        channel, ts = found
        self.poster.update(
            channel,
            ts,
            message,
            metadata=alert_metadata(job_key),
            timeout=deadline.call_timeout(self.slack_timeout),
            ends_at=deadline.ends_at,
        )
        event(logging.WARNING, "adopted the message an earlier attempt posted", job_key=job_key, channel=channel, ts=ts)
        return channel, ts, "the message an earlier attempt posted (adopted)", True

    def _deliver_card(
        self, job_key: str, channel: str, ts: str, card: dict, *, adopted: bool, deadline: Deadline
    ) -> str | None:
        """Put the full card in the thread of the job's message (channel, ts): adopt the one an earlier attempt
        posted there (when the message was adopted), else post it. Its ts, or None when Slack refused it for good
        (the alert stands without it; /diagnose still gives the card).

        Raises:
            PostOutcomeUnknown, ApiUnavailable: not known to be posted now; the caller leaves the post in doubt.
        """
        metadata = card_metadata(job_key)
        if adopted:
            found = self._find_card(job_key, channel, ts, deadline)
            if found is not None:
                try:
                    self.poster.update(
                        channel,
                        found,
                        card,
                        metadata=metadata,
                        timeout=deadline.call_timeout(self.slack_timeout),
                        ends_at=deadline.ends_at,
                    )
                except ApiUnavailable:
                    raise
                except ApiError as exc:  # it is there all the same: later updates try again
                    event(logging.WARNING, "adopted card not updated", job_key=job_key, reason=str(exc))
                event(logging.WARNING, "adopted the card an earlier attempt posted", job_key=job_key, ts=found)
                return found
        if deadline.remaining() < MIN_POST_SECONDS:
            raise ApiUnavailable(f"{job_key}: too little time left to post the card; a redelivery will post it")
        try:
            _, card_ts = self.poster.post(
                channel,
                card,
                metadata=metadata,
                thread_ts=ts,
                timeout=deadline.call_timeout(self.slack_timeout),
                ends_at=deadline.ends_at,
            )
        except ApiUnavailable:
            raise
        except ApiError as exc:
            event(logging.ERROR, "the card was refused: the alert stands without it", job_key=job_key, reason=str(exc))
            return None
        return card_ts

    def _find_card(self, job_key: str, channel: str, ts: str, deadline: Deadline) -> str | None:
        """The card an earlier attempt posted in the thread of (channel, ts), if any.

        Raises:
            ApiUnavailable: Slack could not be searched now (the redelivery will look again).
        """
        try:
            return self.poster.find_card(
                channel,
                ts,
                job_key=job_key,
                timeout=deadline.call_timeout(self.slack_timeout),
                ends_at=deadline.ends_at,
            )
        except ApiUnavailable:
            raise
        except ApiError as exc:  # e.g. missing_scope (channels:history): post anyway, as for the message itself
            event(
                logging.ERROR,
                "cannot look for an earlier card; posting may duplicate it",
                job_key=job_key,
                channel=channel,
                reason=str(exc),
            )
            return None

    def _release(self, job_key: str, owner: str, *, in_doubt: bool) -> None:
        try:
            self.store.release_post(job_key, owner=owner, in_doubt=in_doubt)
        except StoreUnavailable as exc:  # the claim expires after its lease (and is then in doubt anyway)
            event(logging.WARNING, "post claim not released", job_key=job_key, reason=str(exc))

    def _withdraw(
        self, job_key: str, owner: str, channel: str, ts: str, deadline: Deadline, *, card_ts: str | None = None
    ) -> None:
        try:
            for message_ts in (card_ts, ts):  # the card first: a parent deleted with replies would stay as a stub
                if message_ts is not None:
                    self.poster.delete(
                        channel, message_ts, timeout=deadline.call_timeout(self.slack_timeout), ends_at=deadline.ends_at
                    )
        except ApiError as exc:
            event(
                logging.ERROR,
                "posted message could not be recorded nor withdrawn: a redelivery will adopt it",
                job_key=job_key,
                channel=channel,
                ts=ts,
                reason=str(exc),
            )
            self._release(job_key, owner, in_doubt=True)
            return
        event(
            logging.WARNING,
            "posted message withdrawn: the store could not record it",
            job_key=job_key,
            channel=channel,
            ts=ts,
        )
        self._release(job_key, owner, in_doubt=False)

    def _update(self, record: AlertRecord, *, deadline: Deadline, entries: list[dict] | None = None) -> Outcome:
        """Re-diagnose with everything now known and update the message if its rendering changed."""
        stored = record.diagnosis or {}
        job = JobInfo.model_validate(record.job) if record.job else None
        context_data = stored.get("context", {})
        diagnosis, context = self._diagnose(
            record.job_key,
            job,
            entries if entries is not None else self._entries(record.job_key),
            list(context_data.get("unavailable", [])),
        )
        context = with_record_state(context, record)
        message = diagnosis_message(diagnosis, context)
        fingerprint = message_digest(message)
        card = diagnosis_card(diagnosis, context)
        card_state = dict(stored.get("card") or {})
        card_ts = card_state.get("ts")
        card_changed = bool(card_ts) and message_digest(card) != card_state.get("fingerprint")
        if fingerprint == record.fingerprint and not card_changed:
            return Outcome(
                "unchanged",
                "no new evidence changes the message",
                record.job_key,
                record.channel,
                record.message_ts,
                diagnosis.failure_class,
            )
        assert record.channel and record.message_ts
        if fingerprint != record.fingerprint:
            self.poster.update(
                record.channel,
                record.message_ts,
                message,
                timeout=deadline.call_timeout(self.slack_timeout),
                ends_at=deadline.ends_at,
            )
        if card_changed:
            card_state = self._update_card(record, str(card_ts), card, deadline)
        self.store.update_post(
            record.job_key,
            diagnosis=_stored(diagnosis, context, tuple(stored.get("rerun_allowed", [])), card=card_state or None),
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

    def _update_card(self, record: AlertRecord, card_ts: str, card: dict, deadline: Deadline) -> dict:
        """chat.update the alert's card; its new stored state (no ts once Slack no longer has it).

        Raises:
            ApiUnavailable: transient (the redelivery updates both messages again).
        """
        assert record.channel
        try:
            self.poster.update(
                record.channel,
                card_ts,
                card,
                timeout=deadline.call_timeout(self.slack_timeout),
                ends_at=deadline.ends_at,
            )
        except ApiUnavailable:
            raise
        except ApiError as exc:  # deleted by someone (message_not_found), say: the alert stands without it
            event(logging.WARNING, "the card could not be updated", job_key=record.job_key, reason=str(exc))
            return {}
        return _card_state(card_ts, card)

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
        readable = [e for e in ordered if not is_closing_entry(e)]  # repeats its incident's text: not evidence
        diagnosis = self.classifier.classify(entries_to_lines(readable), job)
        failed = (job is not None and job.state == "JOB_STATE_FAILED") or any(_is_failure_marker(e) for e in ordered)
        knowledge = getattr(self.classifier, "kb", None)
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
            incident=None if failed else incident_from_entries(ordered),  # an incident on a job that has not failed
            rerun_offer=rerun_offer(knowledge, diagnosis, job) if knowledge is not None else None,
        )
        return diagnosis, context

    def _entries(self, job_key: str) -> list[dict]:
        return self.store.entries(job_key)

    def _job_logs(self, project: str, job_id: str, deadline: Deadline) -> tuple[list[dict], list[str]]:
        """The job's newest entries from Cloud Logging, shrunk as they arrive, and what could not be fetched."""
        if self.logs is None or job_id.startswith("incident-"):
            return [], []
        if deadline.remaining() < 8:
            return [], ["the job's full logs: skipped, too little time left before the push deadline"]
        try:
            fetched = self.logs.job_entries(
                project=project,
                job_id=job_id,
                max_entries=MAX_FETCHED_ENTRIES,
                timeout=deadline.call_timeout(self.google_timeout),
                shrink=_stored_entry,
                page_size=FETCH_PAGE_SIZE,
            )
            return fetched, []
        except ApiPermissionDenied as exc:
            missing = exc.permission or "logging.logEntries.list"
            return [], [f"the job's full logs: the bot lacks {missing}"]
        except ApiError as exc:
            return [], [f"the job's full logs: {exc}"]
        except ValueError as exc:  # an id Cloud Logging cannot be asked about: nothing to fetch, ever
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
                job = self.jobs.get_job(
                    project=project, region=region, job_id=job_id, timeout=deadline.call_timeout(self.google_timeout)
                )
                return _JobLookup(job, [], self.clock())
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


def _stored(
    diagnosis: Diagnosis, context: AlertContext, rerun_allowed: tuple[str, ...], *, card: dict | None = None
) -> dict:
    """What the store keeps to re-render the message later (acknowledge, rerun) without re-fetching, and the
    thread card's state ({"ts", "fingerprint"}) when it was posted."""
    stored = {
        "diagnosis": diagnosis.model_dump(mode="json"),
        "context": context.model_dump(mode="json"),
        "rerun_allowed": list(rerun_allowed),
    }
    if card:
        stored["card"] = card
    return stored


def _card_state(card_ts: str | None, card: dict) -> dict | None:
    return {"ts": card_ts, "fingerprint": message_digest(card)} if card_ts else None


def _is_failure_marker(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    return entry_text(entry).strip() == JOB_FAILED_TEXT and entry_labels(entry).get("task_name") in (None, "service")


def _stored_entry(entry: dict, fallback_id: str | None = None) -> dict:
    """What is stored of a LogEntry (bot.intake.stored_entry), under its id (hashed when long)."""
    return shrink_entry(entry, entry_key(entry.get("insertId") or fallback_id or _digest(entry)))


def _with(entries: list[dict], entry: dict) -> list[dict]:
    """`entries` with `entry` appended unless an entry of that id is there (the store may hold its cap)."""
    if not any(e.get("insertId") == entry["insertId"] for e in entries):
        entries.append(entry)
    return entries


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
