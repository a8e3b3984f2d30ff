"""The HTTP app and composition root: every client is built once here and injected.

Routes: POST /pubsub/push (Pub/Sub push, OIDC-verified), POST /slack/events (Slack via Bolt, signature-verified),
POST /tasks/scan (Cloud Scheduler: the stuck-job scan, OIDC-verified against SCHEDULER_SERVICE_ACCOUNT),
GET /healthz.

Push work and Slack requests run on separate thread limiters (PUSH_CONCURRENCY, SLACK_CONCURRENCY), so Slack's
3-second acknowledgement never waits behind slow pushes. `Activity` counts the work in progress (requests and
the Slack listeners that go on after their ack); `Shutdown` is started on SIGTERM (handlers/serve.py) and cuts
every push's deadline short; at the end the alert service settles the claims it still holds.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.alerting.alerts import MAX_JOB_ENTRIES, AlertService
from bot.alerting.deadline import Shutdown
from bot.alerting.event_log import event
from bot.alerting.ledger import LedgerClassifier
from bot.chat.actions import ActionService
from bot.config import RoutingConfig, Settings, load_routing
from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import load_knowledge
from bot.gcp.cloud_logs import LogsClient
from bot.gcp.cloud_quotas import QuotasClient
from bot.gcp.pipeline_jobs import PipelinesClient
from bot.gcp.vertex_jobs import JobsClient
from bot.slack.poster import SlackPoster, build_web_client
from bot.store import Store, open_store
from handlers.pubsub_push import PushEndpoint

if TYPE_CHECKING:
    from pathlib import Path

    from bot.alerting.stuck_jobs import StuckJobScanner
    from bot.intake.oidc import PushTokenVerifier


PUSH_CONCURRENCY = 32  # pushes worked on at once; more wait their turn (see README: memory bounds)
SLACK_CONCURRENCY = 16  # Slack requests handled at once, never queued behind push work
LISTENER_THREADS = 16  # Slack listeners running (after their ack) at once
_SLACK_TIMESTAMP = re.compile(r"[0-9]{1,15}")


class Activity:
    """How much work is in progress in this process (thread-safe): requests, and listeners after their ack."""

    def __init__(self) -> None:
        self._busy = 0
        self._changed = threading.Condition()

    @property
    def busy(self) -> int:
        with self._changed:
            return self._busy

    def enter(self) -> None:
        with self._changed:
            self._busy += 1

    def leave(self) -> None:
        with self._changed:
            self._busy -= 1
            if self._busy == 0:
                self._changed.notify_all()

    @contextlib.contextmanager
    def track(self) -> Iterator[None]:
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def wait_idle(self, timeout: float) -> bool:
        """True once no work is in progress; False if some still is after `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self._busy == 0, timeout)


class TrackedExecutor(ThreadPoolExecutor):
    """The Slack listeners' executor: what it runs counts as work in progress."""

    def __init__(self, activity: Activity, max_workers: int) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix="slack-listener")
        self._activity = activity

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self._activity.enter()
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._activity.leave()
            raise
        future.add_done_callback(lambda _: self._activity.leave())
        return future


@dataclass
class Services:
    """Everything the handlers use, built once at start-up."""

    settings: Settings
    routing: RoutingConfig
    store: Store
    web_client: Any
    poster: SlackPoster
    classifier: Classifier
    jobs: JobsClient
    logs: LogsClient
    verifier: PushTokenVerifier | None
    alerts: AlertService
    bolt: Any
    shutdown: Shutdown = field(default_factory=Shutdown)
    activity: Activity = field(default_factory=Activity)
    scanner: StuckJobScanner | None = None
    # The scan's token check: a verifier, "off" (PUBSUB_VERIFY_TOKEN=false), or "unconfigured" (no scheduler
    # account: every scan refused). Anything else, the default included, refuses: the check fails closed.
    scan_verifier: PushTokenVerifier | str = "unconfigured"
    pipelines: PipelinesClient | None = None
    quotas: QuotasClient | None = None

    def action_service(self, **overrides: Any) -> ActionService:
        """The chat actions (Acknowledge, Rerun) wired to these services; `overrides` replace a part (a test's
        clock, another store handle, no pipelines client)."""
        parts: dict[str, Any] = {
            "store": self.store,
            "poster": self.poster,
            "alerts": self.alerts,
            "jobs": self.jobs,
            "routing": self.routing,
            "pipelines": self.pipelines,
        }
        return ActionService(**{**parts, **overrides})


def build_services(settings: Settings, *, store: Store | None = None) -> Services:
    from slack_bolt import App

    from bot.gcp.cloud_logs import CloudLoggingClient
    from bot.gcp.cloud_quotas import CloudQuotasClient
    from bot.gcp.pipeline_jobs import VertexPipelinesClient
    from bot.gcp.vertex_jobs import VertexJobsClient

    routing = load_routing(settings.TRAINMEDIC_CONFIG)
    classifier = LedgerClassifier(Classifier(load_knowledge(_knowledge_dir(settings))))
    store = store or open_store(settings.TRAINMEDIC_STORE, max_entries=MAX_JOB_ENTRIES)
    web_client = build_web_client(token=settings.SLACK_BOT_TOKEN, base_url=settings.SLACK_API_URL)
    poster = SlackPoster(web_client)
    jobs = VertexJobsClient(endpoint=settings.VERTEX_API_ENDPOINT, timeout=8.0)
    logs = CloudLoggingClient(endpoint=settings.LOGGING_API_ENDPOINT, timeout=8.0)
    pipelines = VertexPipelinesClient(endpoint=settings.VERTEX_API_ENDPOINT, timeout=8.0)
    quotas = CloudQuotasClient(endpoint=settings.QUOTAS_API_ENDPOINT, timeout=8.0)
    verifier = None
    if settings.PUBSUB_VERIFY_TOKEN:
        from bot.intake.oidc import PushTokenVerifier

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
    shutdown, activity = Shutdown(), Activity()
    alerts = AlertService(
        store=store,
        poster=poster,
        classifier=classifier,
        routing=routing,
        jobs=jobs,
        logs=logs,
        pipelines=pipelines,
        quotas=quotas,
        owner=f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}",
        shutdown=shutdown,
    )
    bolt = App(
        signing_secret=settings.SLACK_SIGNING_SECRET,
        client=web_client,
        token_verification_enabled=False,  # no auth.test round trip at start-up (cold start, offline tests)
        process_before_response=False,  # ack within 3 s, finish the work after (Cloud Run: CPU always allocated)
        listener_executor=TrackedExecutor(activity, LISTENER_THREADS),
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
        shutdown=shutdown,
        activity=activity,
        pipelines=pipelines,
        quotas=quotas,
    )
    services.scanner, services.scan_verifier = _scan_parts(settings, services)
    from handlers.slack_listeners import register_listeners

    register_listeners(bolt, services)
    return services


def _scan_parts(settings: Settings, services: Services) -> tuple[StuckJobScanner, PushTokenVerifier | str]:
    from bot.alerting.rerun_outcomes import RerunFollower
    from bot.alerting.stuck_explain import Thresholds
    from bot.alerting.stuck_jobs import StuckJobScanner

    scanner = StuckJobScanner(
        jobs=services.jobs,
        logs=services.logs,
        store=services.store,
        poster=services.poster,
        routing=services.routing,
        project=services.routing.default_project or settings.GOOGLE_CLOUD_PROJECT,
        thresholds=Thresholds(
            queued=settings.STUCK_QUEUED_MINUTES * 60,
            pending=settings.STUCK_PENDING_MINUTES * 60,
            preparing=settings.STUCK_PREPARING_MINUTES * 60,
        ),
        owner=services.alerts.owner,
        pipelines=services.pipelines,
        follower=RerunFollower(
            store=services.store,
            poster=services.poster,
            lookup=services.alerts.lookup,
            rerender=services.alerts.render_record,
        ),
    )
    if not settings.PUBSUB_VERIFY_TOKEN:
        return scanner, "off"
    if not (settings.SCHEDULER_SERVICE_ACCOUNT and settings.scheduler_audience):
        return scanner, "unconfigured"
    from bot.intake.oidc import PushTokenVerifier

    verifier = PushTokenVerifier(
        audience=settings.scheduler_audience,
        service_account=settings.SCHEDULER_SERVICE_ACCOUNT,
        certs_url=settings.OIDC_CERTS_URL,
    )
    return scanner, verifier


def _knowledge_dir(settings: Settings) -> Path | None:
    from pathlib import Path

    return Path(settings.TRAINMEDIC_KNOWLEDGE) if settings.TRAINMEDIC_KNOWLEDGE else None


def create_app(services: Services) -> Starlette:
    activity: Activity = getattr(services, "activity", None) or Activity()
    push_limiter = anyio.CapacityLimiter(PUSH_CONCURRENCY)
    slack_limiter = anyio.CapacityLimiter(SLACK_CONCURRENCY)
    push = PushEndpoint(alerts=services.alerts, verifier=services.verifier, limiter=push_limiter)

    async def push_route(request: Request) -> Response:
        with activity.track():
            return await push.handle(request)

    async def slack_events(request: Request) -> Response:
        from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response

        with activity.track():
            stamp = request.headers.get("x-slack-request-timestamp")
            if stamp is not None and not _SLACK_TIMESTAMP.fullmatch(stamp.strip()):
                # Bolt would fail on int(stamp) with a 500: not a request from Slack.
                event(logging.WARNING, "Slack request refused: bad X-Slack-Request-Timestamp", value=stamp[:40])
                return JSONResponse({"error": "invalid request"}, status_code=401)
            body = await request.body()
            bolt_request = to_bolt_request(request, body)
            bolt_response = await anyio.to_thread.run_sync(services.bolt.dispatch, bolt_request, limiter=slack_limiter)
            return to_starlette_response(bolt_response)

    async def scan_route(request: Request) -> Response:
        from bot.errors import PushAuthError

        with activity.track():
            verifier = getattr(services, "scan_verifier", "unconfigured")
            if services.scanner is None or verifier is None or verifier == "unconfigured":
                event(logging.WARNING, "scan refused: SCHEDULER_SERVICE_ACCOUNT is not set")
                return JSONResponse({"error": "scan not configured"}, status_code=403)
            if verifier != "off":
                try:
                    await anyio.to_thread.run_sync(verifier.verify, request.headers.get("authorization"))
                except PushAuthError as exc:
                    event(logging.WARNING, "scan rejected", reason=exc.reason)
                    return JSONResponse({"error": "unauthorized"}, status_code=403 if exc.forbidden else 401)
            report = await anyio.to_thread.run_sync(services.scanner.scan, limiter=push_limiter)
            return JSONResponse(report.as_dict(), status_code=200)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        event(logging.INFO, "shutting down")
        shutdown = getattr(services, "shutdown", None)
        if shutdown is not None:
            shutdown.begin()
        services.alerts.settle()  # claims of work cut off by the graceful-shutdown limit
        services.store.close()

    return Starlette(
        routes=[
            Route("/pubsub/push", push_route, methods=["POST"]),
            Route("/slack/events", slack_events, methods=["POST"]),
            Route("/tasks/scan", scan_route, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
