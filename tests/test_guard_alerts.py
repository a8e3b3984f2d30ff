"""The alert path's rules (bot/alerting/alerts.py), one by one, with real parts: the service's AlertService as
`trainmedic serve` builds it (SQLite store, slack_sdk to the Slack stand-in, the Vertex AI / Cloud Logging clients
to the Google stand-in, the bundled knowledge base), fed LogEntries and Monitoring incidents directly.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.alerting.alerts import AlertService, Outcome
from bot.errors import ApiUnavailable, InvalidPushMessage
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry
from standins.slack_api import FakeSlackApi
from tests.live_service import LiveService, standin_environ

PROJECT = "acme-ml"
REGION, OTHER_REGION = "us-central1", "europe-west4"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 39 GiB"
ROUTING = {
    "default_channel": "#ml-alerts",
    "regions": [REGION, OTHER_REGION],
    "routes": [
        {"match": {"labels": {"team": "vision"}}, "channel": "#vision-alerts", "rerun_allowed": ["U0VISION"]},
    ],
    "rerun_allowed": ["U0DEFAULT"],
}


class Harness:
    def __init__(self, live: LiveService, slack: FakeSlackApi, google: FakeGoogleApis) -> None:
        self.live, self.slack, self.google = live, slack, google

    @property
    def alerts(self) -> AlertService:
        return self.live.services.alerts

    @property
    def store(self) -> Any:
        return self.live.services.store

    def job(self, job_id: str, region: str = REGION, **fields: Any) -> None:
        self.google.seed_job(custom_job_json(PROJECT, region, job_id, **fields))

    def running(self, job_id: str, region: str = REGION) -> None:
        self.job(job_id, region, state="JOB_STATE_RUNNING", error=None, endTime=None)

    def entry(self, job_id: str, text: str = OOM, *, task: str = "workerpool0-0", **kw: Any) -> Outcome:
        kw.setdefault("severity", "ERROR")
        kw.setdefault("timestamp", "2026-11-29T12:00:01Z")
        return self.alerts.handle_log_entry(log_entry(PROJECT, job_id, text, task_name=task, **kw))

    def job_failed(self, job_id: str, *, task: str | None = "service", insert_id: str | None = None) -> Outcome:
        entry = log_entry(PROJECT, job_id, "Job failed.", timestamp="2026-11-29T12:00:09Z", insert_id=insert_id)
        if task is None:
            del entry["resource"]["labels"]["task_name"]
        else:
            entry["resource"]["labels"]["task_name"] = task
        return self.alerts.handle_log_entry(entry)

    def posts(self) -> list[dict]:
        return self.slack.posted()

    def job_gets(self, job_id: str) -> int:
        return sum(1 for r in self.google.requests if r.method == "GET" and r.path.endswith(f"/customJobs/{job_id}"))


@pytest.fixture
def harness(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis) -> Iterator[Harness]:
    environ = standin_environ(tmp_path, fake_slack, fake_google, routing=ROUTING)
    live = LiveService(environ)  # built as `trainmedic serve` builds it; no HTTP needed here
    yield Harness(live, fake_slack, fake_google)
    live.services.store.close()


# ------------------------------------------------------------------------------------ when a job is posted


def test_a_job_failed_line_printed_by_a_replica_is_not_the_failure_marker(harness: Harness) -> None:
    harness.running("3001")
    assert harness.entry("3001").status == "held"
    from_replica = harness.job_failed("3001", task="workerpool0-0", insert_id="fake-marker")
    assert from_replica.status == "held" and "job is JOB_STATE_RUNNING" in from_replica.reason
    assert harness.posts() == []
    from_vertex = harness.job_failed("3001", task="service", insert_id="real-marker")
    assert from_vertex.status == "posted"
    assert len(harness.posts()) == 1


def test_a_job_failed_entry_without_a_task_name_is_the_marker(harness: Harness) -> None:
    harness.running("3002")
    harness.entry("3002")
    assert harness.job_failed("3002", task=None).status == "posted"


def test_the_marker_must_be_the_whole_line(harness: Harness) -> None:
    harness.running("3003")
    harness.entry("3003")
    quoted = harness.entry("3003", "Job failed. Retrying in 5s", task="service", insert_id="q")
    assert quoted.status == "held"
    padded = harness.entry("3003", "  Job failed.\n", task="service", insert_id="p")
    assert padded.status == "posted"


def test_a_job_whose_state_is_unknown_is_held_until_the_marker(harness: Harness) -> None:
    # No CustomJob anywhere: the state cannot be known, so an error line alone posts nothing.
    held = harness.entry("3004")
    assert held.status == "held"
    assert held.reason == "held: no 'Job failed.' entry yet and the job state is unknown"
    assert held.job_key == f"{PROJECT}/3004"
    again = harness.entry("3004")
    assert again.status == "duplicate"  # the same entry again
    assert harness.posts() == []
    posted = harness.job_failed("3004")
    assert posted.status == "posted"
    [post] = harness.posts()
    assert f"not found in the configured regions ({REGION}, {OTHER_REGION})" in json.dumps(post)


def test_a_failed_job_state_posts_without_the_marker(harness: Harness) -> None:
    harness.job("3005")
    outcome = harness.entry("3005")
    assert outcome.status == "posted"
    assert outcome.failure_class == "accelerator_oom"
    [post] = harness.posts()
    assert post["channel"] == "#vision-alerts"  # the job's labels route it
    assert (outcome.channel, outcome.message_ts) == (harness.slack.conversation_id("#vision-alerts"), post["ts"])
    assert outcome.reason == "posted via routes[0]"


@pytest.mark.parametrize("state", ["JOB_STATE_SUCCEEDED", "JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING"])
def test_jobs_that_ended_well_are_never_reported(harness: Harness, state: str) -> None:
    harness.job("3006", state=state, error=None)
    outcome = harness.entry("3006")
    assert outcome.status == "recovered"
    assert outcome.reason == f"job is {state}: not a failure"
    assert harness.job_failed("3006").status == "recovered"
    assert harness.posts() == []


def test_a_job_found_in_the_second_region_is_used(harness: Harness) -> None:
    harness.job("3007", region=OTHER_REGION, displayName="found-in-europe")
    assert harness.entry("3007").status == "posted"
    assert "found-in-europe" in json.dumps(harness.posts()[0])


# ------------------------------------------------------------------------------------ what is not an ml_job


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"resource": {"type": "cloud_run_revision"}}, "resource.type is 'cloud_run_revision', not ml_job"),
        ({"resource": "ml_job"}, "resource.type is None, not ml_job"),
        ({"textPayload": "x"}, "resource.type is None, not ml_job"),
    ],
)
def test_entries_of_other_resources_are_irrelevant(harness: Harness, entry: dict, reason: str) -> None:
    outcome = harness.alerts.handle_log_entry(entry)
    assert (outcome.status, outcome.reason, outcome.job_key) == ("irrelevant", reason, None)


@pytest.mark.parametrize(
    "labels",
    [
        {"job_id": "12a", "project_id": PROJECT},
        {"job_id": "", "project_id": PROJECT},
        {"job_id": "1" * 31, "project_id": PROJECT},
        {"job_id": "123", "project_id": "Acme"},
        {"job_id": "123", "project_id": "ab"},
        {"job_id": "123"},
    ],
)
def test_ml_job_entries_need_a_valid_job_and_project(harness: Harness, labels: dict) -> None:
    with pytest.raises(InvalidPushMessage, match="job_id/project_id"):
        harness.alerts.handle_log_entry({"resource": {"type": "ml_job", "labels": labels}, "textPayload": "x"})


def test_a_log_entry_must_be_an_object(harness: Harness) -> None:
    with pytest.raises(InvalidPushMessage, match="not a JSON object"):
        harness.alerts.handle_log_entry(["not", "an", "entry"])


def test_entries_without_an_insert_id_are_kept_apart_by_message_id_or_content(harness: Harness) -> None:
    first = log_entry(PROJECT, "3008", "RuntimeError: one", task_name="workerpool0-0", severity="ERROR")
    second = log_entry(PROJECT, "3008", "RuntimeError: two", task_name="workerpool0-0", severity="ERROR")
    for entry in (first, second):
        del entry["insertId"]
    assert harness.alerts.handle_log_entry(first, message_id="m-1").status == "held"
    assert harness.alerts.handle_log_entry(first, message_id="m-1").status == "duplicate"
    assert harness.alerts.handle_log_entry(second).status == "held"
    assert harness.alerts.handle_log_entry(second).status == "duplicate"
    assert len(harness.store.entries(f"{PROJECT}/3008")) == 2


# ------------------------------------------------------------------------------------ after the post


def test_later_evidence_updates_and_repeats_are_duplicates(harness: Harness) -> None:
    harness.job("3009")
    posted = harness.entry("3009", "RuntimeError: something odd", timestamp="2026-11-29T12:00:02Z")
    assert posted.status == "posted"
    repeat = harness.entry("3009", "RuntimeError: something odd", timestamp="2026-11-29T12:00:02Z")
    assert (repeat.status, repeat.reason) == ("duplicate", "entry already processed")
    assert (repeat.channel, repeat.message_ts, repeat.job_key) == (posted.channel, posted.message_ts, posted.job_key)
    update = harness.entry("3009", OOM, timestamp="2026-11-29T12:00:01Z", insert_id="late-oom")
    assert (update.status, update.reason) == ("updated", "new evidence updated the message")
    assert (update.channel, update.message_ts) == (posted.channel, posted.message_ts)
    assert update.failure_class == "accelerator_oom"
    [call] = [c for c in harness.slack.calls_to("chat.update") if c.args["ts"] == posted.message_ts]
    unchanged = harness.job_failed("3009", insert_id="second-marker")  # adds nothing the message shows
    assert unchanged.status == "unchanged" and unchanged.reason == "no new evidence changes the message"
    assert len([c for c in harness.slack.calls_to("chat.update") if c.args["ts"] == posted.message_ts]) == 1
    assert len(harness.posts()) == 1
    record = harness.store.get_alert(f"{PROJECT}/3009")
    assert record.diagnosis["diagnosis"]["failure_class"] == "accelerator_oom"


def test_the_stored_alert_remembers_the_job_its_diagnosis_and_who_may_rerun(harness: Harness) -> None:
    harness.job("3010")
    harness.entry("3010")
    record = harness.store.get_alert(f"{PROJECT}/3010")
    assert record.posted and record.channel == harness.slack.conversation_id("#vision-alerts")
    assert record.diagnosis["rerun_allowed"] == ["U0VISION"]
    assert record.diagnosis["diagnosis"]["failure_class"] == "accelerator_oom"
    assert record.diagnosis["context"]["job_id"] == "3010"
    assert record.diagnosis["context"]["project"] == PROJECT
    assert record.diagnosis["context"]["region"] == REGION
    assert record.job["display_name"] == "train-3010" and record.job["state"] == "JOB_STATE_FAILED"
    message = harness.alerts.render_record(record)
    [post] = harness.posts()
    assert message["blocks"] == post["blocks"]


def test_render_record_shows_acknowledgement_and_a_finished_rerun(harness: Harness) -> None:
    harness.job("3011")
    harness.entry("3011")
    key = f"{PROJECT}/3011"
    harness.store.set_acknowledged(key, user="U0ACK", at=1_800_000_000.0)
    acked = json.dumps(harness.alerts.render_record(harness.store.get_alert(key)))
    assert "U0ACK" in acked
    assert harness.store.claim_rerun(key, user="U0RERUN")
    claimed = json.dumps(harness.alerts.render_record(harness.store.get_alert(key)))
    assert "U0RERUN" not in claimed  # a rerun is shown once it exists
    harness.store.finish_rerun(key, new_job_id=f"projects/{PROJECT}/locations/{REGION}/customJobs/999")
    done = json.dumps(harness.alerts.render_record(harness.store.get_alert(key)))
    assert "U0RERUN" in done and "999" in done


# ------------------------------------------------------------------------------------ channels


def test_an_unusable_routed_channel_falls_back_to_the_default_channel(harness: Harness) -> None:
    harness.job("3012")
    harness.slack.api_error("chat.postMessage", "not_in_channel", times=1)
    outcome = harness.entry("3012")
    assert outcome.status == "posted"
    [post] = harness.posts()
    assert post["channel"] == "#ml-alerts"
    assert outcome.channel == harness.slack.conversation_id("#ml-alerts")
    assert outcome.reason.startswith("posted via default_channel (#vision-alerts: ")
    assert "not_in_channel" in outcome.reason
    tried = [c.args["channel"] for c in harness.slack.calls_to("chat.postMessage") if not c.args.get("thread_ts")]
    assert tried == ["#vision-alerts", "#ml-alerts"]
    assert harness.store.get_alert(f"{PROJECT}/3012").channel == outcome.channel


def test_an_unusable_default_channel_is_a_transient_failure(harness: Harness) -> None:
    harness.job("3013", labels={})  # no route: the default channel itself
    harness.slack.api_error("chat.postMessage", "channel_not_found", times=1)
    with pytest.raises(ApiUnavailable, match="default channel is not usable either"):
        harness.entry("3013")
    assert harness.store.get_alert(f"{PROJECT}/3013").posted is False
    assert harness.entry("3013", insert_id="again").status == "posted"  # the claim was released
    assert [p["channel"] for p in harness.posts()] == ["#ml-alerts"]


# ------------------------------------------------------------------------------------ enrichment


def test_logs_from_cloud_logging_join_the_pushed_entries(harness: Harness) -> None:
    harness.job("3014")
    harness.google.seed_log_entries(
        [log_entry(PROJECT, "3014", OOM, task_name="workerpool0-0", severity="ERROR", insert_id="from-logging")]
    )
    outcome = harness.alerts.handle_log_entry(log_entry(PROJECT, "3014", "Job failed.", insert_id="marker"))
    assert outcome.status == "posted" and outcome.failure_class == "accelerator_oom"
    ids = {e["insertId"] for e in harness.store.entries(f"{PROJECT}/3014")}
    assert {"from-logging", "marker"} <= ids


def test_missing_permissions_are_named_in_the_alert(harness: Harness) -> None:
    harness.google.inject(status=403, api="vertex")
    harness.google.inject(status=403, api="logging")
    harness.entry("3015")
    outcome = harness.job_failed("3015")
    assert outcome.status == "posted"
    body = json.dumps(harness.posts()[0])
    assert "aiplatform.customJobs.get" in body
    assert "logging.logEntries.list" in body


def test_an_unreachable_vertex_ai_is_named_and_the_alert_still_posts(harness: Harness) -> None:
    harness.google.inject(status=503, api="vertex")
    harness.entry("3016")
    assert harness.job_failed("3016").status == "posted"
    assert "Vertex AI unavailable" in json.dumps(harness.posts()[0])


def test_job_lookups_are_cached_briefly_unless_a_fresh_state_matters(harness: Harness) -> None:
    harness.running("3017")
    harness.entry("3017", insert_id="a")
    harness.entry("3017", insert_id="b")  # the running state was looked up a moment ago
    assert harness.job_gets("3017") == 1
    harness.job("3017")
    assert harness.job_failed("3017").status == "posted"  # the marker asks for the current state
    assert harness.job_gets("3017") == 2


# ------------------------------------------------------------------------------------ incidents


def incident(**fields: Any) -> dict:
    body = {
        "incident_id": "0.abc",
        "state": "open",
        "policy_name": "Low GPU utilization",
        "condition_name": "duty cycle below 20%",
        "summary": "GPU utilization is low.",
        "started_at": 1764417600,
    }
    body.update(fields)
    return {"version": "1.2", "incident": body}


@pytest.mark.parametrize(
    "where",
    [
        {"resource": {"labels": {"project_id": PROJECT, "job_id": "3020"}}},
        {"resource": {"labels": {"project_id": PROJECT, "custom_job_id": "3020"}}},
        {"scoping_project_id": PROJECT, "metric": {"labels": {"job": "3020"}}},
        {"scoping_project_id": PROJECT, "metadata": {"user_labels": {"job_id": "3020"}}},
        {"scoping_project_id": PROJECT, "policy_user_labels": {"job_id": "3020"}},
        {"scoping_project_id": PROJECT, "resource_name": f"projects/{PROJECT}/locations/x/customJobs/3020"},
        {"scoping_project_id": PROJECT, "resource_display_name": "customJobs/3020"},
        {"scoping_project_id": PROJECT, "summary": "Low use on customJobs/3020 for 10 min"},
    ],
)
def test_an_incident_names_its_job_in_any_of_monitorings_places(harness: Harness, where: dict) -> None:
    harness.job("3020", state="JOB_STATE_RUNNING", error=None)
    outcome = harness.alerts.handle_incident(incident(**where))
    assert outcome.status == "posted", outcome
    assert outcome.job_key == f"{PROJECT}/3020"
    [entry] = harness.store.entries(f"{PROJECT}/3020")
    assert entry["insertId"] == "incident-0.abc"
    assert entry["resource"] == {
        "type": "ml_job",
        "labels": {"project_id": PROJECT, "job_id": "3020", "task_name": "monitoring"},
    }
    assert entry["severity"] == "WARNING"
    assert entry["timestamp"].startswith("2025-11-29T")  # started_at, as RFC 3339


def test_an_incident_without_a_job_is_keyed_by_its_id(harness: Harness) -> None:
    outcome = harness.alerts.handle_incident(incident(scoping_project_id=PROJECT, started_at=None))
    assert outcome.status == "posted"
    assert outcome.job_key == f"{PROJECT}/incident-0.abc"
    [entry] = harness.store.entries(outcome.job_key)
    assert entry["textPayload"] == "Low GPU utilization | duty cycle below 20% | GPU utilization is low."
    assert entry.get("timestamp") is None
    assert harness.job_gets("") == 0 and not harness.google.requests  # nothing to look up


def test_a_non_numeric_job_label_is_not_a_job(harness: Harness) -> None:
    outcome = harness.alerts.handle_incident(
        incident(resource={"labels": {"project_id": PROJECT, "job_id": "abc"}}, incident_id="0.def")
    )
    assert outcome.job_key == f"{PROJECT}/incident-0.def"


def test_an_incident_without_text_says_where_it_came_from(harness: Harness) -> None:
    bare = incident(scoping_project_id=PROJECT, policy_name=None, condition_name="", summary=None)
    outcome = harness.alerts.handle_incident(bare)
    [entry] = harness.store.entries(outcome.job_key)
    assert entry["textPayload"] == "Cloud Monitoring incident"


@pytest.mark.parametrize("state", ["closed", "CLOSED", "", None])
def test_only_open_incidents_are_diagnosed(harness: Harness, state: str | None) -> None:
    outcome = harness.alerts.handle_incident(incident(scoping_project_id=PROJECT, state=state))
    assert outcome.status == "irrelevant"
    assert "only open incidents are diagnosed" in outcome.reason
    assert harness.posts() == []


def test_open_is_matched_in_any_case(harness: Harness) -> None:
    assert harness.alerts.handle_incident(incident(scoping_project_id=PROJECT, state="OPEN")).status == "posted"


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"version": "1.2"}, "without an 'incident' object"),
        ("text", "without an 'incident' object"),
        ({"incident": "open"}, "without an 'incident' object"),
        (incident(), "names no project"),
    ],
)
def test_malformed_incidents_are_refused(harness: Harness, payload: Any, problem: str) -> None:
    with pytest.raises(InvalidPushMessage, match=problem):
        harness.alerts.handle_incident(payload)


# ------------------------------------------------------------------------------------ what the alert says


def context_of(harness: Harness, job_id: str) -> dict:
    record = harness.store.get_alert(f"{PROJECT}/{job_id}")
    assert record is not None and record.posted
    return record.diagnosis["context"]


def test_failed_at_is_the_jobs_end_time_else_the_first_marker(harness: Harness) -> None:
    harness.job("3030")  # endTime 2026-02-23T23:54:06Z
    harness.entry("3030")
    assert context_of(harness, "3030")["failed_at"].startswith("2026-02-23T23:54:06")
    harness.job("3031", endTime=None)
    harness.entry("3031")
    assert context_of(harness, "3031")["failed_at"] is None
    harness.running("3032")
    harness.entry("3032")
    harness.alerts.handle_log_entry(log_entry(PROJECT, "3032", "Job failed.", timestamp="2026-11-29T12:00:09Z"))
    assert context_of(harness, "3032")["failed_at"].startswith("2026-11-29T12:00:09")


def test_failed_attempts_are_counted(harness: Harness) -> None:
    harness.running("3033")
    for n in range(3):
        harness.entry(
            "3033",
            f"The replica workerpool0-0 exited with a non-zero status of 1. attempt {n}",
            task="service",
            insert_id=f"attempt-{n}",
            timestamp=f"2026-11-29T12:00:0{n}Z",
        )
    harness.job_failed("3033")
    assert context_of(harness, "3033")["attempt"] == 3
    everything_posted = json.dumps([c.args for c in harness.slack.calls_to("chat.postMessage")])
    assert "3 failed attempts seen" in everything_posted  # in the alert or its diagnosis card
    harness.job("3034")
    harness.entry("3034")
    assert context_of(harness, "3034")["attempt"] is None


def test_entries_are_read_in_time_order_whatever_the_order_they_came_in(harness: Harness) -> None:
    harness.running("3035")
    nccl = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9) ran for 600000 milliseconds"
    harness.entry("3035", nccl, task="workerpool0-0", timestamp="2026-11-29T12:10:00Z", insert_id="late-timeout")
    harness.entry("3035", OOM, task="workerpool0-1", timestamp="2026-11-29T12:00:01Z", insert_id="early-oom")
    harness.job_failed("3035")
    context = context_of(harness, "3035")
    assert context["first_failing_replica"] == "workerpool0-1"
    assert harness.store.get_alert(f"{PROJECT}/3035").diagnosis["diagnosis"]["failure_class"] == "accelerator_oom"


def test_missing_permissions_without_details_name_the_one_the_call_needs(harness: Harness) -> None:
    harness.google.inject(status=403, api="vertex", error_info=False, message="Permission denied.")
    harness.google.inject(status=403, api="logging", error_info=False, message="Permission denied.")
    harness.entry("3036")
    harness.job_failed("3036")
    unavailable = " ".join(context_of(harness, "3036")["unavailable"])
    assert "the bot lacks aiplatform.customJobs.get" in unavailable
    assert "the bot lacks logging.logEntries.list" in unavailable


def clocked(harness: Harness, clock: list[float]) -> AlertService:
    """The service's AlertService parts, with a clock the test moves."""
    services = harness.live.services
    return AlertService(
        store=services.store,
        poster=services.poster,
        classifier=services.classifier,
        routing=services.routing,
        jobs=services.jobs,
        logs=services.logs,
        clock=lambda: clock[0],
    )


