"""POST /pubsub/push over HTTP: who gets in, which status Pub/Sub sees, and what is logged with it.

The service runs for real (uvicorn, SQLite store) against the local Slack, Vertex AI / Cloud Logging and OIDC
stand-ins. Statuses matter because Pub/Sub acts on them: anything but 2xx is redelivered.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.config import load_settings
from bot.errors import ConfigError
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry
from standins.oidc import OidcIssuer
from standins.slack_api import FakeSlackApi
from tests.live_service import LiveService, envelope, standin_environ

PROJECT = "acme-ml"
AUDIENCE = "https://trainmedic-abc.a.run.app/pubsub/push"
PUSH_SA = "trainmedic-push@acme-ml.iam.gserviceaccount.com"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB."


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/oauth2/v1/certs"


def environ(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis, **overrides: str) -> dict:
    return standin_environ(
        tmp_path,
        fake_slack,
        fake_google,
        **overrides,
    )


@pytest.fixture
def open_service(tmp_path, fake_slack, fake_google) -> Iterator[LiveService]:
    """PUBSUB_VERIFY_TOKEN=false: pushes need no token (local testing)."""
    with LiveService(environ(tmp_path, fake_slack, fake_google)) as service:
        yield service


@pytest.fixture
def trainmedic_events(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The service's structured events (bot.alerting.event_log), as they are logged."""
    caplog.set_level(logging.INFO, logger="trainmedic")
    return caplog


def logged(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "trainmedic" and r.getMessage() == message]


def fields(record: logging.LogRecord) -> dict:
    return getattr(record, "fields", {})


def push(service: LiveService, data: object, message_id: str, token: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.post(service.url + "/pubsub/push", json=envelope(data, message_id), headers=headers, timeout=60)


def failed_job_entries(fake_google: FakeGoogleApis, job_id: str) -> list[dict]:
    """The job's error line (pushed while it still runs) and Vertex's "Job failed." (it has failed by then)."""
    fake_google.seed_job(custom_job_json(PROJECT, "us-central1", job_id, state="JOB_STATE_RUNNING", error=None))
    return [
        log_entry(PROJECT, job_id, OOM, task_name="workerpool0-0", severity="ERROR", timestamp="2026-11-29T12:00:01Z"),
        log_entry(PROJECT, job_id, "Job failed.", timestamp="2026-11-29T12:00:05Z", insert_id=f"{job_id}-failed"),
    ]


def fail(fake_google: FakeGoogleApis, job_id: str) -> None:
    fake_google.seed_job(custom_job_json(PROJECT, "us-central1", job_id))


# ------------------------------------------------------------------------------------------------- auth


def test_verification_is_on_unless_turned_off(tmp_path, fake_slack, fake_google, oidc_issuer) -> None:
    env = environ(tmp_path, fake_slack, fake_google)
    del env["PUBSUB_VERIFY_TOKEN"]
    with pytest.raises(ConfigError, match="PUBSUB_PUSH_AUDIENCE"):
        load_settings(env)  # verifying needs the audience and the push service account
    env.update(PUBSUB_PUSH_AUDIENCE=AUDIENCE, PUBSUB_PUSH_SERVICE_ACCOUNT=PUSH_SA, OIDC_CERTS_URL=oidc_issuer.certs_url)
    assert load_settings(env).PUBSUB_VERIFY_TOKEN is True
    entry = log_entry(PROJECT, "7001", "INFO line", task_name="workerpool0-0")
    with LiveService(env) as service:
        unsigned = push(service, entry, "u1")
        assert unsigned.status_code == 401
        assert service.services.store.entries(f"{PROJECT}/7001") == []
        signed = push(service, entry, "u2", oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA))
        assert signed.status_code == 200 and signed.json()["status"] == "held"


def test_verify_token_false_is_the_only_way_to_accept_unsigned_pushes(tmp_path, fake_slack, fake_google) -> None:
    env = environ(tmp_path, fake_slack, fake_google)
    assert load_settings(env).PUBSUB_VERIFY_TOKEN is False
    with LiveService(env) as service:
        answer = push(service, log_entry(PROJECT, "7002", "INFO line", task_name="workerpool0-0"), "v1")
    assert answer.status_code == 200 and answer.json()["status"] == "held"


