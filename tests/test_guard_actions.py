"""Acknowledge, Undo and Rerun (bot/chat/actions.py) rule by rule, with real parts: the ActionService over the
service's own store, Slack client and AlertService (as `trainmedic serve` builds them), talking to the Slack and
Vertex AI stand-ins, on alerts the alert path really posted.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.chat.actions import ActionService, refusal_text
from bot.config import RoutingConfig
from bot.errors import ActionRefused
from bot.slack.directory import SlackDirectory
from bot.store import AlertRecord
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry
from standins.http_server import LocalHttpServer, RecordedRequest, Reply
from standins.slack_api import FakeSlackApi
from tests.live_service import LiveService, standin_environ

PROJECT = "acme-ml"
REGION, OTHER_REGION = "us-central1", "europe-west4"
CHANNEL = "#ml-alerts"
ALLOWED, GROUPIE, MEMBER, STRANGER = "U0ALLOWED", "U0GROUPIE", "U0MEMBER", "U0STRANGER"
GROUP = "S0RERUN"
NOW = 1_800_000_000.0
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB."
ROUTING = {
    "default_channel": CHANNEL,
    "regions": [REGION, OTHER_REGION],
    "routes": [{"match": {"labels": {"team": "nlp"}}, "channel": "#nlp", "rerun_allowed": [MEMBER]}],
    "rerun_allowed": [ALLOWED, GROUP],
}
VALUES = {
    "region": REGION,
    "machine_type": "a2-highgpu-1g",
    "accelerator_type": "NVIDIA_TESLA_A100",
    "accelerator_count": "1",
    "replica_count": "1",
}


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


class Harness:
    def __init__(self, live: LiveService, slack: FakeSlackApi, google: FakeGoogleApis, clock: Clock) -> None:
        self.live, self.slack, self.google, self.clock = live, slack, google, clock
        self.actions = self.service()

    def service(self, routing: RoutingConfig | None = None, client: Any = None, **options: Any) -> ActionService:
        services = self.live.services
        return services.action_service(
            directory=SlackDirectory(client) if client is not None else None,
            routing=routing or services.routing,
            clock=self.clock,
            **{"pipelines": None, **options},  # these tests rerun custom jobs only, as before
        )

    @property
    def store(self) -> Any:
        return self.live.services.store

    def failure(self, job_id: str, text: str = OOM, **fields: Any) -> AlertRecord:
        self.google.seed_job(custom_job_json(PROJECT, REGION, job_id, **fields))
        entry = log_entry(PROJECT, job_id, text, task_name="workerpool0-0", severity="ERROR", insert_id=f"{job_id}-e")
        outcome = self.live.services.alerts.handle_log_entry(entry)
        assert outcome.status == "posted", outcome
        record = self.store.get_alert(f"{PROJECT}/{job_id}")
        assert record is not None and record.posted
        return record

    def history(self, record: AlertRecord) -> list[dict]:
        return self.store.history(record.job_key)

    def message(self, record: AlertRecord) -> str:
        return json.dumps(self.slack.message(record.channel, record.message_ts))

    def creates(self, region: str = REGION) -> list[dict]:
        path = f"/v1/projects/{PROJECT}/locations/{region}/customJobs"
        return [r.json for r in self.google.requests if r.method == "POST" and r.path == path]

    def replies(self, alert: AlertRecord) -> list[dict]:
        """The rerun announcements posted in the alert's thread (its diagnosis card is there too)."""
        return [
            c.args
            for c in self.slack.calls_to("chat.postMessage")
            if c.args.get("thread_ts") == alert.message_ts and "reran this job" in str(c.args.get("text"))
        ]


@pytest.fixture
def harness(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis) -> Iterator[Harness]:
    config = tmp_path / "routing.yaml"
    config.write_text(yaml.safe_dump(ROUTING))
    fake_slack.seed_members(CHANNEL, [ALLOWED, GROUPIE, MEMBER])
    fake_slack.seed_usergroup(GROUP, [GROUPIE])
    environ = standin_environ(
        tmp_path,
        fake_slack,
        fake_google,
        TRAINMEDIC_CONFIG=str(config),
    )
    live = LiveService(environ)  # the services `trainmedic serve` builds; no HTTP needed here
    yield Harness(live, fake_slack, fake_google, Clock())
    live.services.store.close()


def refused(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ActionRefused) as caught:
        call(*args, **kwargs)
    return str(caught.value)


