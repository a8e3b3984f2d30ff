"""The chat actions over HTTP: signed Slack requests to the running service, stand-ins recording what it sent.

The service runs for real (uvicorn, SQLite store, Bolt) and reaches the local Slack Web API and Vertex AI /
Cloud Logging stand-ins through slack_sdk and the Google client libraries. Assertions are on the bodies the
stand-ins recorded: the reply to /diagnose, the updated alert, the opened modal, the created CustomJob.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bot.gcp.job_resource import OUTPUT_ONLY_FIELDS
from bot.render.alert_actions import ACTION_ACKNOWLEDGE, ACTION_RERUN, ACTION_UNACKNOWLEDGE
from bot.store import AlertRecord
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry
from standins.http_server import wait_until
from standins.slack_api import (
    FakeSlackApi,
    app_mention_body,
    block_action_body,
    signature_headers,
    slash_command_body,
    view_submission_body,
)
from tests.live_service import ROOT, LiveService, base_environ, envelope

SECRET = "test-signing-secret"
PROJECT = "acme-ml"
REGION, OTHER_REGION = "us-central1", "europe-west4"
CHANNEL = "C0ALERTS"
ALLOWED, GROUPIE, MEMBER, STRANGER = "U0ALLOWED", "U0GROUPIE", "U0MEMBER", "U0STRANGER"
GROUP = "S0RERUN"
ROUTING = {
    "default_channel": CHANNEL,
    "regions": [REGION, OTHER_REGION],
    "default_project": PROJECT,
    "rerun_allowed": [ALLOWED, GROUP],
}
OOM = (
    'Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of "
    "39.39 GiB of which 1.02 GiB is free."
)
QUOTA = (
    "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"
)
PREEMPTED = "The replica workerpool0-0 was preempted. Spot VM instance was preempted by Compute Engine."


class Chat:
    """Sends signed Slack requests to the live service; reads what the stand-ins recorded."""

    def __init__(self, live: LiveService, slack: FakeSlackApi, google: FakeGoogleApis) -> None:
        self.live, self.slack, self.google = live, slack, google
        self.http = httpx.Client(base_url=live.url, timeout=30)
        self._serial = 0
        self._lock = threading.Lock()

    @property
    def store(self) -> Any:
        return self.live.services.store

    def serial(self) -> int:
        with self._lock:
            self._serial += 1
            return self._serial

    # ---- Slack -> the service

    def send(self, body: bytes, content_type: str, *, retry_num: int | None = None, **sign: Any) -> httpx.Response:
        headers = signature_headers(SECRET, body, content_type=content_type, retry_num=retry_num, **sign)
        return self.http.post("/slack/events", content=body, headers=headers)

    def command(self, text: str, *, user: str = MEMBER, trigger_id: str | None = None, **kw: Any) -> httpx.Response:
        trigger = trigger_id or f"trigger-{self.serial()}"
        body = slash_command_body(
            text, user=user, channel=CHANNEL, response_url=self.slack.response_url(trigger), trigger_id=trigger
        )
        return self.send(body, "application/x-www-form-urlencoded", **kw)

    def click(self, action_id: str, alert: AlertRecord, *, user: str, **kw: Any) -> httpx.Response:
        return self.click_raw(action_id, alert.job_key, user=user, channel=alert.channel, ts=alert.message_ts, **kw)

    def click_raw(self, action_id: str, value: str, *, user: str, channel: str, ts: str, **kw: Any) -> httpx.Response:
        trigger = f"trigger-{self.serial()}"
        body = block_action_body(
            action_id,
            value,
            user=user,
            channel=channel,
            message_ts=ts,
            trigger_id=trigger,
            response_url=self.slack.response_url(trigger),
        )
        return self.send(body, "application/x-www-form-urlencoded", **kw)

    def submit(
        self, view: dict, values: dict[str, str], *, user: str, trigger_id: str | None = None, **kw: Any
    ) -> httpx.Response:
        body = view_submission_body(
            view, state_values(values), user=user, trigger_id=trigger_id or f"trigger-{self.serial()}"
        )
        return self.send(body, "application/x-www-form-urlencoded", **kw)

    def mention(self, text: str, *, thread_ts: str | None, event_id: str, **kw: Any) -> httpx.Response:
        body = app_mention_body(
            text,
            user=MEMBER,
            channel=CHANNEL,
            ts=f"1700000500.{self.serial():06d}",
            thread_ts=thread_ts,
            event_id=event_id,
        )
        return self.send(body, "application/json", **kw)

    # ---- a failed job, alerted as the log sink's push would

    def failure(self, job_id: str, text: str = OOM, **fields: Any) -> AlertRecord:
        self.google.seed_job(custom_job_json(PROJECT, REGION, job_id, **fields))
        self.google.seed_log_entries(
            [
                log_entry(
                    PROJECT,
                    job_id,
                    text,
                    task_name="workerpool0-0",
                    severity="ERROR",
                    timestamp="2026-11-29T12:00:01Z",
                    insert_id=f"{job_id}-error",
                )
            ]
        )
        failed = log_entry(PROJECT, job_id, "Job failed.", timestamp="2026-11-29T12:00:05Z", insert_id=f"{job_id}-x")
        answer = self.http.post("/pubsub/push", json=envelope(failed, f"push-{job_id}"))
        assert answer.status_code == 200 and answer.json()["status"] == "posted", answer.text
        record = self.store.get_alert(f"{PROJECT}/{job_id}")
        assert record is not None and record.posted
        return record

    # ---- what the stand-ins saw

    def replies(self, trigger: str) -> list[dict]:
        return [call.args for call in self.slack.calls_to(f"response:{trigger}")]

    def ephemerals(self, user: str) -> list[str]:
        return [c.args["text"] for c in self.slack.calls_to("chat.postEphemeral") if c.args.get("user") == user]

    def creates(self, region: str = REGION) -> list[dict]:
        path = f"/v1/projects/{PROJECT}/locations/{region}/customJobs"
        return [r.json for r in self.google.requests if r.method == "POST" and r.path == path]

    def gets(self, job_id: str) -> list[str]:
        return [r.path for r in self.google.requests if r.method == "GET" and r.path.endswith(f"/customJobs/{job_id}")]

    def opened_modal(self) -> dict:
        assert wait_until(lambda: self.slack.calls_to("views.update"), timeout=10)
        return self.slack.calls_to("views.update")[-1].args["view"]


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def state_values(values: dict[str, str]) -> dict[str, dict]:
    """`view.state.values` for the rerun modal's inputs, as Slack sends them."""
    out: dict[str, dict] = {}
    for block_id, value in values.items():
        if block_id in ("region", "accelerator_type"):
            element = {
                "type": "static_select",
                "selected_option": {"text": {"type": "plain_text", "text": value}, "value": value},
            }
        elif block_id == "machine_type":
            element = {"type": "plain_text_input", "value": value}
        else:
            element = {"type": "number_input", "value": value}
        out[block_id] = {block_id: element}
    return out