def test_unreachable_google_certs_are_a_503_and_nothing_is_processed(
    tmp_path, fake_slack, fake_google, oidc_issuer, trainmedic_events
) -> None:
    env = environ(
        tmp_path,
        fake_slack,
        fake_google,
        PUBSUB_VERIFY_TOKEN="true",
        PUBSUB_PUSH_AUDIENCE=AUDIENCE,
        PUBSUB_PUSH_SERVICE_ACCOUNT=PUSH_SA,
        OIDC_CERTS_URL=closed_port_url(),
    )
    token = oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA)  # well signed, but cannot be checked now
    error, failed = failed_job_entries(fake_google, "7003")
    with LiveService(env) as service:
        for n, entry in enumerate([error, failed]):
            answer = push(service, entry, f"c{n}", token)
            assert answer.status_code == 503, answer.text
            assert answer.json()["status"] == "retry"
            assert "certificates" in answer.json()["reason"]
        assert service.services.store.entries(f"{PROJECT}/7003") == []
        assert service.services.store.get_alert(f"{PROJECT}/7003") is None
    assert fake_slack.posted() == []
    records = logged(trainmedic_events, "push token could not be verified")
    assert len(records) == 2
    assert all(r.levelno == logging.ERROR and "certificates" in fields(r)["reason"] for r in records)


@pytest.mark.parametrize(("email", "status"), [("someone@evil.iam.gserviceaccount.com", 403), (PUSH_SA, 401)])
def test_rejections_say_why_with_the_status(
    tmp_path, fake_slack, fake_google, oidc_issuer: OidcIssuer, trainmedic_events, email: str, status: int
) -> None:
    env = environ(
        tmp_path,
        fake_slack,
        fake_google,
        PUBSUB_VERIFY_TOKEN="true",
        PUBSUB_PUSH_AUDIENCE=AUDIENCE,
        PUBSUB_PUSH_SERVICE_ACCOUNT=PUSH_SA,
        OIDC_CERTS_URL=oidc_issuer.certs_url,
    )
    audience = AUDIENCE if status == 403 else "https://elsewhere.example/push"
    with LiveService(env) as service:
        answer = push(service, {"resource": {}}, "r1", oidc_issuer.mint(audience=audience, email=email))
    assert answer.status_code == status
    assert answer.json()["status"] == "rejected"
    reason = answer.json()["reason"]
    assert ("not the push service account" in reason) if status == 403 else ("audience" in reason.lower())
    [record] = logged(trainmedic_events, "push rejected")
    assert record.levelno == logging.WARNING
    assert fields(record) == {"status": status, "reason": reason}


# ---------------------------------------------------------------------------------------------- outcomes


def test_a_posted_failure_answers_with_where_it_went(open_service, fake_slack, fake_google, trainmedic_events) -> None:
    error, failed = failed_job_entries(fake_google, "7004")
    held = push(open_service, error, "p1")
    fail(fake_google, "7004")
    assert held.status_code == 200
    assert held.json() == {
        "status": "held",
        "reason": held.json()["reason"],
        "job_key": f"{PROJECT}/7004",
        "failure_class": None,
        "channel": None,
        "ts": None,
    }
    posted = push(open_service, failed, "p2")
    assert posted.status_code == 200
    body = posted.json()
    [message] = fake_slack.posted()
    assert body["status"] == "posted" and body["job_key"] == f"{PROJECT}/7004"
    assert body["failure_class"] == "accelerator_oom"
    assert (body["channel"], body["ts"]) == (fake_slack.conversation_id(message["channel"]), message["ts"])
    assert body["reason"].startswith("posted via")
    [record] = logged(trainmedic_events, "push posted")
    assert record.levelno == logging.INFO
    logged_fields = fields(record)
    assert {k: logged_fields[k] for k in ("message_id", "status", "job_key", "failure_class")} == {
        "message_id": "p2",
        "status": "posted",
        "job_key": f"{PROJECT}/7004",
        "failure_class": "accelerator_oom",
    }
    assert logged_fields["reason"] == body["reason"]
    assert 0 <= logged_fields["elapsed_ms"] < 60_000