def where(record: AlertRecord) -> dict:
    return {"channel": record.channel, "message_ts": record.message_ts}


# ------------------------------------------------------------------------------------------ acknowledge


def test_acknowledge_records_who_and_when_and_updates_the_message(harness: Harness) -> None:
    alert = harness.failure("5001")
    assert harness.actions.acknowledge(alert.job_key, user=MEMBER, **where(alert)) == "acknowledged"
    record = harness.store.get_alert(alert.job_key)
    assert (record.acknowledged_by, record.acknowledged_at) == (MEMBER, NOW)
    assert MEMBER in harness.message(alert)
    [update] = harness.slack.calls_to("chat.update")
    assert (update.args["ts"], update.args["channel"]) == (alert.message_ts, alert.channel)
    assert harness.history(alert) == [
        {"who": MEMBER, "what": "acknowledge", "when": "2027-01-15T08:00:00Z", "result": "acknowledged"}
    ]
    again = harness.actions.acknowledge(alert.job_key, user=ALLOWED, **where(alert))
    assert again == f"already acknowledged by {MEMBER}"
    assert harness.store.get_alert(alert.job_key).acknowledged_by == MEMBER
    assert harness.history(alert)[-1]["result"] == f"already acknowledged by {MEMBER}"
    assert len(harness.slack.calls_to("chat.update")) == 1


def test_undo_clears_the_acknowledgement_and_says_whose_it_was(harness: Harness) -> None:
    alert = harness.failure("5002")
    assert harness.actions.unacknowledge(alert.job_key, user=MEMBER, **where(alert)) == "was not acknowledged"
    harness.actions.acknowledge(alert.job_key, user=ALLOWED, **where(alert))
    harness.clock.now += 60
    assert harness.actions.unacknowledge(alert.job_key, user=MEMBER, **where(alert)) == "acknowledgement undone"
    record = harness.store.get_alert(alert.job_key)
    assert (record.acknowledged_by, record.acknowledged_at) == (None, None)
    assert ALLOWED not in harness.message(alert)
    last = harness.history(alert)[-1]
    assert last == {
        "who": MEMBER,
        "what": "unacknowledge",
        "when": "2027-01-15T08:01:00Z",
        "result": "acknowledgement undone",
        "detail": f"had been acknowledged by {ALLOWED}",
    }
    assert [h["result"] for h in harness.history(alert)] == [
        "was not acknowledged",
        "acknowledged",
        "acknowledgement undone",
    ]


def test_only_channel_members_may_acknowledge_or_undo(harness: Harness) -> None:
    alert = harness.failure("5003")
    reason = refused(harness.actions.acknowledge, alert.job_key, user=STRANGER, **where(alert))
    assert reason == f"only members of <#{alert.channel}> can acknowledge its alerts"
    assert harness.store.get_alert(alert.job_key).acknowledged_by is None
    harness.actions.acknowledge(alert.job_key, user=MEMBER, **where(alert))
    refused(harness.actions.unacknowledge, alert.job_key, user=STRANGER, **where(alert))
    assert harness.store.get_alert(alert.job_key).acknowledged_by == MEMBER
    results = [(h["who"], h["what"], h["result"]) for h in harness.history(alert)]
    assert results == [
        (STRANGER, "acknowledge", f"refused: only members of #{alert.channel} can acknowledge its alerts"),
        (MEMBER, "acknowledge", "acknowledged"),
        (STRANGER, "unacknowledge", f"refused: only members of #{alert.channel} can acknowledge its alerts"),
    ]
    [members_call, *_] = harness.slack.calls_to("conversations.members")
    assert members_call.args["channel"] == alert.channel and int(members_call.args["limit"]) == 1000


def test_a_membership_that_cannot_be_checked_is_refused(harness: Harness) -> None:
    alert = harness.failure("5004")
    harness.slack.api_error("conversations.members", "missing_scope")
    reason = refused(harness.actions.acknowledge, alert.job_key, user=MEMBER, **where(alert))
    assert reason.startswith(f"could not check that you are a member of <#{alert.channel}>")
    assert "Slack conversations.members: missing_scope" in reason


