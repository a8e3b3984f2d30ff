"""One job lookup for every path (alerts, chat actions, /diagnose, the CLI): the job resource, its logs, the
region search and a short cache, typed against the client protocols.

Two ways to ask:
- `find(ref, ...)` raises what went wrong (JobNotFound naming where it looked, ApiPermissionDenied naming the
  permission): the chat and the CLI answer with it;
- `job(ref, ...)` never raises for Google's failures: it returns what it found and what could not be fetched,
  so that an alert is still posted from the log evidence. It is cached for `cache_seconds` (a burst of pushes
  for one job asks Vertex once); `fresh=True` skips a cached answer that may be stale (a job not yet ended).
Every call is bounded by the caller's Deadline when one is given.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bot.alerting.deadline import Deadline
from bot.alerting.event_log import event
from bot.errors import ApiError, ApiPermissionDenied, JobNotFound
from bot.gcp.cloud_logs import LogsClient
from bot.gcp.cloud_quotas import QuotasClient, QuotaWanted
from bot.gcp.job_resource import job_info_from_rest
from bot.gcp.pipeline_jobs import PipelinesClient
from bot.gcp.pipeline_resource import PipelineInfo, pipeline_info_from_rest
from bot.gcp.vertex_jobs import JobsClient
from bot.jobs.identity import JobIdError, JobKind, JobRef
from bot.models import JobInfo, ProjectQuota

BOT_IDENTITY = "trainmedic's service account"
TERMINAL_STATES = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_CANCELLING",
        "JOB_STATE_FAILED",
        "PIPELINE_STATE_SUCCEEDED",
        "PIPELINE_STATE_CANCELLED",
        "PIPELINE_STATE_CANCELLING",
        "PIPELINE_STATE_FAILED",
    }
)
_CACHE_SIZE = 1000
_MIN_LOOKUP_SECONDS = 5.0  # with less time left, do not start a region search
_MIN_LOGS_SECONDS = 8.0  # with less time left, do not start reading the logs


@dataclass(frozen=True)
class Found:
    """A job as Vertex AI returned it: its identity (with the region it was found in), the REST dict and its
    reading. `pipeline` is set for a PipelineJob (`info` then holds what a JobInfo can say of it)."""

    ref: JobRef
    raw: dict
    info: JobInfo
    pipeline: PipelineInfo | None = None

    @property
    def job_key(self) -> str:
        return self.ref.key


@dataclass(frozen=True)
class Lookup:
    """What `job()` found (None when nothing) and what could not be fetched, in words for the alert."""

    found: Found | None
    unavailable: list[str] = field(default_factory=list)
    fetched_at: float = 0.0

    @property
    def job(self) -> JobInfo | None:
        return self.found.info if self.found else None

    @property
    def state(self) -> str | None:
        return self.found.info.state if self.found else None


class JobLookup:
    def __init__(
        self,
        *,
        jobs: JobsClient | None,
        logs: LogsClient | None,
        regions: Sequence[str],
        pipelines: PipelinesClient | None = None,
        quotas: QuotasClient | None = None,
        cache_seconds: float = 10.0,
        google_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
        identity: str = BOT_IDENTITY,
    ) -> None:
        self.jobs = jobs
        self.logs = logs
        self.pipelines = pipelines
        self.quotas = quotas
        self.regions = list(dict.fromkeys(regions))
        self.cache_seconds = cache_seconds
        self.google_timeout = google_timeout
        self.clock = clock
        self.identity = identity
        self._cache: dict[str, Lookup] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------ raising

    def find(self, ref: JobRef, *, regions: Sequence[str] = (), deadline: Deadline | None = None) -> Found:
        """Get the job in its region, or in each of `regions` (default: the configured ones) until one has it.

        Raises:
            JobNotFound: no region has it (the message names the project and the regions tried).
            ApiPermissionDenied: the bot may not read it (the message names the permission and the role).
            ApiUnavailable / ApiError: Vertex AI failed, or answered with a job this module cannot read.
            JobIdError: the project, region or id is malformed.
        """
        where = [ref.region] if ref.region else list(dict.fromkeys(regions or self.regions))
        if not where:
            raise JobIdError(f"job {ref.id}: which region? No regions are configured")
        for region in where:
            if deadline is not None and deadline.remaining() < _MIN_LOOKUP_SECONDS:
                raise ApiError("job details: skipped, too little time left before the push deadline")
            try:
                return self._get(ref.in_region(region), deadline)
            except JobNotFound:
                continue
            except ApiPermissionDenied as exc:
                permission = exc.permission or _GET_PERMISSION.get(ref.kind, "")
                raise ApiPermissionDenied(
                    f"cannot read {_WHAT[ref.kind]} {ref.id} in project {ref.project} ({region}): "
                    f"{self.identity} lacks {permission} (grant roles/aiplatform.viewer)",
                    permission,
                ) from exc
        raise JobNotFound(f"no {_WHAT[ref.kind]} {ref.id} in project {ref.project} (looked in {', '.join(where)})")

    def entries(
        self,
        ref: JobRef,
        *,
        max_entries: int,
        deadline: Deadline | None = None,
        shrink: Callable[[dict], dict] | None = None,
        page_size: int = 1000,
    ) -> tuple[list[dict], list[str]]:
        """The CustomJob's newest log entries (oldest first) and, instead, what could not be read."""
        if ref.kind is not JobKind.CUSTOM_JOB:
            return [], []
        if self.logs is None:
            return [], ["the job's logs: no Cloud Logging client configured"]
        if deadline is not None and deadline.remaining() < _MIN_LOGS_SECONDS:
            return [], ["the job's full logs: skipped, too little time left before the push deadline"]
        try:
            fetched = self.logs.job_entries(
                project=ref.project,
                job_id=ref.id,
                max_entries=max_entries,
                timeout=self._timeout(deadline),
                shrink=shrink,
                page_size=page_size,
            )
            return fetched, []
        except ApiPermissionDenied as exc:
            missing = exc.permission or "logging.logEntries.list"
            return [], [f"the job's logs: {self.identity} lacks {missing} (roles/logging.viewer)"]
        except (ApiError, ValueError) as exc:  # ValueError: an id Cloud Logging cannot be asked about
            return [], [f"the job's logs: {exc}"]

    def refused_calls(
        self,
        project: str,
        principal: str,
        since: datetime,
        until: datetime,
        *,
        deadline: Deadline | None = None,
    ) -> tuple[list[dict], list[str]]:
        """The audit entries of calls IAM refused to `principal` in the window and, instead, what could not be read."""
        if self.logs is None:
            return [], ["the audit logs: no Cloud Logging client configured"]
        if deadline is not None and deadline.remaining() < _MIN_LOGS_SECONDS:
            return [], ["the audit logs: skipped, too little time left before the push deadline"]
        try:
            return self.logs.refused_calls(
                project=project, principal=principal, since=since, until=until, timeout=self._timeout(deadline)
            ), []
        except ApiPermissionDenied as exc:
            missing = exc.permission or "logging.logEntries.list"
            private = missing == "logging.privateLogEntries.list"  # Data Access entries
            role = "roles/logging.privateLogViewer" if private else "roles/logging.viewer"
            return [], [f"the audit logs: {self.identity} lacks {missing} ({role})"]
        except (ApiError, ValueError) as exc:
            return [], [f"the audit logs: {exc}"]

    def quota_ids(
        self, project: str, wanted: QuotaWanted, *, deadline: Deadline | None = None
    ) -> tuple[list[ProjectQuota], list[str]]:
        """The project's quotas `wanted` names (by metric, or by display name) as Cloud Quotas lists them and,
        instead, what could not be read."""
        if self.quotas is None:
            return [], []  # not configured (a local run): the list command in the alert finds the id
        if deadline is not None and deadline.remaining() < _MIN_LOGS_SECONDS:
            return [], ["the quota's id and limit: skipped, too little time left before the push deadline"]
        try:
            return self.quotas.quota_infos(project=project, wanted=wanted, timeout=self._timeout(deadline)), []
        except ApiPermissionDenied as exc:
            missing = exc.permission or "cloudquotas.quotas.get"
            return [], [f"the quota's id and limit: {self.identity} lacks {missing} (roles/cloudquotas.viewer)"]
        except (ApiError, ValueError) as exc:
            return [], [f"the quota's id and limit: {exc}"]

    # ------------------------------------------------------------------------------------------ soft, cached

    def job(self, ref: JobRef, *, fresh: bool = False, deadline: Deadline | None = None) -> Lookup:
        """The job if it can be found, and what could not be fetched otherwise (never raises ApiError)."""
        if not ref.is_job:
            return Lookup(None, [], self.clock())
        now = self.clock()
        with self._lock:
            cached = self._cache.get(ref.key)
        if cached is not None and now - cached.fetched_at < self.cache_seconds:
            ended = cached.state in TERMINAL_STATES
            if not fresh or ended or cached.found is None:
                return cached
        lookup = self._soft_find(ref, deadline)
        with self._lock:
            self._cache[ref.key] = lookup
            if len(self._cache) > _CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
        return lookup

    def _soft_find(self, ref: JobRef, deadline: Deadline | None) -> Lookup:
        client = self.pipelines if ref.kind is JobKind.PIPELINE_JOB else self.jobs
        if client is None:
            return Lookup(None, ["job details: no Vertex AI client configured"], self.clock())
        try:
            found = self.find(ref, deadline=deadline)
        except JobNotFound as exc:
            problem = f"job details: not found in the configured regions ({', '.join(self.regions)})"
            problem = problem if not ref.region else f"job details: {exc}"
        except ApiPermissionDenied as exc:
            problem = f"job details: the bot lacks {exc.permission or _GET_PERMISSION.get(ref.kind, '')}"
        except ApiError as exc:
            text = str(exc)
            problem = text if text.startswith("job details:") else f"job details: Vertex AI unavailable ({exc})"
        except ValueError as exc:
            problem = f"job details: {exc}"
        else:
            return Lookup(found, [], self.clock())
        event(logging.WARNING, "job lookup failed", job_key=ref.key, problems=[problem])
        return Lookup(None, [problem], self.clock())

    # ------------------------------------------------------------------------------------------ clients

    def _get(self, ref: JobRef, deadline: Deadline | None) -> Found:
        timeout = self._timeout(deadline)
        if ref.kind is JobKind.PIPELINE_JOB:
            if self.pipelines is None:
                raise ApiError("no Vertex AI Pipelines client configured")
            raw = self.pipelines.get_pipeline_raw(ref, timeout=timeout)
            try:
                pipeline = pipeline_info_from_rest(raw)
            except ValueError as exc:
                raise ApiError(f"Vertex AI returned a PipelineJob trainmedic cannot read: {exc}") from exc
            info = JobInfo(
                name=pipeline.name,
                job_id=ref.id,
                project=ref.project,
                region=ref.region,
                display_name=pipeline.display_name,
                state=pipeline.state,
                error_message=pipeline.error_message,
                labels=pipeline.labels,
                service_account=pipeline.service_account,
                create_time=pipeline.create_time,
                start_time=pipeline.start_time,
                end_time=pipeline.end_time,
            )
            return Found(ref=ref, raw=raw, info=info, pipeline=pipeline)
        if self.jobs is None:
            raise ApiError("no Vertex AI client configured")
        assert ref.region is not None
        try:
            bounded = {"timeout": timeout} if timeout is not None else {}  # else the client's own timeout
            raw = self.jobs.get_job_raw(project=ref.project, region=ref.region, job_id=ref.id, **bounded)
        except ValueError as exc:
            raise JobIdError(str(exc)) from exc
        try:
            info = job_info_from_rest(raw, region_hint=ref.region)
        except ValueError as exc:
            raise ApiError(f"Vertex AI returned a CustomJob trainmedic cannot read: {exc}") from exc
        if info.project != ref.project and not ref.project.isdigit():
            # Vertex AI names the job projects/NUMBER/...: keep the project id asked for (the name keeps the number)
            info = info.model_copy(update={"project": ref.project})
        return Found(ref=ref, raw=raw, info=info)

    def _timeout(self, deadline: Deadline | None) -> float | None:
        return deadline.call_timeout(self.google_timeout) if deadline is not None else None


_WHAT = {
    JobKind.CUSTOM_JOB: "custom job",
    JobKind.PIPELINE_JOB: "pipeline job",
    JobKind.INCIDENT: "incident",
    JobKind.REFUSAL: "refused job creation",
}
_GET_PERMISSION = {JobKind.CUSTOM_JOB: "aiplatform.customJobs.get", JobKind.PIPELINE_JOB: "aiplatform.pipelineJobs.get"}
