"""The fake Slack Web API, driven through the real slack_sdk clients."""

from __future__ import annotations

import re
import time

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler, ServerErrorRetryHandler
from slack_sdk.http_retry.builtin_interval_calculators import FixedValueRetryIntervalCalculator
from slack_sdk.webhook import WebhookClient

from standins.slack_api import BOT_USER_ID

TOKEN = "xoxb-test-token"


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


@pytest.fixture
def client(fake_slack) -> WebClient:
    return WebClient(token=TOKEN, base_url=fake_slack.base_url, retry_handlers=[])


def test_post_message_is_recorded_and_answered_like_slack(fake_slack, client):
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": "Job 85… failed"}}, section("*OOM*")]

    first = client.chat_postMessage(channel="C0456", text="Job failed", blocks=blocks)
    second = client.chat_postMessage(channel="C0456", text="reply", thread_ts=first["ts"])

    assert first["ok"] is True and first["channel"] == "C0456"
    assert re.fullmatch(r"1700000000\.\d{6}", first["ts"])
    assert float(second["ts"]) > float(first["ts"])
    assert first["message"]["blocks"] == blocks and first["message"]["user"] == BOT_USER_ID
    (call, reply) = fake_slack.calls_to("chat.postMessage")
    assert call.args == {"channel": "C0456", "text": "Job failed", "blocks": blocks}
    assert call.token == TOKEN
    assert call.request.header("content-type").startswith("application/json")
    assert reply.args["thread_ts"] == first["ts"]


def test_update_replaces_a_posted_message(fake_slack, client):
    posted = client.chat_postMessage(channel="C1", text="Job failed")

    updated = client.chat_update(channel="C1", ts=posted["ts"], text="Acknowledged", blocks=[section("ack by <@U1>")])

    assert updated["ts"] == posted["ts"] and updated["text"] == "Acknowledged"
    assert fake_slack.message("C1", posted["ts"])["blocks"] == [section("ack by <@U1>")]
    with pytest.raises(SlackApiError) as caught:
        client.chat_update(channel="C1", ts="1.000001", text="x")
    assert caught.value.response["error"] == "message_not_found"


def test_auth_test_and_bad_tokens(fake_slack, client):
    assert client.auth_test()["user_id"] == BOT_USER_ID
    assert fake_slack.calls[0].request.header("content-type") == "application/x-www-form-urlencoded"

    with pytest.raises(SlackApiError) as caught:
        WebClient(token="xoxb-invalid", base_url=fake_slack.base_url).auth_test()
    assert caught.value.response["error"] == "invalid_auth"
    with pytest.raises(SlackApiError) as caught:
        WebClient(base_url=fake_slack.base_url).auth_test()
    assert caught.value.response["error"] == "not_authed"


def test_429_is_retried_after_retry_after_by_the_rate_limit_handler(fake_slack):
    fake_slack.rate_limit("chat.postMessage", times=1, retry_after=0)
    client = WebClient(
        token=TOKEN, base_url=fake_slack.base_url, retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=1)]
    )

    started = time.monotonic()
    response = client.chat_postMessage(channel="C1", text="hello")

    assert response["ok"] is True
    assert len(fake_slack.calls_to("chat.postMessage")) == 2
    assert time.monotonic() - started < 1.5  # Retry-After 0 plus the handler's < 1 s jitter


def test_429_without_a_retry_handler_surfaces_retry_after(fake_slack, client):
    fake_slack.rate_limit("chat.postMessage", times=1, retry_after=7)

    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="C1", text="hello")

    assert caught.value.response.status_code == 429
    assert caught.value.response["error"] == "ratelimited"
    assert caught.value.response.headers["retry-after"] == "7"
    assert client.chat_postMessage(channel="C1", text="hello")["ok"] is True  # only the next call failed