def modal_values(view: dict) -> dict[str, str]:
    """The prefilled values of the modal's inputs (what a person submits without editing)."""
    values = {}
    for block in view["blocks"]:
        if block["type"] != "input":
            continue
        element = block["element"]
        values[block["block_id"]] = (
            element["initial_option"]["value"] if "initial_option" in element else element["initial_value"]
        )
    return values


def normalized(job: dict) -> dict:
    """A CustomJob REST dict in one canonical form (enum names, int64 as strings), whatever encoding it used."""
    from google.cloud.aiplatform_v1.types import CustomJob
    from google.protobuf import json_format

    return json_format.MessageToDict(json_format.ParseDict(job, CustomJob.pb(CustomJob())))


def without_output_only(job: dict) -> dict:
    return {key: copy.deepcopy(value) for key, value in job.items() if key not in OUTPUT_ONLY_FIELDS}


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chat]:
    tmp = tmp_path_factory.mktemp("chat")
    config = tmp / "trainmedic.yaml"
    config.write_text(yaml.safe_dump(ROUTING))
    with FakeSlackApi() as slack, FakeGoogleApis() as google:
        slack.seed_members(CHANNEL, [ALLOWED, GROUPIE, MEMBER])
        slack.seed_usergroup(GROUP, [GROUPIE])
        environ = base_environ(
            tmp,
            SLACK_SIGNING_SECRET=SECRET,
            TRAINMEDIC_CONFIG=str(config),
            SLACK_API_URL=slack.base_url,
            VERTEX_API_ENDPOINT=google.base_url,
            LOGGING_API_ENDPOINT=google.base_url,
        )
        with LiveService(environ) as live:
            client = Chat(live, slack, google)
            yield client
            client.http.close()


@pytest.fixture(autouse=True)
def fresh_records(chat: Chat) -> None:
    chat.slack.clear()
    chat.google.server.clear()
    chat.google.clear_faults()


# ------------------------------------------------------------------------------------------------ security


def test_forged_and_stale_requests_are_refused(chat: Chat) -> None:
    body = slash_command_body(
        "123", user=MEMBER, channel=CHANNEL, response_url=chat.slack.response_url("x"), trigger_id="forged"
    )
    forged = signature_headers("not-the-secret", body, content_type="application/x-www-form-urlencoded")
    stale = signature_headers(
        SECRET, body, content_type="application/x-www-form-urlencoded", timestamp=int(time.time()) - 600
    )

    assert chat.http.post("/slack/events", content=body, headers=forged).status_code == 401
    assert chat.http.post("/slack/events", content=body, headers=stale).status_code == 401
    assert chat.http.post("/slack/events", content=body).status_code == 401
    assert chat.live.wait_quiet()
    assert chat.google.requests == [] and chat.slack.calls == []


def test_actions_on_unknown_jobs_or_other_messages_are_refused(chat: Chat) -> None:
    alert = chat.failure("1101")

    chat.click_raw(ACTION_ACKNOWLEDGE, f"{PROJECT}/999", user=MEMBER, channel=CHANNEL, ts=alert.message_ts)
    chat.click_raw(ACTION_ACKNOWLEDGE, alert.job_key, user=MEMBER, channel=CHANNEL, ts="1700000000.999999")
    chat.click_raw(ACTION_RERUN, alert.job_key, user=ALLOWED, channel="C0OTHER", ts=alert.message_ts)

    assert wait_until(lambda: len(chat.ephemerals(MEMBER)) == 2 and chat.ephemerals(ALLOWED), timeout=10)
    answers = " | ".join(chat.ephemerals(MEMBER))  # the clicks are handled concurrently: in either order
    assert "does not know this job" in answers and "not the message trainmedic posted" in answers
    assert "not the message trainmedic posted" in chat.ephemerals(ALLOWED)[0]
    assert chat.slack.calls_to("chat.update") == [] and chat.slack.calls_to("views.open") == []
    assert chat.store.get_alert(alert.job_key).acknowledged_by is None


# ------------------------------------------------------------------------------------------------ /diagnose


