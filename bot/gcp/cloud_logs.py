"""Read a Vertex AI custom job's log entries: the LogsClient role and its Cloud Logging implementation.

`CloudLoggingClient` calls Cloud Logging v2 `entries:list` over HTTP through google-cloud-logging's JSON
connection (the library has no REST transport for its generated client, and its `list_entries` re-encodes
entries lossily: nanoseconds and `receiveTimestamp` are dropped). Entries come back exactly as the REST
API sends them (camelCase LogEntry dicts). The newest `max_entries` are fetched (a failure is at the end
of the log) and returned oldest first.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from bot.errors import ApiError
from bot.gcp.api_errors import google_errors
from bot.intake.audit_entry import PERMISSION_DENIED
from bot.jobs.identity import PROJECT, is_valid

_LABEL_VALUE = re.compile(r"^[A-Za-z0-9_.-]+$")  # job ids are numeric; task names "workerpool0-0", "service"
_PAGE_SIZE_LIMIT = 1000  # the API's maximum page size
_MAX_PAGES = 50  # entries:list may answer empty pages with a token; do not follow them forever
MAX_REFUSED_CALLS = 20  # audit entries of refused calls read for one job
# a principal's email as it may enter a filter: a service account, a service agent or a user; no quotes
_PRINCIPAL = re.compile(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,190}\.[A-Za-z]{2,24}")


class LogsClient(Protocol):
    def job_entries(
        self,
        *,
        project: str,
        job_id: str,
        max_entries: int = 1000,
        task_name: str | None = None,
        timeout: float | None = None,
        shrink: Callable[[dict], dict] | None = None,
        page_size: int = _PAGE_SIZE_LIMIT,
    ) -> list[dict]: ...

    def refused_calls(
        self,
        *,
        project: str,
        principal: str,
        since: datetime,
        until: datetime,
        max_entries: int = MAX_REFUSED_CALLS,
        timeout: float | None = None,
    ) -> list[dict]: ...


def refused_calls_filter(principal: str, since: datetime, until: datetime) -> str:
    """The Logging filter for the calls IAM refused to `principal` between two moments, in the audit logs."""
    if not _PRINCIPAL.fullmatch(principal):
        raise ValueError(f"not a principal's email address: {principal[:80]!r}")
    if since.tzinfo is None or until.tzinfo is None:
        raise ValueError("the time window needs time zones")
    return " AND ".join(
        [
            'logName:"cloudaudit.googleapis.com"',
            f"protoPayload.status.code={PERMISSION_DENIED}",
            f'protoPayload.authenticationInfo.principalEmail="{principal}"',
            f'timestamp>="{_rfc3339(since)}"',
            f'timestamp<="{_rfc3339(until)}"',
        ]
    )


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_log_filter(job_id: str, task_name: str | None = None) -> str:
    """The Logging filter for one custom job's entries (the same one `gcloud ai custom-jobs stream-logs` uses)."""
    for what, value in (("job_id", job_id), ("task_name", task_name)):
        if value is not None and not _LABEL_VALUE.match(value):
            raise ValueError(f"{what} has characters a log filter cannot take: {value!r}")
    parts = ['resource.type="ml_job"', f'resource.labels.job_id="{job_id}"']
    if task_name is not None:
        parts.append(f'resource.labels.task_name="{task_name}"')
    return " AND ".join(parts)


