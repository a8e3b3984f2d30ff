"""POST /pubsub/push: verify the OIDC token, decode the envelope, hand the data to the alert service.

Status policy (Pub/Sub redelivers anything that is not 102/200/201/202/204):
- 200 for processed, held, duplicate, irrelevant and permanently malformed messages, and for data the store
  refuses for good (each logged with why): anything that can never succeed is not redelivered;
- 401 for a missing, forged, expired, not-yet-valid or wrong-audience token; 403 for a valid token of another
  identity;
- 503 for transient failures (Slack, the store, Google APIs, another delivery posting the same job, shutdown);
- 500 for a non-transient failure to post (a Slack error such as invalid_auth): redelivered, then dead-lettered.

The work runs on the push limiter's threads (handlers/app.py), never on the ones Slack requests use.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse

from bot.alerting.alerts import AlertService
from bot.alerting.event_log import event
from bot.errors import (
    ApiError,
    ApiUnavailable,
    InvalidPushMessage,
    PushAuthError,
    StoreRejected,
    StoreUnavailable,
)
from bot.intake.pubsub_message import decode_push_envelope

if TYPE_CHECKING:
    from anyio import CapacityLimiter

    from bot.intake.oidc import PushTokenVerifier

# Work on one push stops enriching when less than a few seconds of this budget remain; keep it well under the
# subscription's ack deadline (deploy/setup uses 60 s).
PUSH_WORK_SECONDS = 25.0


class PushEndpoint:
    def __init__(
        self, *, alerts: AlertService, verifier: PushTokenVerifier | None, limiter: CapacityLimiter | None = None
    ) -> None:
        self.alerts = alerts
        self.verifier = verifier
        self.limiter = limiter  # an anyio.CapacityLimiter for push work; None: anyio's default limiter

    async def _run(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: function(*args, **kwargs), limiter=self.limiter)

    async def handle(self, request: Request) -> JSONResponse:
        started = time.monotonic()
        if self.verifier is not None:
            try:
                claims = await self._run(self.verifier.verify, request.headers.get("authorization"))
            except PushAuthError as exc:
                status = 403 if exc.forbidden else 401
                event(logging.WARNING, "push rejected", status=status, reason=exc.reason)
                return JSONResponse({"status": "rejected", "reason": exc.reason}, status_code=status)
            except ApiUnavailable as exc:
                event(logging.ERROR, "push token could not be verified", reason=str(exc))
                return JSONResponse({"status": "retry", "reason": str(exc)}, status_code=503)
            del claims
        body = await request.body()
        try:
            message = decode_push_envelope(body)
        except InvalidPushMessage as exc:
            event(logging.ERROR, "malformed push acknowledged", reason=str(exc), body_bytes=len(body))
            return JSONResponse({"status": "malformed", "reason": str(exc)})
        deadline = self.alerts.deadline(PUSH_WORK_SECONDS)
        try:
            outcome = await self._run(
                self.alerts.handle, message.data, message_id=message.message_id, deadline=deadline
            )
        except InvalidPushMessage as exc:
            event(logging.ERROR, "malformed push acknowledged", message_id=message.message_id, reason=str(exc))
            return JSONResponse({"status": "malformed", "reason": str(exc)})
        except (StoreRejected, RecursionError) as exc:
            reason = f"cannot be processed, ever: {type(exc).__name__}: {exc}"[:500]
            event(logging.ERROR, "unprocessable push acknowledged", message_id=message.message_id, reason=reason)
            return JSONResponse({"status": "unprocessable", "reason": reason})
        except (ApiUnavailable, StoreUnavailable) as exc:
            event(logging.WARNING, "transient failure, Pub/Sub will redeliver", message_id=message.message_id,
                  reason=str(exc))
            return JSONResponse({"status": "retry", "reason": str(exc)}, status_code=503)
        except ApiError as exc:
            event(logging.ERROR, "could not post, Pub/Sub will redeliver", message_id=message.message_id,
                  reason=str(exc))
            return JSONResponse({"status": "error", "reason": str(exc)}, status_code=500)
        event(
            logging.INFO,
            f"push {outcome.status}",
            message_id=message.message_id,
            status=outcome.status,
            reason=outcome.reason,
            job_key=outcome.job_key,
            failure_class=outcome.failure_class,
            elapsed_ms=round((time.monotonic() - started) * 1000, 1),
        )
        return JSONResponse(
            {
                "status": outcome.status,
                "reason": outcome.reason,
                "job_key": outcome.job_key,
                "failure_class": outcome.failure_class,
                "channel": outcome.channel,
                "ts": outcome.message_ts,
            }
        )