def test_diagnose_acknowledges_at_once_then_replies_in_the_channel(chat: Chat) -> None:
    chat.google.seed_job(custom_job_json(PROJECT, REGION, "1201", displayName="bert-large"))
    chat.google.seed_log_entries([log_entry(PROJECT, "1201", OOM, task_name="workerpool0-0", severity="ERROR")])

    started = time.monotonic()
    answer = chat.command("1201", trigger_id="t-1201")

    assert answer.status_code == 200 and time.monotonic() - started < 3
    assert "Diagnosing job 1201" in answer.text  # a plain-text body: shown only to the caller
    assert wait_until(lambda: chat.replies("t-1201"), timeout=10)
    (reply,) = chat.replies("t-1201")
    assert reply["response_type"] == "in_channel" and reply["replace_original"] is False
    blocks = reply["blocks"]
    assert blocks[0]["type"] == "header" and "bert-large" in blocks[0]["text"]["text"]
    assert "accelerator_oom" in dump(blocks)
    assert not [b for b in blocks if b["type"] == "actions"]  # the buttons live on the alert only
    for part in ("*Check first*", "*What to do*", "*Avoid*", "Also possible", "|Logs (all replicas)>"):
        assert part in dump(blocks), part  # the full card, as in an alert's thread
    assert chat.gets("1201") == [f"/v1/projects/{PROJECT}/locations/{REGION}/customJobs/1201"]
    logs_query = [r.json for r in chat.google.requests if r.path == "/v2/entries:list"]
    assert logs_query and 'resource.labels.job_id="1201"' in logs_query[0]["filter"]


def test_diagnose_a_console_url_privately(chat: Chat) -> None:
    chat.google.seed_job(custom_job_json("other-proj", OTHER_REGION, "1202"))
    url = f"https://console.cloud.google.com/vertex-ai/locations/{OTHER_REGION}/training/1202/cpu?project=other-proj"

    chat.command(f"<{url}> private", trigger_id="t-1202")

    assert wait_until(lambda: chat.replies("t-1202"), timeout=10)
    assert chat.replies("t-1202")[0]["response_type"] == "ephemeral"
    assert chat.gets("1202") == [f"/v1/projects/other-proj/locations/{OTHER_REGION}/customJobs/1202"]


def test_diagnose_help_and_a_bad_id_answer_in_the_acknowledgement(chat: Chat) -> None:
    helped = chat.command("help").json()
    bad = chat.command("bert-large-run").json()

    assert "/diagnose 8501620632646057984" in helped["text"] and "private" in helped["text"]
    assert "mention me" in helped["text"]  # slash commands do not work in threads
    assert "'bert-large-run' is not a custom job id" in bad["text"]
    assert chat.google.requests == []


def test_diagnose_an_unknown_job_says_where_it_looked(chat: Chat) -> None:
    chat.command("1203", trigger_id="t-1203")

    assert wait_until(lambda: chat.replies("t-1203"), timeout=10)
    text = chat.replies("t-1203")[0]["text"]
    assert "Unknown job" in text
    assert f"no custom job 1203 in project {PROJECT} (looked in {REGION}, {OTHER_REGION})" in text
    assert len(chat.gets("1203")) == 2


def test_diagnose_names_the_permission_vertex_ai_denied(chat: Chat) -> None:
    chat.google.inject(status=403, job_id="1204", api="vertex")

    chat.command("1204", trigger_id="t-1204")

    assert wait_until(lambda: chat.replies("t-1204"), timeout=10)
    text = chat.replies("t-1204")[0]["text"]
    assert "trainmedic's service account lacks aiplatform.customJobs.get" in text and "roles/aiplatform.viewer" in text

    # without permission to read the logs, the job is still diagnosed, and the answer says what is missing
    chat.google.seed_job(custom_job_json(PROJECT, REGION, "1209", error={"code": 8, "message": QUOTA}))
    chat.google.inject(status=403, api="logging")
    chat.command("1209", trigger_id="t-1209")
    assert wait_until(lambda: chat.replies("t-1209"), timeout=10)
    blocks = dump(chat.replies("t-1209")[0]["blocks"])
    assert "lacks logging.logEntries.list" in blocks and "quota_exhausted" in blocks


def test_diagnose_a_running_job_shows_its_state_and_what_the_logs_show(chat: Chat) -> None:
    chat.google.seed_job(custom_job_json(PROJECT, REGION, "1205", state="JOB_STATE_RUNNING", error=None, endTime=None))
    chat.google.seed_log_entries(
        [
            log_entry(
                PROJECT,
                "1205",
                f"step {i} loss={loss}",
                task_name="workerpool0-0",
                timestamp=f"2026-11-29T12:00:{i:02d}Z",
                insert_id=f"1205-{i}",
            )
            for i, loss in enumerate(["2.31", "1.97", "nan", "nan"])
        ]
    )

    chat.command("1205", trigger_id="t-1205")

    assert wait_until(lambda: chat.replies("t-1205"), timeout=10)
    reply = chat.replies("t-1205")[0]
    assert "Still running" in reply["blocks"][1]["text"]["text"] and "JOB_STATE_RUNNING" in dump(reply)
    assert "numerical_instability" in dump(reply["blocks"])
    assert reply["text"].startswith("train-1205 is JOB_STATE_RUNNING")


def test_a_retried_slash_command_runs_once(chat: Chat) -> None:
    chat.google.seed_job(custom_job_json(PROJECT, REGION, "1206"))

    first = chat.command("1206", trigger_id="t-1206")
    retry = chat.command("1206", trigger_id="t-1206", retry_num=1)

    assert first.status_code == retry.status_code == 200
    assert wait_until(lambda: chat.replies("t-1206"), timeout=10)
    assert chat.live.wait_quiet()
    assert len(chat.replies("t-1206")) == 1 and len(chat.gets("1206")) == 1


