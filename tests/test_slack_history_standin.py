"""The Slack stand-in's message metadata, conversations.history and conversations.list, through the real slack_sdk
WebClient: the shapes Slack's reference gives (docs.slack.dev/reference/methods/conversations.history,
/chat.postMessage `metadata`, /chat.update, /conversations.list, /reference/metadata)."""

from __future__ import annotations

import time

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from standins.slack_api import FakeSlackApi

META = {"event_type": "trainmedic_alert", "event_payload": {"job_key": "acme-ml/1"}}


@pytest.fixture
def client(fake_slack: FakeSlackApi) -> WebClient:
    return WebClient(token="xoxb-test", base_url=fake_slack.base_url, retry_handlers=[])


def post(client: WebClient, channel: str, text: str, **kwargs) -> dict:
    return client.chat_postMessage(channel=channel, text=text, **kwargs).data


def test_post_by_name_answers_with_the_channel_id_and_keeps_metadata(client, fake_slack) -> None:
    answer = post(client, "#ml-alerts", "hello", metadata=META)

    assert answer["ok"] is True
    assert answer["channel"].startswith("C") and answer["channel"] != "#ml-alerts"
    assert answer["message"]["metadata"] == META
    assert answer["message"]["bot_id"] and answer["message"]["ts"] == answer["ts"]
    assert post(client, "#ml-alerts", "again")["channel"] == answer["channel"]  # one conversation per name
    assert post(client, answer["channel"], "by id")["channel"] == answer["channel"]
    assert [m["channel"] for m in fake_slack.posted()] == ["#ml-alerts"] * 3  # as the channel was first named


def test_history_takes_an_id_newest_first_and_metadata_only_when_asked(client, fake_slack) -> None:
    channel = post(client, "#ml-alerts", "first", metadata=META)["channel"]
    post(client, channel, "second")
    parent = post(client, channel, "third")["ts"]
    client.chat_postMessage(channel=channel, thread_ts=parent, text="a reply")

    with pytest.raises(SlackApiError) as by_name:
        client.conversations_history(channel="#ml-alerts")
    assert by_name.value.response["error"] == "channel_not_found"

    plain = client.conversations_history(channel=channel).data
    assert [m["text"] for m in plain["messages"]] == ["third", "second", "first"]  # no thread replies
    assert all("metadata" not in m for m in plain["messages"])
    assert plain["has_more"] is False and plain["response_metadata"]["next_cursor"] == ""
    assert plain["pin_count"] == 0

    full = client.conversations_history(channel=channel, include_all_metadata=True).data
    assert full["messages"][-1]["metadata"] == META
    assert "metadata" not in full["messages"][0]


def test_history_pages_with_a_cursor_and_honours_oldest_and_latest(client) -> None:
    channel = post(client, "#busy", "m0")["channel"]
    stamps = [post(client, channel, f"m{n}")["ts"] for n in range(1, 7)]

    seen, cursor, pages = [], None, 0
    while True:
        page = client.conversations_history(channel=channel, limit=3, cursor=cursor).data
        seen += [m["text"] for m in page["messages"]]
        pages += 1
        cursor = page["response_metadata"]["next_cursor"]
        if not page["has_more"]:
            assert cursor == ""
            break
        assert cursor
    assert pages == 3 and seen == [f"m{n}" for n in range(6, -1, -1)]

    window = client.conversations_history(channel=channel, oldest=stamps[1], latest=stamps[4]).data
    assert [m["text"] for m in window["messages"]] == ["m4", "m3"]  # exclusive by default
    inclusive = client.conversations_history(channel=channel, oldest=stamps[1], latest=stamps[4], inclusive=True)
    assert [m["text"] for m in inclusive.data["messages"]] == ["m5", "m4", "m3", "m2"]
    with pytest.raises(SlackApiError) as bad:
        client.conversations_history(channel=channel, cursor="not-a-cursor")
    assert bad.value.response["error"] == "invalid_cursor"


def test_update_keeps_metadata_unless_it_sends_some_and_empty_removes_it(client, fake_slack) -> None:
    sent = post(client, "#ml-alerts", "v1", metadata=META)
    channel, ts = sent["channel"], sent["ts"]

    client.chat_update(channel=channel, ts=ts, text="v2")
    assert fake_slack.message(channel, ts)["metadata"] == META and fake_slack.message(channel, ts)["text"] == "v2"
    other = {"event_type": "trainmedic_alert", "event_payload": {"job_key": "acme-ml/2"}}
    client.chat_update(channel=channel, ts=ts, text="v3", metadata=other)
    assert fake_slack.message("#ml-alerts", ts)["metadata"] == other
    client.chat_update(channel=channel, ts=ts, text="v4", metadata={})
    assert "metadata" not in fake_slack.message(channel, ts)


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ({"event_payload": {"a": 1}}, "invalid_metadata_schema"),
        ({"event_type": "x", "event_payload": "not an object"}, "invalid_metadata_schema"),
    ],
)
def test_malformed_metadata_is_refused(client, metadata, error) -> None:
    with pytest.raises(SlackApiError) as refused:
        post(client, "#ml-alerts", "x", metadata=metadata)
    assert refused.value.response["error"] == error


def test_form_encoded_metadata_is_a_json_string(fake_slack) -> None:
    import json

    import httpx

    body = {"channel": "#forms", "text": "hi", "metadata": json.dumps(META)}
    answer = httpx.post(fake_slack.base_url + "chat.postMessage", data=body, headers={"Authorization": "Bearer x"})
    assert answer.json()["message"]["metadata"] == META
    broken = httpx.post(
        fake_slack.base_url + "chat.postMessage",
        data={**body, "metadata": "{not json"},
        headers={"Authorization": "Bearer x"},
    )
    assert broken.json() == {"ok": False, "error": "invalid_metadata_format"}


def test_conversations_list_names_every_channel(client, fake_slack) -> None:
    ids = {name: post(client, name, "x")["channel"] for name in ("#ml-alerts", "#ml-platform")}
    fake_slack.seed_members("#vision", ["U1"])

    listed, cursor = [], None
    while True:
        page = client.conversations_list(types="public_channel,private_channel", limit=2, cursor=cursor).data
        listed += page["channels"]
        cursor = page["response_metadata"]["next_cursor"]
        if not cursor:
            break
    by_name = {c["name"]: c for c in listed}
    assert {by_name["ml-alerts"]["id"], by_name["ml-platform"]["id"]} == set(ids.values())
    assert by_name["vision"]["num_members"] == 1 and by_name["vision"]["is_channel"] is True
    assert client.conversations_members(channel=by_name["vision"]["id"])["members"] == ["U1"]


def test_a_slow_reply_is_carried_out_before_it_is_answered(fake_slack) -> None:
    fake_slack.slow("chat.postMessage", 1.5, times=1)
    impatient = WebClient(token="xoxb-test", base_url=fake_slack.base_url, timeout=0.3, retry_handlers=[])

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        impatient.chat_postMessage(channel="#ml-alerts", text="late", metadata=META)
    assert time.monotonic() - started < 1.0
    [message] = fake_slack.posted()  # Slack has it, though the client never heard back
    assert message["text"] == "late" and message["metadata"] == META
    assert post(impatient, "#ml-alerts", "prompt")["ok"] is True  # only the next call was slow
