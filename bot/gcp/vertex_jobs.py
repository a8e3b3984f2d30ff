"""Read and create Vertex AI CustomJobs: the JobsClient role and its google-cloud-aiplatform implementation.

`VertexJobsClient` uses the generated `JobServiceClient` over its REST transport, one client per region
(`{region}-aiplatform.googleapis.com`, which the API requires), or one fixed `endpoint` for every region
(tests: "http://127.0.0.1:PORT", with anonymous credentials). The client library is imported on first
use: it costs about half a second.

Failures come out as our errors: JobNotFound, ApiPermissionDenied (naming the missing permission when
Google says it), ApiUnavailable (transient: 429, 5xx, timeouts, connection errors) or ApiError.
"""

from __future__ import annotations

from typing import Any, Protocol

from bot.errors import JobNotFound
from bot.gcp.api_errors import google_errors
from bot.gcp.job_resource import custom_job_to_rest, job_info_from_rest
from bot.gcp.regional_clients import RegionalClients, listed
from bot.jobs.identity import CUSTOM_JOB_ID, is_valid, location_name
from bot.models import JobInfo


class JobsClient(Protocol):
    def get_job(self, *, project: str, region: str, job_id: str, timeout: float | None = None) -> JobInfo: ...

    def get_job_raw(self, *, project: str, region: str, job_id: str, timeout: float | None = None) -> dict: ...

    def create_job(self, *, project: str, region: str, body: dict) -> dict: ...

    def list_jobs_raw(
        self, *, project: str, region: str, filter: str = "", max_jobs: int = 500, timeout: float | None = None
    ) -> list[dict]: ...


class VertexJobsClient:
    """JobsClient on the Vertex AI v1 REST API."""

    def __init__(self, endpoint: str | None = None, credentials: Any = None, timeout: float = 10.0) -> None:
        self._clients = RegionalClients(_job_service, endpoint=endpoint, credentials=credentials)
        self._timeout = timeout

    def get_job(self, *, project: str, region: str, job_id: str, timeout: float | None = None) -> JobInfo:
        return job_info_from_rest(self.get_job_raw(project=project, region=region, job_id=job_id, timeout=timeout))

    def get_job_raw(self, *, project: str, region: str, job_id: str, timeout: float | None = None) -> dict:
        """The CustomJob as a REST JSON dict (enum names, int64 as strings; fields unknown to the installed
        client library are dropped by its parser). `timeout`: seconds (default: the client's)."""
        parent = location_name(project, region)
        if not is_valid(job_id, CUSTOM_JOB_ID):
            raise ValueError(f"job_id must be the numeric CustomJob id, got {job_id!r}")
        name = f"{parent}/customJobs/{job_id}"
        with google_errors(f"get {name}", not_found=JobNotFound):
            job = self._client(region).get_custom_job(name=name, timeout=timeout or self._timeout)
        return custom_job_to_rest(job)

    def create_job(self, *, project: str, region: str, body: dict) -> dict:
        """Create a CustomJob from a REST JSON dict (see job_resource.rerun_body); returns the created job.

        Raises:
            ValueError: `body` is not a CustomJob the client library can encode.
        """
        parent = location_name(project, region)
        custom_job = _custom_job_message(body)
        with google_errors(f"create a CustomJob in {parent}"):
            job = self._client(region).create_custom_job(parent=parent, custom_job=custom_job, timeout=self._timeout)
        return custom_job_to_rest(job)

    def list_jobs_raw(
        self, *, project: str, region: str, filter: str = "", max_jobs: int = 500, timeout: float | None = None
    ) -> list[dict]:
        """customJobs.list: the CustomJobs matching `filter` (the API's syntax, e.g.
        `(state="JOB_STATE_QUEUED" OR state="JOB_STATE_PENDING") AND create_time<"2026-11-30T10:00:00Z"`),
        as REST JSON dicts, following nextPageToken up to `max_jobs` jobs."""
        parent = location_name(project, region)
        client = self._client(region)
        return listed(
            lambda: client.list_custom_jobs(
                request={"parent": parent, "filter": filter, "page_size": min(max_jobs, 100)},
                timeout=timeout or self._timeout,
            ),
            max_items=max_jobs,
            action=f"list CustomJobs in {parent}",
        )

    def _client(self, region: str) -> Any:
        return self._clients.get(region)


def _job_service() -> Any:
    from google.cloud.aiplatform_v1.services.job_service import JobServiceClient

    return JobServiceClient


def _custom_job_message(body: dict) -> Any:
    from google.cloud.aiplatform_v1.types import CustomJob
    from google.protobuf import json_format

    if not isinstance(body, dict):
        raise ValueError(f"body: expected an object, got {type(body).__name__}")
    try:
        return CustomJob.wrap(json_format.ParseDict(body, CustomJob.pb(CustomJob())))
    except json_format.ParseError as exc:
        raise ValueError(f"body: not a valid CustomJob: {exc}") from None