def test_mention_in_a_thread_is_answered_in_the_thread(chat: Chat) -> None:
    chat.google.seed_job(custom_job_json(PROJECT, REGION, "1207"))
    thread = "1700000400.000001"

    assert chat.mention("<@U0BOT0001> diagnose 1207", thread_ts=thread, event_id="Ev1207").status_code == 200
    chat.mention("<@U0BOT0001> diagnose 1207", thread_ts=thread, event_id="Ev1207", retry_num=1)

    assert wait_until(lambda: chat.slack.calls_to("chat.update"), timeout=10)
    (placeholder,) = chat.slack.calls_to("chat.postMessage")
    assert placeholder.args["thread_ts"] == thread and "Diagnosing job 1207" in placeholder.args["text"]
    (update,) = chat.slack.calls_to("chat.update")
    assert update.args["blocks"][0]["type"] == "header"  # the placeholder in the thread became the answer
    assert update.args["ts"] in [m["ts"] for m in [chat.slack.message(CHANNEL, update.args["ts"])]]
    assert len(chat.gets("1207")) == 1  # the redelivered event was ignored


def test_mention_help_and_private_answers(chat: Chat) -> None:
    chat.google.seed_job(custom_job_json(PROJECT, REGION, "1208"))
    thread = "1700000400.000002"

    chat.mention("<@U0BOT0001> help", thread_ts=thread, event_id="Ev1208a")
    chat.mention("<@U0BOT0001|trainmedic> diagnose 1208 private", thread_ts=thread, event_id="Ev1208b")

    assert wait_until(lambda: len(chat.slack.calls_to("chat.postEphemeral")) == 2, timeout=10)
    (helped,) = chat.slack.calls_to("chat.postMessage")
    assert helped.args["thread_ts"] == thread and "/diagnose" in helped.args["text"]
    placeholder, answer = chat.slack.calls_to("chat.postEphemeral")
    assert placeholder.args["user"] == answer.args["user"] == MEMBER
    assert answer.args["thread_ts"] == thread and answer.args["blocks"][0]["type"] == "header"


# ------------------------------------------------------------------------------------------------ acknowledge


def test_acknowledge_updates_the_message_in_place_and_can_be_undone(chat: Chat) -> None:
    alert = chat.failure("1301")
    chat.slack.clear()

    chat.click(ACTION_ACKNOWLEDGE, alert, user=MEMBER)

    assert wait_until(lambda: chat.slack.calls_to("chat.update"), timeout=10)
    (update,) = chat.slack.calls_to("chat.update")
    assert (update.args["channel"], update.args["ts"]) == (CHANNEL, alert.message_ts)
    text = dump(update.args["blocks"])
    assert f"Acknowledged by <@{MEMBER}> at <!date^" in text and "Undo acknowledge" in text
    stored = chat.store.get_alert(alert.job_key)
    assert stored.acknowledged_by == MEMBER and abs(stored.acknowledged_at - time.time()) < 30

    # later evidence updates the same message (no new post, so no new notification) and keeps the acknowledgement
    more = log_entry(
        PROJECT,
        "1301",
        "RuntimeError: CUDA error: out of memory",
        task_name="workerpool0-0",
        severity="ERROR",
        timestamp="2026-11-29T12:00:03Z",
        insert_id="1301-more",
    )
    chat.http.post("/pubsub/push", json=envelope(more, "push-1301-more"))
    assert chat.slack.calls_to("chat.postMessage") == []
    assert f"Acknowledged by <@{MEMBER}>" in dump(chat.slack.message(CHANNEL, alert.message_ts)["blocks"])

    chat.click(ACTION_UNACKNOWLEDGE, alert, user=ALLOWED)
    assert wait_until(lambda: chat.store.get_alert(alert.job_key).acknowledged_by is None, timeout=10)
    assert wait_until(lambda: "Acknowledged by" not in dump(chat.slack.message(CHANNEL, alert.message_ts)), timeout=10)
    assert wait_until(lambda: len(chat.store.history(alert.job_key)) == 2, timeout=10)
    history = chat.store.history(alert.job_key)
    assert [(h["who"], h["what"], h["result"]) for h in history] == [
        (MEMBER, "acknowledge", "acknowledged"),
        (ALLOWED, "unacknowledge", "acknowledgement undone"),
    ]


def test_acknowledge_is_for_members_of_the_channel(chat: Chat) -> None:
    alert = chat.failure("1302")

    chat.click(ACTION_ACKNOWLEDGE, alert, user=STRANGER)

    assert wait_until(lambda: chat.ephemerals(STRANGER), timeout=10)
    assert chat.ephemerals(STRANGER)[0] == f":no_entry_sign: Only members of <#{CHANNEL}> can acknowledge its alerts."
    assert chat.store.get_alert(alert.job_key).acknowledged_by is None
    assert chat.store.history(alert.job_key)[0]["result"].startswith("refused: only members")


# ------------------------------------------------------------------------------------------------ rerun


def open_modal(chat: Chat, alert: AlertRecord, user: str) -> dict:
    chat.click(ACTION_RERUN, alert, user=user)
    view = chat.opened_modal()
    assert view["callback_id"] == "rerun_confirm"
    return view


def test_rerun_button_opens_a_modal_with_the_plan_prefilled(chat: Chat) -> None:
    alert = chat.failure("1401")

    view = open_modal(chat, alert, GROUPIE)  # allowed through the user group

    (opened,) = chat.slack.calls_to("views.open")
    assert opened.args["trigger_id"].startswith("trigger-")
    assert view["private_metadata"] == alert.job_key and len(view["title"]["text"]) <= 24
    assert len(view["blocks"]) <= 100
    text = dump(view["blocks"])
    for shown in (
        "us-docker.pkg.dev/p/train/trainer:1",
        "a2-highgpu-1g",
        "1× NVIDIA_TESLA_A100",
        REGION,
        "accelerator_oom",
        "machine type: a2-highgpu-1g → a2-ultragpu-1g",
        "An unchanged rerun will fail the same way",
    ):
        assert shown in text, shown
    assert modal_values(view) == {
        "region": REGION,
        "machine_type": "a2-ultragpu-1g",
        "accelerator_type": "NVIDIA_A100_80GB",
        "accelerator_count": "1",
        "replica_count": "1",
    }