def test_500_is_retried_by_the_server_error_handler(fake_slack):
    fake_slack.server_error("chat.postMessage", times=2)
    handler = ServerErrorRetryHandler(max_retry_count=2, interval_calculator=FixedValueRetryIntervalCalculator(0.01))
    client = WebClient(token=TOKEN, base_url=fake_slack.base_url, retry_handlers=[handler])

    assert client.chat_postMessage(channel="C1", text="hello")["ok"] is True
    assert len(fake_slack.calls_to("chat.postMessage")) == 3


def test_500_without_a_retry_handler_fails(fake_slack, client):
    fake_slack.server_error("chat.postMessage", status=503)
    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="C1", text="hello")
    assert caught.value.response.status_code == 503


def test_ok_false_errors_can_be_injected(fake_slack, client):
    fake_slack.api_error("chat.postMessage", "channel_not_found", times=2)
    for _ in range(2):
        with pytest.raises(SlackApiError) as caught:
            client.chat_postMessage(channel="C404", text="hello")
        assert caught.value.response["error"] == "channel_not_found"
    assert client.chat_postMessage(channel="C404", text="hello")["ok"] is True


@pytest.mark.parametrize(
    "blocks",
    [
        [section(f"block {i}") for i in range(51)],
        [{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}],
        ["not a block"],
    ],
    ids=["51-blocks", "header-151", "not-a-dict"],
)
def test_invalid_blocks(client, blocks):
    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="C1", text="fallback", blocks=blocks)
    assert caught.value.response["error"] == "invalid_blocks"


def test_limits_themselves_are_accepted(client):
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": "x" * 150}}]
    blocks += [section(f"block {i}") for i in range(49)]
    assert client.chat_postMessage(channel="C1", text="fallback", blocks=blocks)["ok"] is True


def test_form_encoded_blocks_are_decoded(fake_slack, client):
    client.api_call("chat.postMessage", data={"channel": "C1", "text": "t", "blocks": '[{"type": "divider"}]'})
    assert fake_slack.calls_to("chat.postMessage")[0].args["blocks"] == [{"type": "divider"}]


def test_ephemeral_views_members_and_usergroups(fake_slack, client):
    fake_slack.seed_members("C1", ["U1", "U2"])
    fake_slack.seed_usergroup("S1", ["U3"])

    assert client.chat_postEphemeral(channel="C1", user="U1", text="only you")["message_ts"]
    assert client.conversations_members(channel="C1")["members"] == ["U1", "U2"]
    assert client.usergroups_users_list(usergroup="S1")["users"] == ["U3"]
    view = {"type": "modal", "title": {"type": "plain_text", "text": "Rerun"}, "blocks": [section("sure?")]}
    opened = client.views_open(trigger_id="111.222.abc", view=view)["view"]
    assert opened["id"].startswith("V") and opened["blocks"] == view["blocks"]
    assert client.views_update(view_id=opened["id"], view=view)["view"]["id"] == opened["id"]

    assert fake_slack.calls_to("conversations.members")[0].args["channel"] == "C1"
    assert fake_slack.calls_to("views.open")[0].args["trigger_id"] == "111.222.abc"
    for method, kwargs, error in [
        (client.conversations_members, {"channel": "C404"}, "channel_not_found"),
        (client.usergroups_users_list, {"usergroup": "S404"}, "no_such_subteam"),
    ]:
        with pytest.raises(SlackApiError) as caught:
            method(**kwargs)
        assert caught.value.response["error"] == error


def test_response_url_posts_are_recorded(fake_slack):
    response = WebhookClient(fake_slack.response_url("abc123")).send(text="Rerun started", replace_original=True)

    assert response.status_code == 200
    (call,) = fake_slack.calls_to("response:abc123")
    assert call.args == {"text": "Rerun started", "replace_original": True}


