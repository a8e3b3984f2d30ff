"""The demo's lifecycle scenes, after one failure per class: a job stuck in QUEUED found by the scan, and a rerun
started from chat (a signed button click and modal submit, as Slack sends them) that succeeds and is reported in
the alert's thread by the next scan. Each scene says what it did and returns whether it came out as expected."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TextIO

import httpx

from bot.alerting.stored_alert import StoredAlert
from bot.store import Store
from standins.google_apis import FakeGoogleApis, custom_job_json
from standins.http_server import wait_until
from standins.slack_api import FakeSlackApi, block_action_body, signature_headers, view_submission_body

PROJECT, REGION = "acme-ml", "us-central1"
STUCK_JOB = "7310090"
RERUNNER = "U0DEMO001"


def stuck_job(now: datetime) -> dict:
    """A job asking for 8 A100s that has waited 45 minutes in QUEUED (Vertex's wait for quota)."""
    created = (now - timedelta(minutes=45)).strftime("%Y-%m-%dT%H:%M:%SZ")
    job = custom_job_json(
        PROJECT,
        REGION,
        STUCK_JOB,
        state="JOB_STATE_QUEUED",
        error=None,
        createTime=created,
        updateTime=created,
        displayName="llm-pretrain",
        labels={"team": "nlp"},
    )
    job.pop("startTime", None)
    job.pop("endTime", None)
    pool = job["jobSpec"]["workerPoolSpecs"][0]
    pool["machineSpec"].update(machineType="a2-highgpu-8g", acceleratorCount=8)
    return job


def scan(scanner: httpx.Client) -> dict:
    answer = scanner.post("/tasks/scan")
    answer.raise_for_status()
    return answer.json()


def stuck_scene(scanner: httpx.Client, google: FakeGoogleApis, slack: FakeSlackApi, out: TextIO) -> bool:
    """A QUEUED job past the threshold: one message with the filled quota request; a repeated scan posts nothing."""
    google.seed_job(stuck_job(datetime.now(UTC)))
    before = len(slack.posted())
    first, again = scan(scanner), scan(scanner)
    out.write(f"      scan -> {first['posted']} stuck job posted; scan again -> {again['posted']} posted\n")
    posted = slack.posted()[before:]
    ok = first["posted"] == 1 and again["posted"] == 0 and len(posted) == 1
    if posted:
        quota = "quotas preferences create" in json.dumps(posted[0]["blocks"])
        out.write(f"      posted in {posted[0]['channel']}: a filled quota request: {'yes' if quota else 'NO'}\n")
        ok = ok and quota
    return ok


def rerun_scene(
    service: httpx.Client,
    scanner: httpx.Client,
    google: FakeGoogleApis,
    slack: FakeSlackApi,
    store: Store,
    job_key: str,
    *,
    secret: str,
    out: TextIO,
) -> bool:
    """U0DEMO001 presses Rerun on `job_key`'s alert and submits the modal as it is offered; the new job then
    succeeds, and the next scan replies once in the alert's thread and shows the outcome on the message."""
    record = store.get_alert(job_key)
    if record is None or not record.channel or not record.message_ts:
        out.write(f"      no alert for {job_key}\n")
        return False
    click = block_action_body(
        "diagnosis_rerun",
        job_key,
        user=RERUNNER,
        channel=record.channel,
        message_ts=record.message_ts,
        trigger_id="demo-rerun",
        response_url=slack.response_url("demo-rerun"),
    )
    form = "application/x-www-form-urlencoded"
    service.post("/slack/events", content=click, headers=signature_headers(secret, click, content_type=form))
    if not wait_until(lambda: _opened(slack), timeout=15):
        out.write("      the Rerun dialog did not open\n")
        return False
    view = _opened(slack)[-1]
    submit = view_submission_body(view, _prefilled(view), user=RERUNNER, trigger_id="demo-submit")
    service.post("/slack/events", content=submit, headers=signature_headers(secret, submit, content_type=form))
    if not wait_until(lambda: (store.get_alert(job_key) or record).rerun_state == "done", timeout=15):
        out.write("      the rerun was not created\n")
        return False
    new_name = str(store.get_alert(job_key).rerun_job_id)  # type: ignore[union-attr]
    out.write(f"      {RERUNNER} pressed Rerun and submitted the dialog: created {new_name.rsplit('/', 1)[-1]}\n")
    created = google.job(new_name) or {}
    google.seed_job(
        {
            **created,
            "state": "JOB_STATE_SUCCEEDED",
            "startTime": "2026-11-29T10:00:00Z",
            "endTime": "2026-11-29T12:10:00Z",
        }
    )
    told = scan(scanner)["reruns_reported"]
    again = scan(scanner)["reruns_reported"]
    stored = StoredAlert.of(store.get_alert(job_key))  # type: ignore[arg-type]
    outcome = stored.context.rerun_outcome if stored else None
    out.write(f"      the new job succeeded; scan -> {told} outcome told ({outcome}); scan again -> {again}\n")
    return told == 1 and again == 0 and outcome == "Rerun succeeded in 2 h 10 min"


def _opened(slack: FakeSlackApi) -> list[dict]:
    """The modals the service has filled in (views.update), oldest first."""
    return [call.args["view"] for call in slack.calls if call.method == "views.update"]


def _prefilled(view: dict) -> dict[str, dict]:
    """The modal's inputs as a person who changes nothing submits them (Slack's `state.values`)."""
    values: dict[str, dict] = {}
    for block in view.get("blocks", []):
        if block.get("type") != "input":
            continue
        element = block["element"]
        action = element.get("action_id", block["block_id"])
        initial = element.get("initial_option") or element.get("initial_value")
        if element["type"] == "static_select":
            values[block["block_id"]] = {action: {"type": "static_select", "selected_option": initial}}
        else:
            values[block["block_id"]] = {action: {"type": element["type"], "value": initial}}
    return values