def test_unauthorized_rerun_is_refused_and_says_who_may(chat: Chat) -> None:
    alert = chat.failure("1402")

    chat.click(ACTION_RERUN, alert, user=MEMBER)

    assert wait_until(lambda: chat.ephemerals(MEMBER), timeout=10)
    assert chat.ephemerals(MEMBER) == [f":no_entry_sign: Only <@{ALLOWED}> or <!subteam^{GROUP}> may rerun this job."]
    assert chat.slack.calls_to("views.open") == []

    # a submission that skips the button is refused too, and creates nothing
    view = {"type": "modal", "callback_id": "rerun_confirm", "private_metadata": alert.job_key, "blocks": []}
    answer = chat.submit(
        view,
        {
            "region": REGION,
            "machine_type": "a2-highgpu-1g",
            "accelerator_type": "NVIDIA_TESLA_A100",
            "accelerator_count": "1",
            "replica_count": "1",
        },
        user=MEMBER,
    )
    assert answer.json()["response_action"] == "update"
    assert "may rerun this job" in dump(answer.json()["view"])
    assert chat.live.wait_quiet()
    assert chat.creates() == [] and chat.store.get_alert(alert.job_key).rerun_state is None
    assert [h["result"].split(":")[0] for h in chat.store.history(alert.job_key)] == ["refused", "refused"]


def test_rerun_creates_the_failed_job_with_the_chosen_changes_and_labels(chat: Chat) -> None:
    alert = chat.failure("1403")
    view = open_modal(chat, alert, ALLOWED)
    values = {**modal_values(view), "replica_count": "1"}

    answer = chat.submit(view, values, user=ALLOWED)

    assert answer.status_code == 200 and answer.content == b""  # closes the modal
    assert wait_until(lambda: chat.store.get_alert(alert.job_key).rerun_state == "done", timeout=10)
    (sent,) = chat.creates()
    failed = custom_job_json(PROJECT, REGION, "1403")
    expected = without_output_only(failed)
    expected["labels"] = {**failed["labels"], "rerun-of": "1403", "rerun-by": ALLOWED.lower()}
    machine = expected["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    machine.update(machineType="a2-ultragpu-1g", acceleratorType="NVIDIA_A100_80GB", acceleratorCount=1)
    assert normalized(sent) == normalized(expected)

    new_id = chat.store.get_alert(alert.job_key).rerun_job_id.rsplit("/", 1)[-1]

    def thread_replies() -> list:
        return [  # the thread's replies after the alert's own card (its first reply)
            c
            for c in chat.slack.calls_to("chat.postMessage")
            if c.args.get("thread_ts") and (c.args.get("metadata") or {}).get("event_type") != "trainmedic_card"
        ]

    assert wait_until(thread_replies, timeout=10)
    (reply,) = thread_replies()
    assert reply.args["thread_ts"] == alert.message_ts
    assert f"/vertex-ai/locations/{REGION}/training/{new_id}?project={PROJECT}|job {new_id}>" in reply.args["text"]
    assert "machine type: a2-highgpu-1g → a2-ultragpu-1g" in reply.args["text"]
    assert wait_until(
        lambda: f"Rerun by <@{ALLOWED}> as job" in dump(chat.slack.message(CHANNEL, alert.message_ts)["blocks"]),
        timeout=10,
    )
    assert ACTION_RERUN not in dump(chat.slack.message(CHANNEL, alert.message_ts)["blocks"])
    (record,) = chat.store.history(alert.job_key)
    assert (record["who"], record["what"], record["result"]) == (ALLOWED, "rerun", f"created job {new_id} in {REGION}")
    assert "accelerators: 1× NVIDIA_TESLA_A100 → 1× NVIDIA_A100_80GB" in record["detail"]

    # `trainmedic history` prints it
    done = subprocess.run(
        [sys.executable, "-m", "bot", "history", alert.job_key],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "TRAINMEDIC_STORE": chat.live.settings.TRAINMEDIC_STORE},
    )
    assert done.returncode == 0, done.stderr
    assert ALLOWED in done.stdout and "rerun" in done.stdout and f"created job {new_id}" in done.stdout


def rerun_button(chat: Chat, alert: AlertRecord) -> dict | None:
    """The Rerun button on the alert as Slack holds it now (None: there is none)."""
    blocks = chat.slack.message(CHANNEL, alert.message_ts)["blocks"]
    buttons = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    return next((b for b in buttons if b["action_id"] == ACTION_RERUN), None)


def test_quota_failure_asks_for_the_quota_first_then_may_rerun_in_another_region(chat: Chat) -> None:
    alert = chat.failure("1404", text=QUOTA)
    button = rerun_button(chat, alert)
    metric = "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"
    assert button is not None and button["text"]["text"] == "Rerun after the fix"
    assert button["confirm"]["title"]["text"] == "Apply the fix first"
    assert button["confirm"]["text"]["text"].startswith(f"Do this first: request a quota increase for {metric}")
    assert "same spec" in button["confirm"]["text"]["text"]

    view = open_modal(chat, alert, ALLOWED)

    text = dump(view["blocks"])
    assert f"Apply the fix first: request a quota increase for {metric}" in text
    assert "another configured region that offers the accelerator — " in text  # next, or why it does not apply
    assert modal_values(view)["region"] == REGION  # the same spec, once the quota grew
    chat.submit(view, {**modal_values(view), "region": OTHER_REGION}, user=ALLOWED)  # or: cannot wait

    assert wait_until(lambda: chat.creates(OTHER_REGION), timeout=10)
    assert chat.creates(REGION) == []
    assert chat.creates(OTHER_REGION)[0]["labels"]["rerun-of"] == "1404"


