"""One Slack message per failed job, even when Slack answers too late, a poster dies, or the instance is stopped.

Slack and Pub/Sub are both at-least-once. Every alert carries message metadata naming its job, so a post whose
outcome is unknown is found again (conversations.history) and adopted rather than posted twice. Real parts
throughout: the service over HTTP (or `trainmedic serve` processes), SQLite, the Slack and Vertex AI / Cloud
Logging stand-ins reached through slack_sdk and the Google client libraries.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from slack_sdk import WebClient

from bot.alerting.alerts import MAX_JOB_ENTRIES, AlertService
from bot.config import RoutingConfig
from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import load_knowledge
from bot.errors import ApiUnavailable
from bot.gcp.cloud_logs import CloudLoggingClient
from bot.gcp.vertex_jobs import VertexJobsClient
from bot.slack.poster import CARD_EVENT_TYPE, SlackPoster, alert_metadata, build_web_client, card_metadata
from bot.store.sqlite import SqliteStore
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry
from standins.http_server import wait_until
from standins.slack_api import FakeSlackApi, signature_headers, slash_command_body
from tests.live_service import LiveService, ServeProcess, envelope, standin_environ

PROJECT, REGION = "acme-ml", "us-central1"
CHANNEL = "#ml-alerts"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB."
SECRET = "test-signing-secret"


def failure_entries(job_id: str) -> list[dict]:
    return [
        log_entry(PROJECT, job_id, OOM, task_name="workerpool0-0", severity="ERROR", insert_id=f"{job_id}-oom"),
        log_entry(PROJECT, job_id, "Job failed.", insert_id=f"{job_id}-failed", timestamp="2026-02-23T23:54:09Z"),
    ]


def alerts_for(slack: FakeSlackApi, job_id: str) -> list[dict]:
    """The messages in Slack (after any updates) whose metadata names the job."""
    key = f"{PROJECT}/{job_id}"
    return [m for m in slack.posted() if (m.get("metadata") or {}).get("event_payload", {}).get("job_key") == key]


def redeliver(url: str, body: dict, *, until: float) -> httpx.Response:
    """What Pub/Sub does: deliver again until it gets a 2xx (or the test's patience runs out)."""
    while True:
        try:
            answer = httpx.post(url + "/pubsub/push", json=body, timeout=60)
            if answer.status_code < 300 or time.monotonic() > until:
                return answer
        except httpx.HTTPError:
            if time.monotonic() > until:
                raise
        time.sleep(0.2)


@pytest.fixture
def live(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis) -> Iterator[LiveService]:
    environ = standin_environ(
        tmp_path, fake_slack, fake_google, routing={"default_channel": CHANNEL, "regions": [REGION]}
    )
    with LiveService(environ) as service:
        yield service


def service(tmp_path: Path, slack: FakeSlackApi, google: FakeGoogleApis) -> AlertService:
    """The alert service as handlers/app.py builds it, for driving one delivery at a time."""
    return AlertService(
        store=SqliteStore(tmp_path / "direct.db", max_entries=MAX_JOB_ENTRIES),
        poster=SlackPoster(build_web_client(token="xoxb-test", base_url=slack.base_url)),
        classifier=Classifier(load_knowledge()),
        routing=RoutingConfig(default_channel=CHANNEL, regions=[REGION]),
        jobs=VertexJobsClient(endpoint=google.base_url),
        logs=CloudLoggingClient(endpoint=google.base_url),
    )


# ------------------------------------------------------------------------------------------ unknown outcomes


def cards_for(slack: FakeSlackApi, message: dict) -> list[dict]:
    """The replies in the message's thread (the alert's card should be the one and only)."""
    return slack.replies(slack.conversation_id(CHANNEL), message["ts"])


def test_slack_posting_but_answering_after_the_timeout_still_gives_one_message(live, fake_slack, fake_google):
    """Slack carries every chat.postMessage out at once but answers 11 s later, past the client's timeout: the
    message and then its card are each in doubt once, and each is adopted rather than posted again."""
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "3001"))
    fake_google.seed_log_entries(failure_entries("3001")[:1])
    fake_slack.slow("chat.postMessage", 11.0)
    failed = envelope(failure_entries("3001")[1], "m-3001")

    answers = [httpx.post(live.url + "/pubsub/push", json=failed, timeout=60) for _ in range(3)]  # + redeliveries

    # The first push adopts the message but its card's post goes unanswered too: in doubt, redelivered.
    assert [a.status_code for a in answers] == [503, 200, 200], [a.text for a in answers]
    assert answers[1].json()["status"] == "posted" and "adopted" in answers[1].json()["reason"]
    assert answers[2].json()["status"] == "duplicate"
    [message] = alerts_for(fake_slack, "3001")
    assert len(fake_slack.posted()) == 1
    record = live.services.store.get_alert(f"{PROJECT}/3001")
    assert (record.channel, record.message_ts) == (fake_slack.conversation_id(CHANNEL), message["ts"])
    assert "CUDA out of memory" in json.dumps(message["blocks"])  # the adopted message shows the diagnosis
    [card] = cards_for(fake_slack, message)  # posted once, found (conversations.replies) and adopted
    assert record.diagnosis["card"]["ts"] == card["ts"] and card["metadata"]["event_type"] == CARD_EVENT_TYPE
    assert len(fake_slack.calls_to("chat.postMessage")) == 2
    replies = fake_slack.calls_to("conversations.replies")
    assert replies and replies[0].args["channel"] == record.channel and replies[0].args["ts"] == message["ts"]
    history = fake_slack.calls_to("conversations.history")
    assert history and history[0].args["channel"] == record.channel  # looked up by id, as Slack requires
    assert str(history[0].args["include_all_metadata"]).lower() in ("1", "true")