def test_actions_need_the_alert_trainmedic_posted_and_its_message(harness: Harness) -> None:
    alert = harness.failure("5005")
    unknown = "trainmedic does not know this job: it acts only on the alerts it posted"
    for key in (f"{PROJECT}/404", "no-slash", "", f"{PROJECT}/5005x"):
        assert refused(harness.actions.acknowledge, key, user=MEMBER, **where(alert)) == unknown
    other_ts = {**where(alert), "message_ts": "1.000001"}
    wrong = "this is not the message trainmedic posted for this job"
    assert refused(harness.actions.acknowledge, alert.job_key, user=MEMBER, **other_ts) == wrong
    other_channel = {**where(alert), "channel": "C0OTHER"}
    assert refused(harness.actions.unacknowledge, alert.job_key, user=MEMBER, **other_channel) == wrong
    assert refused(harness.actions.request_rerun, alert.job_key, user=ALLOWED, **other_ts) == wrong
    harness.store.claim_post(f"{PROJECT}/5006", owner="x", lease_seconds=60)  # claimed, never posted
    assert refused(harness.actions.acknowledge, f"{PROJECT}/5006", user=MEMBER, **where(alert)) == unknown
    assert refused(harness.actions.plan, f"{PROJECT}/5006") == unknown


# ------------------------------------------------------------------------------------------ who may rerun


def test_the_default_list_and_its_user_groups_may_rerun(harness: Harness) -> None:
    alert = harness.failure("5010")
    assert harness.actions.rerun_allowed(alert) == (ALLOWED, GROUP)
    harness.actions.authorize_rerun(alert, ALLOWED)
    harness.actions.authorize_rerun(alert, GROUPIE)  # through the user group
    reason = refused(harness.actions.authorize_rerun, alert, MEMBER)
    assert reason == f"only <@{ALLOWED}> or <!subteam^{GROUP}> may rerun this job"
    assert len(harness.slack.calls_to("usergroups.users.list")) == 1  # ALLOWED needed no look-up


def test_a_routes_list_replaces_the_default_one(harness: Harness) -> None:
    alert = harness.failure("5011", labels={"team": "nlp"})
    assert harness.actions.rerun_allowed(alert) == (MEMBER,)
    harness.actions.authorize_rerun(alert, MEMBER)
    assert refused(harness.actions.authorize_rerun, alert, ALLOWED) == f"only <@{MEMBER}> may rerun this job"
    refused(harness.actions.authorize_rerun, alert, GROUPIE)


def test_the_current_config_decides_not_the_one_at_posting_time(harness: Harness) -> None:
    alert = harness.failure("5012")
    stricter = harness.service(routing=RoutingConfig.model_validate({**ROUTING, "rerun_allowed": [MEMBER]}))
    assert stricter.rerun_allowed(alert) == (MEMBER,)
    refused(stricter.authorize_rerun, alert, ALLOWED)
    nobody = harness.service(routing=RoutingConfig.model_validate({**ROUTING, "rerun_allowed": []}))
    reason = refused(nobody.authorize_rerun, alert, ALLOWED)
    assert reason == "Rerun is not enabled for this job: its route in the config sets no rerun_allowed"


def test_user_groups_are_cached_briefly(harness: Harness) -> None:
    alert = harness.failure("5013")
    harness.actions.authorize_rerun(alert, GROUPIE)
    harness.slack.seed_usergroup(GROUP, [])
    harness.clock.now += 29.5
    harness.actions.authorize_rerun(alert, GROUPIE)  # still the cached membership
    harness.clock.now += 1  # 30.5 s: past the 30 s the membership is kept
    refused(harness.actions.authorize_rerun, alert, GROUPIE)
    assert len(harness.slack.calls_to("usergroups.users.list")) == 2
    assert harness.slack.calls_to("usergroups.users.list")[0].args["usergroup"] == GROUP


def test_a_user_group_that_cannot_be_read_is_a_refusal(harness: Harness) -> None:
    alert = harness.failure("5014")
    harness.slack.api_error("usergroups.users.list", "missing_scope")
    reason = refused(harness.actions.authorize_rerun, alert, GROUPIE)
    assert reason == f"could not check the user group <!subteam^{GROUP}> (Slack usergroups.users.list: missing_scope)"