def test_data_that_is_neither_a_log_entry_nor_an_incident_is_irrelevant(open_service, fake_slack) -> None:
    answer = push(open_service, {"hello": "world"}, "i1")
    assert answer.status_code == 200
    assert answer.json()["status"] == "irrelevant"
    assert answer.json()["reason"] == "data is neither a LogEntry nor a Monitoring incident"
    assert answer.json()["job_key"] is None


def test_an_incident_goes_to_the_incident_path(open_service, fake_slack, fake_google) -> None:
    incident = {"incident": {"state": "closed", "incident_id": "0.1"}}
    answer = push(open_service, incident, "inc")
    assert answer.status_code == 200
    assert answer.json()["status"] == "irrelevant" and "incident state" in answer.json()["reason"]
    no_project = push(open_service, {"incident": {"state": "open", "incident_id": "0.2"}}, "inc2")
    assert no_project.status_code == 200
    assert no_project.json()["status"] == "malformed" and "names no project" in no_project.json()["reason"]


def test_a_log_entry_the_alert_path_refuses_is_acknowledged_as_malformed(
    open_service, fake_slack, trainmedic_events
) -> None:
    entry = {"resource": {"type": "ml_job", "labels": {"job_id": "not-a-number", "project_id": PROJECT}}}
    answer = push(open_service, entry, "bad-labels")
    assert answer.status_code == 200
    assert answer.json()["status"] == "malformed" and "job_id" in answer.json()["reason"]
    [record] = logged(trainmedic_events, "malformed push acknowledged")
    assert record.levelno == logging.ERROR
    assert fields(record) == {"message_id": "bad-labels", "reason": answer.json()["reason"]}


def test_an_undecodable_body_is_acknowledged_and_logged(open_service, trainmedic_events) -> None:
    answer = httpx.post(open_service.url + "/pubsub/push", content=b"{not json", timeout=30)
    assert answer.status_code == 200
    assert answer.json()["status"] == "malformed" and "not JSON" in answer.json()["reason"]
    [record] = logged(trainmedic_events, "malformed push acknowledged")
    assert record.levelno == logging.ERROR
    assert fields(record) == {"reason": answer.json()["reason"], "body_bytes": len(b"{not json")}


def test_slack_refusing_the_post_for_good_is_a_500(open_service, fake_slack, fake_google, trainmedic_events) -> None:
    error, failed = failed_job_entries(fake_google, "7005")
    push(open_service, error, "e1")
    fail(fake_google, "7005")
    fake_slack.api_error("chat.postMessage", "invalid_auth", times=5)
    answer = push(open_service, failed, "e2")
    assert answer.status_code == 500, answer.text
    assert answer.json()["status"] == "error" and "invalid_auth" in answer.json()["reason"]
    [record] = logged(trainmedic_events, "could not post, Pub/Sub will redeliver")
    assert record.levelno == logging.ERROR
    assert fields(record) == {"message_id": "e2", "reason": answer.json()["reason"]}


def test_a_transient_failure_is_a_503_and_the_redelivery_posts(
    open_service, fake_slack, fake_google, trainmedic_events
) -> None:
    error, failed = failed_job_entries(fake_google, "7006")
    push(open_service, error, "t1")
    fail(fake_google, "7006")
    fake_slack.server_error("chat.postMessage", times=1, status=503)
    answer = push(open_service, failed, "t2")
    assert answer.status_code == 503, answer.text
    assert answer.json()["status"] == "retry" and answer.json()["reason"]
    [record] = logged(trainmedic_events, "transient failure, Pub/Sub will redeliver")
    assert record.levelno == logging.WARNING
    assert fields(record) == {"message_id": "t2", "reason": answer.json()["reason"]}
    for _ in range(5):  # Pub/Sub redelivers until it gets a 2xx
        redelivered = push(open_service, failed, "t2")
        if redelivered.status_code != 503:
            break
    assert redelivered.status_code == 200 and redelivered.json()["status"] == "posted"
    assert len(fake_slack.posted()) == 1


