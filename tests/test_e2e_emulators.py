"""End to end with real parts: the Pub/Sub emulator pushing log-sink messages to the running service, and two
`trainmedic serve` processes sharing one Firestore emulator."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry
from standins.slack_api import FakeSlackApi
from tests.emulators import Emulator, free_port
from tests.live_service import LiveService, ServeProcess, envelope, standin_environ

PROJECT = "acme-ml"


def job_entries(job_id: str, text: str, replica: str = "workerpool0-0") -> list[dict]:
    return [
        log_entry(PROJECT, job_id, text, task_name=replica, severity="ERROR", timestamp="2026-11-29T12:00:01Z"),
        log_entry(PROJECT, job_id, "Job failed.", timestamp="2026-11-29T12:00:09Z", insert_id=f"{job_id}-failed"),
    ]


FAILURES = {
    "2001": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "2002": "ModuleNotFoundError: No module named 'transformers'",
    "2003": "google.api_core.exceptions.Forbidden: 403 caller does not have storage.objects.get access to b/x/o/y",
}


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@pytest.fixture
def live(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis) -> Iterator[LiveService]:
    environ = standin_environ(tmp_path, fake_slack, fake_google)
    with LiveService(environ) as service:
        yield service


class PushLog(logging.Handler):
    """The service's own push events ("push posted", "push duplicate", ...), as it logs them."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.events.append({"message": record.getMessage(), **(getattr(record, "fields", None) or {})})


def acknowledged(pushes: PushLog) -> set[str]:
    """Message ids the service answered 200 (a push outcome is logged as "push <status>" just before)."""
    return {e["message_id"] for e in list(pushes.events) if e["message"].startswith("push ") and "message_id" in e}


@pytest.fixture
def pushes() -> Iterator[PushLog]:
    handler, logger = PushLog(), logging.getLogger("trainmedic")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(previous)


def test_pubsub_emulator_push_subscription_delivers_sink_messages(
    live: LiveService,
    pubsub_emulator: Emulator,
    fake_slack: FakeSlackApi,
    fake_google: FakeGoogleApis,
    monkeypatch,
    pushes: PushLog,
) -> None:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", pubsub_emulator.host)
    from google.cloud import pubsub_v1

    project = pubsub_emulator.project
    publisher = pubsub_v1.PublisherClient()
    subscriber = pubsub_v1.SubscriberClient()
    suffix = str(free_port())
    topic = publisher.topic_path(project, f"vertex-failures-{suffix}")
    subscription = subscriber.subscription_path(project, f"trainmedic-push-{suffix}")
    publisher.create_topic(name=topic)
    subscriber.create_subscription(
        request={
            "name": subscription,
            "topic": topic,
            "push_config": {"push_endpoint": live.url + "/pubsub/push"},
            "ack_deadline_seconds": 60,
        }
    )
    for job_id in FAILURES:
        fake_google.seed_job(custom_job_json(PROJECT, "us-central1", job_id))
    futures = []
    for job_id, text in FAILURES.items():
        for entry in job_entries(job_id, text) * 2:  # the sink may export an entry twice: duplicates
            data = json.dumps(entry).encode()
            futures.append(publisher.publish(topic, data, **{"logging.googleapis.com/timestamp": entry["timestamp"]}))
    published = {future.result(timeout=30) for future in futures}  # Pub/Sub message ids
    # Quiet: Pub/Sub got a 2xx for every message (so it redelivers none) and the service has nothing in progress.
    assert wait_for(lambda: published <= acknowledged(pushes) and live.wait_quiet(0.5)), sorted(
        published - acknowledged(pushes)
    )
    posted = fake_slack.posted()
    assert len(posted) == len(FAILURES)
    texts = " ".join(json.dumps(p) for p in posted)
    for job_id in FAILURES:
        assert f"train-{job_id}" in texts
    classes = {
        live.services.store.get_alert(f"{PROJECT}/{j}").diagnosis["diagnosis"]["failure_class"] for j in FAILURES
    }
    assert classes == {"accelerator_oom", "container_startup", "permission_denied"}
    subscriber.delete_subscription(subscription=subscription)
    publisher.delete_topic(topic=topic)


def test_two_processes_sharing_firestore_post_once(
    tmp_path: Path, firestore_emulator: Emulator, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis
) -> None:
    firestore_emulator.reset()
    environ = standin_environ(
        tmp_path,
        fake_slack,
        fake_google,
        TRAINMEDIC_STORE="firestore",
        GOOGLE_CLOUD_PROJECT=firestore_emulator.project,
        FIRESTORE_EMULATOR_HOST=firestore_emulator.host,
    )
    for job_id in FAILURES:
        fake_google.seed_job(custom_job_json(PROJECT, "us-central1", job_id))
    servers = [ServeProcess(environ, tmp_path / f"serve-{i}.log") for i in range(2)]
    try:
        cold_starts = [server.wait_ready() for server in servers]
        print(f"cold start (process start to /healthz 200): {', '.join(f'{s:.2f} s' for s in cold_starts)}")
        deliveries = [
            (servers[i % 2], envelope(entry, f"{job_id}-{n}-{i}"))
            for job_id, text in FAILURES.items()
            for n, entry in enumerate(job_entries(job_id, text))
            for i in range(4)  # each message delivered 4 times, to both processes at once
        ]

        def deliver(item: tuple[ServeProcess, dict]) -> int:
            server, body = item
            for _ in range(40):  # Pub/Sub redelivers until it gets a 2xx
                status = httpx.post(server.url + "/pubsub/push", json=body, timeout=60).status_code
                if status == 200:
                    return status
                time.sleep(0.2)
            return status

        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(deliver, deliveries))
        assert set(statuses) == {200}
        assert len(fake_slack.posted()) == len(FAILURES)
    finally:
        for server in servers:
            server.stop()  # SIGTERM, as Cloud Run sends it
            log = server.log_path.read_text()
            # uvicorn finishes in-flight requests, runs the shutdown hook, then re-raises SIGTERM as its exit status
            assert '"message": "shutting down"' in log and "Finished server process" in log


def test_store_outage_answers_503_so_pubsub_redelivers(tmp_path: Path, fake_slack, fake_google) -> None:
    environ = standin_environ(
        tmp_path,
        fake_slack,
        fake_google,
        TRAINMEDIC_STORE="firestore",
        GOOGLE_CLOUD_PROJECT="test-project",
        FIRESTORE_EMULATOR_HOST=f"127.0.0.1:{free_port()}",  # nothing listens there
    )
    import os

    saved = os.environ.get("FIRESTORE_EMULATOR_HOST")
    os.environ["FIRESTORE_EMULATOR_HOST"] = environ["FIRESTORE_EMULATOR_HOST"]
    try:
        with LiveService(environ) as service:
            entry = job_entries("2101", FAILURES["2001"])[1]
            answer = httpx.post(service.url + "/pubsub/push", json=envelope(entry, "so-1"), timeout=60)
            assert answer.status_code == 503
            assert answer.json()["status"] == "retry"
            assert fake_slack.posted() == []
    finally:
        if saved is None:
            os.environ.pop("FIRESTORE_EMULATOR_HOST", None)
        else:
            os.environ["FIRESTORE_EMULATOR_HOST"] = saved
