"""What both Vertex AI REST clients (jobs, pipelines) share: one generated client per regional endpoint, built on
first use, and reading a list call's pages into REST dicts with our errors."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from bot.gcp.api_errors import google_errors
from bot.gcp.job_resource import custom_job_to_rest


class RegionalClients:
    """`{region}-aiplatform.googleapis.com` clients of one generated service client class, or one client for a
    fixed `endpoint` (tests: "http://127.0.0.1:PORT", with anonymous credentials). `service` imports the class
    when the first client is built (the client library costs about half a second to import)."""

    def __init__(self, service: Callable[[], Any], *, endpoint: str | None, credentials: Any) -> None:
        self._service = service
        self._endpoint = endpoint.rstrip("/") if endpoint else None
        self._credentials = credentials
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, region: str) -> Any:
        key = self._endpoint or region
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = self._build(self._endpoint or f"{region}-aiplatform.googleapis.com")
            return client

    def _build(self, endpoint: str) -> Any:
        credentials = self._credentials
        if credentials is None and endpoint.startswith("http://"):
            from google.auth.credentials import AnonymousCredentials

            credentials = AnonymousCredentials()
        return self._service()(credentials=credentials, transport="rest", client_options={"api_endpoint": endpoint})


def listed(pages: Callable[[], Iterable[Any]], *, max_items: int, action: str) -> list[dict]:
    """The items of a list call (its pager followed page by page) as REST dicts, at most `max_items`.

    Raises:
        ApiError (and its kinds): the call failed, translated by api_error_from.
    """
    items: list[dict] = []
    with google_errors(action):
        for item in pages():
            items.append(custom_job_to_rest(item))
            if len(items) >= max_items:
                break
    return items