def test_a_cached_job_state_lasts_ten_seconds(harness: Harness) -> None:
    clock = [1_800_000_000.0]
    alerts = clocked(harness, clock)
    harness.running("3037")
    error = log_entry(PROJECT, "3037", OOM, task_name="workerpool0-0", severity="ERROR")
    assert alerts.handle_log_entry({**error, "insertId": "a"}).status == "held"
    clock[0] += 9.9
    assert alerts.handle_log_entry({**error, "insertId": "b"}).status == "held"
    assert harness.job_gets("3037") == 1
    clock[0] += 0.1  # ten seconds after the look-up: fetched again
    assert alerts.handle_log_entry({**error, "insertId": "c"}).status == "held"
    assert harness.job_gets("3037") == 2


def test_a_job_known_to_have_ended_is_not_looked_up_again_for_a_marker(harness: Harness) -> None:
    clock = [1_800_000_000.0]
    alerts = clocked(harness, clock)
    harness.job("3038", state="JOB_STATE_SUCCEEDED", error=None)
    error = log_entry(PROJECT, "3038", OOM, task_name="workerpool0-0", severity="ERROR", insert_id="e")
    assert alerts.handle_log_entry(error).status == "recovered"
    marker = log_entry(PROJECT, "3038", "Job failed.", insert_id="m")
    assert alerts.handle_log_entry(marker).status == "recovered"
    assert harness.job_gets("3038") == 1


