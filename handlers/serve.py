"""`trainmedic serve`: the production server (uvicorn) with Cloud Run conventions.

Listens on $PORT (default 8080), logs one JSON line per event on stdout, and shuts down cleanly on SIGTERM:
Cloud Run allows 10 s before SIGKILL. The signal starts the service's shutdown window at once
(bot.alerting.deadline: in-flight pushes finish or give up within SHUTDOWN_WORK_SECONDS, every Slack and Google call
bounded); uvicorn stops accepting, lets in-flight requests answer (at most 8 s), then the app's shutdown hook
settles the post claims still held and closes the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from types import FrameType

import uvicorn

from bot.alerting.event_log import configure_json_logging, event
from bot.config import load_settings

GRACEFUL_SHUTDOWN_SECONDS = 8  # Cloud Run allows 10 s after SIGTERM
STARTUP_FAILURE = 3  # uvicorn's exit status when the server could not start


class Server(uvicorn.Server):
    """uvicorn's server, telling the service the moment a shutdown signal arrives."""

    def __init__(self, config: uvicorn.Config, *, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._on_exit()  # cheap and signal-safe: records when the shutdown window ends
        super().handle_exit(sig, frame)


def serve(environ: Mapping[str, str]) -> int:
    configure_json_logging()
    settings = load_settings(environ)  # a missing or invalid setting stops here, named

    from handlers.app import build_services, create_app

    services = build_services(settings)
    app = create_app(services)
    event(logging.INFO, "trainmedic listening", port=settings.PORT, store=settings.TRAINMEDIC_STORE.split(":")[0])
    config = uvicorn.Config(
        app,
        host="0.0.0.0",
        port=settings.PORT,
        log_config=None,  # keep our JSON logging
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        proxy_headers=True,
        forwarded_allow_ips="*",
    )
    server = Server(config, on_exit=services.shutdown.begin)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return 0 if server.started else STARTUP_FAILURE