class CloudLoggingClient:
    """LogsClient on the Cloud Logging v2 REST API."""

    def __init__(self, endpoint: str | None = None, credentials: Any = None, timeout: float = 10.0) -> None:
        self._endpoint = endpoint.rstrip("/") if endpoint else None
        self._credentials = credentials
        self._timeout = timeout
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def job_entries(
        self,
        *,
        project: str,
        job_id: str,
        max_entries: int = 1000,
        task_name: str | None = None,
        timeout: float | None = None,
        shrink: Callable[[dict], dict] | None = None,
        page_size: int = _PAGE_SIZE_LIMIT,
    ) -> list[dict]:
        """The job's newest `max_entries` LogEntry dicts, oldest first.

        Args:
            timeout: seconds for each page request (default: the client's timeout).
            shrink: applied to each entry as its page arrives, so that only shrunk entries pile up.
            page_size: entries per request (smaller pages: less memory held at once).
        """
        if not is_valid(project, PROJECT):
            raise ValueError(f"not a project id or number: {project!r}")
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        action = f"list log entries of job {job_id} in projects/{project}"
        return self._oldest_first(
            project, job_log_filter(job_id, task_name), max_entries, action, timeout, shrink, page_size
        )

    def refused_calls(
        self,
        *,
        project: str,
        principal: str,
        since: datetime,
        until: datetime,
        max_entries: int = MAX_REFUSED_CALLS,
        timeout: float | None = None,
    ) -> list[dict]:
        """The newest `max_entries` audit entries of calls IAM refused to `principal` in the window, oldest first.

        Only what the project's audit logs hold: Admin Activity always, data reads (Cloud Storage objects,
        secrets, BigQuery data) only where Data Access audit logs are on, and only refusals on the project's own
        resources (a refusal is logged where the resource lives).
        """
        if not is_valid(project, PROJECT):
            raise ValueError(f"not a project id or number: {project!r}")
        action = f"list the calls refused to {principal} in projects/{project}"
        wanted = max(1, max_entries)
        return self._oldest_first(
            project, refused_calls_filter(principal, since, until), wanted, action, timeout, None, wanted
        )

    def _oldest_first(
        self,
        project: str,
        log_filter: str,
        max_entries: int,
        action: str,
        timeout: float | None,
        shrink: Callable[[dict], dict] | None,
        page_size: int,
    ) -> list[dict]:
        """The newest `max_entries` entries matching the filter, oldest first; Google's errors as ApiErrors."""
        request = {"resourceNames": [f"projects/{project}"], "filter": log_filter, "orderBy": "timestamp desc"}
        with google_errors(action):
            entries = self._newest(
                project,
                request,
                max_entries,
                action,
                timeout=timeout or self._timeout,
                shrink=shrink,
                page_size=max(1, min(page_size, _PAGE_SIZE_LIMIT)),
            )
        entries.reverse()
        return entries

    def _newest(
        self,
        project: str,
        request: dict,
        max_entries: int,
        action: str,
        *,
        timeout: float,
        shrink: Callable[[dict], dict] | None,
        page_size: int,
    ) -> list[dict]:
        connection = self._client(project)._connection  # the library's HTTP JSON connection
        entries: list[dict] = []
        token = None
        for _ in range(_MAX_PAGES):
            body = {**request, "pageSize": min(max_entries - len(entries), page_size)}
            if token:
                body["pageToken"] = token
            page = connection.api_request(method="POST", path="/entries:list", data=body, timeout=timeout)
            got = _page_entries(page, action)
            entries.extend(got if shrink is None else (shrink(entry) for entry in got))
            token = page.get("nextPageToken")
            del got, page  # let this page's full entries go before the next one arrives
            if not token or len(entries) >= max_entries:
                break
        return entries[:max_entries]

    def _client(self, project: str) -> Any:
        with self._lock:
            client = self._clients.get(project)
            if client is None:
                client = self._clients[project] = self._new_client(project)
            return client

    def _new_client(self, project: str) -> Any:
        from google.cloud.logging_v2.client import Client

        credentials = self._credentials
        if credentials is None and self._endpoint and self._endpoint.startswith("http://"):
            from google.auth.credentials import AnonymousCredentials

            credentials = AnonymousCredentials()
        options = {"api_endpoint": self._endpoint} if self._endpoint else None
        return Client(project=project, credentials=credentials, _use_grpc=False, client_options=options)


def _page_entries(page: Any, action: str) -> list[dict]:
    entries = page.get("entries", []) if isinstance(page, dict) else None
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise ApiError(f"{action}: the response is not an entries:list page")
    return entries
