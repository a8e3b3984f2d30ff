"""Jobs that were never created: a refused Vertex AI create call, pushed as an Admin Activity audit-log entry,
gives one message to the caller (found in Slack by email) with the fix filled in; a CI loop retrying the same
call posts nothing more; without a caller Slack knows, the routed or default channel gets it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from standins.google_apis import FakeGoogleApis
from standins.google_apis import refused_create as refused_create_entry
from standins.slack_api import FakeSlackApi
from tests.live_service import LiveService, standin_environ
from tests.test_alerts_http import push

PROJECT, REGION = "acme-ml", "us-central1"
CALLER = "dana@acme.example"
QUOTA = (
    "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"
)
ACT_AS = (
    "You do not have permission to act as service_account: trainer@acme-ml.iam.gserviceaccount.com. "
    "(or it may not exist)."
)


@pytest.fixture
def live(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis) -> Iterator[LiveService]:
    config = tmp_path / "trainmedic.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "default_channel": "#ml-alerts",
                "regions": [REGION],
                "routes": [{"match": {"labels": {"team": "vision"}}, "channel": "#vision-alerts"}],
            }
        )
    )
    environ = standin_environ(
        tmp_path,
        fake_slack,
        fake_google,
        TRAINMEDIC_CONFIG=str(config),
    )
    with LiveService(environ) as service:
        yield service


def refused_create(message: str, *, caller: str | None = CALLER, request: dict | None = None, **kw: object) -> dict:
    """An audit-log entry of a refused create call in this test's project and region (standins.google_apis)."""
    return refused_create_entry(PROJECT, REGION, message, caller=caller, request_job=request, **kw)  # type: ignore[arg-type]


A100_JOB = {
    "displayName": "bert-finetune",
    "labels": {"team": "vision"},
    "jobSpec": {
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": "a2-highgpu-4g",
                    "acceleratorType": "NVIDIA_TESLA_A100",
                    "acceleratorCount": 4,
                },
                "replicaCount": "2",
                "containerSpec": {"imageUri": "us-docker.pkg.dev/acme-ml/train/bert:1"},
            }
        ],
        "serviceAccount": "trainer@acme-ml.iam.gserviceaccount.com",
    },
}


def test_a_refused_quota_request_reaches_its_caller_once_with_the_filled_quota_request(live, fake_slack) -> None:
    fake_slack.seed_user(CALLER, "U0DANA")
    answers = [
        push(live, refused_create(QUOTA, insert_id=f"audit-{n}", request=A100_JOB), f"m-{n}").json()
        for n in range(10)  # a CI loop retrying every minute
    ]
    assert answers[0]["status"] == "posted", answers[0]
    assert answers[0]["failure_class"] == "quota_exhausted"
    assert {a["status"] for a in answers[1:]} <= {"updated", "unchanged", "duplicate"}
    assert live.wait_quiet()
    [message] = fake_slack.posted()
    assert message["channel"] == "D0DANA"  # the app's DM with the caller, found by email
    blocks = json.dumps(message["blocks"]) + json.dumps(fake_slack.replies(message["channel"], message["ts"]))
    assert "quotas preferences create" in blocks
    assert "CustomModelTrainingA100GPUsPerProjectPerRegion" in blocks
    assert "--preferred-value=8" in blocks  # 4 accelerators x 2 replicas, from the refused request
    assert "region=us-central1" in blocks
    buttons = [e["text"]["text"] for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert buttons == ["Acknowledge"]  # nothing was created: nothing to rerun


def test_a_refused_act_as_grants_the_caller_act_as_on_that_account(live, fake_slack) -> None:
    fake_slack.seed_user(CALLER, "U0DANA")
    answer = push(live, refused_create(ACT_AS, code=3), "act-as").json()
    assert answer["status"] == "posted" and answer["failure_class"] == "permission_denied", answer
    [message] = fake_slack.posted()
    everything = json.dumps(message["blocks"]) + json.dumps(fake_slack.replies(message["channel"], message["ts"]))
    assert (
        "iam service-accounts add-iam-policy-binding projects/-/serviceAccounts/trainer@acme-ml.iam.gserviceaccount.com"
        in everything
    )
    assert f"--member=user:{CALLER}" in everything and "roles/iam.serviceAccountUser" in everything


def test_without_a_caller_slack_knows_the_routed_channel_is_told(live, fake_slack) -> None:
    answer = push(live, refused_create(QUOTA, request=A100_JOB), "unknown-caller").json()
    assert answer["status"] == "posted", answer
    assert answer["channel"] != "D0DANA"
    [message] = fake_slack.posted()
    assert message["channel"] == "#vision-alerts"  # routed by the labels of the refused request
    no_caller = refused_create(QUOTA, caller=None, insert_id="anonymous")
    assert push(live, no_caller, "no-caller").json()["status"] == "posted"
    assert fake_slack.posted()[-1]["channel"] == "#ml-alerts"


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (refused_create(QUOTA, code=0), "succeeded"),
        (refused_create(QUOTA, method="google.cloud.aiplatform.v1.JobService.GetCustomJob"), "not a job creation"),
    ],
)
def test_audit_entries_that_are_no_refused_creation_are_irrelevant(live, fake_slack, entry: dict, reason: str) -> None:
    answer = push(live, entry, "other").json()
    assert answer["status"] == "irrelevant" and reason in answer["reason"]
    assert fake_slack.posted() == []


def test_the_sink_filter_selects_refused_creations(live) -> None:
    from tests.test_deploy import deploy_setup, matches

    assert matches(deploy_setup.SINK_FILTER, refused_create(QUOTA))
    assert not matches(deploy_setup.SINK_FILTER, refused_create(QUOTA, code=0))
    assert not matches(
        deploy_setup.SINK_FILTER,
        refused_create(QUOTA, method="google.cloud.aiplatform.v1.JobService.CancelCustomJob"),
    )
