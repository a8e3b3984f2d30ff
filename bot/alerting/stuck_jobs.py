"""Stuck jobs: CustomJobs that have waited too long in QUEUED or PENDING, found by a periodic scan.

`POST /tasks/scan` (Cloud Scheduler, every few minutes) calls `StuckJobScanner.scan()`:

1. customJobs.list in every configured region, filter
   `(state="JOB_STATE_QUEUED" OR state="JOB_STATE_PENDING") AND create_time<"NOW - smallest threshold"`.
2. A job is stuck when it has been in its state longer than that state's threshold, measured from its
   updateTime (the last state change; createTime when absent). There is no PREPARING state (platform-facts §8):
   a PENDING job whose logs show Vertex's "Job is preparing." is "preparing", measured from that line.
   A Flex-start job (`scheduling.strategy == FLEX_START`) still inside `scheduling.maxWaitDuration` (default
   24 h, 0 = forever) is waiting as asked: never stuck.
3. Why, from the job and its logs: an image that cannot be pulled; a stockout ("Resources are insufficient in
   region", STOCKOUT: not a quota matter); quota (a quota line, or QUEUED, which is how Vertex waits for
   quota: platform-facts §1.3a, §8), with `gcloud beta quotas` commands filled in; otherwise unknown.
4. One message per stuck job in its routed channel: the store's post claim under the key `stuck:PROJECT/ID`
   (apart from the failure alert), and the key in a per-day index (store entries under `stuck-index:DAY`).
   Later scans read the open alerts of the last INDEX_DAYS days, get each job, and update the message once
   the job has started, failed, been cancelled (or is gone); a repeated scan changes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from bot.alerting.event_log import event
from bot.alerting.rerun_outcomes import RerunFollower
from bot.alerting.routing import destination_for
from bot.alerting.stuck_explain import (
    PIPELINE_WAITING_STATES,
    StuckJob,
    Thresholds,
    explain,
    flex_start_waiting,
    parse_time,
    pipeline_waiting,
    resolved_message,
    stuck_message,
    waiting_phase,
)
from bot.config import RoutingConfig
from bot.errors import ApiError, BotError, JobNotFound
from bot.gcp.cloud_logs import LogsClient
from bot.gcp.job_resource import job_info_from_rest
from bot.gcp.pipeline_jobs import PipelinesClient
from bot.gcp.pipeline_resource import pipeline_info_from_rest
from bot.gcp.vertex_jobs import JobsClient
from bot.intake.log_input import entries_to_lines
from bot.jobs.identity import parse_resource_name
from bot.jobs.lookup import JobLookup
from bot.models import JobInfo, LogLine
from bot.slack.poster import PostOutcomeUnknown, SlackPoster, alert_metadata
from bot.store import ClaimOutcome, Store

WAITING_STATES = ("JOB_STATE_QUEUED", "JOB_STATE_PENDING")
INDEX_DAYS = 14  # open stuck alerts older than this are no longer followed
LOG_ENTRIES = 100
_LEASE_SECONDS = 60.0
_STUCK_CLASS = "stuck_job"  # the routing class: routes by labels / project apply, class_channels do not


@dataclass
class ScanReport:
    listed: int = 0
    stuck: int = 0
    posted: int = 0
    updated: int = 0
    waiting_as_asked: int = 0  # Flex-start jobs inside their maxWaitDuration
    reruns_reported: int = 0  # reruns started from chat whose outcome was told this scan
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "listed": self.listed,
            "stuck": self.stuck,
            "posted": self.posted,
            "updated": self.updated,
            "waiting_as_asked": self.waiting_as_asked,
            "reruns_reported": self.reruns_reported,
            "problems": self.problems,
        }


# ------------------------------------------------------------------------------------------ the scan


class StuckJobScanner:
    """One scan over the configured regions; safe to run again at once (and from several instances)."""

    def __init__(
        self,
        *,
        jobs: JobsClient,
        logs: LogsClient | None,
        store: Store,
        poster: SlackPoster,
        routing: RoutingConfig,
        project: str | None,
        thresholds: Thresholds,
        owner: str,
        clock: Callable[[], float] = time.time,
        google_timeout: float = 8.0,
        follower: RerunFollower | None = None,
        pipelines: PipelinesClient | None = None,
    ) -> None:
        self.jobs, self.logs, self.store, self.poster, self.routing = jobs, logs, store, poster, routing
        self.project, self.thresholds, self.owner, self.clock = project, thresholds, owner, clock
        self.google_timeout = google_timeout
        self.follower = follower
        self.pipelines = pipelines
        self.lookup = JobLookup(jobs=jobs, logs=None, pipelines=pipelines, regions=routing.regions)

    def scan(self) -> ScanReport:
        report = ScanReport()
        if self.follower is not None:  # reruns started from chat: needs no project (they are in the store)
            report.reruns_reported, problems = self.follower.follow()
            report.problems += problems
        if not self.project:
            report.problems.append(
                "no project to scan: set default_project in the routing file or GOOGLE_CLOUD_PROJECT"
            )
            return report
        now = datetime.fromtimestamp(self.clock(), tz=UTC)
        self._follow_open(now, report)
        cutoff = now - timedelta(
            seconds=min(self.thresholds.queued, self.thresholds.pending, self.thresholds.preparing)
        )
        states = " OR ".join(f'state="{state}"' for state in WAITING_STATES)
        query = f'({states}) AND create_time<"{cutoff.strftime("%Y-%m-%dT%H:%M:%SZ")}"'
        for region in self.routing.regions:
            try:
                listed = self.jobs.list_jobs_raw(
                    project=self.project, region=region, filter=query, timeout=self.google_timeout
                )
            except (ApiError, ValueError) as exc:
                report.problems.append(f"list CustomJobs in {region}: {exc}")
                continue
            report.listed += len(listed)
            for raw in listed:
                try:
                    self._consider(raw, region, now, report)
                except (BotError, ValueError) as exc:
                    report.problems.append(f"{raw.get('name')}: {exc}")
        if self.pipelines is not None:
            self._scan_pipelines(now, cutoff, report)
        event(logging.INFO, "stuck-job scan", **report.as_dict())
        return report

    def _consider(self, raw: dict, region: str, now: datetime, report: ScanReport) -> None:
        job = job_info_from_rest(raw, region_hint=region)
        if job.state not in WAITING_STATES or not job.job_id:
            return
        if flex_start_waiting(raw, now):
            report.waiting_as_asked += 1
            return
        key = stuck_key(job)
        record = self.store.get_alert(key)
        if record is not None and record.posted:
            return  # posted already: _follow_open updates it when the job moves on
        phase, waited = waiting_phase(raw, job, [], now) or ("", 0.0)
        if job.state == "JOB_STATE_QUEUED" and waited < self.thresholds.queued:
            return
        if job.state == "JOB_STATE_PENDING" and waited < min(self.thresholds.pending, self.thresholds.preparing):
            return
        lines = self._lines(job)
        phase, waited = waiting_phase(raw, job, lines, now) or (phase, waited)
        if waited < self.thresholds.of(phase):
            return
        report.stuck += 1
        spot = ((raw.get("jobSpec") or {}).get("scheduling") or {}).get("strategy") in ("SPOT", "FLEX_START", 4, 6)
        stuck = explain(job, phase, waited, lines, spot=spot)
        if self._post(key, stuck, now):
            report.posted += 1

    def _scan_pipelines(self, now: datetime, cutoff: datetime, report: ScanReport) -> None:
        """Pipeline runs waiting in QUEUED / PENDING past their threshold: one message each, like jobs."""
        assert self.pipelines is not None
        states = " OR ".join(f'state="{state}"' for state in PIPELINE_WAITING_STATES)
        query = f'({states}) AND create_time<"{cutoff.strftime("%Y-%m-%dT%H:%M:%SZ")}"'
        for region in self.routing.regions:
            try:
                listed = self.pipelines.list_pipelines_raw(
                    project=str(self.project), region=region, filter=query, timeout=self.google_timeout
                )
            except (ApiError, ValueError) as exc:
                report.problems.append(f"list PipelineJobs in {region}: {exc}")
                continue
            report.listed += len(listed)
            for raw in listed:
                try:
                    info = pipeline_info_from_rest(raw)
                except ValueError as exc:
                    report.problems.append(f"{raw.get('name')}: {exc}")
                    continue
                since = parse_time(raw.get("updateTime")) or parse_time(raw.get("createTime")) or now
                waited = (now - since).total_seconds()
                threshold = self.thresholds.queued if info.state == "PIPELINE_STATE_QUEUED" else self.thresholds.pending
                key = f"stuck:{info.ref.key}"
                record = self.store.get_alert(key)
                if info.state not in PIPELINE_WAITING_STATES or waited < threshold or (record and record.posted):
                    continue
                report.stuck += 1
                run = JobInfo(
                    name=info.name,
                    job_id=info.ref.id,
                    project=info.ref.project,
                    region=info.ref.region,
                    display_name=info.display_name,
                    state=info.state,
                    labels=info.labels,
                )
                if self._post(key, pipeline_waiting(run, waited), now):
                    report.posted += 1

    def _lines(self, job: JobInfo) -> list[LogLine]:
        if self.logs is None or not job.project or not job.job_id:
            return []
        try:
            entries = self.logs.job_entries(
                project=job.project, job_id=job.job_id, max_entries=LOG_ENTRIES, timeout=self.google_timeout
            )
        except (ApiError, ValueError):
            return []  # the state alone still tells quota from "still provisioning"
        return entries_to_lines(entries)

    def _post(self, key: str, stuck: StuckJob, now: datetime) -> bool:
        claim = self.store.claim_post(key, owner=self.owner, lease_seconds=_LEASE_SECONDS)
        if claim is not ClaimOutcome.WON:
            return False
        message = stuck_message(stuck)
        channel = destination_for(stuck.job, _STUCK_CLASS, self.routing).channel
        try:
            channel_id, ts = self.poster.post(channel, message, metadata=alert_metadata(key), timeout=5.0)
        except PostOutcomeUnknown:
            self.store.release_post(key, owner=self.owner, in_doubt=True)
            raise
        except BaseException:
            self.store.release_post(key, owner=self.owner)
            raise
        self.store.record_post(
            key,
            owner=self.owner,
            channel=channel_id,
            message_ts=ts,
            diagnosis={"message": message, "reason": stuck.reason},
            fingerprint=stuck.reason,
            job={"name": stuck.job.name, "state": stuck.job.state, "open": True},
        )
        self.store.add_entry(_index_key(now), key, {"key": key})
        event(logging.INFO, "stuck job posted", job_key=key, reason=stuck.reason, channel=channel_id)
        return True

    def _follow_open(self, now: datetime, report: ScanReport) -> None:
        seen: set[str] = set()
        for day in range(INDEX_DAYS):
            for item in self.store.entries(_index_key(now - timedelta(days=day))):
                key = item.get("key")
                if not isinstance(key, str) or key in seen:
                    continue
                seen.add(key)
                try:
                    if self._follow(key, now):
                        report.updated += 1
                except (BotError, ValueError) as exc:
                    report.problems.append(f"{key}: {exc}")

    def _follow(self, key: str, now: datetime) -> bool:
        record = self.store.get_alert(key)
        if record is None or not record.posted or not record.job.get("open"):
            return False
        try:
            state = self.lookup.find(parse_resource_name(str(record.job.get("name")))).info.state
        except JobNotFound:
            state = "GONE"
        if state in WAITING_STATES or state in PIPELINE_WAITING_STATES or state is None:
            return False
        original = (record.diagnosis or {}).get("message") or {}
        message = resolved_message(original, state, now)
        self.poster.update(record.channel, record.message_ts, message, metadata=alert_metadata(key), timeout=5.0)
        self.store.update_post(
            key,
            diagnosis={**(record.diagnosis or {}), "resolved": state},
            fingerprint=f"{record.fingerprint}:{state}",
            job={**record.job, "state": state, "open": False},
        )
        event(logging.INFO, "stuck job moved on", job_key=key, state=state)
        return True


def stuck_key(job: JobInfo) -> str:
    return f"stuck:{job.project}/{job.job_id}"


def stuck_message_of(store: Store, job_key: str) -> tuple[str, str] | None:
    """(channel, ts) of the job's stuck-job message, when one was posted and no failure alert has taken it over."""
    record = store.get_alert(f"stuck:{job_key}")
    if record is None or not record.posted or not record.channel or not record.message_ts:
        return None
    return None if (record.job or {}).get("taken_over_by") else (record.channel, record.message_ts)


def hand_over(store: Store, job_key: str) -> None:
    """The failure alert of `job_key` now owns its stuck-job message: scans leave that message alone."""
    record = store.get_alert(f"stuck:{job_key}")
    if record is not None and record.posted:
        job = {**(record.job or {}), "open": False, "taken_over_by": job_key}
        diagnosis, fingerprint = record.diagnosis or {}, record.fingerprint or ""
        store.update_post(record.job_key, diagnosis=diagnosis, fingerprint=fingerprint, job=job)


def _index_key(moment: datetime) -> str:
    return f"stuck-index:{moment:%Y-%m-%d}"
