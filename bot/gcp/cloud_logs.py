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
from typing import Any, Protocol

from bot.errors import ApiError
from bot.gcp.api_errors import api_error_from
from bot.jobs.identity import PROJECT, is_valid

_LABEL_VALUE = re.compile(r"^[A-Za-z0-9_.-]+$")  # job ids are numeric; task names "workerpool0-0", "service"
_PAGE_SIZE_LIMIT = 1000  # the API's maximum page size
_MAX_PAGES = 50  # entries:list may answer empty pages with a token; do not follow them forever


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
        request = {
            "resourceNames": [f"projects/{project}"],
            "filter": job_log_filter(job_id, task_name),
            "orderBy": "timestamp desc",
        }
        action = f"list log entries of job {job_id} in projects/{project}"
        try:
            entries = self._newest(
                project,
                request,
                max_entries,
                action,
                timeout=timeout or self._timeout,
                shrink=shrink,
                page_size=max(1, min(page_size, _PAGE_SIZE_LIMIT)),
            )
        except Exception as exc:
            error = api_error_from(exc, action=action)
            if error is None:
                raise
            raise error from exc
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