def test_who_may_lists_at_most_ten(harness: Harness) -> None:
    alert = harness.failure("5015")
    many = [f"U{n:02d}" for n in range(12)]
    crowd = harness.service(routing=RoutingConfig.model_validate({**ROUTING, "rerun_allowed": many}))
    reason = refused(crowd.authorize_rerun, alert, STRANGER)
    names = ", ".join(f"<@U{n:02d}>" for n in range(9))
    assert reason == f"only {names} or <@U09> and 2 more may rerun this job"
    eleven = harness.service(routing=RoutingConfig.model_validate({**ROUTING, "rerun_allowed": many[:11]}))
    assert refused(eleven.authorize_rerun, alert, STRANGER).endswith("<@U09> and 1 more may rerun this job")
    one = harness.service(routing=RoutingConfig.model_validate({**ROUTING, "rerun_allowed": [GROUP]}))
    assert refused(one.authorize_rerun, alert, STRANGER) == f"only <!subteam^{GROUP}> may rerun this job"


# ------------------------------------------------------------------------------------------ the rerun


def test_the_rerun_button_is_refused_and_recorded_for_others(harness: Harness) -> None:
    alert = harness.failure("5020")
    assert harness.actions.request_rerun(alert.job_key, user=GROUPIE, **where(alert)).job_key == alert.job_key
    refused(harness.actions.request_rerun, alert.job_key, user=STRANGER, **where(alert))
    [record] = harness.history(alert)  # an allowed click records nothing yet
    assert (record["who"], record["what"]) == (STRANGER, "rerun")
    assert record["result"] == f"refused: only @{ALLOWED} or @{GROUP} may rerun this job"


def test_a_rerun_creates_the_job_links_it_and_records_it(harness: Harness) -> None:
    alert = harness.failure("5021")
    plan = harness.actions.plan(alert.job_key)
    assert plan.project == PROJECT
    start = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values={**VALUES, "replica_count": "2"})
    assert start.claim is not None and start.errors is None and not start.duplicate
    assert harness.store.get_alert(alert.job_key).rerun_state == "claimed"
    assert harness.history(alert) == []  # the claim is not the outcome
    new_id = harness.actions.complete_rerun(start.claim)
    [sent] = harness.creates()
    assert sent["labels"]["rerun-of"] == "5021" and sent["labels"]["rerun-by"] == ALLOWED.lower()
    record = harness.store.get_alert(alert.job_key)
    assert record.rerun_state == "done" and record.rerun_by == ALLOWED
    assert record.rerun_job_id == f"projects/{PROJECT}/locations/{REGION}/customJobs/{new_id}"
    [history] = harness.history(alert)
    assert (history["who"], history["what"], history["result"]) == (
        ALLOWED,
        "rerun",
        f"created job {new_id} in {REGION}",
    )
    assert history["detail"] == f"in {REGION}: replicas: 1 → 2"
    [reply] = harness.replies(alert)
    assert reply["thread_ts"] == alert.message_ts
    text = reply["text"]
    assert text.startswith(f":repeat: <@{ALLOWED}> reran this job as <")
    assert f"|job {new_id}> in `{REGION}`." in text
    assert "\nChanges: replicas: 1 → 2" in text
    assert f"Rerun by <@{ALLOWED}> as job" in harness.message(alert)
    again = refused(harness.actions.request_rerun, alert.job_key, user=GROUPIE, **where(alert))
    assert again == f"this job was already rerun by <@{ALLOWED}> as job {new_id}"


def test_an_unchanged_rerun_says_so(harness: Harness) -> None:
    alert = harness.failure("5022")
    start = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values=VALUES)
    new_id = harness.actions.complete_rerun(start.claim)
    assert harness.history(alert)[0]["detail"] == f"in {REGION}: same spec"
    [reply] = harness.replies(alert)
    assert "\nSame spec as the failed job." in reply["text"] and new_id in reply["text"]


def test_a_rerun_may_go_to_another_configured_region(harness: Harness) -> None:
    alert = harness.failure("5023")
    start = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values={**VALUES, "region": OTHER_REGION})
    new_id = harness.actions.complete_rerun(start.claim)
    assert harness.creates(REGION) == [] and len(harness.creates(OTHER_REGION)) == 1
    assert harness.history(alert)[0]["result"] == f"created job {new_id} in {OTHER_REGION}"
    unlisted = harness.failure("5024")
    start = harness.actions.begin_rerun(unlisted.job_key, user=ALLOWED, values={**VALUES, "region": "asia-east1"})
    assert start.claim is None and set(start.errors) == {"region"}


def test_invalid_inputs_claim_nothing_and_record_nothing(harness: Harness) -> None:
    alert = harness.failure("5025")
    start = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values={**VALUES, "accelerator_count": "x"})
    assert start.claim is None and not start.duplicate and set(start.errors) == {"accelerator_count"}
    assert harness.store.get_alert(alert.job_key).rerun_state is None
    assert harness.history(alert) == []


