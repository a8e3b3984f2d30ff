"""A small HTTP server on a free loopback port that records every request (base for the fakes).

server = LocalHttpServer(lambda request: Reply.json({"ok": True}))
server.start()            # or `with LocalHttpServer(...) as server:`
server.base_url           # "http://127.0.0.1:PORT"
server.requests           # [RecordedRequest, ...] in arrival order
server.stop()
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # without the query string, not percent-decoded
    query: dict[str, list[str]]
    headers: dict[str, str]  # keys lower-cased
    body: bytes
    json: Any = None  # the parsed body when it is JSON
    form: dict[str, list[str]] | None = None  # the parsed body when it is form-encoded

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a slow server)

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
        merged = {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
        return cls(status=status, body=json.dumps(data).encode(), headers=merged)

    @classmethod
    def text(cls, text: str, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
        merged = {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}
        return cls(status=status, body=text.encode(), headers=merged)


Handler = Callable[[RecordedRequest], Reply]


def _parse_body(content_type: str, body: bytes) -> tuple[Any, dict[str, list[str]] | None]:
    if not body:
        return None, None
    if "json" in content_type:
        try:
            return json.loads(body), None
        except ValueError:
            return None, None
    if "x-www-form-urlencoded" in content_type:
        return None, parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return None, None


class LocalHttpServer:
    """A ThreadingHTTPServer on 127.0.0.1 that answers every request with `handler(request)`."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------------- lifecycle

    def start(self) -> LocalHttpServer:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._request_handler_class())
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # wakes slow replies early
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LocalHttpServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server is not running")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------------------------------- records

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    # ------------------------------------------------------------------------------------------- serving

    def _request_handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out in separate writes: without this, Nagle + delayed ACK add ~40 ms
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                split = urlsplit(self.path)
                headers = {key.lower(): value for key, value in self.headers.items()}
                parsed_json, form = _parse_body(headers.get("content-type", ""), body)
                request = RecordedRequest(
                    method=self.command,
                    path=split.path,
                    query=parse_qs(split.query, keep_blank_values=True),
                    headers=headers,
                    body=body,
                    json=parsed_json,
                    form=form,
                )
                owner._record(request)
                try:
                    reply = owner._handler(request)
                except Exception as exc:  # a bug in a fake must show up, not hang the client
                    reply = Reply.text(f"fake server error: {exc!r}", status=599)
                if reply.delay > 0:
                    owner._stopping.wait(reply.delay)
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:  # the client gave up (timeout) and closed the connection
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return _Handler


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll `predicate` until it is true or `timeout` seconds pass (for asserting on async effects)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
