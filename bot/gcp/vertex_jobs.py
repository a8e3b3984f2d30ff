"""Read and create Vertex AI CustomJobs: the JobsClient role and its google-cloud-aiplatform implementation.

`VertexJobsClient` uses the generated `JobServiceClient` over its REST transport, one client per region
(`{region}-aiplatform.googleapis.com`, which the API requires), or one fixed `endpoint` for every region
(tests: "http://127.0.0.1:PORT", with anonymous credentials). The client library is imported on first
use: it costs about half a second.

Failures come out as our errors: JobNotFound, ApiPermissionDenied (naming the missing permission when
Google says it), ApiUnavailable (transient: 429, 5xx, timeouts, connection errors) or ApiError.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from bot.errors import ApiError, ApiPermissionDenied, ApiUnavailable, JobNotFound
from bot.gcp.job_resource import custom_job_to_rest, job_info_from_rest
from bot.jobs.identity import CUSTOM_JOB_ID, PROJECT, REGION, is_valid
from bot.models import JobInfo

# "Permission 'aiplatform.customJobs.get' denied on ...", "... does not have storage.objects.get access"
_PERMISSION = re.compile(r"(?<![\w./@-])([a-z][a-zA-Z0-9]*\.[a-z][a-zA-Z0-9]*\.[a-z][a-zA-Z0-9]*)(?![\w./@-])")
_NOT_PERMISSION_SUFFIXES = ("com", "net", "org", "io", "dev", "app")


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
        self._endpoint = endpoint.rstrip("/") if endpoint else None
        self._credentials = credentials
        self._timeout = timeout
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get_job(self, *, project: str, region: str, job_id: str, timeout: float | None = None) -> JobInfo:
        return job_info_from_rest(self.get_job_raw(project=project, region=region, job_id=job_id, timeout=timeout))

    def get_job_raw(self, *, project: str, region: str, job_id: str, timeout: float | None = None) -> dict:
        """The CustomJob as a REST JSON dict (enum names, int64 as strings; fields unknown to the installed
        client library are dropped by its parser). `timeout`: seconds (default: the client's)."""
        _check_location(project, region)
        if not is_valid(job_id, CUSTOM_JOB_ID):
            raise ValueError(f"job_id must be the numeric CustomJob id, got {job_id!r}")
        name = f"projects/{project}/locations/{region}/customJobs/{job_id}"
        try:
            job = self._client(region).get_custom_job(name=name, timeout=timeout or self._timeout)
        except Exception as exc:
            error = api_error_from(exc, action=f"get {name}", not_found=JobNotFound)
            if error is None:
                raise
            raise error from exc
        return custom_job_to_rest(job)

    def create_job(self, *, project: str, region: str, body: dict) -> dict:
        """Create a CustomJob from a REST JSON dict (see job_resource.rerun_body); returns the created job.

        Raises:
            ValueError: `body` is not a CustomJob the client library can encode.
        """
        _check_location(project, region)
        custom_job = _custom_job_message(body)
        parent = f"projects/{project}/locations/{region}"
        try:
            job = self._client(region).create_custom_job(parent=parent, custom_job=custom_job, timeout=self._timeout)
        except Exception as exc:
            error = api_error_from(exc, action=f"create a CustomJob in {parent}")
            if error is None:
                raise
            raise error from exc
        return custom_job_to_rest(job)

    def list_jobs_raw(
        self, *, project: str, region: str, filter: str = "", max_jobs: int = 500, timeout: float | None = None
    ) -> list[dict]:
        """customJobs.list: the CustomJobs matching `filter` (the API's syntax, e.g.
        `(state="JOB_STATE_QUEUED" OR state="JOB_STATE_PENDING") AND create_time<"2026-11-30T10:00:00Z"`),
        as REST JSON dicts, following nextPageToken up to `max_jobs` jobs."""
        _check_location(project, region)
        parent = f"projects/{project}/locations/{region}"
        jobs: list[dict] = []
        try:
            pager = self._client(region).list_custom_jobs(
                request={"parent": parent, "filter": filter, "page_size": min(max_jobs, 100)},
                timeout=timeout or self._timeout,
            )
            for job in pager:
                jobs.append(custom_job_to_rest(job))
                if len(jobs) >= max_jobs:
                    break
        except Exception as exc:
            error = api_error_from(exc, action=f"list CustomJobs in {parent}")
            if error is None:
                raise
            raise error from exc
        return jobs

    def _client(self, region: str) -> Any:
        key = self._endpoint or region
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = self._new_client(self._endpoint or f"{region}-aiplatform.googleapis.com")
            return client

    def _new_client(self, endpoint: str) -> Any:
        from google.cloud.aiplatform_v1.services.job_service import JobServiceClient

        credentials = self._credentials
        if credentials is None and endpoint.startswith("http://"):
            from google.auth.credentials import AnonymousCredentials

            credentials = AnonymousCredentials()
        return JobServiceClient(credentials=credentials, transport="rest", client_options={"api_endpoint": endpoint})


def _check_location(project: str, region: str) -> None:
    if not is_valid(project, PROJECT):
        raise ValueError(f"not a project id or number: {project!r}")
    if not is_valid(region, REGION):
        raise ValueError(f"not a region: {region!r}")


def _custom_job_message(body: dict) -> Any:
    from google.cloud.aiplatform_v1.types import CustomJob
    from google.protobuf import json_format

    if not isinstance(body, dict):
        raise ValueError(f"body: expected an object, got {type(body).__name__}")
    try:
        return CustomJob.wrap(json_format.ParseDict(body, CustomJob.pb(CustomJob())))
    except json_format.ParseError as exc:
        raise ValueError(f"body: not a valid CustomJob: {exc}") from None


# ------------------------------------------------------------------------------------- error translation


def permission_from(message: str, metadata: Mapping[str, str] | None = None) -> str | None:
    """The IAM permission a Google error names ('aiplatform.customJobs.get'), if it names one."""
    permission = (metadata or {}).get("permission")
    if isinstance(permission, str) and permission:
        return permission
    for candidate in _PERMISSION.findall(message or ""):
        if candidate.rsplit(".", 1)[1] not in _NOT_PERMISSION_SUFFIXES:
            return candidate
    return None


def api_error_from(exc: BaseException, *, action: str, not_found: type[ApiError] = ApiError) -> ApiError | None:
    """Translate a google-api-core, google-auth or requests exception into our ApiError (None if foreign).

    Args:
        exc: What the Google client library raised.
        action: What was being done, for the message ("get projects/p/.../customJobs/1").
        not_found: The error to raise for HTTP 404 (JobNotFound for job look-ups).
    """
    import requests
    from google.api_core import exceptions as api_exceptions
    from google.auth import exceptions as auth_exceptions

    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, api_exceptions.GoogleAPICallError):
        detail = f"{action}: {exc.code} {exc.message}"
        if isinstance(exc, api_exceptions.NotFound):
            return not_found(detail)
        if isinstance(exc, api_exceptions.Forbidden | api_exceptions.Unauthorized):
            return ApiPermissionDenied(detail, permission_from(exc.message, exc.metadata))
        if isinstance(exc, api_exceptions.ServerError | api_exceptions.TooManyRequests):
            return ApiUnavailable(detail)
        return ApiError(detail)
    if isinstance(exc, api_exceptions.RetryError | requests.RequestException | ConnectionError | TimeoutError):
        return ApiUnavailable(f"{action}: {type(exc).__name__}: {exc}")
    if isinstance(exc, auth_exceptions.GoogleAuthError):
        transient = exc.retryable or isinstance(exc, auth_exceptions.TransportError | auth_exceptions.TimeoutError)
        kind = ApiUnavailable if transient else ApiError
        return kind(f"{action}: Google credentials: {type(exc).__name__}: {exc}")
    return None