def test_a_second_submission_is_a_duplicate_for_the_same_person_and_refused_for_others(harness: Harness) -> None:
    alert = harness.failure("5026")
    first = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values=VALUES)
    assert first.claim is not None
    again = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values=VALUES)
    assert again.duplicate and again.claim is None
    other = refused(harness.actions.begin_rerun, alert.job_key, user=GROUPIE, values=VALUES)
    assert other == f"<@{ALLOWED}> is already rerunning this job"
    assert [h["result"] for h in harness.history(alert)] == [
        "duplicate submission ignored",
        f"refused: @{ALLOWED} is already rerunning this job",
    ]
    stranger = harness.failure("5027")
    assert "may rerun this job" in refused(harness.actions.begin_rerun, stranger.job_key, user=MEMBER, values=VALUES)
    assert harness.store.get_alert(stranger.job_key).rerun_state is None


def test_a_failed_create_frees_the_claim_and_records_why(harness: Harness) -> None:
    alert = harness.failure("5028")
    start = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values=VALUES)
    harness.google.inject(api="vertex", times=1)  # the look-up of the failed job goes through, then:
    harness.google.inject(status=403, api="vertex", times=1)  # the create is denied
    reason = refused(harness.actions.complete_rerun, start.claim)
    assert reason.startswith("the rerun failed: ") and "aiplatform.customJobs.create" in reason
    assert "rerun-of=" not in reason  # a refusal is certain: no job was created
    assert harness.store.get_alert(alert.job_key).rerun_state is None
    [history] = harness.history(alert)
    assert (history["who"], history["result"]) == (ALLOWED, "failed")
    assert "aiplatform.customJobs.create" in history["detail"]
    assert harness.replies(alert) == []
    retry = harness.actions.begin_rerun(alert.job_key, user=GROUPIE, values=VALUES)
    assert retry.claim is not None  # someone can try again


def test_an_unanswered_create_warns_that_a_job_may_exist(harness: Harness) -> None:
    alert = harness.failure("5029")
    start = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values=VALUES)
    harness.google.inject(api="vertex", times=1)
    harness.google.inject(status=503, api="vertex", times=5)
    reason = refused(harness.actions.complete_rerun, start.claim)
    hint = "The request may still have created a job: look for the label rerun-of=5029 before trying again."
    assert reason.endswith("." + " " + hint)
    assert harness.history(alert)[0]["detail"].endswith(hint)
    assert harness.store.get_alert(alert.job_key).rerun_state is None


def test_a_job_vertex_ai_cannot_read_cannot_be_planned(harness: Harness) -> None:
    alert = harness.failure("5030")
    harness.google.inject(status=404, api="vertex")
    reason = refused(harness.actions.plan, alert.job_key)
    assert reason.startswith("the failed job could not be read from Vertex AI: ")


def test_a_stored_alert_without_a_diagnosis_plans_as_unknown(harness: Harness) -> None:
    key = f"{PROJECT}/5031"
    harness.google.seed_job(custom_job_json(PROJECT, REGION, "5031"))
    harness.store.record_post(key, owner="o", channel="C0X", message_ts="1.1", diagnosis={}, fingerprint="f", job={})
    plan = harness.actions.plan(key)
    assert plan.project == PROJECT
    assert (plan.failure_class, plan.diagnosis_title) == ("unknown", "No diagnosis stored")
    record = harness.store.get_alert(key)
    assert harness.actions.rerun_allowed(record) == (ALLOWED, GROUP)  # the default route, class unknown


# ------------------------------------------------------------------------------------------ notify, Slack


def test_notify_tells_one_person_in_the_alerts_channel(harness: Harness) -> None:
    alert = harness.failure("5040")
    harness.actions.notify(alert.job_key, MEMBER, "only you can see this")
    [call] = harness.slack.calls_to("chat.postEphemeral")
    assert (call.args["channel"], call.args["user"], call.args["text"]) == (
        alert.channel,
        MEMBER,
        "only you can see this",
    )
    harness.actions.notify(f"{PROJECT}/404", MEMBER, "x")
    harness.actions.notify("", MEMBER, "x")
    assert len(harness.slack.calls_to("chat.postEphemeral")) == 1


