"""Run the real trainmedic service for a test: in-process on a uvicorn thread, or as `trainmedic serve` processes.

Either way requests reach it over HTTP on a free loopback port, exactly as Pub/Sub and Slack would send them.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import yaml

from bot.config import load_settings
from handlers.app import Services, build_services, create_app

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def base_environ(tmp_path: Path, **overrides: str) -> dict[str, str]:
    environ = {
        "SLACK_BOT_TOKEN": "xoxb-test-token",
        "SLACK_SIGNING_SECRET": "test-signing-secret",
        "TRAINMEDIC_STORE": f"sqlite:///{tmp_path / 'state.db'}",
        "PUBSUB_VERIFY_TOKEN": "false",
    }
    environ.update(overrides)
    return environ


def standin_environ(
    tmp_path: Path, slack: Any, google: Any, *, routing: Mapping[str, Any] | None = None, **overrides: str
) -> dict[str, str]:
    """`base_environ` with Slack and the Google APIs (Vertex AI, Cloud Logging, Cloud Quotas) pointed at their local
    stand-ins (anything with a `base_url`), and, given `routing`, that routing written to a config file the service
    reads."""
    endpoints = {
        "SLACK_API_URL": slack.base_url,
        "VERTEX_API_ENDPOINT": google.base_url,
        "LOGGING_API_ENDPOINT": google.base_url,
        "QUOTAS_API_ENDPOINT": google.base_url,
    }
    if routing is not None:
        config = tmp_path / "trainmedic.yaml"
        config.write_text(yaml.safe_dump(dict(routing)))
        endpoints["TRAINMEDIC_CONFIG"] = str(config)
    return base_environ(tmp_path, **endpoints, **overrides)


class LiveService:
    """The app from handlers.app, served by uvicorn on a background thread."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.settings = load_settings(environ)
        self.services: Services = build_services(self.settings)
        self.port = free_port()
        config = uvicorn.Config(
            create_app(self.services), host="127.0.0.1", port=self.port, log_config=None, access_log=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveService:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the service did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def wait_quiet(self, timeout: float = 10.0) -> bool:
        """Wait until the service has no work in progress (requests being handled, Slack listeners still
        running after their ack); False if some is still going after `timeout` seconds. Call it once the
        requests whose effects you check have been answered: then "nothing else happened" is a fact."""
        return self.services.activity.wait_idle(timeout)


class ServeProcess:
    """`trainmedic serve` in its own process (what Cloud Run runs)."""

    def __init__(self, environ: Mapping[str, str], log_path: Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        env = {**os.environ, **environ, "PORT": str(self.port)}
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "serve"], env=env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 30.0) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"trainmedic serve exited: {self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                time.sleep(0.02)
        raise RuntimeError(f"trainmedic serve not ready: {self.log_path.read_text()[-2000:]}")

    def stop(self) -> int:
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=15)
        finally:
            self._log.close()


def envelope(data: Any, message_id: str, *, attributes: dict | None = None) -> dict:
    """A Pub/Sub push body (JSON wrapper) as the push subscription sends it."""
    encoded = base64.b64encode(json.dumps(data).encode()).decode()
    return {
        "message": {
            "data": encoded,
            "messageId": message_id,
            "message_id": message_id,
            "publishTime": "2026-11-29T12:00:00.000Z",
            "publish_time": "2026-11-29T12:00:00.000Z",
            "attributes": attributes or {"logging.googleapis.com/timestamp": "2026-11-29T12:00:00Z"},
        },
        "subscription": "projects/test-project/subscriptions/trainmedic-push",
    }
