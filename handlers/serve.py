"""`trainmedic serve`: the production server (uvicorn) with Cloud Run conventions.

Listens on $PORT (default 8080), logs one JSON line per event on stdout, and shuts down cleanly on SIGTERM
(uvicorn stops accepting, finishes in-flight requests, then runs the app's shutdown hooks).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from bot.config import load_settings
from bot.event_log import configure_json_logging, event


def serve(environ: Mapping[str, str]) -> int:
    configure_json_logging()
    settings = load_settings(environ)  # a missing or invalid setting stops here, named
    import uvicorn

    from handlers.app import build_services, create_app

    app = create_app(build_services(settings))
    event(logging.INFO, "trainmedic listening", port=settings.PORT, store=settings.TRAINMEDIC_STORE.split(":")[0])
    uvicorn.run(
        app,
        host="0.0.0.0",
        port=settings.PORT,
        log_config=None,  # keep our JSON logging
        access_log=False,
        timeout_graceful_shutdown=8,  # Cloud Run allows 10 s after SIGTERM
        proxy_headers=True,
        forwarded_allow_ips="*",
    )
    return 0
