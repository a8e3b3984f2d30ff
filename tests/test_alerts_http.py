"""The alert path over HTTP: Pub/Sub push bodies in, exactly one Slack message per failed job out.

The service runs for real (uvicorn, SQLite store), reaching the local Slack and Vertex AI / Cloud Logging
stand-ins through slack_sdk and google-cloud-aiplatform / google-cloud-logging.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import yaml

from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry
from standins.slack_api import FakeSlackApi
from tests.live_service import LiveService, envelope, standin_environ

PROJECT = "acme-ml"
OOM = (
    'Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of "
    "39.39 GiB of which 1.02 GiB is free."
)
ROUTING = {
    "default_channel": "#ml-alerts",
    "regions": ["us-central1", "europe-west4"],
    "routes": [{"match": {"labels": {"team": "vision"}}, "channel": "#vision-alerts"}],
    "class_channels": {"quota_exhausted": "#ml-platform"},
}


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "trainmedic.yaml"
    path.write_text(yaml.safe_dump(ROUTING))
    return path


@pytest.fixture
def live(
    tmp_path: Path, config_file: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis
) -> Iterator[LiveService]:
    environ = standin_environ(
        tmp_path,
        fake_slack,
        fake_google,
        TRAINMEDIC_CONFIG=str(config_file),
    )
    with LiveService(environ) as service:
        yield service


def push(service: LiveService, data: object, message_id: str) -> httpx.Response:
    return httpx.post(service.url + "/pubsub/push", json=envelope(data, message_id), timeout=60)


def failed_job(fake_google: FakeGoogleApis, job_id: str, *, region: str = "europe-west4", **fields: object) -> None:
    fake_google.seed_job(custom_job_json(PROJECT, region, job_id, **fields))


def entries_for_failure(job_id: str, text: str = OOM, replica: str = "workerpool0-0") -> list[dict]:
    return [
        log_entry(PROJECT, job_id, text, task_name=replica, severity="ERROR", timestamp="2026-11-29T12:00:01Z"),
        log_entry(PROJECT, job_id, "Job failed.", timestamp="2026-11-29T12:00:05Z", insert_id=f"{job_id}-failed"),
    ]


def posts(fake_slack: FakeSlackApi) -> list[dict]:
    """Messages the stand-in accepted (failed attempts that were retried are not messages)."""
    return fake_slack.posted()


def test_failed_job_posts_one_message_in_the_routed_channel(live, fake_slack, fake_google) -> None:
    failed_job(fake_google, "1001", state="JOB_STATE_RUNNING", error=None)
    error, failed = entries_for_failure("1001")
    first = push(live, error, "m1")
    assert first.status_code == 200 and first.json()["status"] == "held"
    assert posts(fake_slack) == []
    failed_job(fake_google, "1001")
    second = push(live, failed, "m2")
    assert second.status_code == 200, second.text
    assert second.json()["status"] == "posted"
    [post] = posts(fake_slack)
    assert post["channel"] == "#vision-alerts"  # the job's labels route it
    assert post["blocks"][0]["type"] == "header" and "ran out of device memory" in post["blocks"][0]["text"]["text"]
    body = json.dumps(post)
    assert "CUDA out of memory" in body and "workerpool0-0" in body and "a2-highgpu-1g" in body
    assert "train-1001" in body  # display name from GetCustomJob
    actions = [b for b in post["blocks"] if b["type"] == "actions"]
    assert {e["value"] for e in actions[0]["elements"]} == {f"{PROJECT}/1001"}
    assert len(post["blocks"]) <= 50 and post["text"]


def test_duplicate_deliveries_and_redeliveries_never_post_twice(live, fake_slack, fake_google) -> None:
    failed_job(fake_google, "1002")
    error, failed = entries_for_failure("1002")
    for round_ in range(3):
        assert push(live, error, f"e{round_}").status_code == 200
        assert push(live, failed, f"f{round_}").status_code == 200
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda i: push(live, failed, f"c{i}"), range(16)))
    assert all(a.status_code in (200, 503) for a in answers)
    [post] = posts(fake_slack)
    assert fake_slack.calls_to("chat.update") == []  # nothing new: no edits either
    [card] = fake_slack.replies(post["channel"], post["ts"])  # the full card, the thread's first reply, once
    assert card["metadata"] == {"event_type": "trainmedic_card", "event_payload": {"job_key": f"{PROJECT}/1002"}}
    assert len(fake_slack.calls_to("chat.postMessage")) == 2
    record = live.services.store.get_alert(f"{PROJECT}/1002")
    assert record.diagnosis["card"]["ts"] == card["ts"]  # stored with the alert


def test_later_evidence_updates_the_same_message(live, fake_slack, fake_google) -> None:
    failed_job(fake_google, "1003")
    for i, entry in enumerate(entries_for_failure("1003", text="RuntimeError: something odd happened")):
        push(live, entry, f"a{i}")
    [post] = posts(fake_slack)
    later = log_entry(
        PROJECT,
        "1003",
        OOM,
        task_name="workerpool0-0",
        severity="ERROR",
        timestamp="2026-11-29T12:00:00Z",
        insert_id="late-oom",
    )
    [card] = fake_slack.replies(post["channel"], post["ts"])
    answer = push(live, later, "late")
    assert answer.json()["status"] == "updated"
    update, card_update = fake_slack.calls_to("chat.update")  # the message, then its card in the thread
    assert update.args["ts"] == answer.json()["ts"] == post["ts"]
    assert "ran out of device memory" in update.args["blocks"][0]["text"]["text"]
    assert card_update.args["ts"] == card["ts"]
    [card] = fake_slack.replies(post["channel"], post["ts"])  # still the one card, now in sync
    assert "ran out of device memory" in card["blocks"][0]["text"]["text"] and "*Avoid*" in json.dumps(card)
    assert len(posts(fake_slack)) == 1
    assert push(live, later, "late").json()["status"] == "duplicate"  # a redelivery changes neither
    assert len(fake_slack.calls_to("chat.update")) == 2


def test_worker_restart_that_recovers_is_never_reported(live, fake_slack, fake_google) -> None:
    failed_job(fake_google, "1004", state="JOB_STATE_RUNNING", error=None, endTime=None)
    error, _ = entries_for_failure("1004")
    assert push(live, error, "r1").json()["status"] == "held"
    fake_google.seed_job(custom_job_json(PROJECT, "europe-west4", "1004", state="JOB_STATE_SUCCEEDED", error=None))
    # A restart takes minutes: by the next error entry the service's short-lived job cache (10 s) has expired.
    live.services.alerts.job_cache_seconds = 0.0
    restart_error = dict(error, insertId="second-attempt")
    answer = push(live, restart_error, "r2").json()
    assert answer["status"] == "recovered", answer
    assert answer["reason"] == "job is JOB_STATE_SUCCEEDED: not a failure"
    assert live.wait_quiet()
    assert posts(fake_slack) == []


def test_log_text_cannot_ping_or_forge_links(live, fake_slack, fake_google) -> None:
    failed_job(fake_google, "1005", displayName="<!channel> <https://evil.example|click> & co")
    hostile = "RuntimeError: CUDA out of memory <!channel> <!here> <@U999> <https://evil.example|login> & more"
    for i, entry in enumerate(entries_for_failure("1005", text=hostile)):
        push(live, entry, f"x{i}")
    [post] = posts(fake_slack)
    body = json.dumps(post)
    for raw in ("<!channel>", "<!here>", "<@U999>", "<https://evil.example|"):
        assert raw not in body
    assert "&lt;!channel&gt;" in body


def test_vertex_unreachable_still_posts_and_says_what_is_missing(live, fake_slack, fake_google) -> None:
    fake_google.inject(status=503, api="vertex")
    for i, entry in enumerate(entries_for_failure("1006")):
        push(live, entry, f"v{i}")
    [post] = posts(fake_slack)
    assert post["channel"] == "#ml-alerts"  # no labels known: default route
    assert "Vertex AI unavailable" in json.dumps(post) or "job details" in json.dumps(post)


def test_missing_permission_is_named(live, fake_slack, fake_google) -> None:
    fake_google.inject(status=403, api="vertex", permission="aiplatform.customJobs.get")
    for i, entry in enumerate(entries_for_failure("1007")):
        push(live, entry, f"p{i}")
    [post] = posts(fake_slack)
    assert "aiplatform.customJobs.get" in json.dumps(post)


def test_class_channel_takes_platform_failures(live, fake_slack, fake_google) -> None:
    failed_job(fake_google, "1008")
    quota = (
        "The following quota metrics exceed quota limits: "
        "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"
    )
    for i, entry in enumerate(entries_for_failure("1008", text=quota, replica="service")):
        push(live, entry, f"q{i}")
    [post] = posts(fake_slack)
    assert post["channel"] == "#ml-platform"
    assert "custom_model_training_nvidia_a100_gpus" in json.dumps(post)


def test_slack_rate_limit_is_retried(live, fake_slack, fake_google) -> None:
    failed_job(fake_google, "1009")
    fake_slack.rate_limit("chat.postMessage", times=1, retry_after=0)
    for i, entry in enumerate(entries_for_failure("1009")):
        assert push(live, entry, f"s{i}").status_code == 200
    assert len(posts(fake_slack)) == 1


def test_slack_outage_answers_503_and_the_redelivery_posts_once(live, fake_slack, fake_google) -> None:
    failed_job(fake_google, "1010", state="JOB_STATE_RUNNING", error=None)
    error, failed = entries_for_failure("1010")
    push(live, error, "o1")
    failed_job(fake_google, "1010")
    fake_slack.server_error("chat.postMessage", times=10, status=500)
    assert push(live, failed, "o2").status_code == 503
    for _attempt in range(12):
        answer = push(live, failed, "o2")
        if answer.status_code == 200:
            break
    assert answer.status_code == 200 and answer.json()["status"] == "posted"
    assert push(live, failed, "o2").json()["status"] == "duplicate"
    assert len(posts(fake_slack)) == 1


def test_sixty_four_replica_burst_posts_once(live, fake_slack, fake_google) -> None:
    failed_job(fake_google, "1011", jobSpec={**custom_job_json(PROJECT, "x", "1")["jobSpec"]})
    burst = [
        log_entry(
            PROJECT,
            "1011",
            OOM
            if r == 0
            else "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)"
            " ran for 600000 milliseconds before timing out.",
            task_name=f"workerpool{1 if r else 0}-{r}",
            severity="ERROR",
            timestamp=f"2026-11-29T12:{1 + r // 60:02d}:{r % 60:02d}Z",
            insert_id=f"b{r}",
        )
        for r in range(64)
    ]
    burst.append(log_entry(PROJECT, "1011", "Job failed.", timestamp="2026-11-29T12:09:00Z", insert_id="bf"))
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda pair: push(live, pair[1], f"burst{pair[0]}"), enumerate(burst)))
    retry = [i for i, a in enumerate(answers) if a.status_code == 503]
    for i in retry:  # Pub/Sub would redeliver these
        assert push(live, burst[i], f"burst{i}").status_code == 200
    assert all(a.status_code in (200, 503) for a in answers)
    [post] = posts(fake_slack)  # its current state, after any updates
    final = json.dumps(post)
    assert "ran out of device memory" in final
    assert "workerpool0-0" in final


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "not JSON"),
        (b"{}", "no 'message'"),
        (json.dumps({"message": {"messageId": "1"}}).encode(), "has no data"),
        (json.dumps({"message": {"messageId": "1", "data": "%%%"}}).encode(), "not base64"),
        (json.dumps(envelope("just a string", "2")).encode(), "neither"),
        (json.dumps(envelope({"resource": {"type": "ml_job", "labels": {}}}, "3")).encode(), "job_id"),
    ],
)
def test_malformed_pushes_are_acknowledged_with_a_reason(live, fake_slack, body: bytes, reason: str) -> None:
    answer = httpx.post(live.url + "/pubsub/push", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 200
    assert answer.json()["status"] in ("malformed", "irrelevant")
    assert reason in answer.json()["reason"]
    assert posts(fake_slack) == []


def test_entries_of_other_resources_are_irrelevant(live, fake_slack) -> None:
    entry = {"resource": {"type": "cloud_run_revision", "labels": {}}, "textPayload": "trainmedic log line"}
    answer = push(live, entry, "own-log")
    assert answer.json()["status"] == "irrelevant"


INCIDENT_URL = "https://console.cloud.google.com/monitoring/alerting/incidents/0.abc?project=acme-ml"


def buttons(message: dict) -> list[str]:
    return [e["text"]["text"] for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]


def test_monitoring_incident_on_a_running_job_says_what_it_is_and_is_updated_when_it_closes(
    live, fake_slack, fake_google
) -> None:
    failed_job(fake_google, "1012", state="JOB_STATE_RUNNING", error=None, endTime=None)
    incident = {
        "version": "1.2",
        "incident": {
            "incident_id": "0.abc",
            "state": "open",
            "policy_name": "Low GPU utilization on training jobs",
            "condition_name": "GPU duty cycle below 20%",
            "summary": "GPU utilization for custom job 1012 is below the threshold of 20.000 with a value of 3.000.",
            "url": INCIDENT_URL,
            "resource": {
                "type": "aiplatform.googleapis.com/CustomJob",
                "labels": {"project_id": PROJECT, "job_id": "1012"},
            },
            "started_at": 1764417600,
        },
    }
    answer = push(live, incident, "inc1")
    assert answer.json()["status"] == "posted", answer.text
    [post] = posts(fake_slack)
    body = json.dumps(post)
    assert "Input pipeline" in body or "input_pipeline" in body  # what the logs show so far, still diagnosed
    header = post["blocks"][0]["text"]["text"]
    assert header == ":rotating_light: Open incident on running job train-1012: Low GPU utilization on training jobs"
    assert "Training job failed" not in body and not post["text"].startswith("Training job failed")
    assert post["text"] == "Incident open on running job train-1012: Low GPU utilization on training jobs"
    assert "*Open Cloud Monitoring incident* on a running job: the job has not failed." in body
    assert "Policy *Low GPU utilization on training jobs*" in body
    assert f"<{INCIDENT_URL}|View the incident in Cloud Monitoring>" in body
    assert buttons(post) == ["Acknowledge"]  # no Rerun: the job has not failed

    closed = {**incident, "incident": {**incident["incident"], "state": "closed", "ended_at": 1764418500}}
    answer = push(live, closed, "inc2")
    assert answer.json()["status"] == "updated", answer.text
    [post] = posts(fake_slack)  # the same message, updated in place
    assert post["blocks"][0]["text"]["text"].startswith(":white_check_mark: Incident closed on running job train-1012")
    assert "*Cloud Monitoring incident closed* <!date^1764418500^" in json.dumps(post)
    assert post["text"] == "Incident closed on running job train-1012: Low GPU utilization on training jobs"
    assert buttons(post) == ["Acknowledge"]
    assert push(live, closed, "inc3").json()["status"] == "duplicate"  # a redelivery changes nothing

    other = {**closed, "incident": {**closed["incident"], "incident_id": "0.zzz", "resource": {"labels": {}}}}
    other["incident"]["scoping_project_id"] = PROJECT
    unknown = push(live, other, "inc4").json()
    assert unknown["status"] == "irrelevant" and "no alert of incident 0.zzz to update" in unknown["reason"]


def test_a_job_with_an_open_incident_that_then_fails_becomes_a_failure_alert_with_rerun(
    live, fake_slack, fake_google
) -> None:
    failed_job(fake_google, "1014", state="JOB_STATE_RUNNING", error=None, endTime=None)
    incident = {
        "incident_id": "0.def",
        "state": "open",
        "policy_name": "Low GPU utilization on training jobs",
        "resource": {"labels": {"project_id": PROJECT, "job_id": "1014"}},
        "started_at": 1764417600,
    }
    assert push(live, {"version": "1.2", "incident": incident}, "inc-1014").json()["status"] == "posted"
    assert buttons(posts(fake_slack)[0]) == ["Acknowledge"]

    failed_job(fake_google, "1014")
    for index, entry in enumerate(entries_for_failure("1014")):
        push(live, entry, f"f-1014-{index}")

    [post] = posts(fake_slack)
    assert not post["blocks"][0]["text"]["text"].startswith(":rotating_light:")
    assert buttons(post) == ["Acknowledge", "Rerun with changes"]  # accelerator_oom


def test_a_post_the_store_cannot_record_is_withdrawn_so_the_redelivery_posts_once(live, fake_slack, fake_google):
    """Slack accepted the post but the store then failed: keeping both would mean two messages later."""
    import sqlite3

    failed_job(fake_google, "1013")
    held: dict = {}

    def lock_the_store() -> None:  # another writer holds the database while the service records its post
        held["db"] = sqlite3.connect(live.settings.sqlite_path, timeout=1, check_same_thread=False)
        held["db"].execute("BEGIN EXCLUSIVE")

    def unlock_the_store() -> None:
        held["db"].rollback()
        held["db"].close()

    fake_slack.after_call("chat.postMessage", lock_the_store)
    fake_slack.after_call("chat.delete", unlock_the_store)
    _, failed = entries_for_failure("1013")
    first = push(live, failed, "w1")
    assert first.status_code == 503 and first.json()["status"] == "retry"
    card_deleted, deleted = fake_slack.calls_to("chat.delete")  # its card first, then the message
    assert float(card_deleted.args["ts"]) > float(deleted.args["ts"])
    assert fake_slack.posted() == []  # the unrecorded message was withdrawn
    assert fake_slack.replies(deleted.args["channel"], deleted.args["ts"]) == []  # and its card: no stub left
    second = push(live, failed, "w1")  # Pub/Sub redelivers
    assert second.status_code == 200 and second.json()["status"] == "posted"
    [post] = fake_slack.posted()
    assert post["ts"] != deleted.args["ts"]
    assert len(fake_slack.replies(post["channel"], post["ts"])) == 1