# ------------------------------------------------------------------------------------ shutdown, store failures


def logged(caplog: pytest.LogCaptureFixture, message: str) -> list[dict]:
    return [dict(r.fields, level=r.levelname) for r in caplog.records if r.getMessage() == message]


def test_settle_releases_the_claims_of_posts_in_flight_as_in_doubt(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    harness.job("3040")
    seen: dict = {}

    def shutdown_begins() -> None:  # SIGTERM while Slack is answering the post
        harness.alerts.settle()
        seen["alert"] = harness.store.get_alert(f"{PROJECT}/3040")

    harness.slack.after_call("chat.postMessage", shutdown_begins)
    with caplog.at_level(logging.INFO, logger="trainmedic"):
        assert harness.entry("3040").status == "posted"
    assert seen["alert"].posted is False and seen["alert"].post_in_doubt is True
    assert logged(caplog, "claim settled at shutdown") == [{"job_key": f"{PROJECT}/3040", "level": "WARNING"}]
    assert harness.store.get_alert(f"{PROJECT}/3040").post_in_doubt is False  # the recorded post settles it
    caplog.clear()
    harness.alerts.settle()  # nothing is held any more
    assert logged(caplog, "claim settled at shutdown") == []


def impatient_alerts(harness: Harness) -> tuple[AlertService, Any]:
    """The service's parts over a second handle on its database that waits 0.2 s for a lock, not 5 s."""
    from bot.store.sqlite import SqliteStore

    services = harness.live.services
    store = SqliteStore(harness.live.settings.sqlite_path, busy_timeout=0.2)
    alerts = AlertService(
        store=store,
        poster=services.poster,
        classifier=services.classifier,
        routing=services.routing,
        jobs=services.jobs,
        logs=services.logs,
    )
    return alerts, store


def lock_database_after(harness: Harness, method: str, held: dict) -> None:
    import sqlite3

    def lock() -> None:
        held["db"] = sqlite3.connect(harness.live.settings.sqlite_path, timeout=1, check_same_thread=False)
        held["db"].execute("BEGIN EXCLUSIVE")

    harness.slack.after_call(method, lock)


def test_a_post_the_store_cannot_record_is_withdrawn(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    from bot.errors import StoreUnavailable

    alerts, store = impatient_alerts(harness)
    harness.job("3041")
    held: dict = {}
    lock_database_after(harness, "chat.postMessage", held)
    try:
        with caplog.at_level(logging.INFO, logger="trainmedic"), pytest.raises(StoreUnavailable):
            alerts.handle_log_entry(log_entry(PROJECT, "3041", OOM, task_name="workerpool0-0", severity="ERROR"))
    finally:
        held["db"].execute("ROLLBACK")
        held["db"].close()
        store.close()
    [post] = [c for c in harness.slack.calls_to("chat.postMessage") if not c.args.get("thread_ts")]
    assert len(harness.slack.calls_to("chat.delete")) >= 1
    assert harness.posts() == []  # withdrawn
    [withdrawn] = logged(caplog, "posted message withdrawn: the store could not record it")
    assert withdrawn["job_key"] == f"{PROJECT}/3041" and withdrawn["level"] == "WARNING"
    assert post.args["channel"] == "#vision-alerts"


def test_a_post_that_can_be_neither_recorded_nor_withdrawn_is_left_in_doubt(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    from bot.errors import StoreUnavailable

    alerts, store = impatient_alerts(harness)
    harness.job("3042")
    held: dict = {}
    lock_database_after(harness, "chat.postMessage", held)
    harness.slack.api_error("chat.delete", "cant_delete_message")
    try:
        with caplog.at_level(logging.INFO, logger="trainmedic"), pytest.raises(StoreUnavailable):
            alerts.handle_log_entry(log_entry(PROJECT, "3042", OOM, task_name="workerpool0-0", severity="ERROR"))
    finally:
        held["db"].execute("ROLLBACK")
        held["db"].close()
        store.close()
    assert len(harness.posts()) == 1  # still in Slack: a redelivery must adopt it, not post again
    [kept] = logged(caplog, "posted message could not be recorded nor withdrawn: a redelivery will adopt it")
    assert kept["job_key"] == f"{PROJECT}/3042" and kept["level"] == "ERROR" and "cant_delete_message" in kept["reason"]
    [unreleased] = logged(caplog, "post claim not released")
    assert unreleased["job_key"] == f"{PROJECT}/3042" and unreleased["level"] == "WARNING"


def test_an_incident_id_that_is_not_a_plain_key_is_hashed(harness: Harness) -> None:
    outcome = harness.alerts.handle_incident(incident(scoping_project_id=PROJECT, incident_id="0/../x y"))
    assert outcome.job_key.startswith(f"{PROJECT}/incident-sha256-")
    plain = harness.alerts.handle_incident(incident(scoping_project_id=PROJECT, incident_id="0.abc-_9"))
    assert plain.job_key == f"{PROJECT}/incident-0.abc-_9"


def test_an_incident_naming_an_invalid_project_is_refused(harness: Harness) -> None:
    with pytest.raises(InvalidPushMessage, match="invalid project id"):
        harness.alerts.handle_incident(incident(scoping_project_id="Not A Project"))


@pytest.mark.parametrize("started_at", [0, -5, "1764417600", None])
def test_an_incident_start_that_is_not_a_positive_epoch_is_left_out(harness: Harness, started_at: object) -> None:
    outcome = harness.alerts.handle_incident(incident(scoping_project_id=PROJECT, started_at=started_at))
    [entry] = harness.store.entries(outcome.job_key)
    assert entry.get("timestamp") is None


# ------------------------------------------------------------------------------------ issue 9: the rest of the path


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("text", "data is neither a LogEntry nor a Monitoring incident"),
        ({"jsonPayload": {}}, "data is neither a LogEntry nor a Monitoring incident"),
        ({"logName": "projects/x/logs/y"}, "resource.type is None, not ml_job"),
        ({"resource": {"type": "gae_app"}}, "resource.type is 'gae_app', not ml_job"),
    ],
)
def test_what_no_source_recognises_is_irrelevant_saying_why(harness: Harness, data: Any, reason: str) -> None:
    outcome = harness.alerts.handle(data, message_id="m-1")
    assert (outcome.status, outcome.reason, outcome.job_key) == ("irrelevant", reason, None)


def test_a_sources_irrelevant_message_is_irrelevant_with_its_reason(harness: Harness) -> None:
    entry = {
        "protoPayload": {
            "serviceName": "aiplatform.googleapis.com",
            "methodName": "google.cloud.aiplatform.v1.JobService.CreateCustomJob",
            "status": {},
        },
    }
    outcome = harness.alerts.handle(entry, message_id="m-1")
    assert (outcome.status, outcome.reason) == ("irrelevant", "a job creation that succeeded")
    assert harness.google.requests == [] and harness.posts() == []


def test_a_notification_pushed_as_a_log_entry_is_not_read_as_one(harness: Harness) -> None:
    outcome = harness.alerts.handle_log_entry(incident(scoping_project_id=PROJECT))
    assert (outcome.status, outcome.reason) == ("irrelevant", "a Monitoring notification, not a LogEntry")


def test_a_closing_notification_without_an_alert_changes_nothing(harness: Harness) -> None:
    closed = incident(state="closed", resource={"labels": {"project_id": PROJECT, "job_id": "3050"}})
    outcome = harness.alerts.handle_incident(closed)
    assert (outcome.status, outcome.job_key) == ("irrelevant", f"{PROJECT}/3050")
    assert outcome.reason.endswith("; no alert of incident 0.abc to update")
    assert harness.store.entries(f"{PROJECT}/3050") == [] and harness.google.requests == []


def test_a_closing_notification_updates_its_jobs_alert(harness: Harness) -> None:
    harness.running("3051")
    where = {"resource": {"labels": {"project_id": PROJECT, "job_id": "3051"}}}
    opened = harness.alerts.handle_incident(incident(**where))
    assert opened.status == "posted"
    closed = harness.alerts.handle_incident(incident(state="closed", ended_at=1764421200, **where))
    assert closed.status == "updated" and (closed.channel, closed.message_ts) == (opened.channel, opened.message_ts)
    assert len(harness.posts()) == 1


def test_a_held_entry_seen_again_is_a_duplicate_with_the_gates_reason(harness: Harness) -> None:
    harness.running("3052")
    assert harness.entry("3052", insert_id="a").status == "held"
    again = harness.entry("3052", insert_id="a")
    assert (again.status, again.reason, again.job_key) == (
        "duplicate",
        "held: job is JOB_STATE_RUNNING",
        f"{PROJECT}/3052",
    )


def test_a_post_another_delivery_is_making_is_left_to_it(harness: Harness) -> None:
    from bot.alerting.alerts import PostInProgress

    harness.job("3053")
    key = f"{PROJECT}/3053"
    assert harness.store.claim_post(key, owner="another", lease_seconds=60).value == "won"
    with pytest.raises(PostInProgress, match=f"^{key}: another delivery is posting"):
        harness.entry("3053")
    assert harness.posts() == [] and len(harness.store.entries(key)) == 1  # the evidence is kept for it


def test_a_job_never_found_is_recorded_by_its_id(harness: Harness) -> None:
    outcome = harness.job_failed("3054")
    assert outcome == Outcome(
        "posted",
        "posted via default_channel",
        f"{PROJECT}/3054",
        harness.slack.conversation_id("#ml-alerts"),
        harness.posts()[0]["ts"],
        outcome.failure_class,
    )
    record = harness.store.get_alert(f"{PROJECT}/3054")
    assert (record.job["project"], record.job["job_id"]) == (PROJECT, "3054")
    assert record.diagnosis["rerun_allowed"] == ["U0DEFAULT"]
    assert record.diagnosis["card"]["ts"] == harness.slack.replies(record.channel, record.message_ts)[0]["ts"]


def test_entries_stored_while_the_post_was_made_are_folded_in_at_once(harness: Harness) -> None:
    harness.job("3055", labels={})
    key = f"{PROJECT}/3055"
    late = log_entry(PROJECT, "3055", OOM, task_name="workerpool0-1", severity="ERROR", insert_id="late")
    harness.slack.after_call("chat.postMessage", lambda: harness.store.add_entry(key, "late", late))
    outcome = harness.entry("3055", "RuntimeError: something odd", insert_id="first")
    assert outcome.status == "posted"
    [update] = [c for c in harness.slack.calls_to("chat.update") if c.args["ts"] == outcome.message_ts]
    record = harness.store.get_alert(key)
    assert record.diagnosis["diagnosis"]["failure_class"] == "accelerator_oom"  # the late entry's evidence
    assert "CUDA out of memory" in json.dumps(harness.posts()[0])


def test_a_card_someone_deleted_is_forgotten_and_the_alert_still_updates(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    harness.job("3056")
    key = f"{PROJECT}/3056"
    posted = harness.entry("3056", "RuntimeError: something odd", insert_id="first")
    card_ts = harness.store.get_alert(key).diagnosis["card"]["ts"]
    # the message's update goes through; the card's (the next chat.update) finds it gone
    harness.slack.after_call("chat.update", lambda: harness.slack.api_error("chat.update", "message_not_found"))
    with caplog.at_level(logging.INFO, logger="trainmedic"):
        update = harness.entry("3056", OOM, insert_id="late-oom")
    assert update.status == "updated" and update.message_ts == posted.message_ts
    record = harness.store.get_alert(key)
    assert "card" not in record.diagnosis or record.diagnosis["card"] is None
    [lost] = logged(caplog, "the card could not be updated")
    assert lost["job_key"] == key and lost["level"] == "WARNING" and "message_not_found" in lost["reason"]
    assert card_ts != posted.message_ts


def test_a_card_update_slack_cannot_answer_now_fails_the_update(harness: Harness) -> None:
    harness.job("3057")
    key = f"{PROJECT}/3057"
    harness.entry("3057", "RuntimeError: something odd", insert_id="first")
    before = harness.store.get_alert(key).fingerprint
    harness.slack.after_call("chat.update", lambda: harness.slack.server_error("chat.update", times=10, status=503))
    with pytest.raises(ApiUnavailable):
        harness.entry("3057", OOM, insert_id="late-oom")
    assert harness.store.get_alert(key).fingerprint == before  # not recorded: the redelivery updates both again


def test_render_record_refuses_an_alert_with_nothing_stored(harness: Harness) -> None:
    key = f"{PROJECT}/3058"
    harness.store.claim_post(key, owner="x", lease_seconds=60)
    with pytest.raises(ValueError, match=f"^{key}: no stored alert to render$"):
        harness.alerts.render_record(harness.store.get_alert(key))


def test_the_job_cache_time_is_the_lookups(harness: Harness) -> None:
    alerts = harness.alerts
    alerts.job_cache_seconds = 0.0
    assert alerts.lookup.cache_seconds == 0.0 and alerts.job_cache_seconds == 0.0
    harness.running("3059")
    harness.entry("3059", insert_id="a")
    harness.entry("3059", insert_id="b")
    assert harness.job_gets("3059") == 2  # nothing cached


def test_a_deadline_ends_early_once_shutdown_begins(harness: Harness) -> None:
    alerts = harness.alerts
    assert 29.0 < alerts.deadline(30.0).remaining() <= 30.0
    alerts.shutdown.begin()
    assert alerts.deadline(30.0).remaining() < 6.5  # what is left of the shutdown window


def test_posts_and_updates_are_logged_with_what_they_did(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    harness.job("3061")
    key = f"{PROJECT}/3061"
    with caplog.at_level(logging.INFO, logger="trainmedic"):
        posted = harness.entry("3061", "RuntimeError: something odd", insert_id="first")
        harness.entry("3061", OOM, insert_id="late-oom")
    [post] = logged(caplog, "failure posted")
    record = harness.store.get_alert(key)
    assert post == {
        "job_key": key,
        "channel": posted.channel,
        "ts": posted.message_ts,
        "route": "routes[0]",
        "failure_class": posted.failure_class,
        "confidence": post["confidence"],
        "level": "INFO",
    }
    assert isinstance(post["confidence"], float) and 0.0 <= post["confidence"] <= 1.0
    [update] = logged(caplog, "failure message updated")
    assert update == {"job_key": key, "failure_class": "accelerator_oom", "level": "INFO"}
    assert record.diagnosis["diagnosis"]["failure_class"] == "accelerator_oom"


def test_a_claim_the_store_cannot_release_at_shutdown_is_said(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    import sqlite3

    alerts, store = impatient_alerts(harness)
    harness.job("3062")
    key = f"{PROJECT}/3062"

    def shutdown_with_the_store_locked() -> None:
        db = sqlite3.connect(harness.live.settings.sqlite_path, timeout=1, check_same_thread=False)
        db.execute("BEGIN EXCLUSIVE")
        try:
            alerts.settle()
        finally:
            db.execute("ROLLBACK")
            db.close()

    harness.slack.after_call("chat.postMessage", shutdown_with_the_store_locked)
    try:
        with caplog.at_level(logging.INFO, logger="trainmedic"):
            outcome = alerts.handle_log_entry(
                log_entry(PROJECT, "3062", OOM, task_name="workerpool0-0", severity="ERROR")
            )
    finally:
        store.close()
    assert outcome.status == "posted"  # the lease would have expired; the post itself went on
    [failed] = logged(caplog, "claim not settled at shutdown")
    assert failed["job_key"] == key and failed["level"] == "WARNING" and failed["reason"]
    assert logged(caplog, "claim settled at shutdown") == []


def test_an_alert_stored_without_its_diagnosis_is_still_updated(harness: Harness) -> None:
    """A record an older version wrote (no stored diagnosis, no card): new evidence re-renders the message."""
    key = f"{PROJECT}/3063"
    harness.job("3063")
    channel, ts = harness.live.services.poster.post("#ml-alerts", {"text": "old", "blocks": []})
    assert harness.store.claim_post(key, owner="old", lease_seconds=60).value == "won"
    harness.store.record_post(
        key, owner="old", channel=channel, message_ts=ts, diagnosis={}, fingerprint="old", job={"project": PROJECT}
    )
    outcome = harness.entry("3063")
    assert (outcome.status, outcome.message_ts) == ("updated", ts)
    assert "CUDA out of memory" in json.dumps(harness.slack.message(channel, ts))


def test_a_job_never_found_is_routed_by_its_project(harness: Harness) -> None:
    from bot.config import Route, RouteMatch, RoutingConfig

    services = harness.live.services
    routing = RoutingConfig(
        default_channel="#ml-alerts",
        regions=[REGION],
        routes=[Route(match=RouteMatch(project=PROJECT), channel="#acme-alerts")],
    )
    alerts = AlertService(
        store=services.store,
        poster=services.poster,
        classifier=services.classifier,
        routing=routing,
        jobs=services.jobs,
        logs=services.logs,
    )
    outcome = alerts.handle_log_entry(log_entry(PROJECT, "3064", "Job failed.", insert_id="marker"))
    assert outcome.status == "posted" and outcome.reason == "posted via routes[0]"
    assert [p["channel"] for p in harness.posts()] == ["#acme-alerts"]


def test_a_pipelines_failed_task_is_not_looked_up_past_the_push_deadline(harness: Harness) -> None:
    from standins.google_apis import pipeline_event, pipeline_job_json

    run = "train-pipeline-20261130101500"
    harness.google.seed_job(pipeline_job_json(PROJECT, REGION, run, failed_tasks={"train-model": "3065"}))
    harness.job("3065")
    harness.google.inject(delay=1.5, times=1, api="vertex")  # the pipeline's look-up leaves under 5 s
    event = pipeline_event(PROJECT, REGION, run, "PIPELINE_STATE_FAILED")
    outcome = harness.alerts.handle(event, message_id="m-1", deadline=harness.alerts.deadline(6.0))
    assert outcome.status == "posted", outcome
    assert harness.job_gets("3065") == 0  # the task's job was not fetched: too little time left
    unavailable = " ".join(harness.store.get_alert(outcome.job_key).diagnosis["context"]["unavailable"])
    assert "the failed task's job details: skipped" in unavailable


def test_a_post_another_delivery_recorded_meanwhile_is_updated_not_posted_again(harness: Harness) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from standins.http_server import wait_until

    harness.job("3066")
    harness.google.inject(delay=4.0, times=1, api="vertex")  # the first delivery's job look-up is slow
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(harness.job_failed, "3066", insert_id="a")
        assert wait_until(lambda: harness.job_gets("3066") == 1, timeout=10)
        second = harness.job_failed("3066", insert_id="b")  # another delivery posts while the first waits
        assert second.status == "posted"
        late = first.result(timeout=30)
    assert late.status in ("updated", "unchanged") and late.message_ts == second.message_ts
    assert len(harness.posts()) == 1


def test_a_failure_alert_takes_over_the_jobs_stuck_job_message(harness: Harness) -> None:
    key = f"{PROJECT}/3067"
    harness.job("3067")
    channel, ts = harness.live.services.poster.post("#ml-alerts", {"text": "Waiting for quota", "blocks": []})
    stuck = f"stuck:{key}"
    assert harness.store.claim_post(stuck, owner="scan", lease_seconds=60).value == "won"
    harness.store.record_post(
        stuck, owner="scan", channel=channel, message_ts=ts, diagnosis={}, fingerprint="s", job={"open": True}
    )
    outcome = harness.entry("3067")
    assert (outcome.status, outcome.channel, outcome.message_ts) == ("posted", channel, ts)
    assert len(harness.posts()) == 1 and "CUDA out of memory" in json.dumps(harness.slack.message(channel, ts))
    assert harness.store.get_alert(stuck).job["taken_over_by"] == key  # scans leave it alone from now on


def test_google_calls_are_bounded_by_the_services_google_timeout(harness: Harness) -> None:
    services = harness.live.services
    alerts = AlertService(
        store=services.store,
        poster=services.poster,
        classifier=services.classifier,
        routing=services.routing,
        jobs=services.jobs,
        logs=services.logs,
        google_timeout=0.5,
    )
    harness.job("3068")  # failed, but Vertex AI answers after the 0.5 s the service allows
    harness.google.inject(delay=3.0, api="vertex")
    outcome = alerts.handle_log_entry(log_entry(PROJECT, "3068", OOM, task_name="workerpool0-0", severity="ERROR"))
    harness.google.clear_faults()
    assert outcome.status == "held" and "unknown" in outcome.reason
