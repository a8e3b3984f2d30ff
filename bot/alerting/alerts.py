"""The alert path: pushed messages in, exactly one Slack message per failed job out: group -> gate -> claim ->
post or update. What a message is about, and when its job counts as failed, is its source's (bot.sources).

- A source names the job (a JobRef); entries are grouped by its key, stored shrunk (bot.intake.stored_entry, at
  most MAX_JOB_ENTRIES per job) and de-duplicated by entry id; a push reads its job's entries once.
- The source's gate decides: post, hold (a worker restart on a running job), recovered or owned (never posted).
- Posting is claimed atomically in the store, so concurrent deliveries and instances post once; a claim another
  delivery holds makes this one fail softly (503) and its redelivery becomes an update. Posting, adopting a
  message Slack may already hold, and the card in the thread are bot.alerting.delivery's.
- Later evidence re-renders the same message (and its card) with chat.update, only when the rendering changed.
- Every call is bounded by the push's Deadline, which SIGTERM shortens; claims still held are settled (`settle`).
- When Vertex AI or Cloud Logging fail, the alert is still posted from the log evidence, saying what is missing.
docs/architecture.md walks the whole path.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

from bot.alerting.alert_diagnosis import diagnose_alert, routed_job
from bot.alerting.deadline import Deadline, Shutdown
from bot.alerting.delivery import SLACK_TIMEOUT, Delivery
from bot.alerting.event_log import event
from bot.alerting.outcome import Outcome, PostInProgress
from bot.alerting.quota_ids import with_quota_ids
from bot.alerting.refused_calls import add_refused_calls
from bot.alerting.routing import destination_for
from bot.alerting.stored_alert import CardState, StoredAlert, with_record_state
from bot.alerting.stuck_jobs import hand_over, stuck_message_of
from bot.config import RoutingConfig
from bot.diagnosis.classifier import Classifier
from bot.errors import ApiError, ApiUnavailable, InvalidPushMessage, StoreUnavailable
from bot.gcp.cloud_logs import LogsClient
from bot.gcp.cloud_quotas import QuotasClient
from bot.gcp.pipeline_jobs import PipelinesClient
from bot.gcp.vertex_jobs import JobsClient
from bot.intake.stored_entry import stored_entry
from bot.jobs.identity import parse_key
from bot.jobs.lookup import JobLookup, Lookup
from bot.models import JobInfo
from bot.render.block_kit import message_digest
from bot.render.channel_message import diagnosis_message
from bot.render.diagnosis_card import diagnosis_card
from bot.slack.poster import PostOutcomeUnknown, SlackPoster
from bot.sources import AlertSource, Irrelevant, Sighting, Subject, default_sources
from bot.sources.custom_job import CustomJobSource
from bot.sources.monitoring import MonitoringSource
from bot.store import AlertRecord, ClaimOutcome, Store

__all__ = ["AlertService", "Deadline", "Outcome", "PostInProgress", "Shutdown"]

MAX_JOB_ENTRIES = 300  # entries kept per job (the store is opened with this cap; each entry is shrunk)
MAX_FETCHED_ENTRIES = 200  # newest entries from Cloud Logging kept with the job's pushed entries
FETCH_PAGE_SIZE = 50  # Cloud Logging entries per page: at most this many full-size entries in memory at once
# One Google call never takes longer than this, so that a call in flight when SIGTERM arrives still ends inside the
# shutdown window (bot.alerting.deadline.SHUTDOWN_WORK_SECONDS); later calls get what is left of the window.
GOOGLE_TIMEOUT = 5.0
_ATTEMPT = re.compile(r"exited with a non-zero status|ran out-of-memory and exited|Replicas low on memory")


class AlertService:
    def __init__(
        self,
        *,
        store: Store,
        poster: SlackPoster,
        classifier: Classifier,
        routing: RoutingConfig,
        jobs: JobsClient | None = None,
        logs: LogsClient | None = None,
        pipelines: PipelinesClient | None = None,
        quotas: QuotasClient | None = None,
        lookup: JobLookup | None = None,
        sources: Sequence[AlertSource] | None = None,
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
        self.lookup = lookup or JobLookup(
            jobs=jobs,
            logs=logs,
            pipelines=pipelines,
            quotas=quotas,
            regions=routing.regions,
            cache_seconds=job_cache_seconds,
            google_timeout=google_timeout,
            clock=clock,
            identity="the bot",
        )
        self.sources = list(sources) if sources is not None else default_sources()
        self.delivery = Delivery(poster, default_channel=routing.default_channel, slack_timeout=slack_timeout)
        self.owner = owner
        self.lease_seconds = lease_seconds
        self.clock = clock
        self.shutdown = shutdown or Shutdown()
        self._held: dict[str, str] = {}  # job key -> owner of a post claim this process holds right now
        self._held_lock = threading.Lock()

    @property
    def job_cache_seconds(self) -> float:
        """How long a job looked up stays cached (the lookup's setting)."""
        return self.lookup.cache_seconds

    @job_cache_seconds.setter
    def job_cache_seconds(self, seconds: float) -> None:
        self.lookup.cache_seconds = seconds

    def deadline(self, seconds: float) -> Deadline:
        """A deadline for one request's work, cut short when shutdown begins."""
        return Deadline(seconds, shutdown=self.shutdown)

    # ------------------------------------------------------------------------------------------ entry points

    def handle(self, data: Any, *, message_id: str | None = None, deadline: Deadline | None = None) -> Outcome:
        """Process one pushed message's data with the first source that recognises it."""
        for source in self.sources:
            try:
                sighting = source.recognise(data, message_id=message_id)
            except Irrelevant as exc:
                return Outcome("irrelevant", exc.reason)
            if sighting is not None:
                return self._handle(source, sighting, message_id=message_id, deadline=deadline)
        if isinstance(data, dict) and ("resource" in data or "logName" in data):
            resource = data.get("resource")
            kind = resource.get("type") if isinstance(resource, dict) else None
            return Outcome("irrelevant", f"resource.type is {kind!r}, not ml_job")
        return Outcome("irrelevant", "data is neither a LogEntry nor a Monitoring incident")

    def handle_log_entry(
        self, entry: Any, *, message_id: str | None = None, deadline: Deadline | None = None
    ) -> Outcome:
        """Process one Cloud Logging LogEntry (the data of a sink's Pub/Sub message)."""
        if not isinstance(entry, dict):
            raise InvalidPushMessage("message data is not a JSON object (a LogEntry was expected)")
        if isinstance(entry.get("incident"), dict):
            return Outcome("irrelevant", "a Monitoring notification, not a LogEntry")
        return self.handle({"resource": None, **entry}, message_id=message_id, deadline=deadline)

    def handle_incident(
        self, payload: Any, *, message_id: str | None = None, deadline: Deadline | None = None
    ) -> Outcome:
        """Process a Cloud Monitoring incident notification (schema 1.2) about a training job."""
        source = MonitoringSource()
        if not isinstance(payload, dict) or not isinstance(payload.get("incident"), dict):
            raise InvalidPushMessage("monitoring notification without an 'incident' object")
        try:
            sighting = source.recognise(payload, message_id=message_id)
        except Irrelevant as exc:
            return Outcome("irrelevant", exc.reason)
        assert sighting is not None
        return self._handle(source, sighting, message_id=message_id, deadline=deadline)

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

    # ------------------------------------------------------------------------------------------ group, gate

    def _handle(
        self, source: AlertSource, sighting: Sighting, *, message_id: str | None, deadline: Deadline | None
    ) -> Outcome:
        ref, job_key = sighting.ref, sighting.ref.key
        deadline = deadline or self.deadline(30.0)
        existing = self.store.get_alert(job_key)
        if sighting.updates_only is not None and (existing is None or not existing.posted):
            return Outcome("irrelevant", sighting.updates_only, job_key)
        stored = stored_entry(sighting.entry, fallback_id=message_id)
        new_entry = self.store.add_entry(job_key, stored["insertId"], stored)
        if existing is not None and existing.posted:
            outcome = self._update(existing, deadline=deadline)
            return outcome if new_entry or outcome.status != "unchanged" else outcome.as_duplicate()

        entries = _with(self.store.entries(job_key), stored)  # read once for this push
        failed_marker = any(source.marks_failure(e) for e in entries)
        fresh = failed_marker or not isinstance(source, CustomJobSource)  # a burst of one job's entries asks once
        lookup = self.lookup.job(ref, fresh=fresh, deadline=deadline)
        gate = source.gate(ref, lookup, failed_marker)
        if gate.decision == "post":
            return self._post(source, sighting, lookup, entries, deadline=deadline)
        if gate.decision == "held" and not new_entry:
            return Outcome("duplicate", gate.reason, job_key)
        return Outcome(gate.decision, gate.reason, job_key)

    # ------------------------------------------------------------------------------------------ claim, post

    def _post(
        self, source: AlertSource, sighting: Sighting, lookup: Lookup, entries: list[dict], *, deadline: Deadline
    ) -> Outcome:
        ref = sighting.ref
        job_key = ref.key
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
        posted: tuple[str, str] | None = None  # the channel message, once Slack has it
        try:
            try:
                claimed = self.store.get_alert(job_key)
                in_doubt = claimed is not None and claimed.post_in_doubt
                subject = source.subject(sighting, lookup, self.lookup, deadline=deadline)
                self._gather(job_key, subject, entries, deadline)
                diagnose = partial(diagnose_alert, self.classifier, self.sources, ref, subject.job, subject=subject)
                diagnosis, context = diagnose(entries, subject.unavailable)
                now = datetime.fromtimestamp(self.clock(), UTC)
                kb = self.classifier.kb
                if add_refused_calls(self.lookup, self.store, job_key, subject, diagnosis, entries, deadline, now, kb):
                    diagnosis, context = diagnose(entries, subject.unavailable)  # with the refused calls' checks
                if (quoted := with_quota_ids(self.lookup, subject, diagnosis, deadline, kb)) is not None:
                    subject = quoted  # the job now knows its project's id of the quota the error names
                    diagnose = partial(diagnose_alert, self.classifier, self.sources, ref, subject.job, subject=subject)
                    diagnosis, context = diagnose(entries, subject.unavailable)
                job = subject.job or JobInfo(project=ref.project)
                destination = destination_for(routed_job(job, subject), diagnosis.failure_class, self.routing)
                destination = self.delivery.to_person(subject.notify_email, destination, deadline)
                message = diagnosis_message(diagnosis, context)
                card = diagnosis_card(diagnosis, context)
                fingerprint = message_digest(message)
                stuck = stuck_message_of(self.store, job_key)  # the failure alert takes over the stuck-job message
                channel, ts, routed, adopted = self.delivery.deliver(
                    job_key, destination, message, in_doubt=in_doubt, deadline=deadline, take_over=stuck
                )
                posted = (channel, ts)
                card_ts = self.delivery.deliver_card(job_key, channel, ts, card, adopted=adopted, deadline=deadline)
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
                    diagnosis=StoredAlert(
                        diagnosis=diagnosis,
                        context=context,
                        rerun_allowed=list(destination.rerun_allowed),
                        card=CardState.of(card_ts, card),
                    ).to_json(),
                    fingerprint=fingerprint,
                    job=(subject.job or JobInfo(project=ref.project, job_id=ref.id)).model_dump(mode="json"),
                )
            except StoreUnavailable:
                # Posted but not recorded: a redelivery would post again. Withdraw this message (and its card) so
                # that the redelivery's post is the only one.
                withdrawn = self.delivery.withdraw(job_key, channel, ts, deadline, card_ts=card_ts)
                self._release(job_key, owner, in_doubt=not withdrawn)
                raise
        finally:
            with self._held_lock:
                if self._held.get(job_key) == owner:
                    del self._held[job_key]
        if stuck is not None:
            hand_over(self.store, job_key)
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
        # Entries that came in while we were posting were refused as BUSY (redelivered later) but are stored: fold in.
        if self.store.count_entries(job_key) > len(entries):
            record = self.store.get_alert(job_key)
            if record is not None:
                self._update(record, deadline=deadline)
        return Outcome("posted", f"posted via {routed}", job_key, channel, ts, diagnosis.failure_class)

    def _gather(self, job_key: str, subject: Subject, entries: list[dict], deadline: Deadline) -> None:
        """Add the newest entries of the subject's logs to the job's evidence (stored, and in `entries`)."""
        if subject.logs_of is None:
            return
        fetched, unavailable = self.lookup.entries(
            subject.logs_of,
            max_entries=MAX_FETCHED_ENTRIES,
            deadline=deadline,
            shrink=stored_entry,
            page_size=FETCH_PAGE_SIZE,
        )
        subject.unavailable.extend(unavailable)
        known = {str(e.get("insertId")) for e in entries}
        for extra in fetched:
            self.store.add_entry(job_key, extra["insertId"], extra)
            if extra["insertId"] not in known and len(entries) < MAX_JOB_ENTRIES:
                entries.append(extra)
                known.add(extra["insertId"])

    def _release(self, job_key: str, owner: str, *, in_doubt: bool) -> None:
        try:
            self.store.release_post(job_key, owner=owner, in_doubt=in_doubt)
        except StoreUnavailable as exc:  # the claim expires after its lease (and is then in doubt anyway)
            event(logging.WARNING, "post claim not released", job_key=job_key, reason=str(exc))

    # ------------------------------------------------------------------------------------------ update

    def _update(self, record: AlertRecord, *, deadline: Deadline, entries: list[dict] | None = None) -> Outcome:
        """Re-diagnose with everything now known and update the message if its rendering changed."""
        job = JobInfo.model_validate(record.job) if record.job else None
        earlier = StoredAlert.of(record)
        diagnosis, context = diagnose_alert(self.classifier, self.sources,
            parse_key(record.job_key),
            job,
            entries if entries is not None else self.store.entries(record.job_key),
            list(earlier.context.unavailable) if earlier else [],
            subject=Subject(job=job, logs_of=None, pipeline=earlier.context.pipeline if earlier else None),
        )
        context = with_record_state(context, record)
        if earlier is not None and earlier.context.rerun_outcome:  # told by the scan (bot.alerting.rerun_outcomes)
            context = context.model_copy(update={"rerun_outcome": earlier.context.rerun_outcome})
        message = diagnosis_message(diagnosis, context)
        fingerprint = message_digest(message)
        card = diagnosis_card(diagnosis, context)
        card_state = earlier.card if earlier else None
        card_changed = card_state is not None and message_digest(card) != card_state.fingerprint
        result = (record.job_key, record.channel, record.message_ts, diagnosis.failure_class)
        if fingerprint == record.fingerprint and not card_changed:
            return Outcome("unchanged", "no new evidence changes the message", *result)
        assert record.channel and record.message_ts
        if fingerprint != record.fingerprint:
            self.delivery.update(record.channel, record.message_ts, message, deadline)
        if card_changed and card_state is not None:
            card_state = self._update_card(record, card_state.ts, card, deadline)
        stored = StoredAlert(
            diagnosis=diagnosis,
            context=context,
            rerun_allowed=list(earlier.rerun_allowed) if earlier else [],
            card=card_state,
        )
        self.store.update_post(record.job_key, diagnosis=stored.to_json(), fingerprint=fingerprint)
        event(logging.INFO, "failure message updated", job_key=record.job_key, failure_class=diagnosis.failure_class)
        return Outcome("updated", "new evidence updated the message", *result)

    def _update_card(self, record: AlertRecord, card_ts: str, card: dict, deadline: Deadline) -> CardState | None:
        """chat.update the alert's card; its new stored state (None once Slack no longer has it).

        Raises:
            ApiUnavailable: transient (the redelivery updates both messages again).
        """
        assert record.channel
        try:
            self.delivery.update(record.channel, card_ts, card, deadline)
        except ApiUnavailable:
            raise
        except ApiError as exc:  # deleted by someone (message_not_found), say: the alert stands without it
            event(logging.WARNING, "the card could not be updated", job_key=record.job_key, reason=str(exc))
            return None
        return CardState.of(card_ts, card)

    def render_record(self, record: AlertRecord) -> dict:
        """The current Block Kit message for a stored alert (after an acknowledgement, a rerun or its outcome)."""
        stored = StoredAlert.of(record)
        if stored is None:
            raise ValueError(f"{record.job_key}: no stored alert to render")
        return diagnosis_message(stored.diagnosis, stored.with_record_state(record))


def _with(entries: list[dict], entry: dict) -> list[dict]:
    """`entries` with `entry` appended unless an entry of that id is there (the store may hold its cap)."""
    if not any(e.get("insertId") == entry["insertId"] for e in entries):
        entries.append(entry)
    return entries
