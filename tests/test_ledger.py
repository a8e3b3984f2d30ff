"""The retry ledger (bot/alerting/ledger.py): figures computed independently from a stand-in job's spec and times.

The job is read through the real aiplatform REST client from the Vertex stand-in; the log lines are what the
alert path builds from LogEntry dicts. The alert then shows the ledger in one line, over HTTP too.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import httpx

from bot.alerting.ledger import compute_ledger, format_duration, ledger_line
from bot.gcp.vertex_jobs import VertexJobsClient
from bot.intake.log_input import entries_to_lines
from bot.models import Diagnosis, JobInfo, LogLine
from bot.render.alert_context import AlertContext
from bot.render.channel_message import diagnosis_message
from bot.render.text import diagnosis_text
from standins.google_apis import custom_job_json, log_entry
from tests.live_service import LiveService, envelope, standin_environ

PROJECT, REGION, JOB_ID = "acme-ml", "us-central1", "4401"
CREATE, START, END = "2026-11-29T08:40:00Z", "2026-11-29T09:00:00Z", "2026-11-29T12:12:00Z"
CHECKPOINT_AT = "2026-11-29T10:32:00Z"


def _pool(machine: str, accelerator: str, count: int, replicas: int) -> dict:
    return {
        "machineSpec": {"machineType": machine, "acceleratorType": accelerator, "acceleratorCount": count},
        "replicaCount": str(replicas),
        "containerSpec": {"imageUri": "us-docker.pkg.dev/acme/train:1"},
    }


def _job(**fields: object) -> dict:
    job = custom_job_json(PROJECT, REGION, JOB_ID, createTime=CREATE, startTime=START, endTime=END, **fields)
    job["jobSpec"]["workerPoolSpecs"] = [
        _pool("a2-highgpu-8g", "NVIDIA_TESLA_A100", 8, 1),
        _pool("a2-highgpu-8g", "NVIDIA_TESLA_A100", 8, 3),
        _pool("n1-standard-8", "NVIDIA_TESLA_T4", 1, 2),
    ]
    return job


def _entries() -> list[dict]:
    def entry(text: str, at: str, task: str = "service", severity: str = "INFO") -> dict:
        return log_entry(PROJECT, JOB_ID, text, timestamp=at, task_name=task, severity=severity, insert_id=at + task)

    return [
        entry("Job is running.", "2026-11-29T09:00:30Z"),
        entry("Saving checkpoint to gs://acme/ckpt at step 4000", "2026-11-29T09:40:00Z", "workerpool0-0"),
        entry(
            "The replica workerpool0-0 exited with a non-zero status of 134. Termination reason: Error.",
            "2026-11-29T10:00:00Z",
            severity="ERROR",
        ),
        entry(
            "The replica workerpool1-2 exited with a non-zero status of 1. Termination reason: Error.",
            "2026-11-29T10:00:01Z",
            severity="ERROR",
        ),  # the same attempt's cascade
        entry("Job is running.", "2026-11-29T10:05:00Z"),
        entry("Saving checkpoint to gs://acme/ckpt at step 12000", CHECKPOINT_AT, "workerpool0-0"),
        entry("Failed to save checkpoint at step 13000: disk full", "2026-11-29T11:00:00Z", "workerpool0-0"),
        entry(
            "The replica workerpool0-0 exited with a non-zero status of 134. Termination reason: Error.",
            "2026-11-29T12:11:00Z",
            severity="ERROR",
        ),
        entry("Job failed.", "2026-11-29T12:11:30Z"),
    ]


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_ledger_matches_figures_computed_from_the_spec_and_times(fake_google) -> None:
    raw = fake_google.seed_job(_job())
    job = VertexJobsClient(endpoint=fake_google.base_url, timeout=5).get_job(
        project=PROJECT, region=REGION, job_id=JOB_ID
    )

    ledger = compute_ledger(job, entries_to_lines(_entries()))

    # independent figures, from the REST dict as seeded
    ran = (_time(raw["endTime"]) - _time(raw["startTime"])).total_seconds()
    expected: dict[str, float] = {}
    for pool in raw["jobSpec"]["workerPoolSpecs"]:
        machine = pool["machineSpec"]
        amount = machine["acceleratorCount"] * int(pool["replicaCount"]) * ran / 3600
        expected[machine["acceleratorType"]] = expected.get(machine["acceleratorType"], 0) + amount
    assert ran == 3 * 3600 + 12 * 60
    assert ledger is not None
    assert ledger.ran_seconds == ran and not ledger.ran_from_logs
    assert ledger.accelerator_hours == expected == {"NVIDIA_TESLA_A100": 32 * 3.2, "NVIDIA_TESLA_T4": 2 * 3.2}
    assert (ledger.attempts, ledger.restarts) == (2, 1)  # workerpool0-0 failed twice; workerpool1-2 was a cascade
    assert ledger.checkpoint == "step 12000"  # the failed save is not a checkpoint
    assert ledger.lost_seconds == (_time(END) - _time(CHECKPOINT_AT)).total_seconds() == 100 * 60
    assert ledger_line(ledger) == (
        "Ran 3 h 12 min · 2 attempts · 102 A100-hours · 6.4 T4-hours · "
        "last checkpoint step 12000, 1 h 40 min before the failure"
    )


def test_absent_evidence_is_left_out_never_guessed() -> None:
    assert compute_ledger(None, []) is None
    assert compute_ledger(JobInfo(state="JOB_STATE_FAILED"), [LogLine(text="hello")]) is None
    job = JobInfo(state="JOB_STATE_FAILED", start_time=_time(START), end_time=_time(END))
    ledger = compute_ledger(job, [LogLine(text="Traceback (most recent call last):")])
    assert ledger is not None
    assert ledger.attempts is None and ledger.accelerator_hours == {}  # no restart messages, no accelerators
    assert ledger.no_checkpoint_seen  # a 3-hour run that failed without a checkpoint in the logs read
    assert ledger_line(ledger) == "Ran 3 h 12 min · no checkpoint in the logs read"


def test_running_job_after_a_failed_attempt_and_times_from_logs() -> None:
    lines = [
        LogLine(text="Job is running.", replica="service", timestamp=_time("2026-11-29T09:00:00Z")),
        LogLine(
            text="Internal error occurred for the current attempt.",
            replica="service",
            timestamp=_time("2026-11-29T09:30:00Z"),
        ),
        LogLine(text="Epoch 3: saving model to /gcs/acme/cp-0003.ckpt", timestamp=_time("2026-11-29T09:20:00Z")),
    ]
    ledger = compute_ledger(JobInfo(state="JOB_STATE_RUNNING"), lines)
    assert ledger is not None
    assert ledger.attempts == 2 and ledger.ran_from_logs and ledger.ran_seconds == 1800
    assert ledger.checkpoint == "epoch 3" and ledger.lost_seconds is None  # not failed: nothing lost yet
    assert ledger_line(ledger) == "Ran at least 30 min · 2 attempts · last checkpoint epoch 3"


def test_a_job_that_failed_with_vertexs_internal_error_made_three_attempts() -> None:
    """Vertex returns "Internal error occurred for the current attempt" as the job's error after its third attempt:
    the logs read may hold that message once, the ledger still counts three. An earlier attempt's internal error
    before a failure of the code's own counts as one attempt."""
    internal = "Internal error occurred for the current attempt."
    exit_1 = "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error."
    at = ["2026-11-29T09:30:00Z", "2026-11-29T10:30:00Z"]
    once = [LogLine(text=internal, replica="service", timestamp=_time(at[0]))]
    for job in (JobInfo(state="JOB_STATE_FAILED"), JobInfo()):
        ledger = compute_ledger(job, once)
        assert ledger is not None and (ledger.attempts, ledger.restarts) == (3, 2)
    then_code = [*once, LogLine(text=exit_1, replica="service", timestamp=_time(at[1]))]
    ledger = compute_ledger(JobInfo(state="JOB_STATE_FAILED"), then_code)
    assert ledger is not None and ledger.attempts is not None and ledger.attempts < 3  # the code's exit ended it
    code_then_internal = [LogLine(text=exit_1, replica="service", timestamp=_time(at[0])),
                          LogLine(text=internal, replica="service", timestamp=_time(at[1]))]  # fmt: skip
    ledger = compute_ledger(JobInfo(state="JOB_STATE_FAILED"), code_then_internal)
    assert ledger is not None and ledger.attempts == 3