def test_a_lost_ephemeral_is_logged_not_raised(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    alert = harness.failure("5041")
    harness.slack.api_error("chat.postEphemeral", "user_not_in_channel")
    with caplog.at_level(logging.WARNING, logger="trainmedic"):
        harness.actions.notify(alert.job_key, STRANGER, "x")
    [record] = [r for r in caplog.records if r.getMessage() == "ephemeral not delivered"]
    assert record.fields["user"] == STRANGER and "user_not_in_channel" in record.fields["reason"]


def test_a_message_slack_will_not_update_is_said_in_the_result(harness: Harness) -> None:
    alert = harness.failure("5042")
    harness.slack.api_error("chat.update", "message_not_found")
    result = harness.actions.acknowledge(alert.job_key, user=MEMBER, **where(alert))
    assert result.startswith("acknowledged (the message could not be updated: ")
    assert "message_not_found" in result
    assert harness.store.get_alert(alert.job_key).acknowledged_by == MEMBER


class PagedMembers:
    """A Slack Web API stand-in whose conversations.members answers in pages of one member (cursor "p<n>")."""

    def __init__(self, members: list[str], *, endless: bool = False) -> None:
        self.members, self.endless = members, endless
        self.cursors: list[str | None] = []
        self.server = LocalHttpServer(self._handle)

    def _handle(self, request: RecordedRequest) -> Reply:
        args = {k: v[-1] for k, v in (request.form or {}).items()}
        args.update({k: v[-1] for k, v in request.query.items()})
        cursor = args.get("cursor")
        self.cursors.append(cursor)
        page = int(cursor[1:]) if cursor else 0
        member = [self.members[page]] if page < len(self.members) else []
        more = self.endless or page + 1 < len(self.members)
        return Reply.json(
            {"ok": True, "members": member, "response_metadata": {"next_cursor": f"p{page + 1}" if more else ""}}
        )


def test_membership_is_read_page_by_page_up_to_a_limit(harness: Harness) -> None:
    from slack_sdk import WebClient

    alert = harness.failure("5043")
    paged = PagedMembers(["U1", "U2", "U3", MEMBER, "U5"])
    with paged.server:
        actions = harness.service(client=WebClient(token="xoxb-test", base_url=paged.server.base_url + "/"))
        assert actions.acknowledge(alert.job_key, user=MEMBER, **where(alert)) == "acknowledged"
        assert paged.cursors == [None, "p1", "p2", "p3"]
        paged.cursors.clear()
        refused(actions.unacknowledge, alert.job_key, user=STRANGER, **where(alert))
        assert paged.cursors == [None, "p1", "p2", "p3", "p4"]  # the last page has no next cursor
    endless = PagedMembers([f"U{n}" for n in range(100)], endless=True)
    with endless.server:
        actions = harness.service(client=WebClient(token="xoxb-test", base_url=endless.server.base_url + "/"))
        reason = refused(actions.unacknowledge, alert.job_key, user=STRANGER, **where(alert))
        assert reason == f"only members of <#{alert.channel}> can acknowledge its alerts"
        assert len(endless.cursors) == 20  # 20 pages of 1,000 at most, then refused


def test_an_unreachable_slack_is_a_refusal_that_says_so(harness: Harness) -> None:
    from slack_sdk import WebClient

    alert = harness.failure("5044")
    dead = WebClient(token="xoxb-test", base_url="http://127.0.0.1:9/", timeout=2)
    reason = refused(harness.service(client=dead).acknowledge, alert.job_key, user=MEMBER, **where(alert))
    assert reason.startswith(
        f"could not check that you are a member of <#{alert.channel}> (Slack conversations.members:"
    )


def test_refusal_text_is_one_capitalised_sentence() -> None:
    assert refusal_text(ActionRefused("only members may do this")) == ":no_entry_sign: Only members may do this."
    assert refusal_text(ActionRefused("done already.")) == ":no_entry_sign: Done already."


# ------------------------------------------------------------------------------------------ the event log


def events(caplog: pytest.LogCaptureFixture, message: str) -> list[dict]:
    return [dict(r.fields, level=r.levelname) for r in caplog.records if r.getMessage() == message]


def test_each_action_is_logged_with_its_result(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    alert = harness.failure("5050")
    with caplog.at_level(logging.INFO, logger="trainmedic"):
        harness.actions.acknowledge(alert.job_key, user=MEMBER, **where(alert))
        refused(harness.actions.unacknowledge, alert.job_key, user=STRANGER, **where(alert))
    assert events(caplog, "action acknowledge") == [
        {"job_key": alert.job_key, "who": MEMBER, "result": "acknowledged", "level": "INFO"}
    ]
    assert events(caplog, "action unacknowledge") == [
        {
            "job_key": alert.job_key,
            "who": STRANGER,
            "result": f"only members of <#{alert.channel}> can acknowledge its alerts",
            "level": "INFO",
        }
    ]


def test_a_rerun_is_logged_created_or_failed(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    alert = harness.failure("5051")
    with caplog.at_level(logging.INFO, logger="trainmedic"):
        start = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values={**VALUES, "replica_count": "3"})
        new_id = harness.actions.complete_rerun(start.claim)
    begun = [e for e in events(caplog, "action rerun") if e["job_key"] == alert.job_key]
    assert [e["result"] for e in begun] == ["claimed"]  # complete_rerun records the outcome
    [created] = events(caplog, "rerun created")
    assert created == {
        "job_key": alert.job_key,
        "who": ALLOWED,
        "new_job_id": new_id,
        "changes": ["replicas: 1 → 3"],
        "level": "INFO",
    }
    failing = harness.failure("5052")
    start = harness.actions.begin_rerun(failing.job_key, user=ALLOWED, values=VALUES)
    harness.google.inject(api="vertex", times=1)
    harness.google.inject(status=403, api="vertex", times=1)
    with caplog.at_level(logging.INFO, logger="trainmedic"):
        reason = refused(harness.actions.complete_rerun, start.claim)
    [failed] = events(caplog, "rerun failed")
    assert (failed["job_key"], failed["who"], failed["level"]) == (failing.job_key, ALLOWED, "ERROR")
    assert failed["reason"] and failed["reason"] in reason
    assert events(caplog, "rerun crashed") == []  # a refusal by Vertex AI is no crash


def test_a_rerun_link_slack_refuses_does_not_undo_the_rerun(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    alert = harness.failure("5053")
    start = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values=VALUES)
    harness.slack.api_error("chat.postMessage", "not_in_channel")  # the thread reply
    with caplog.at_level(logging.INFO, logger="trainmedic"):
        new_id = harness.actions.complete_rerun(start.claim)
    assert harness.store.get_alert(alert.job_key).rerun_state == "done" and new_id
    [lost] = events(caplog, "rerun link not posted")
    assert lost["job_key"] == alert.job_key and lost["level"] == "WARNING" and "not_in_channel" in lost["reason"]
    assert f"Rerun by <@{ALLOWED}> as job" in harness.message(alert)  # the alert itself still shows it


def test_a_message_update_slack_refuses_is_logged(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    alert = harness.failure("5054")
    harness.slack.api_error("chat.update", "message_not_found")
    with caplog.at_level(logging.INFO, logger="trainmedic"):
        harness.actions.acknowledge(alert.job_key, user=MEMBER, **where(alert))
    [lost] = events(caplog, "alert message not updated")
    assert lost["job_key"] == alert.job_key and lost["level"] == "WARNING" and "message_not_found" in lost["reason"]


def test_an_audit_line_the_store_cannot_write_does_not_undo_the_action(
    harness: Harness, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    import sqlite3

    from bot.store.sqlite import SqliteStore

    alert = harness.failure("5055")
    impatient = SqliteStore(harness.live.settings.sqlite_path, busy_timeout=0.2)  # another handle, same database
    actions = harness.service(store=impatient)
    held: dict = {}

    def lock_the_store() -> None:  # another writer takes the database after the message was updated
        held["db"] = sqlite3.connect(harness.live.settings.sqlite_path, timeout=1, check_same_thread=False)
        held["db"].execute("BEGIN EXCLUSIVE")

    harness.slack.after_call("chat.update", lock_the_store)
    try:
        with caplog.at_level(logging.INFO, logger="trainmedic"):
            assert actions.acknowledge(alert.job_key, user=MEMBER, **where(alert)) == "acknowledged"
    finally:
        if "db" in held:
            held["db"].execute("ROLLBACK")
            held["db"].close()
        impatient.close()
    [lost] = events(caplog, "action not recorded")
    assert lost["level"] == "ERROR" and lost["job_key"] == alert.job_key
    assert lost["action"] == {
        "who": MEMBER,
        "what": "acknowledge",
        "when": "2027-01-15T08:00:00Z",
        "result": "acknowledged",
    }
    assert harness.store.get_alert(alert.job_key).acknowledged_by == MEMBER
    assert harness.history(alert) == []


def test_the_failed_job_is_read_in_its_own_region(harness: Harness) -> None:
    alert = harness.failure("5060")
    harness.google.server.clear()
    harness.actions.plan(alert.job_key)
    gets = [r.path for r in harness.google.requests if r.method == "GET"]
    assert gets and all(f"/locations/{REGION}/customJobs/5060" in path for path in gets)


def test_a_stored_job_that_cannot_be_read_is_routed_by_its_key(harness: Harness) -> None:
    key = f"{PROJECT}/5061"
    harness.store.record_post(
        key, owner="o", channel="C0X", message_ts="1.1", diagnosis={}, fingerprint="f", job={"labels": "not-a-map"}
    )
    by_project = RoutingConfig.model_validate(
        {**ROUTING, "routes": [{"match": {"project": PROJECT}, "channel": "#p", "rerun_allowed": [MEMBER]}]}
    )
    record = harness.store.get_alert(key)
    assert harness.service(routing=by_project).rerun_allowed(record) == (MEMBER,)


def test_a_route_for_the_failure_class_decides_who_may_rerun(harness: Harness) -> None:
    alert = harness.failure("5062")  # accelerator_oom
    by_class = RoutingConfig.model_validate(
        {
            **ROUTING,
            "routes": [{"match": {"failure_class": "accelerator_oom"}, "channel": "#gpu", "rerun_allowed": [MEMBER]}],
        }
    )
    assert harness.service(routing=by_class).rerun_allowed(alert) == (MEMBER,)


def test_a_slack_error_without_a_name_is_still_said(harness: Harness) -> None:
    alert = harness.failure("5063")
    harness.slack.server_error("conversations.members", times=5, status=500)
    reason = refused(harness.actions.acknowledge, alert.job_key, user=MEMBER, **where(alert))
    assert reason.endswith("(Slack conversations.members: error)")


def test_a_rerun_with_two_changes_records_both_separated(harness: Harness) -> None:
    alert = harness.failure("5070")
    values = {**VALUES, "replica_count": "2", "machine_type": "a2-highgpu-2g", "accelerator_count": "2"}
    start = harness.actions.begin_rerun(alert.job_key, user=ALLOWED, values=values)
    assert start.claim is not None, start.errors
    harness.actions.complete_rerun(start.claim)
    detail = harness.history(alert)[0]["detail"]
    assert detail.startswith(f"in {REGION}: "), detail
    changes = detail.removeprefix(f"in {REGION}: ").split("; ")
    assert len(changes) >= 2 and "replicas: 1 → 2" in changes, changes
    assert all(re.fullmatch(r"[a-z][a-z ]*: \S.* → [^X]+", change) for change in changes), changes


def test_an_alert_for_a_job_never_created_offers_no_rerun_and_says_why(harness: Harness) -> None:
    key = f"{PROJECT}/refusals/0123456789abcdef-20261130"
    harness.store.record_post(key, owner="o", channel="C0X", message_ts="1.1", diagnosis={}, fingerprint="f", job={})
    reason = refused(harness.actions.begin_rerun, key, user=ALLOWED, values=VALUES)
    assert reason == "no job was created: fix what the alert says, then submit the job again"


def test_an_alert_without_its_message_is_unknown_to_the_actions(harness: Harness) -> None:
    key = f"{PROJECT}/5071"
    harness.store.record_post(key, owner="o", channel="C0X", message_ts="", diagnosis={}, fingerprint="f", job={})
    reason = refused(harness.actions.acknowledge, key, user=MEMBER, channel="C0X", message_ts="")
    assert reason == "trainmedic does not know this job: it acts only on the alerts it posted"


def test_an_alert_stored_without_a_diagnosis_is_routed_as_unknown(harness: Harness) -> None:
    key = f"{PROJECT}/5072"
    harness.store.record_post(key, owner="o", channel="C0X", message_ts="1.1", diagnosis={}, fingerprint="f", job={})
    route = {"match": {"failure_class": "unknown"}, "channel": "#triage", "rerun_allowed": [MEMBER]}
    by_class = RoutingConfig.model_validate({**ROUTING, "routes": [route]})
    assert harness.service(routing=by_class).rerun_allowed(harness.store.get_alert(key)) == (MEMBER,)