def test_a_claim_left_by_a_poster_that_died_is_settled_by_adopting_its_message(tmp_path, fake_slack, fake_google):
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "3002"))
    alerts = service(tmp_path, fake_slack, fake_google)
    key = f"{PROJECT}/3002"
    # Another instance claimed the job, got its message and its card into Slack, and died before recording them.
    assert alerts.store.claim_post(key, owner="dead-instance", lease_seconds=-1).value == "won"
    other = WebClient(token="xoxb-other", base_url=fake_slack.base_url)
    other.chat_postMessage(channel=CHANNEL, text="Training job failed: train-3002", metadata=alert_metadata(key))
    [earlier] = fake_slack.posted()
    other.chat_postMessage(channel=CHANNEL, thread_ts=earlier["ts"], text="Someone's reply")  # not a card
    other.chat_postMessage(channel=CHANNEL, thread_ts=earlier["ts"], text="card", metadata=card_metadata(key))

    outcome = alerts.handle_log_entry(failure_entries("3002")[1], deadline=alerts.deadline(25))

    assert outcome.status == "posted" and outcome.message_ts == earlier["ts"]
    [message] = fake_slack.posted()
    assert message["ts"] == earlier["ts"] and message["text"] != "Training job failed: train-3002"  # updated
    record = alerts.store.get_alert(key)
    assert record.posted and record.message_ts == earlier["ts"] and not record.post_in_doubt
    reply, card = cards_for(fake_slack, message)  # no second card: the earlier one is adopted and updated
    assert reply["text"] == "Someone's reply" and card["text"] != "card" and "*Avoid*" in json.dumps(card)
    assert record.diagnosis["card"]["ts"] == card["ts"]
    assert len(fake_slack.calls_to("chat.postMessage")) == 3  # the three above; the service posted nothing


def test_a_poster_that_died_before_the_card_leaves_it_to_the_adopter(tmp_path, fake_slack, fake_google):
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "3006"))
    alerts = service(tmp_path, fake_slack, fake_google)
    key = f"{PROJECT}/3006"
    alerts.store.claim_post(key, owner="dead-instance", lease_seconds=-1)
    WebClient(token="xoxb-other", base_url=fake_slack.base_url).chat_postMessage(
        channel=CHANNEL, text="Training job failed: train-3006", metadata=alert_metadata(key)
    )

    outcome = alerts.handle_log_entry(failure_entries("3006")[1], deadline=alerts.deadline(25))
    again = alerts.handle_log_entry(failure_entries("3006")[1], deadline=alerts.deadline(25))  # a redelivery

    assert outcome.status == "posted" and again.status == "duplicate"
    [message] = fake_slack.posted()
    [card] = cards_for(fake_slack, message)
    assert card["metadata"] == card_metadata(key) and alerts.store.get_alert(key).diagnosis["card"]["ts"] == card["ts"]


