"""Stuck jobs over HTTP: POST /tasks/scan on the real service, the real aiplatform client listing CustomJobs
from the Vertex stand-in (customJobs.list with filter and pageToken), Slack through the stand-in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml

from bot.alerting.stuck_explain import explain, flex_start_waiting
from bot.gcp.vertex_jobs import VertexJobsClient
from bot.models import JobInfo, LogLine, WorkerPool
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry, parse_job_filter
from standins.oidc import OidcIssuer
from standins.slack_api import FakeSlackApi
from tests.gcloud_parser import check_commands
from tests.live_service import LiveService, standin_environ

PROJECT, REGION = "acme-ml", "us-central1"
SCHEDULER_SA = f"trainmedic-scheduler@{PROJECT}.iam.gserviceaccount.com"
AUDIENCE = "https://trainmedic-abc-uc.a.run.app"


def _stamp(minutes_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def waiting_job(job_id: str, state: str, minutes_ago: float, **fields: object) -> dict:
    job = custom_job_json(
        PROJECT,
        REGION,
        job_id,
        state=state,
        error=None,
        createTime=_stamp(minutes_ago),
        updateTime=_stamp(minutes_ago),
        startTime=None,
        endTime=None,
        **fields,
    )
    job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorCount"] = 8
    job["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = "2"
    return {k: v for k, v in job.items() if v is not None}


@pytest.fixture
def live(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis) -> Iterator[LiveService]:
    config = tmp_path / "trainmedic.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "default_channel": "#ml-alerts",
                "default_project": PROJECT,
                "regions": [REGION, "europe-west4"],
                "routes": [{"match": {"labels": {"team": "vision"}}, "channel": "#vision-alerts"}],
            }
        )
    )
    environ = standin_environ(
        tmp_path,
        fake_slack,
        fake_google,
        TRAINMEDIC_CONFIG=str(config),
        STUCK_QUEUED_MINUTES="30",
        STUCK_PENDING_MINUTES="30",
    )
    with LiveService(environ) as service:
        yield service


def scan(service: LiveService, **headers: str) -> httpx.Response:
    return httpx.post(service.url + "/tasks/scan", headers=headers, timeout=60)


def test_a_job_queued_past_the_threshold_gets_one_message_then_an_update(
    live, fake_slack, fake_google, tmp_path
) -> None:
    fake_google.seed_job(waiting_job("5001", "JOB_STATE_QUEUED", minutes_ago=45))
    fake_google.seed_job(waiting_job("5002", "JOB_STATE_QUEUED", minutes_ago=5))  # not yet stuck
    fake_google.seed_job(waiting_job("5003", "JOB_STATE_RUNNING", minutes_ago=300))
    answer = scan(live)
    assert answer.status_code == 200, answer.text
    assert answer.json()["posted"] == 1
    [post] = fake_slack.posted()
    assert post["channel"] == "#vision-alerts"
    body = json.dumps(post)
    assert "Waiting for quota" in body and "5001" in body and "5002" not in body
    quota = [b["text"]["text"] for b in post["blocks"] if "quotas preferences create" in json.dumps(b)]
    command = quota[0].split("```")[1].strip()
    assert "--quota-id=CustomModelTrainingA100GPUsPerProjectPerRegion" in command
    assert "--preferred-value=16" in command and f"--dimensions=region={REGION}" in command
    commands = [b["text"]["text"].split("```")[1].strip() for b in post["blocks"] if "gcloud " in json.dumps(b)]
    results = check_commands([c.replace("YOUR_EMAIL", "me@example.com") for c in commands], tmp_path / "gcloud")
    assert len(results) == 2 and all(r.parsed for r in results), results  # the real gcloud parser accepts them
    lists = [r for r in fake_google.requests if r.method == "GET" and r.path.endswith("/customJobs")]
    assert {r.path.split("/")[5] for r in lists} == {REGION, "europe-west4"}  # every configured region
    assert 'state="JOB_STATE_QUEUED" OR state="JOB_STATE_PENDING"' in lists[0].query["filter"][0]

    for _ in range(10):
        assert scan(live).json()["posted"] == 0
    assert len(fake_slack.posted()) == 1 and fake_slack.calls_to("chat.update") == []

    fake_google.seed_job(waiting_job("5001", "JOB_STATE_RUNNING", minutes_ago=45))
    assert scan(live).json()["updated"] == 1
    [update] = fake_slack.calls_to("chat.update")
    assert update.args["ts"] == post["ts"] and "started running" in json.dumps(update.args["blocks"])
    for _ in range(3):
        assert scan(live).json() | {"listed": 0} == {
            "listed": 0,
            "stuck": 0,
            "posted": 0,
            "updated": 0,
            "waiting_as_asked": 0,
            "reruns_reported": 0,
            "problems": [],
        }
    assert len(fake_slack.calls_to("chat.update")) == 1 and len(fake_slack.posted()) == 1


def test_a_flex_start_job_inside_its_wait_is_not_stuck(live, fake_slack, fake_google) -> None:
    flex = waiting_job("5101", "JOB_STATE_PENDING", minutes_ago=180)
    flex["jobSpec"]["scheduling"] = {"strategy": "FLEX_START", "maxWaitDuration": "86400s"}
    fake_google.seed_job(flex)
    report = scan(live).json()
    assert report["waiting_as_asked"] == 1 and report["posted"] == 0
    assert fake_slack.posted() == []


def test_pending_with_a_stockout_or_an_image_pull_failure_says_why(live, fake_slack, fake_google) -> None:
    fake_google.seed_job(waiting_job("5201", "JOB_STATE_PENDING", minutes_ago=60))
    fake_google.seed_job(waiting_job("5202", "JOB_STATE_PENDING", minutes_ago=60))
    fake_google.seed_log_entries(
        [
            log_entry(PROJECT, "5201", "Resources are insufficient in region: us-central1.", timestamp=_stamp(50)),
            log_entry(
                PROJECT, "5202", "Failed to pull image us-docker.pkg.dev/p/train/trainer:1", timestamp=_stamp(50)
            ),
        ]
    )
    assert scan(live).json()["posted"] == 2
    bodies = {json.dumps(p) for p in fake_slack.posted()}
    assert any("Stockout" in b and "5201" in b and "quotas" not in b for b in bodies)
    assert any("Image cannot be pulled" in b and "5202" in b for b in bodies)


def test_the_list_stand_in_pages_and_filters_like_the_api(fake_google) -> None:
    for index in range(7):
        fake_google.seed_job(waiting_job(f"60{index:02d}", "JOB_STATE_QUEUED", minutes_ago=60 + index))
    fake_google.seed_job(waiting_job("6100", "JOB_STATE_FAILED", minutes_ago=60))
    client = VertexJobsClient(endpoint=fake_google.base_url, timeout=5)
    cutoff = _stamp(62.5)
    listed = client.list_jobs_raw(
        project=PROJECT,
        region=REGION,
        filter=f'(state="JOB_STATE_QUEUED" OR state="JOB_STATE_PENDING") AND create_time<"{cutoff}"',
    )
    assert sorted(j["name"].rsplit("/", 1)[1] for j in listed) == ["6003", "6004", "6005", "6006"]
    assert all(j["state"] == "JOB_STATE_QUEUED" for j in listed)  # enum names back from the client
    paged = client.list_jobs_raw(project=PROJECT, region=REGION, filter="", max_jobs=8)
    assert len(paged) == 8
    with pytest.raises(ValueError):
        parse_job_filter('update_time<"2026-01-01T00:00:00Z"')  # not a filter field of customJobs.list
    assert parse_job_filter('state="JOB_STATE_QUEUED" AND labels.team="vision"')(
        waiting_job("1", "JOB_STATE_QUEUED", 1)
    )


def test_explanations_and_flex_start_limits() -> None:
    now = datetime.now(UTC)
    job = JobInfo(project=PROJECT, region=REGION, job_id="1", state="JOB_STATE_PENDING", worker_pools=[WorkerPool()])
    assert explain(job, "pending", 4000, [], spot=False).reason == "unknown"
    quota = LogLine(text="Quota 'NVIDIA_A100_GPUS' exceeded. Limit: 0.0 in region us-central1.")
    assert explain(job, "pending", 4000, [quota], spot=False).reason == "quota"
    raw = {"createTime": _stamp(60 * 30), "jobSpec": {"scheduling": {"strategy": "FLEX_START"}}}
    assert not flex_start_waiting(raw, now)  # past the default 24 h
    raw["jobSpec"]["scheduling"]["maxWaitDuration"] = "0s"
    assert flex_start_waiting(raw, now)  # 0: wait forever


def test_scan_tokens_are_verified_like_pushes(tmp_path: Path, fake_slack, fake_google) -> None:
    with OidcIssuer() as issuer:
        environ = standin_environ(
            tmp_path,
            fake_slack,
            fake_google,
            GOOGLE_CLOUD_PROJECT=PROJECT,
            PUBSUB_VERIFY_TOKEN="true",
            PUBSUB_PUSH_AUDIENCE=AUDIENCE,
            PUBSUB_PUSH_SERVICE_ACCOUNT=f"push@{PROJECT}.iam.gserviceaccount.com",
            SCHEDULER_SERVICE_ACCOUNT=SCHEDULER_SA,
            OIDC_CERTS_URL=issuer.certs_url,
        )
        with LiveService(environ) as live:
            assert scan(live).status_code == 401
            pusher = issuer.mint(audience=AUDIENCE, email=f"push@{PROJECT}.iam.gserviceaccount.com")
            assert scan(live, authorization=f"Bearer {pusher}").status_code == 403  # not the scheduler's account
            token = issuer.mint(audience=AUDIENCE, email=SCHEDULER_SA)
            answer = scan(live, authorization=f"Bearer {token}")
            assert answer.status_code == 200 and answer.json()["problems"] == []


def test_when_a_stuck_job_fails_its_failure_alert_takes_over_the_same_message(live, fake_slack, fake_google) -> None:
    from tests.live_service import envelope

    fake_google.seed_job(waiting_job("5101", "JOB_STATE_QUEUED", minutes_ago=45))
    assert scan(live).json()["posted"] == 1
    [stuck] = fake_slack.posted()
    # Vertex AI gives up on the job: it fails, and its failure comes through the sink like any other
    fake_google.seed_job(waiting_job("5101", "JOB_STATE_FAILED", minutes_ago=45))
    fake_google.seed_log_entries(
        [
            log_entry(
                PROJECT,
                "5101",
                "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
                task_name="workerpool0-0",
                severity="ERROR",
                insert_id="5101-oom",
            )
        ]
    )
    failed = log_entry(PROJECT, "5101", "Job failed.", insert_id="5101-failed")
    answer = httpx.post(live.url + "/pubsub/push", json=envelope(failed, "m-5101"), timeout=60).json()
    assert answer["status"] == "posted", answer
    [message] = fake_slack.posted()  # still one message: the failure alert took over the stuck-job message
    assert message["ts"] == stuck["ts"] == answer["ts"]
    assert "Waiting for quota" not in json.dumps(message["blocks"])
    assert "ran out of device memory" in json.dumps(message["blocks"])
    [card] = fake_slack.replies(fake_slack.conversation_id(message["channel"]), message["ts"])
    assert card["metadata"]["event_type"] == "trainmedic_card"
    for _ in range(3):  # later scans leave the failure alert alone
        assert scan(live).json()["updated"] == 0
    assert "ran out of device memory" in json.dumps(fake_slack.posted()[0]["blocks"])


def test_a_pipeline_run_waiting_past_the_threshold_gets_one_message_then_an_update(
    live, fake_slack, fake_google
) -> None:
    from standins.google_apis import pipeline_job_json

    def run(run_id: str, state: str, minutes_ago: float) -> dict:
        stamp = _stamp(minutes_ago)
        job = pipeline_job_json(PROJECT, REGION, run_id, state=state, error=None, createTime=stamp, updateTime=stamp)
        job.pop("jobDetail")
        return {**job, "labels": {"team": "vision"}}

    fake_google.seed_job(run("nightly-etl-20261130010000", "PIPELINE_STATE_QUEUED", minutes_ago=50))
    fake_google.seed_job(run("nightly-etl-20261130020000", "PIPELINE_STATE_QUEUED", minutes_ago=5))  # not yet
    fake_google.seed_job(run("nightly-etl-20261130030000", "PIPELINE_STATE_RUNNING", minutes_ago=300))
    assert scan(live).json()["posted"] == 1
    [post] = fake_slack.posted()
    body = json.dumps(post)
    assert "Pipeline run not started" in body and "nightly-etl-20261130010000" in body
    assert "nightly-etl-20261130020000" not in body and "/pipelines/runs/nightly-etl-20261130010000" in body
    assert post["channel"] == "#vision-alerts"  # routed by the run's labels
    for _ in range(5):
        assert scan(live).json()["posted"] == 0
    fake_google.seed_job(run("nightly-etl-20261130010000", "PIPELINE_STATE_RUNNING", minutes_ago=50))
    assert scan(live).json()["updated"] == 1
    [update] = fake_slack.calls_to("chat.update")
    assert update.args["ts"] == post["ts"] and "started running" in json.dumps(update.args["blocks"])
    assert scan(live).json()["updated"] == 0