def test_accelerator_oom_reruns_with_half_the_batch_size_the_job_was_started_with(chat: Chat) -> None:
    """The whole path: the alert's button and confirmation, the modal, the submit, the CustomJob created through
    the aiplatform client on the Vertex AI stand-in, the thread reply and the audit record."""
    failed = custom_job_json(PROJECT, REGION, "1409")
    failed["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] = ["--epochs=3", "--batch-size=512"]
    alert = chat.failure("1409", jobSpec=failed["jobSpec"])
    button = rerun_button(chat, alert)
    assert button is not None and button["text"]["text"] == "Rerun with changes"
    confirm = button["confirm"]["text"]["text"]
    assert "An unchanged rerun fails the same way" in confirm and "same spec" not in confirm
    assert confirm.index("half the per-device batch size") < confirm.index("an accelerator with more memory")

    view = open_modal(chat, alert, ALLOWED)

    text = dump(view["blocks"])
    assert "The job's args set --batch-size=512: the rerun halves the per-device batch size to --batch-size=256" in text
    assert "args: --batch-size=512 → --batch-size=256" in text
    assert text.index("half the per-device batch size") < text.index("an accelerator with more memory")
    assert modal_values(view) == {
        "region": REGION,
        "machine_type": "a2-highgpu-1g",  # a bigger accelerator is only the next option
        "accelerator_type": "NVIDIA_TESLA_A100",
        "accelerator_count": "1",
        "replica_count": "1",
        "batch_size": "256",
    }

    answer = chat.submit(view, modal_values(view), user=ALLOWED)

    assert answer.status_code == 200 and answer.content == b""
    assert wait_until(lambda: chat.store.get_alert(alert.job_key).rerun_state == "done", timeout=10)
    (sent,) = chat.creates()
    expected = without_output_only(failed)
    expected["labels"] = {**failed["labels"], "rerun-of": "1409", "rerun-by": ALLOWED.lower()}
    expected["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] = ["--epochs=3", "--batch-size=256"]
    assert normalized(sent) == normalized(expected)
    new_id = chat.store.get_alert(alert.job_key).rerun_job_id.rsplit("/", 1)[-1]
    created = chat.google.job(f"projects/{PROJECT}/locations/{REGION}/customJobs/{new_id}")
    assert created["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] == ["--epochs=3", "--batch-size=256"]

    def announced() -> list[str]:
        replies = chat.slack.calls_to("chat.postMessage")
        return [
            c.args["text"] for c in replies if c.args.get("thread_ts") == alert.message_ts and "reran" in c.args["text"]
        ]

    assert wait_until(announced, timeout=10)
    assert "Changes: args: --batch-size=512 → --batch-size=256" in announced()[0]
    (record,) = chat.store.history(alert.job_key)
    assert record["detail"] == f"in {REGION}: args: --batch-size=512 → --batch-size=256"


def test_a_class_that_offers_no_rerun_has_no_button_and_refuses_a_forged_click(chat: Chat) -> None:
    alert = chat.failure("1410", text="Traceback (most recent call last):\nKeyError: 'label'")
    assert chat.store.get_alert(alert.job_key).diagnosis["diagnosis"]["failure_class"] == "application_error"
    assert rerun_button(chat, alert) is None

    chat.click(ACTION_RERUN, alert, user=ALLOWED)

    assert wait_until(lambda: chat.ephemerals(ALLOWED), timeout=10)
    assert chat.ephemerals(ALLOWED)[0].startswith(":no_entry_sign: Rerun is not offered for application_error: ")
    assert chat.slack.calls_to("views.open") == []


def test_an_incident_on_a_running_job_can_be_acknowledged_but_not_rerun(chat: Chat) -> None:
    chat.google.seed_job(custom_job_json(PROJECT, REGION, "1411", state="JOB_STATE_RUNNING", error=None, endTime=None))
    incident = {
        "incident_id": "0.1411",
        "state": "open",
        "policy_name": "Low GPU utilization on training jobs",
        "summary": "GPU utilization for custom job 1411 is below the threshold of 20.000 with a value of 3.000.",
        "resource": {"labels": {"project_id": PROJECT, "job_id": "1411"}},
        "started_at": 1764417600,
    }
    answer = chat.http.post("/pubsub/push", json=envelope({"version": "1.2", "incident": incident}, "inc-1411"))
    assert answer.json()["status"] == "posted", answer.text
    alert = chat.store.get_alert(f"{PROJECT}/1411")
    assert rerun_button(chat, alert) is None

    chat.click(ACTION_RERUN, alert, user=ALLOWED)  # a forged click: there is no button

    assert wait_until(lambda: chat.ephemerals(ALLOWED), timeout=10)
    assert "Cloud Monitoring incident on a job that has not failed: nothing to rerun" in chat.ephemerals(ALLOWED)[0]
    assert chat.slack.calls_to("views.open") == []
    chat.click(ACTION_ACKNOWLEDGE, alert, user=MEMBER)
    assert wait_until(lambda: chat.store.get_alert(alert.job_key).acknowledged_by == MEMBER, timeout=10)


def test_preempted_job_without_checkpoints_warns(chat: Chat) -> None:
    fields = custom_job_json(PROJECT, REGION, "1405")
    del fields["jobSpec"]["baseOutputDirectory"]
    fields["jobSpec"]["scheduling"] = {"strategy": "SPOT"}
    alert = chat.failure("1405", text=PREEMPTED, jobSpec=fields["jobSpec"])

    view = open_modal(chat, alert, ALLOWED)

    text = dump(view["blocks"])
    assert "preemption" in text and "no checkpoint directory" in text and "Suggested changes*: none" in text
    assert "An unchanged rerun can help. A preemption is transient" in text
    assert modal_values(view)["machine_type"] == "a2-highgpu-1g"
    assert modal_values(view)["capacity"] == "spot"  # kept unless standard capacity is chosen


def test_invalid_modal_input_is_shown_in_the_modal_and_claims_nothing(chat: Chat) -> None:
    alert = chat.failure("1406")
    view = open_modal(chat, alert, ALLOWED)

    answer = chat.submit(
        view, {**modal_values(view), "machine_type": "A2 High GPU", "accelerator_count": "x"}, user=ALLOWED
    )

    assert answer.json()["response_action"] == "errors"
    assert set(answer.json()["errors"]) == {"machine_type", "accelerator_count"}
    assert chat.store.get_alert(alert.job_key).rerun_state is None
    chat.submit(view, modal_values(view), user=ALLOWED)
    assert wait_until(lambda: chat.store.get_alert(alert.job_key).rerun_state == "done", timeout=10)


def test_a_failed_create_releases_the_claim_and_says_why(chat: Chat) -> None:
    alert = chat.failure("1407")
    view = open_modal(chat, alert, ALLOWED)
    chat.google.inject(api="vertex", times=1)  # the look-up of the failed job goes through, then:
    chat.google.inject(status=403, api="vertex", times=1)  # the create is denied

    chat.submit(view, modal_values(view), user=ALLOWED)

    assert wait_until(lambda: chat.ephemerals(ALLOWED), timeout=10)
    assert "The rerun failed" in chat.ephemerals(ALLOWED)[0]
    assert "aiplatform.customJobs.create" in chat.ephemerals(ALLOWED)[0]
    assert chat.store.get_alert(alert.job_key).rerun_state is None
    assert chat.store.history(alert.job_key)[-1]["result"] == "failed"


def test_a_retried_submission_creates_one_job(chat: Chat) -> None:
    alert = chat.failure("1408")
    view = open_modal(chat, alert, ALLOWED)

    first = chat.submit(view, modal_values(view), user=ALLOWED, trigger_id="t-1408")
    retry = chat.submit(view, modal_values(view), user=ALLOWED, trigger_id="t-1408", retry_num=1)

    assert first.status_code == retry.status_code == 200 and retry.content == b""
    assert wait_until(lambda: chat.store.get_alert(alert.job_key).rerun_state == "done", timeout=10)
    assert chat.live.wait_quiet()
    assert len(chat.creates()) == 1


def submit_together(chat: Chat, view: dict, values: dict[str, str], users: tuple[str, str]) -> list[httpx.Response]:
    """Two view_submissions sent at the same moment, each on its own connection."""
    barrier = threading.Barrier(len(users))
    answers: list[httpx.Response] = []

    def submit(user: str) -> None:
        body = view_submission_body(view, state_values(values), user=user, trigger_id=f"trigger-{chat.serial()}")
        headers = signature_headers(SECRET, body, content_type="application/x-www-form-urlencoded")
        with httpx.Client(base_url=chat.live.url, timeout=30) as own:
            barrier.wait()
            answers.append(own.post("/slack/events", content=body, headers=headers))

    threads = [threading.Thread(target=submit, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_two_concurrent_submissions_create_exactly_one_job_every_time(chat: Chat) -> None:
    values = {
        "region": REGION,
        "machine_type": "a2-highgpu-1g",
        "accelerator_type": "NVIDIA_TESLA_A100",
        "accelerator_count": "1",
        "replica_count": "1",
    }
    started = time.monotonic()
    for attempt in range(50):
        job_id = str(20_000 + attempt)
        alert = chat.failure(job_id)
        view = {"type": "modal", "callback_id": "rerun_confirm", "private_metadata": alert.job_key, "blocks": []}
        two_people = attempt % 2 == 0  # else one person's double submit
        users = (ALLOWED, GROUPIE) if two_people else (ALLOWED, ALLOWED)

        answers = submit_together(chat, view, values, users)

        assert [a.status_code for a in answers] == [200, 200]
        assert wait_until(lambda key=alert.job_key: chat.store.get_alert(key).rerun_state == "done", timeout=10)
        created = [c for c in chat.creates() if c["labels"]["rerun-of"] == job_id]
        assert len(created) == 1, f"attempt {attempt}: {len(created)} jobs created"
        refused = [a.json() for a in answers if a.content]
        if two_people:  # the one who lost the claim is told so in the modal
            assert len(refused) == 1 and refused[0]["response_action"] == "update", refused
        else:  # the second submit of the same person just closes its modal
            assert refused == []
    assert time.monotonic() - started < 45


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_diagnoses_a_job_fetched_from_vertex_ai(chat: Chat, tmp_path: Path) -> None:
    chat.google.seed_job(custom_job_json(PROJECT, REGION, "1501"))
    chat.google.seed_log_entries([log_entry(PROJECT, "1501", OOM, task_name="workerpool0-0", severity="ERROR")])
    env = {
        **os.environ,
        "VERTEX_API_ENDPOINT": chat.google.base_url,
        "LOGGING_API_ENDPOINT": chat.google.base_url,
        "TRAINMEDIC_CONFIG": str(Path(chat.live.settings.TRAINMEDIC_CONFIG or "")),
    }
    done = subprocess.run(
        [sys.executable, "-m", "bot", "diagnose", "--job", "1501", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
    )

    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert row["failure_class"] == "accelerator_oom"
    assert row["source"].startswith(f"projects/{PROJECT}/locations/{REGION}/customJobs/1501")

    missing = subprocess.run(
        [sys.executable, "-m", "bot", "diagnose", "--job", f"{PROJECT}/1599"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
    )
    assert missing.returncode == 1
    assert "Unknown job" not in missing.stderr  # Slack wording stays in Slack
    assert f"no custom job 1599 in project {PROJECT} (looked in {REGION}, {OTHER_REGION})" in missing.stderr

    chat.google.inject(status=403, job_id="1502", api="vertex")
    denied = subprocess.run(
        [sys.executable, "-m", "bot", "diagnose", "--job", "1502", "--region", REGION],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
    )
    assert denied.returncode == 1
    assert "the account of your Application Default Credentials lacks aiplatform.customJobs.get" in denied.stderr


def test_the_readme_walkthrough_runs_as_written() -> None:
    """docs/chat-actions.md "Try the chat actions locally": the script a newcomer pastes works."""
    doc = (ROOT / "docs" / "chat-actions.md").read_text()
    script = doc.split("```python\n", 1)[1].split("```", 1)[0]

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)

    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "1. alert: C0ALERTS" in out and "accelerator_oom" in out
    assert "2. /diagnose ack: :hourglass_flowing_sand: Diagnosing job 4242" in out
    assert "3. alert now says: :white_check_mark: Acknowledged by <@U0BOB>" in out
    assert "4. Bob sees: :no_entry_sign: Only <@U0ALICE> may rerun this job." in out
    assert "machine type: a2-highgpu-1g → a2-ultragpu-1g" in out
    assert "'rerun-of': '4242'" in out and "'rerun-by': 'u0alice'" in out
    assert "history: " in out and "U0ALICE rerun created job" in out


# ------------------------------------------------------------------------------------------------ closed loop
# A rerun started from chat is followed to its end by the scan (`POST /tasks/scan`): the original alert's thread
# gets exactly one reply with the outcome, and its header shows it.


def rerun_from_chat(chat: Chat, job_id: str) -> tuple[str, str]:
    """Fail `job_id`, rerun it from chat as ALLOWED; (the alert's ts, the new job's resource name)."""
    alert = chat.failure(job_id)
    view = open_modal(chat, alert, ALLOWED)
    assert chat.submit(view, modal_values(view), user=ALLOWED).status_code == 200
    assert wait_until(lambda: chat.store.get_alert(alert.job_key).rerun_state == "done", timeout=10)
    new_name = chat.store.get_alert(alert.job_key).rerun_job_id
    assert new_name and new_name.startswith(f"projects/{PROJECT}/")
    return str(alert.message_ts), new_name


def scan_now(chat: Chat) -> dict:
    answer = chat.http.post("/tasks/scan")
    assert answer.status_code == 200, answer.text
    return answer.json()


def outcome_replies(chat: Chat, ts: str) -> list[str]:
    return [
        c.args["text"]
        for c in chat.slack.calls_to("chat.postMessage")
        if c.args.get("thread_ts") == ts and str(c.args.get("text", "")).startswith("Rerun ")
    ]


def job_ended(chat: Chat, name: str, state: str) -> None:
    job = chat.google.job(name)
    assert job is not None
    chat.google.seed_job(
        {**job, "state": state, "startTime": "2026-11-30T08:00:00Z", "endTime": "2026-11-30T10:10:00Z"}
    )


def test_a_rerun_that_succeeds_gets_one_reply_and_the_header_says_so(chat: Chat) -> None:
    ts, new_name = rerun_from_chat(chat, "1601")
    assert scan_now(chat)["reruns_reported"] == 0  # still pending: nothing to tell
    assert outcome_replies(chat, ts) == []

    job_ended(chat, new_name, "JOB_STATE_SUCCEEDED")
    assert scan_now(chat)["reruns_reported"] == 1
    for _ in range(3):  # repeated scans tell nothing new
        assert scan_now(chat)["reruns_reported"] == 0
    (reply,) = outcome_replies(chat, ts)
    assert reply == "Rerun succeeded in 2 h 10 min"
    message = chat.slack.message(CHANNEL, ts)
    assert message["blocks"][0]["text"]["text"].startswith("Rerun succeeded in 2 h 10 min · ")
    assert "Rerun succeeded in 2 h 10 min" in json.dumps(message["blocks"][1:])  # and the status line
    # the whole chain in the job's history: the rerun from chat, then its outcome
    key = f"{PROJECT}/1601"
    chain = [(r["who"], r["what"], r["result"]) for r in chat.store.history(key)]
    assert chain[-1] == ("vertex-ai", "rerun outcome", "Rerun succeeded in 2 h 10 min")
    assert any(what == "rerun" and result.startswith("created job") for _, what, result in chain)


def test_a_rerun_that_fails_gets_its_own_alert_and_one_reply_pointing_to_it(chat: Chat) -> None:
    ts, new_name = rerun_from_chat(chat, "1602")
    new_id = new_name.rsplit("/", 1)[-1]
    job_ended(chat, new_name, "JOB_STATE_FAILED")
    # The new job's failure comes through the sink like any other: its own alert, which names the job it reran.
    chat.google.seed_log_entries(
        [
            log_entry(
                PROJECT,
                new_id,
                "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
                task_name="workerpool0-0",
                severity="ERROR",
                insert_id=f"{new_id}-error",
            )
        ]
    )
    failed = log_entry(PROJECT, new_id, "Job failed.", insert_id=f"{new_id}-failed")
    answer = chat.http.post("/pubsub/push", json=envelope(failed, f"push-{new_id}")).json()
    assert answer["status"] == "posted", answer
    own = chat.store.get_alert(f"{PROJECT}/{new_id}")
    assert own is not None and own.posted
    assert "Rerun of job `1602`" in json.dumps(chat.slack.message(own.channel, own.message_ts)["blocks"])

    assert scan_now(chat)["reruns_reported"] == 1
    assert scan_now(chat)["reruns_reported"] == 0
    (reply,) = outcome_replies(chat, ts)
    assert reply.startswith("Rerun failed in 2 h 10 min")
    full = [c.args for c in chat.slack.calls_to("chat.postMessage") if c.args.get("text") == reply][0]
    assert "Its own alert, in" in json.dumps(full["blocks"])
    assert chat.slack.message(CHANNEL, ts)["blocks"][0]["text"]["text"].startswith("Rerun failed in 2 h 10 min")