def test_checkpoint_wordings() -> None:
    def label(text: str) -> str | None:
        ledger = compute_ledger(JobInfo(), [LogLine(text=text, timestamp=_time(START))])
        return ledger.checkpoint if ledger else None

    assert label("Saving model checkpoint to ./out/checkpoint-500") == "step 500"
    assert label("Saved model to gs://b/run/epoch_7") == "epoch 7"
    assert label("saving checkpoint at iteration    1000 to checkpoints") == "step 1000"
    assert label("Epoch 3, global step 12000: 'val_loss' reached 0.51, saving model to 'x.ckpt'") == "step 12000"
    assert label("Error saving checkpoint at step 5") is None
    assert label("step 12000 loss 0.4") is None
    assert format_duration(59) == "< 1 min" and format_duration(26 * 3600) == "1 d 2 h"


def test_the_alert_and_the_text_show_one_ledger_line(fake_google) -> None:
    fake_google.seed_job(_job())
    job = VertexJobsClient(endpoint=fake_google.base_url, timeout=5).get_job(
        project=PROJECT, region=REGION, job_id=JOB_ID
    )
    diagnosis = Diagnosis(failure_class="unknown", confidence=0.2, title="Failed").model_copy(
        update={"ledger": compute_ledger(job, entries_to_lines(_entries()))}
    )
    message = diagnosis_message(diagnosis, AlertContext(job=job, job_id=JOB_ID, job_key=f"{PROJECT}/{JOB_ID}"))
    facts = [b for b in message["blocks"] if b["type"] == "context"][0]
    shown = [e["text"] for e in facts["elements"] if "A100-hours" in e["text"]]
    assert shown == [":hourglass: " + ledger_line(diagnosis.ledger)]
    text = diagnosis_text(diagnosis, job=job)
    assert text.count("102 A100-hours") == 1 and "Run ledger:" in text
    assert Diagnosis.model_validate(diagnosis.model_dump(mode="json")) == diagnosis  # stored and re-rendered


def test_posted_alert_carries_the_ledger(tmp_path: Path, fake_slack, fake_google) -> None:
    fake_google.seed_job(_job())
    fake_google.seed_log_entries(_entries())
    environ = standin_environ(
        tmp_path, fake_slack, fake_google, routing={"default_channel": "#ml-alerts", "regions": [REGION]}
    )
    with LiveService(environ) as live:
        answer = httpx.post(live.url + "/pubsub/push", json=envelope(_entries()[-1], "m1"), timeout=60)
        assert answer.json()["status"] == "posted", answer.text
    [post] = fake_slack.posted()
    assert "Ran 3 h 12 min · 2 attempts · 102 A100-hours" in json.dumps(post, ensure_ascii=False)
