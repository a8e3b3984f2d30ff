"""The HTTP app and composition root: every client is built once here and injected.

Routes: POST /pubsub/push (Pub/Sub push, OIDC-verified), POST /slack/events (Slack via Bolt, signature-verified),
GET /healthz.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.alerts import AlertService
from bot.classifier import Classifier
from bot.config import RoutingConfig, Settings, load_routing
from bot.event_log import event
from bot.knowledge import load_knowledge
from bot.slack_poster import SlackPoster, build_web_client
from bot.store import Store, open_store
from handlers.pubsub_push import PushEndpoint


@dataclass
class Services:
    """Everything the handlers use, built once at start-up."""

    settings: Settings
    routing: RoutingConfig
    store: Store
    web_client: Any
    poster: SlackPoster
    classifier: Classifier
    jobs: Any
    logs: Any
    verifier: Any
    alerts: AlertService
    bolt: Any


def build_services(settings: Settings, *, store: Store | None = None) -> Services:
    from slack_bolt import App

    from bot.cloud_logs import CloudLoggingClient
    from bot.vertex_jobs import VertexJobsClient

    routing = load_routing(settings.TRAINMEDIC_CONFIG)
    classifier = Classifier(load_knowledge(_knowledge_dir(settings)))
    store = store or open_store(settings.TRAINMEDIC_STORE)
    web_client = build_web_client(token=settings.SLACK_BOT_TOKEN, base_url=settings.SLACK_API_URL)
    poster = SlackPoster(web_client)
    jobs = VertexJobsClient(endpoint=settings.VERTEX_API_ENDPOINT, timeout=8.0)
    logs = CloudLoggingClient(endpoint=settings.LOGGING_API_ENDPOINT, timeout=8.0)
    verifier = None
    if settings.PUBSUB_VERIFY_TOKEN:
        from bot.oidc import PushTokenVerifier

        verifier = PushTokenVerifier(
            audience=settings.PUBSUB_PUSH_AUDIENCE or "",
            service_account=settings.PUBSUB_PUSH_SERVICE_ACCOUNT or "",
            certs_url=settings.OIDC_CERTS_URL,
        )
    else:
        event(
            logging.WARNING,
            "PUBSUB_VERIFY_TOKEN is false: /pubsub/push accepts requests without an OIDC token. "
            "Use this only behind another authentication layer or for local testing.",
        )
    alerts = AlertService(
        store=store,
        poster=poster,
        classifier=classifier,
        routing=routing,
        jobs=jobs,
        logs=logs,
        owner=f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}",
    )
    bolt = App(
        signing_secret=settings.SLACK_SIGNING_SECRET,
        client=web_client,
        token_verification_enabled=False,  # no auth.test round trip at start-up (cold start, offline tests)
        process_before_response=False,  # ack within 3 s, finish the work after (Cloud Run: CPU always allocated)
    )
    services = Services(
        settings=settings,
        routing=routing,
        store=store,
        web_client=web_client,
        poster=poster,
        classifier=classifier,
        jobs=jobs,
        logs=logs,
        verifier=verifier,
        alerts=alerts,
        bolt=bolt,
    )
    from handlers.slack_listeners import register_listeners

    register_listeners(bolt, services)
    return services


def _knowledge_dir(settings: Settings) -> Any:
    from pathlib import Path

    return Path(settings.TRAINMEDIC_KNOWLEDGE) if settings.TRAINMEDIC_KNOWLEDGE else None


def create_app(services: Services) -> Starlette:
    push = PushEndpoint(alerts=services.alerts, verifier=services.verifier)

    async def slack_events(request: Request) -> Response:
        from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response

        body = await request.body()
        bolt_response = await run_in_threadpool(services.bolt.dispatch, to_bolt_request(request, body))
        return to_starlette_response(bolt_response)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        event(logging.INFO, "shutting down")
        services.store.close()

    return Starlette(
        routes=[
            Route("/pubsub/push", push.handle, methods=["POST"]),
            Route("/slack/events", slack_events, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
