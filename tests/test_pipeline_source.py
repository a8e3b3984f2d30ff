"""Vertex AI Pipelines as an alert source, driven through the same push path and stand-ins as CustomJobs: a failed
pipeline run gives one message naming the failed task and its diagnosis (made from the task's CustomJob and its
logs); the task's own CustomJob failure does not post a second message; /diagnose reads pipeline runs too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.chat.diagnose import JobDiagnoser
from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import load_knowledge
from bot.gcp.cloud_logs import CloudLoggingClient
from bot.gcp.pipeline_jobs import VertexPipelinesClient
from bot.gcp.vertex_jobs import VertexJobsClient
from bot.jobs.identity import JobKind
from bot.jobs.reference import parse_job_reference
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry, pipeline_event, pipeline_job_json
from standins.http_server import wait_until
from standins.slack_api import FakeSlackApi
from tests.live_service import LiveService, standin_environ
from tests.test_alerts_http import OOM, push

PROJECT, REGION = "acme-ml", "europe-west4"
RERUNNER = "U0RERUN01"
RUN = "train-pipeline-20261130101500"
TASK_JOB = "5005"
ROUTING = {
    "default_channel": "#ml-alerts",
    "regions": ["us-central1", REGION],
    "routes": [{"match": {"labels": {"team": "recsys"}}, "channel": "#recsys-alerts", "rerun_allowed": [RERUNNER]}],
}


@pytest.fixture
def live(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis) -> Iterator[LiveService]:
    environ = standin_environ(tmp_path, fake_slack, fake_google, routing=ROUTING)
    with LiveService(environ) as service:
        yield service


def seed_failed_run(fake_google: FakeGoogleApis) -> list[dict]:
    """A pipeline run whose task `train-model` ran as CustomJob 5005 and ran out of GPU memory."""
    fake_google.seed_job(
        pipeline_job_json(
            PROJECT,
            REGION,
            RUN,
            failed_tasks={"train-model": TASK_JOB},
            labels={"team": "recsys", "vertex-ai-pipelines-run-billing-id": "4242"},
        )
    )
    fake_google.seed_job(
        custom_job_json(PROJECT, REGION, TASK_JOB, labels={"vertex-ai-pipelines-run-billing-id": "4242"})
    )
    task_logs = [
        log_entry(
            PROJECT,
            TASK_JOB,
            OOM,
            task_name="workerpool0-0",
            severity="ERROR",
            timestamp="2026-02-23T23:57:00Z",
            insert_id="oom",
        ),
        log_entry(PROJECT, TASK_JOB, "Job failed.", timestamp="2026-02-23T23:57:30Z", insert_id="task-failed"),
    ]
    fake_google.seed_log_entries(task_logs)
    return task_logs


def test_a_failed_pipeline_posts_once_naming_its_failed_task_and_diagnosis(live, fake_slack, fake_google) -> None:
    task_logs = seed_failed_run(fake_google)
    # The task's CustomJob fails first: its entries come through the CustomJob sink, and are the pipeline's.
    for index, entry in enumerate(task_logs):
        answer = push(live, entry, f"task-{index}").json()
        assert answer["status"] in ("owned", "held"), answer
    assert answer["status"] == "owned" and "Pipelines" in answer["reason"]
    assert fake_slack.posted() == []

    answer = push(live, pipeline_event(PROJECT, REGION, RUN, "PIPELINE_STATE_FAILED"), "run-failed").json()
    assert answer["status"] == "posted", answer
    assert answer["job_key"] == f"{PROJECT}/pipelineJobs/{RUN}"
    assert answer["failure_class"] == "accelerator_oom"  # from the task's own logs, fetched from Cloud Logging
    [message] = fake_slack.posted()
    assert message["channel"] == "#recsys-alerts"  # routed by the pipeline's labels
    header = message["blocks"][0]["text"]["text"]
    assert "Pipeline" in header and "train-model" in header
    text = json.dumps(message["blocks"])
    assert RUN in text and TASK_JOB in text
    buttons = [e["text"]["text"] for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert buttons == ["Acknowledge"]  # a pipeline run is rerun from the console

    # Redeliveries and the task's later entries change nothing and post nothing.
    assert (
        push(live, pipeline_event(PROJECT, REGION, RUN, "PIPELINE_STATE_FAILED"), "run-failed").json()["status"]
        == "duplicate"
    )
    assert push(live, task_logs[1], "task-again").json()["status"] in ("owned", "duplicate")
    assert live.wait_quiet()
    assert len(fake_slack.posted()) == 1


def test_a_pipeline_that_succeeds_is_never_reported(live, fake_slack, fake_google) -> None:
    fake_google.seed_job(pipeline_job_json(PROJECT, REGION, RUN, state="PIPELINE_STATE_SUCCEEDED", error=None))
    answer = push(live, pipeline_event(PROJECT, REGION, RUN, "PIPELINE_STATE_SUCCEEDED"), "ok").json()
    assert answer["status"] == "recovered", answer
    running = pipeline_job_json(PROJECT, REGION, RUN + "1", state="PIPELINE_STATE_RUNNING", error=None)
    fake_google.seed_job(running)
    answer = push(live, pipeline_event(PROJECT, REGION, RUN + "1", "PIPELINE_STATE_RUNNING"), "run").json()
    assert answer["status"] == "held"
    assert live.wait_quiet()
    assert fake_slack.posted() == []


def test_a_pipeline_event_without_a_valid_id_is_acknowledged_as_malformed(live, fake_slack) -> None:
    bad = pipeline_event(PROJECT, REGION, "Bad_ID", "PIPELINE_STATE_FAILED")
    answer = push(live, bad, "bad")
    assert answer.status_code == 200 and answer.json()["status"] == "malformed"
    assert "pipeline job id" in answer.json()["reason"]


@pytest.mark.parametrize(
    "text",
    [
        f"pipelineJobs/{RUN}",
        f"{PROJECT}/pipelineJobs/{RUN}",
        RUN,
        f"projects/{PROJECT}/locations/{REGION}/pipelineJobs/{RUN}",
        f"https://console.cloud.google.com/vertex-ai/locations/{REGION}/pipelines/runs/{RUN}?project={PROJECT}",
    ],
)
def test_diagnose_reads_a_pipeline_run_by_id_name_or_console_url(fake_google, text: str) -> None:
    seed_failed_run(fake_google)
    reference = parse_job_reference(text)
    assert reference.kind is JobKind.PIPELINE_JOB and reference.job_id == RUN
    diagnoser = JobDiagnoser(
        jobs=VertexJobsClient(endpoint=fake_google.base_url),
        logs=CloudLoggingClient(endpoint=fake_google.base_url),
        pipelines=VertexPipelinesClient(endpoint=fake_google.base_url),
        classifier=Classifier(load_knowledge()),
        regions=["us-central1", REGION],
        default_project=PROJECT,
    )
    result = diagnoser.diagnose(reference)
    assert result.diagnosis.failure_class == "accelerator_oom"
    assert result.context.pipeline is not None
    assert [task.name for task in result.context.pipeline.failed_tasks] == ["train-model"]
    assert result.context.job_id == TASK_JOB and result.context.job_key == f"{PROJECT}/pipelineJobs/{RUN}"
    assert result.job.info.state == "PIPELINE_STATE_FAILED"


def post_preempted_run(live: LiveService, fake_google: FakeGoogleApis) -> tuple[dict, dict]:
    """A failed run whose task was preempted (a transient cause: Rerun pipeline is offered), pushed and posted."""
    run = pipeline_job_json(PROJECT, REGION, RUN, failed_tasks={"train-model": TASK_JOB}, labels={"team": "recsys"})
    fake_google.seed_job(run)
    fake_google.seed_job(custom_job_json(PROJECT, REGION, TASK_JOB, labels={"vertex-ai-pipelines-run-billing-id": "1"}))
    preempted = "The replica workerpool0-0 was preempted and exited with a non-zero status of 143."
    fake_google.seed_log_entries(
        [log_entry(PROJECT, TASK_JOB, preempted, task_name="service", severity="ERROR", insert_id="preempted")]
    )
    answer = push(live, pipeline_event(PROJECT, REGION, RUN, "PIPELINE_STATE_FAILED"), "run-failed").json()
    return run, answer


def test_a_pipeline_that_failed_for_a_transient_cause_can_be_run_again_from_its_alert(
    live, fake_slack, fake_google
) -> None:
    from standins.slack_api import block_action_body, signature_headers

    run, answer = post_preempted_run(live, fake_google)
    assert answer["status"] == "posted" and answer["failure_class"] == "preemption", answer
    [message] = fake_slack.posted()
    [rerun] = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"] if "confirm" in e]
    assert rerun["text"]["text"] == "Rerun pipeline" and "cache" in rerun["confirm"]["text"]["text"]
    channel = fake_slack.conversation_id(message["channel"])
    fake_slack.seed_members(channel, [RERUNNER, "U0OTHER01"])

    def click(user: str, trigger: str) -> None:
        body = block_action_body(
            rerun["action_id"],
            rerun["value"],
            user=user,
            channel=channel,
            message_ts=message["ts"],
            trigger_id=trigger,
            response_url=fake_slack.response_url(trigger),
        )
        headers = signature_headers("test-signing-secret", body, content_type="application/x-www-form-urlencoded")
        assert httpx.post(live.url + "/slack/events", content=body, headers=headers, timeout=30).status_code == 200

    click("U0OTHER01", "t-other")  # not allowed to rerun: refused, nothing created
    click(RERUNNER, "t-rerun")
    done = wait_until(lambda: live.services.store.get_alert(answer["job_key"]).rerun_state == "done", timeout=15)
    assert done, live.services.store.history(answer["job_key"])
    created = [
        r for r in fake_google.requests if r.method == "POST" and r.path.endswith(f"/locations/{REGION}/pipelineJobs")
    ]
    assert len(created) == 1  # the stranger's click created nothing
    body = created[0].json
    assert body["pipelineSpec"] == run["pipelineSpec"] and body["runtimeConfig"] == run["runtimeConfig"]
    assert body["labels"]["rerun-of"] == RUN and body["labels"]["rerun-by"] == RERUNNER.lower()
    assert "jobDetail" not in body and "state" not in body
    new_id = created[0].query["pipelineJobId"][0]
    assert new_id.startswith("train-pipeline-rerun-") and fake_google.job(
        f"projects/{PROJECT}/locations/{REGION}/pipelineJobs/{new_id}"
    )
    def results() -> list[str]:
        return [h["result"] for h in live.services.store.history(answer["job_key"])]

    assert wait_until(lambda: f"created pipeline run {new_id}" in results()), results()
    refusals = [c.args["text"] for c in fake_slack.calls_to("chat.postEphemeral") if c.args.get("user") == "U0OTHER01"]
    assert refusals and "may rerun" in refusals[0]
    assert wait_until(lambda: "ran this pipeline again" in json.dumps(fake_slack.replies(channel, message["ts"])))

    # the alert now links the new run on its own console page, and offers no second rerun
    def shown() -> str:
        return json.dumps(fake_slack.message(channel, message["ts"])["blocks"])

    assert wait_until(lambda: f"/pipelines/runs/{new_id}?project={PROJECT}" in shown(), timeout=10), shown()
    assert "Rerun pipeline" not in shown()

    # the new run is followed to its end like a job's rerun: one reply in the thread, the header says how it ended
    new_name = f"projects/{PROJECT}/locations/{REGION}/pipelineJobs/{new_id}"
    fake_google.seed_job(
        {
            **fake_google.job(new_name),
            "state": "PIPELINE_STATE_SUCCEEDED",
            "startTime": "2026-11-30T08:00:00Z",
            "endTime": "2026-11-30T08:40:00Z",
        }
    )
    scans = [httpx.post(live.url + "/tasks/scan", timeout=60).json()["reruns_reported"] for _ in range(3)]
    assert scans == [1, 0, 0]
    told = [r for r in fake_slack.replies(channel, message["ts"]) if r.get("text") == "Rerun succeeded in 40 min"]
    assert len(told) == 1
    assert fake_slack.message(channel, message["ts"])["blocks"][0]["text"]["text"].startswith(
        "Rerun succeeded in 40 min"
    )


def test_an_unchanged_run_is_not_offered_where_it_would_fail_the_same_way(live, fake_slack, fake_google) -> None:
    seed_failed_run(fake_google)  # out of GPU memory: the pipeline itself must change
    answer = push(live, pipeline_event(PROJECT, REGION, RUN, "PIPELINE_STATE_FAILED"), "oom").json()
    assert answer["failure_class"] == "accelerator_oom"
    [message] = fake_slack.posted()
    assert "Rerun pipeline" not in json.dumps(message["blocks"])


def test_a_pipeline_rerun_whose_thread_reply_slack_refuses_is_still_made_and_the_reason_logged(
    live, fake_slack, fake_google, caplog
) -> None:
    import logging


    _, answer = post_preempted_run(live, fake_google)
    assert answer["status"] == "posted", answer
    record = live.services.store.get_alert(answer["job_key"])
    fake_slack.seed_members(record.channel, [RERUNNER])
    actions = live.services.action_service()
    fake_slack.api_error("chat.postMessage", "not_in_channel")  # the thread reply naming the new run
    with caplog.at_level(logging.INFO, logger="trainmedic"):
        name = actions.rerun_pipeline(
            answer["job_key"], user=RERUNNER, channel=record.channel, message_ts=record.message_ts
        )
    assert name.startswith(f"projects/{PROJECT}/locations/{REGION}/pipelineJobs/train-pipeline-rerun-")
    assert live.services.store.get_alert(answer["job_key"]).rerun_state == "done"
    lost = [r.fields for r in caplog.records if r.getMessage() == "rerun link not posted"]
    assert len(lost) == 1 and lost[0]["job_key"] == answer["job_key"] and "not_in_channel" in lost[0]["reason"]
