"""The closed loop: a rerun started from chat is followed to its end, and its outcome told where it was asked for.

Only jobs this bot started are followed: when a rerun (a CustomJob, or a pipeline run) is created (bot.chat.actions)
the failed job's key and the new job's name go into a per-day index (store entries under `rerun-index:DAY`). Each
scan (`POST /tasks/scan`) reads the index of the last FOLLOW_DAYS days, gets each new job (bot.jobs.lookup), and once
it has ended:
- replies once in the original alert's thread with the outcome (succeeded in how long, cancelled, or failed: with
  the class the failure alert of the new job gave, and where that alert is — the new job's own alert says "Rerun
  of job X" from its `rerun-of` label, so the two link both ways);
- re-renders the original message, whose header and status line then show the outcome.
Exactly once: the reply is claimed in the store like an alert's post (`claim_post` on `rerun-outcome:KEY:JOB`),
recorded once posted and released when the post failed (the next scan tries again), so a repeated scan or a second
instance never replies twice.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from bot.alerting.event_log import event
from bot.alerting.ledger import format_duration
from bot.alerting.stored_alert import StoredAlert
from bot.chat.audit import AuditTrail
from bot.errors import BotError, JobNotFound
from bot.jobs.identity import parse_resource_name
from bot.jobs.lookup import JobLookup
from bot.models import JobInfo
from bot.render.diagnose_reply import channel_link
from bot.render.mrkdwn import escape, inline_code
from bot.slack.poster import SlackPoster
from bot.store import AlertRecord, ClaimOutcome, Store

FOLLOW_DAYS = 7
ENDED = {  # a CustomJob's end states, and a PipelineJob's
    "JOB_STATE_SUCCEEDED": "succeeded",
    "JOB_STATE_FAILED": "failed",
    "JOB_STATE_CANCELLED": "was cancelled",
    "PIPELINE_STATE_SUCCEEDED": "succeeded",
    "PIPELINE_STATE_FAILED": "failed",
    "PIPELINE_STATE_CANCELLED": "was cancelled",
    "JOB_STATE_EXPIRED": "expired",
}
_MARK = "rerun-outcome:"


def index_key(moment: datetime) -> str:
    return f"rerun-index:{moment.astimezone(UTC).strftime('%Y-%m-%d')}"


def remember_rerun(store: Store, job_key: str, new_job_name: str, *, now: float) -> None:
    """Put a rerun the bot started in today's index, so that scans follow it to its end."""
    store.add_entry(index_key(datetime.fromtimestamp(now, UTC)), job_key, {"key": job_key, "new": new_job_name})


def outcome_text(state: str, job: JobInfo) -> str:
    """ "Rerun succeeded in 2 h 10 min" (the wall time from the new job's start to its end, when known)."""
    verb = ENDED.get(state, state.removeprefix("JOB_STATE_").lower())
    start, end = job.start_time, job.end_time
    took = f" in {format_duration((end - start).total_seconds())}" if start and end and end >= start else ""
    return f"Rerun {verb}{took}"


class RerunFollower:
    def __init__(
        self,
        *,
        store: Store,
        poster: SlackPoster,
        lookup: JobLookup,
        rerender: Callable[[AlertRecord], dict],
        clock: Callable[[], float] = time.time,
        google_timeout: float = 8.0,
    ) -> None:
        self.store, self.poster, self.lookup, self.rerender = store, poster, lookup, rerender
        self.clock, self.google_timeout = clock, google_timeout

    def follow(self) -> tuple[int, list[str]]:
        """Report every followed rerun that has ended; (how many were reported now, problems)."""
        now = datetime.fromtimestamp(self.clock(), UTC)
        reported, problems, seen = 0, [], set()
        for day in range(FOLLOW_DAYS):
            for item in self.store.entries(index_key(now - timedelta(days=day))):
                key, new = item.get("key"), item.get("new")
                if not isinstance(key, str) or not isinstance(new, str) or (key, new) in seen:
                    continue
                seen.add((key, new))
                try:
                    reported += self._follow(key, new)
                except (BotError, ValueError) as exc:
                    problems.append(f"rerun of {key}: {exc}")
        return reported, problems

    def _follow(self, key: str, new_name: str) -> bool:
        record = self.store.get_alert(key)
        if record is None or not record.posted or record.rerun_job_id != new_name:
            return False
        stored = StoredAlert.of(record)
        if stored is None or stored.context.rerun_outcome:
            return False  # not a failure alert, or told already
        ref = parse_resource_name(new_name)
        job_id = ref.id
        try:
            job = self.lookup.find(ref).info
        except JobNotFound:
            job = JobInfo(state="JOB_STATE_DELETED")
        if job.state not in ENDED and job.state != "JOB_STATE_DELETED":
            return False
        claim_key, owner = f"{_MARK}{key}:{job_id}", f"scan/{uuid.uuid4().hex[:12]}"
        if self.store.claim_post(claim_key, owner=owner, lease_seconds=60.0) is not ClaimOutcome.WON:
            return False  # another scan replied, or is replying
        outcome = outcome_text(job.state or "", job) if job.state != "JOB_STATE_DELETED" else "Rerun job was deleted"
        try:
            channel, ts = self._reply(record, outcome, ref.key, job)
        except BaseException:
            self.store.release_post(claim_key, owner=owner)
            raise
        self.store.record_post(
            claim_key,
            owner=owner,
            channel=channel,
            message_ts=ts,
            diagnosis={"outcome": outcome},
            fingerprint=outcome,
            job={"name": new_name},
        )
        self._rerender(record, stored, outcome)
        AuditTrail(self.store, clock=self.clock).record(key, "vertex-ai", "rerun outcome", outcome, f"job {new_name}")
        event(logging.INFO, "rerun outcome told", job_key=key, new_job=new_name, outcome=outcome)
        return True

    def _reply(self, record: AlertRecord, outcome: str, new_key: str, job: JobInfo) -> tuple[str, str]:
        assert record.channel and record.message_ts
        ended = ENDED.get(job.state or "")
        icon = {"succeeded": ":white_check_mark:", "failed": ":x:"}.get(ended or "", ":no_entry:")
        text = f"{icon} *{escape(outcome)}*: job {inline_code(new_key.rsplit('/', 1)[1], 80)}."
        if ended == "failed":
            failure = self.store.get_alert(new_key)
            failure_alert = StoredAlert.of(failure) if failure is not None and failure.posted else None
            if failure is not None and failure.channel and failure_alert is not None:
                title = escape(failure_alert.diagnosis.title or failure_alert.diagnosis.failure_class)
                text += f" Its own alert, in {channel_link(failure.channel)}: {title}."
            elif job.error_message:
                text += f" Vertex AI says: {inline_code(job.error_message, 300)}"
        message = {"text": outcome, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}
        return self.poster.post(record.channel, message, thread_ts=record.message_ts, timeout=5.0)

    def _rerender(self, record: AlertRecord, stored: StoredAlert, outcome: str) -> None:
        told = stored.model_copy(update={"context": stored.context.model_copy(update={"rerun_outcome": outcome})})
        message = self.rerender(record.model_copy(update={"diagnosis": told.to_json()}))
        assert record.channel and record.message_ts
        self.poster.update(record.channel, record.message_ts, message, timeout=5.0)
        self.store.update_post(record.job_key, diagnosis=told.to_json(), fingerprint=f"{record.fingerprint}:told")