def test_an_entry_without_an_insert_id_is_known_by_its_message_id(open_service, fake_google) -> None:
    entry = log_entry(PROJECT, "7007", "RuntimeError: boom", task_name="workerpool0-0", severity="ERROR")
    del entry["insertId"]
    assert push(open_service, entry, "msg-7007").json()["status"] == "held"
    [stored] = open_service.services.store.entries(f"{PROJECT}/7007")
    assert stored["insertId"] == "msg-7007"
    assert push(open_service, entry, "msg-7007").json()["status"] == "duplicate"


def test_an_incident_without_an_id_is_known_by_its_message_id(open_service, fake_slack) -> None:
    incident = {"incident": {"state": "open", "scoping_project_id": PROJECT, "summary": "GPU utilization is low"}}
    answer = push(open_service, incident, "msg-inc-1")
    assert answer.status_code == 200
    assert answer.json()["status"] == "posted" and answer.json()["job_key"] == f"{PROJECT}/incident-msg-inc-1"


def test_data_the_store_refuses_for_good_is_acknowledged_not_redelivered(
    tmp_path, fake_slack, fake_google, firestore_store, trainmedic_events
) -> None:
    """Firestore refuses a document over 1 MiB (INVALID_ARGUMENT): retrying can never help, so 200."""
    env = environ(tmp_path, fake_slack, fake_google, TRAINMEDIC_STORE=f"firestore:{firestore_store.project}")
    huge = {f"label-{n}": "v" * 60 for n in range(20_000)}  # a job description far beyond a document's size
    fake_google.seed_job(custom_job_json(PROJECT, "us-central1", "7008", labels=huge))
    with LiveService(env) as service:
        answer = push(service, log_entry(PROJECT, "7008", "Job failed."), "big-1")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "unprocessable"
    assert body["reason"].startswith("cannot be processed, ever: StoreRejected: firestore refused it: InvalidArgument")
    [record] = logged(trainmedic_events, "unprocessable push acknowledged")
    assert record.levelno == logging.ERROR
    assert fields(record) == {"message_id": "big-1", "reason": body["reason"]}


def test_push_work_waits_for_the_endpoints_thread_limiter(open_service, fake_google) -> None:
    """Push work runs on the limiter the endpoint is given (handlers/app.py gives pushes their own), not on
    anyio's shared default: with one token, a second push waits while the first is busy."""
    import asyncio
    import time

    import anyio
    from starlette.applications import Starlette
    from starlette.routing import Route

    from handlers.pubsub_push import PushEndpoint

    endpoint = PushEndpoint(alerts=open_service.services.alerts, verifier=None, limiter=anyio.CapacityLimiter(1))
    app = Starlette(routes=[Route("/pubsub/push", endpoint.handle, methods=["POST"])])
    fake_google.seed_job(custom_job_json(PROJECT, "us-central1", "7101", state="JOB_STATE_RUNNING", error=None))
    fake_google.inject(api="vertex", job_id="7101", delay=1.0)  # the first push's job look-up is slow
    slow = envelope(log_entry(PROJECT, "7101", OOM, task_name="workerpool0-0", severity="ERROR"), "slow")
    quick = envelope({"resource": {"type": "cloud_run_revision"}, "textPayload": "x"}, "quick")  # no look-up

    async def second_push_latency() -> tuple[float, list[str]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://push", timeout=30) as client:
            first = asyncio.ensure_future(client.post("/pubsub/push", json=slow))
            while not any(r.path.endswith("/customJobs/7101") for r in fake_google.requests):
                await asyncio.sleep(0.01)  # the first push holds the only token now
            started = time.monotonic()
            second = await client.post("/pubsub/push", json=quick)
            latency = time.monotonic() - started
            return latency, [(await first).json()["status"], second.json()["status"]]

    latency, statuses = asyncio.run(second_push_latency())
    assert statuses == ["held", "irrelevant"]
    assert latency >= 0.5  # it waited for the first push's token