def test_a_card_whose_post_goes_unanswered_is_adopted_by_the_redelivery(tmp_path, fake_slack, fake_google):
    """The message is posted; the card's post is carried out but its answer never comes: in doubt."""
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "3007"))
    alerts = service(tmp_path, fake_slack, fake_google)
    fake_slack.after_call("chat.postMessage", lambda: fake_slack.slow("chat.postMessage", 8.0, times=1))

    with pytest.raises(ApiUnavailable):  # 503: Pub/Sub redelivers
        alerts.handle_log_entry(failure_entries("3007")[1], deadline=alerts.deadline(25))
    assert alerts.store.get_alert(f"{PROJECT}/3007").post_in_doubt
    [message] = fake_slack.posted()
    assert len(cards_for(fake_slack, message)) == 1  # Slack has both; the service knows neither for sure

    outcome = alerts.handle_log_entry(failure_entries("3007")[1], deadline=alerts.deadline(25))

    assert outcome.status == "posted" and "adopted" in outcome.reason
    assert [m["ts"] for m in fake_slack.posted()] == [message["ts"]]
    [card] = cards_for(fake_slack, message)
    assert alerts.store.get_alert(f"{PROJECT}/3007").diagnosis["card"]["ts"] == card["ts"]
    assert len(fake_slack.calls_to("chat.postMessage")) == 2  # one message, one card: nothing posted twice


def test_a_card_slack_refuses_for_good_leaves_the_alert_standing_without_one(tmp_path, fake_slack, fake_google):
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "3008"))
    alerts = service(tmp_path, fake_slack, fake_google)
    fake_slack.after_call("chat.postMessage", lambda: fake_slack.api_error("chat.postMessage", "invalid_blocks"))

    outcome = alerts.handle_log_entry(failure_entries("3008")[1], deadline=alerts.deadline(25))

    assert outcome.status == "posted"
    record = alerts.store.get_alert(f"{PROJECT}/3008")
    assert record.posted and not record.post_in_doubt and "card" not in record.diagnosis
    later = log_entry(PROJECT, "3008", "RuntimeError: and more", task_name="workerpool0-1", severity="ERROR")
    alerts.handle_log_entry(later, deadline=alerts.deadline(25))  # an update never posts a card
    [message] = fake_slack.posted()
    assert cards_for(fake_slack, message) == [] and len(fake_slack.calls_to("chat.postMessage")) == 2


def test_an_unanswered_post_is_looked_for_by_the_redelivery(tmp_path, fake_slack, fake_google):
    """Too little time left to look right away: the claim is released in doubt, the redelivery adopts."""
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "3003"))
    alerts = service(tmp_path, fake_slack, fake_google)
    fake_slack.slow("chat.postMessage", 3.0, times=1)

    with pytest.raises(ApiUnavailable):  # 503: Pub/Sub redelivers
        alerts.handle_log_entry(failure_entries("3003")[1], deadline=alerts.deadline(2.6))
    assert alerts.store.get_alert(f"{PROJECT}/3003").post_in_doubt
    assert len(fake_slack.posted()) == 1  # Slack has it, the service does not know

    outcome = alerts.handle_log_entry(failure_entries("3003")[1], deadline=alerts.deadline(25))

    assert outcome.status == "posted" and "adopted" in outcome.reason
    [message] = fake_slack.posted()
    # One message, then its card in its thread (looked for first: the message was adopted).
    posts = fake_slack.calls_to("chat.postMessage")
    assert [call.args.get("thread_ts") for call in posts] == [None, message["ts"]]
    assert len(cards_for(fake_slack, message)) == 1 and fake_slack.calls_to("conversations.replies")


def test_when_slack_cannot_be_searched_for_good_the_alert_is_still_posted(tmp_path, fake_slack, fake_google):
    """An app installed before channels:history was added: at-least-once beats never."""
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "3004"))
    alerts = service(tmp_path, fake_slack, fake_google)
    key = f"{PROJECT}/3004"
    alerts.store.claim_post(key, owner="dead-instance", lease_seconds=-1)
    fake_slack.conversation_id(CHANNEL)  # the channel exists
    fake_slack.api_error("conversations.history", "missing_scope", times=5)

    outcome = alerts.handle_log_entry(failure_entries("3004")[1], deadline=alerts.deadline(25))

    assert outcome.status == "posted"
    assert len(alerts_for(fake_slack, "3004")) == 1
    assert fake_slack.calls_to("conversations.history")  # it did try to look first


def test_a_transient_search_failure_posts_nothing_and_asks_for_a_redelivery(tmp_path, fake_slack, fake_google):
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "3005"))
    alerts = service(tmp_path, fake_slack, fake_google)
    key = f"{PROJECT}/3005"
    alerts.store.claim_post(key, owner="dead-instance", lease_seconds=-1)
    fake_slack.conversation_id(CHANNEL)  # the channel exists
    fake_slack.server_error("conversations.history", times=10, status=503)

    with pytest.raises(ApiUnavailable):
        alerts.handle_log_entry(failure_entries("3005")[1], deadline=alerts.deadline(25))

    assert fake_slack.posted() == [] and alerts.store.get_alert(key).post_in_doubt