def test_thread_replies_in_slacks_wire_format(fake_slack, client):
    parent = client.chat_postMessage(channel="C0T", text="alert", metadata={"event_type": "a", "event_payload": {}})
    first = client.chat_postMessage(
        channel="C0T", thread_ts=parent["ts"], text="card", metadata={"event_type": "card", "event_payload": {"k": 1}}
    )
    second = client.chat_postMessage(channel="C0T", thread_ts=parent["ts"], text="later")

    assert first["message"]["thread_ts"] == parent["ts"] and first["message"]["parent_user_id"] == BOT_USER_ID
    [top] = client.conversations_history(channel="C0T")["messages"]  # replies are not top-level messages
    assert top["ts"] == parent["ts"] and top["thread_ts"] == parent["ts"]
    assert (top["reply_count"], top["reply_users"], top["reply_users_count"]) == (2, [BOT_USER_ID], 1)
    assert top["latest_reply"] == second["ts"]

    thread = client.conversations_replies(channel="C0T", ts=parent["ts"])
    assert [m["ts"] for m in thread["messages"]] == [parent["ts"], first["ts"], second["ts"]]  # parent, then oldest
    assert thread["messages"][0]["reply_count"] == 2 and "metadata" not in thread["messages"][1]
    with_metadata = client.conversations_replies(channel="C0T", ts=first["ts"], include_all_metadata=True)
    assert with_metadata["messages"][1]["metadata"] == {"event_type": "card", "event_payload": {"k": 1}}
    assert [m["text"] for m in fake_slack.replies("C0T", parent["ts"])] == ["card", "later"]
    assert [m["text"] for m in fake_slack.posted()] == ["alert"]

    updated = client.chat_update(channel="C0T", ts=first["ts"], text="card v2")
    assert updated["message"]["thread_ts"] == parent["ts"]  # an updated reply stays in its thread
    assert client.chat_update(channel="C0T", ts=parent["ts"], text="alert v2")["message"]["reply_count"] == 2


def test_thread_pages_and_errors(fake_slack, client):
    parent = client.chat_postMessage(channel="C0P", text="alert")
    replies = [client.chat_postMessage(channel="C0P", thread_ts=parent["ts"], text=f"r{i}")["ts"] for i in range(5)]

    page = client.conversations_replies(channel="C0P", ts=parent["ts"], limit=4)
    assert [m["ts"] for m in page["messages"]] == [parent["ts"], *replies[:3]] and page["has_more"] is True
    rest = client.conversations_replies(
        channel="C0P", ts=parent["ts"], limit=4, cursor=page["response_metadata"]["next_cursor"]
    )
    assert [m["ts"] for m in rest["messages"]] == replies[3:] and rest["has_more"] is False
    lone = client.chat_postMessage(channel="C0P", text="no replies")
    assert [m["ts"] for m in client.conversations_replies(channel="C0P", ts=lone["ts"])["messages"]] == [lone["ts"]]
    for kwargs, error in [
        ({"channel": "C0P", "ts": "1700000000.999999"}, "thread_not_found"),
        ({"channel": "C0NOPE", "ts": parent["ts"]}, "channel_not_found"),
    ]:
        with pytest.raises(SlackApiError) as caught:
            client.conversations_replies(**kwargs)
        assert caught.value.response["error"] == error


def test_deleting_a_parent_with_replies_leaves_a_tombstone(fake_slack, client):
    parent = client.chat_postMessage(channel="C0D", text="alert")
    reply = client.chat_postMessage(channel="C0D", thread_ts=parent["ts"], text="card")
    alone = client.chat_postMessage(channel="C0D", text="other")

    client.chat_delete(channel="C0D", ts=parent["ts"])
    client.chat_delete(channel="C0D", ts=alone["ts"])

    [tombstone] = client.conversations_history(channel="C0D")["messages"]
    assert tombstone["subtype"] == "tombstone" and tombstone["text"] == "This message was deleted."
    assert [m["text"] for m in fake_slack.replies("C0D", parent["ts"])] == ["card"]
    assert fake_slack.posted() == []
    client.chat_delete(channel="C0D", ts=reply["ts"])  # the card first, then the message: nothing is left over
    assert fake_slack.replies("C0D", parent["ts"]) == []