# ------------------------------------------------------------------------------------------ SIGTERM


def test_sigterm_with_slow_slack_leaves_one_message_per_job_after_the_restart(tmp_path, fake_slack, fake_google):
    """Cloud Run: SIGTERM, then SIGKILL 10 s later. Slack answers posts in 9.5 s; ten pushes are mid-post."""
    jobs = [str(3100 + n) for n in range(10)]
    for job_id in jobs:
        fake_google.seed_job(custom_job_json(PROJECT, REGION, job_id))
    environ = standin_environ(
        tmp_path, fake_slack, fake_google, routing={"default_channel": CHANNEL, "regions": [REGION]}
    )
    bodies = {job_id: envelope(failure_entries(job_id)[1], f"m-{job_id}") for job_id in jobs}
    fake_slack.slow("chat.postMessage", 9.5)
    first = ServeProcess(environ, tmp_path / "first.log")
    second: ServeProcess | None = None
    try:
        first.wait_ready()
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            in_flight = [pool.submit(redeliver, first.url, body, until=0) for body in bodies.values()]
            assert wait_until(lambda: len(fake_slack.calls_to("chat.postMessage")) == len(jobs), timeout=30)
            signalled = time.monotonic()
            first.proc.terminate()  # SIGTERM
            first.proc.wait(timeout=15)
            stopped_in = time.monotonic() - signalled
            for future in in_flight:  # every push was answered (200 adopted, or 503 to redeliver) before the exit
                assert future.result().status_code in (200, 503), future.result().text
        assert stopped_in < 9.0, f"the instance took {stopped_in:.1f} s to stop: Cloud Run kills it at 10 s"
        log = first.log_path.read_text()
        assert "Cancel" not in log  # no request was cut off by uvicorn's graceful-shutdown limit

        second = ServeProcess(environ, tmp_path / "second.log")  # the new instance gets the redeliveries
        second.wait_ready()
        deadline = time.monotonic() + 60
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            answers = list(pool.map(lambda body: redeliver(second.url, body, until=deadline), bodies.values()))
        assert [a.status_code for a in answers] == [200] * len(jobs), [a.text for a in answers]
    finally:
        for server in (first, second):
            if server is not None and server.proc.poll() is None:
                server.stop()
    for job_id in jobs:
        messages = alerts_for(fake_slack, job_id)
        assert len(messages) == 1, f"job {job_id}: {len(messages)} messages"
        cards = cards_for(fake_slack, messages[0])
        assert len(cards) == 1, f"job {job_id}: {len(cards)} cards"  # its card too: once, adopted if in doubt
    assert len(fake_slack.posted()) == len(jobs)


# ------------------------------------------------------------------------------------------ Slack under push load


def test_slack_is_acknowledged_at_once_while_sixty_slow_pushes_are_in_flight(live, fake_slack, fake_google):
    jobs = [str(3200 + n) for n in range(60)]
    for job_id in jobs:
        fake_google.seed_job(custom_job_json(PROJECT, REGION, job_id))
    fake_google.inject(delay=4.0, api="vertex")  # every job look-up takes 4 s

    def lookups() -> int:
        return sum(1 for r in fake_google.requests if "/customJobs/" in r.path)

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        pushes = [
            pool.submit(httpx.post, live.url + "/pubsub/push", json=envelope(failure_entries(j)[1], j), timeout=60)
            for j in jobs
        ]
        assert wait_until(lambda: lookups() >= 30, timeout=20)  # the push workers are all busy waiting
        body = slash_command_body(
            "help", user="U0MEMBER", channel="C0ALERTS", response_url=fake_slack.response_url("t"), trigger_id="t"
        )
        headers = signature_headers(SECRET, body, content_type="application/x-www-form-urlencoded")
        started = time.monotonic()
        answer = httpx.post(live.url + "/slack/events", content=body, headers=headers, timeout=30)
        took = time.monotonic() - started
        fake_google.clear_faults()
        assert all(p.result().status_code in (200, 503) for p in pushes)
    assert answer.status_code == 200 and "/diagnose" in answer.json()["text"]
    assert took < 2.0, f"Slack's acknowledgement took {took:.1f} s (Slack gives up at 3 s)"
