"""Posting once (bot/alerting/delivery.py), rule by rule: the Delivery the alert service uses, over the real
SlackPoster and slack_sdk, talking to the Slack stand-in. A message or card "from an earlier attempt" is posted
by another client first, as a poster that died (or whose answer never came) would have left it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from bot.alerting.deadline import Deadline
from bot.alerting.delivery import Delivery
from bot.alerting.routing import Destination
from bot.errors import ApiUnavailable
from bot.slack.poster import (
    PostOutcomeUnknown,
    SlackPoster,
    alert_metadata,
    build_web_client,
    card_metadata,
)
from standins.slack_api import FakeSlackApi

KEY = "acme-ml/4001"
DEFAULT, ROUTED = "#ml-alerts", "#vision-alerts"
ADOPTED = "the message an earlier attempt posted (adopted)"
TO_TEAM = Destination(channel=ROUTED, rerun_allowed=("U0VISION",), reason="routes[0]")
TO_DEFAULT = Destination(channel=DEFAULT, rerun_allowed=(), reason="default_channel")


def message(text: str) -> dict:
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}


ALERT, CARD = message("Training job failed: train-4001"), message("*Avoid* the OOM: a smaller batch")


def delivery_for(slack: FakeSlackApi, *, slack_timeout: float = 5.0) -> Delivery:
    poster = SlackPoster(build_web_client(token="xoxb-test", base_url=slack.base_url))
    return Delivery(poster, default_channel=DEFAULT, slack_timeout=slack_timeout)


@pytest.fixture
def delivery(fake_slack: FakeSlackApi) -> Delivery:
    return delivery_for(fake_slack)


@pytest.fixture
def other(fake_slack: FakeSlackApi) -> WebClient:
    """Another instance's client: what it posted is in Slack, but this one never heard of it."""
    return WebClient(token="xoxb-other", base_url=fake_slack.base_url)


@pytest.fixture
def events(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.INFO, logger="trainmedic"):
        yield caplog


def logged(caplog: pytest.LogCaptureFixture, text: str) -> list[dict]:
    return [dict(r.fields, level=r.levelname) for r in caplog.records if r.getMessage() == text]


def earlier_alert(other: WebClient, channel: str = ROUTED, key: str = KEY) -> str:
    return other.chat_postMessage(channel=channel, text="posted before", metadata=alert_metadata(key))["ts"]


def earlier_card(other: WebClient, parent: str, channel: str = ROUTED, key: str = KEY) -> str:
    answer = other.chat_postMessage(channel=channel, thread_ts=parent, text="card before", metadata=card_metadata(key))
    return answer["ts"]


def top_posts(slack: FakeSlackApi) -> list[dict]:
    return [c.args for c in slack.calls_to("chat.postMessage") if not c.args.get("thread_ts")]


def history_channels(slack: FakeSlackApi) -> list[str]:
    return [c.args["channel"] for c in slack.calls_to("conversations.history")]


# ------------------------------------------------------------------------------------ the channel message


def test_a_post_not_in_doubt_is_posted_with_the_jobs_metadata_without_looking(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient
) -> None:
    earlier_alert(other)  # not in doubt: nothing says Slack holds one of ours, so nobody looks
    channel, ts, how, adopted = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    assert (channel, how, adopted) == (fake_slack.conversation_id(ROUTED), "routes[0]", False)
    posted = fake_slack.message(channel, ts)
    assert posted["text"] == ALERT["text"] and posted["metadata"] == alert_metadata(KEY)
    assert fake_slack.calls_to("conversations.history") == []
    assert len(fake_slack.posted()) == 2


def test_in_doubt_the_earlier_message_in_the_routed_channel_is_adopted_and_shows_the_new_rendering(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient, events: pytest.LogCaptureFixture
) -> None:
    ts = earlier_alert(other)
    found = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=True, deadline=Deadline(25))
    channel = fake_slack.conversation_id(ROUTED)
    assert found == (channel, ts, ADOPTED, True)
    assert fake_slack.message(channel, ts)["text"] == ALERT["text"]
    [update] = fake_slack.calls_to("chat.update")
    assert update.args["metadata"] == alert_metadata(KEY)  # re-stated with the update
    assert len(fake_slack.calls_to("chat.postMessage")) == 1  # only the earlier attempt's
    assert history_channels(fake_slack) == [channel]  # found in the first channel looked at
    [adopt] = logged(events, "adopted the message an earlier attempt posted")
    assert adopt == {"job_key": KEY, "channel": channel, "ts": ts, "level": "WARNING"}


def test_in_doubt_the_default_channel_is_searched_after_the_routed_one(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient
) -> None:
    fake_slack.conversation_id(ROUTED)  # the routed channel exists, holds nothing of the job
    earlier_alert(other, key="acme-ml/4999")  # another job's alert is not ours to adopt
    ts = earlier_alert(other, channel=DEFAULT)
    channel, found_ts, how, adopted = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=True, deadline=Deadline(25))
    assert (channel, found_ts, how, adopted) == (fake_slack.conversation_id(DEFAULT), ts, ADOPTED, True)
    assert history_channels(fake_slack) == [fake_slack.conversation_id(ROUTED), fake_slack.conversation_id(DEFAULT)]


def test_in_doubt_with_nothing_found_both_channels_are_searched_then_it_posts(
    delivery: Delivery, fake_slack: FakeSlackApi
) -> None:
    fake_slack.conversation_id(ROUTED)
    fake_slack.conversation_id(DEFAULT)
    channel, ts, how, adopted = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=True, deadline=Deadline(25))
    assert (channel, how, adopted) == (fake_slack.conversation_id(ROUTED), "routes[0]", False)
    assert len(history_channels(fake_slack)) == 2
    assert [p["channel"] for p in top_posts(fake_slack)] == [ROUTED]


def test_the_default_channel_is_searched_once_when_it_is_the_route(
    delivery: Delivery, fake_slack: FakeSlackApi
) -> None:
    fake_slack.conversation_id(DEFAULT)
    delivery.deliver(KEY, TO_DEFAULT, ALERT, in_doubt=True, deadline=Deadline(25))
    assert history_channels(fake_slack) == [fake_slack.conversation_id(DEFAULT)]


def test_a_channel_that_cannot_be_searched_is_skipped_and_said(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient, events: pytest.LogCaptureFixture
) -> None:
    fake_slack.conversation_id(ROUTED)
    ts = earlier_alert(other, channel=DEFAULT)
    fake_slack.api_error("conversations.history", "missing_scope", times=1)  # the routed channel's search
    found = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=True, deadline=Deadline(25))
    assert found == (fake_slack.conversation_id(DEFAULT), ts, ADOPTED, True)
    [skipped] = logged(events, "cannot look for an earlier message; posting may duplicate it")
    assert skipped == {
        "job_key": KEY,
        "channel": ROUTED,
        "reason": "Slack conversations_history: missing_scope",
        "level": "ERROR",
    }


def test_a_search_slack_cannot_answer_now_posts_nothing(delivery: Delivery, fake_slack: FakeSlackApi) -> None:
    fake_slack.conversation_id(ROUTED)
    fake_slack.server_error("conversations.history", times=10, status=503)
    with pytest.raises(ApiUnavailable):
        delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=True, deadline=Deadline(25))
    assert fake_slack.calls_to("chat.postMessage") == []


def test_with_too_little_time_left_nothing_is_posted(delivery: Delivery, fake_slack: FakeSlackApi) -> None:
    with pytest.raises(ApiUnavailable, match=f"^{KEY}: too little time left to post"):
        delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(1.5))
    assert fake_slack.calls_to("chat.postMessage") == []
    channel, _, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(2.8))  # enough
    assert channel == fake_slack.conversation_id(ROUTED)


@pytest.mark.parametrize("error", ["not_in_channel", "is_archived", "channel_not_found"])
def test_an_unusable_routed_channel_falls_back_to_the_default_channel(
    delivery: Delivery, fake_slack: FakeSlackApi, events: pytest.LogCaptureFixture, error: str
) -> None:
    fake_slack.api_error("chat.postMessage", error, times=1)
    channel, ts, how, adopted = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    assert channel == fake_slack.conversation_id(DEFAULT) and adopted is False
    assert how == f"default_channel ({ROUTED}: Slack chat_postMessage: {error})"
    assert fake_slack.message(channel, ts)["metadata"] == alert_metadata(KEY)
    assert [p["channel"] for p in top_posts(fake_slack)] == [ROUTED, DEFAULT]
    [fallback] = logged(events, "routed channel unusable, posting to the default channel")
    assert fallback == {
        "job_key": KEY,
        "channel": ROUTED,
        "reason": f"Slack chat_postMessage: {error}",
        "level": "WARNING",
    }


def test_an_unusable_default_channel_is_transient_and_not_retried_elsewhere(
    delivery: Delivery, fake_slack: FakeSlackApi
) -> None:
    fake_slack.api_error("chat.postMessage", "not_in_channel", times=1)
    with pytest.raises(ApiUnavailable, match="not_in_channel; the default channel is not usable either") as raised:
        delivery.deliver(KEY, TO_DEFAULT, ALERT, in_doubt=False, deadline=Deadline(25))
    assert not isinstance(raised.value, PostOutcomeUnknown)
    assert len(top_posts(fake_slack)) == 1


def test_a_post_slack_may_have_carried_out_is_looked_for_and_adopted(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient, events: pytest.LogCaptureFixture
) -> None:
    ts = earlier_alert(other)  # Slack has the message; its answer to this post is a 500
    fake_slack.server_error("chat.postMessage", times=1, status=500)
    found = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    assert found == (fake_slack.conversation_id(ROUTED), ts, ADOPTED, True)
    [looked] = logged(events, "Slack did not answer a post: looking for it")
    assert looked == {"job_key": KEY, "reason": "Slack chat_postMessage: 500", "level": "WARNING"}


def test_a_post_with_an_unknown_outcome_and_nothing_found_stays_unknown(
    delivery: Delivery, fake_slack: FakeSlackApi
) -> None:
    fake_slack.conversation_id(ROUTED)
    fake_slack.conversation_id(DEFAULT)
    fake_slack.server_error("chat.postMessage", times=1, status=500)
    with pytest.raises(PostOutcomeUnknown):
        delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    assert len(history_channels(fake_slack)) == 2


def test_an_unknown_outcome_whose_search_fails_is_still_an_unknown_outcome(
    delivery: Delivery, fake_slack: FakeSlackApi
) -> None:
    fake_slack.conversation_id(ROUTED)
    fake_slack.server_error("chat.postMessage", times=1, status=500)
    fake_slack.server_error("conversations.history", times=10, status=503)
    with pytest.raises(PostOutcomeUnknown):  # in doubt: the caller releases the claim so, not as a plain failure
        delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    assert fake_slack.calls_to("conversations.history")


def test_an_unknown_outcome_with_too_little_time_left_is_not_searched_now(
    delivery: Delivery, fake_slack: FakeSlackApi
) -> None:
    fake_slack.slow("chat.postMessage", 3.0, times=1)  # the answer comes after the call gives up
    with pytest.raises(PostOutcomeUnknown):
        delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(2.6))
    assert fake_slack.calls_to("conversations.history") == []


def test_each_slack_call_is_bounded_by_the_delivery_timeout(fake_slack: FakeSlackApi) -> None:
    """A post answered after the call's timeout is in doubt: looked for, found (Slack did carry it out), adopted."""
    delivery = delivery_for(fake_slack, slack_timeout=0.4)
    fake_slack.slow("chat.postMessage", 2.5, times=1)
    channel, ts, how, adopted = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    assert (how, adopted) == (ADOPTED, True)
    assert [m["ts"] for m in fake_slack.posted()] == [ts]


def test_the_fallback_post_is_bounded_too(fake_slack: FakeSlackApi) -> None:
    delivery = delivery_for(fake_slack, slack_timeout=0.4)
    fake_slack.api_error("chat.postMessage", "not_in_channel", times=1)
    fake_slack.slow("chat.postMessage", 2.5, times=1)  # the fault answers at once; the default channel's post is slow
    channel, ts, how, adopted = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    assert (channel, how, adopted) == (fake_slack.conversation_id(DEFAULT), ADOPTED, True)


@pytest.mark.parametrize("method", ["conversations.history", "chat.update"])
def test_searching_and_adopting_are_bounded_by_the_delivery_timeout(
    fake_slack: FakeSlackApi, other: WebClient, method: str
) -> None:
    earlier_alert(other)
    delivery = delivery_for(fake_slack, slack_timeout=0.4)
    fake_slack.slow(method, 2.5)
    started = time.monotonic()
    with pytest.raises(ApiUnavailable):
        delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=True, deadline=Deadline(25))
    assert time.monotonic() - started < 2.0
    fake_slack.slow(method, 0)


def test_a_rate_limit_longer_than_the_time_left_is_not_waited_out(delivery: Delivery, fake_slack: FakeSlackApi) -> None:
    fake_slack.rate_limit("chat.postMessage", retry_after=6)
    started = time.monotonic()
    with pytest.raises(ApiUnavailable):
        delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(4))
    assert time.monotonic() - started < 3.0
    assert fake_slack.posted() == []


# ------------------------------------------------------------------------------------ the card in the thread


def test_a_card_is_posted_in_the_messages_thread_with_the_card_metadata(
    delivery: Delivery, fake_slack: FakeSlackApi
) -> None:
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    card_ts = delivery.deliver_card(KEY, channel, ts, CARD, adopted=False, deadline=Deadline(25))
    [card] = fake_slack.replies(channel, ts)
    assert card["ts"] == card_ts and card["text"] == CARD["text"] and card["metadata"] == card_metadata(KEY)
    assert fake_slack.calls_to("conversations.replies") == []  # a message just posted has no card to look for


def test_an_adopted_messages_earlier_card_is_adopted_and_updated(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient, events: pytest.LogCaptureFixture
) -> None:
    parent = earlier_alert(other)
    other.chat_postMessage(channel=ROUTED, thread_ts=parent, text="a person's reply")
    card_ts = earlier_card(other, parent)
    channel = fake_slack.conversation_id(ROUTED)
    assert delivery.deliver_card(KEY, channel, parent, CARD, adopted=True, deadline=Deadline(25)) == card_ts
    reply, card = fake_slack.replies(channel, parent)
    assert reply["text"] == "a person's reply" and (card["ts"], card["text"]) == (card_ts, CARD["text"])
    [update] = fake_slack.calls_to("chat.update")
    assert update.args["metadata"] == card_metadata(KEY)
    assert len(fake_slack.calls_to("chat.postMessage")) == 3  # the earlier attempt's three; none here
    [adopt] = logged(events, "adopted the card an earlier attempt posted")
    assert adopt == {"job_key": KEY, "ts": card_ts, "level": "WARNING"}
    [looked] = fake_slack.calls_to("conversations.replies")
    assert (looked.args["channel"], looked.args["ts"]) == (channel, parent)


def test_an_adopted_message_without_a_card_gets_one(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient
) -> None:
    parent = earlier_alert(other)
    earlier_card(other, parent, key="acme-ml/4999")  # another job's card in the thread is not ours
    channel = fake_slack.conversation_id(ROUTED)
    card_ts = delivery.deliver_card(KEY, channel, parent, CARD, adopted=True, deadline=Deadline(25))
    theirs, ours = fake_slack.replies(channel, parent)
    assert ours["ts"] == card_ts and ours["metadata"] == card_metadata(KEY) and theirs["text"] == "card before"


def test_an_adopted_card_slack_will_not_update_is_kept_all_the_same(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient, events: pytest.LogCaptureFixture
) -> None:
    parent = earlier_alert(other)
    card_ts = earlier_card(other, parent)
    fake_slack.api_error("chat.update", "cant_update_message", times=1)
    channel = fake_slack.conversation_id(ROUTED)
    assert delivery.deliver_card(KEY, channel, parent, CARD, adopted=True, deadline=Deadline(25)) == card_ts
    assert [r["text"] for r in fake_slack.replies(channel, parent)] == ["card before"]  # no second card
    [kept] = logged(events, "adopted card not updated")
    assert kept == {"job_key": KEY, "reason": "Slack chat_update: cant_update_message", "level": "WARNING"}


def test_an_adopted_card_whose_update_slack_cannot_answer_now_is_in_doubt(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient
) -> None:
    parent = earlier_alert(other)
    earlier_card(other, parent)
    fake_slack.server_error("chat.update", times=10, status=503)
    with pytest.raises(ApiUnavailable):
        delivery.deliver_card(
            KEY, fake_slack.conversation_id(ROUTED), parent, CARD, adopted=True, deadline=Deadline(25)
        )
    assert len(fake_slack.calls_to("chat.postMessage")) == 2


def test_a_card_refused_for_good_leaves_the_alert_without_one(
    delivery: Delivery, fake_slack: FakeSlackApi, events: pytest.LogCaptureFixture
) -> None:
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    fake_slack.api_error("chat.postMessage", "invalid_blocks", times=1)
    assert delivery.deliver_card(KEY, channel, ts, CARD, adopted=False, deadline=Deadline(25)) is None
    [refused] = logged(events, "the card was refused: the alert stands without it")
    assert refused == {"job_key": KEY, "reason": "Slack chat_postMessage: invalid_blocks", "level": "ERROR"}


def test_a_card_post_with_an_unknown_outcome_is_raised(delivery: Delivery, fake_slack: FakeSlackApi) -> None:
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    fake_slack.server_error("chat.postMessage", times=1, status=502)
    with pytest.raises(PostOutcomeUnknown):
        delivery.deliver_card(KEY, channel, ts, CARD, adopted=False, deadline=Deadline(25))


def test_a_card_is_not_started_with_too_little_time_left(delivery: Delivery, fake_slack: FakeSlackApi) -> None:
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    with pytest.raises(ApiUnavailable, match=f"^{KEY}: too little time left to post the card"):
        delivery.deliver_card(KEY, channel, ts, CARD, adopted=False, deadline=Deadline(1.5))
    assert fake_slack.replies(channel, ts) == []
    assert delivery.deliver_card(KEY, channel, ts, CARD, adopted=False, deadline=Deadline(2.8)) is not None


def test_a_thread_that_cannot_be_searched_gets_a_card_anyway(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient, events: pytest.LogCaptureFixture
) -> None:
    parent = earlier_alert(other)
    channel = fake_slack.conversation_id(ROUTED)
    fake_slack.api_error("conversations.replies", "missing_scope", times=1)
    card_ts = delivery.deliver_card(KEY, channel, parent, CARD, adopted=True, deadline=Deadline(25))
    assert [r["ts"] for r in fake_slack.replies(channel, parent)] == [card_ts]
    [said] = logged(events, "cannot look for an earlier card; posting may duplicate it")
    assert said == {
        "job_key": KEY,
        "channel": channel,
        "reason": "Slack conversations_replies: missing_scope",
        "level": "ERROR",
    }


def test_a_thread_slack_cannot_search_now_gets_no_card_now(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient
) -> None:
    parent = earlier_alert(other)
    fake_slack.server_error("conversations.replies", times=10, status=503)
    with pytest.raises(ApiUnavailable):
        delivery.deliver_card(
            KEY, fake_slack.conversation_id(ROUTED), parent, CARD, adopted=True, deadline=Deadline(25)
        )
    assert len(fake_slack.calls_to("chat.postMessage")) == 1


@pytest.mark.parametrize("method", ["conversations.replies", "chat.update", "chat.postMessage"])
def test_the_cards_calls_are_bounded_by_the_delivery_timeout(
    fake_slack: FakeSlackApi, other: WebClient, method: str
) -> None:
    parent = earlier_alert(other)
    if method == "chat.update":
        earlier_card(other, parent)
    delivery = delivery_for(fake_slack, slack_timeout=0.4)
    fake_slack.slow(method, 2.5)
    started = time.monotonic()
    with pytest.raises(ApiUnavailable):
        delivery.deliver_card(
            KEY, fake_slack.conversation_id(ROUTED), parent, CARD, adopted=True, deadline=Deadline(25)
        )
    assert time.monotonic() - started < 2.0
    fake_slack.slow(method, 0)


# ------------------------------------------------------------------------------------ withdraw, update, the caller


def test_withdraw_deletes_the_card_then_the_message(
    delivery: Delivery, fake_slack: FakeSlackApi, events: pytest.LogCaptureFixture
) -> None:
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    card_ts = delivery.deliver_card(KEY, channel, ts, CARD, adopted=False, deadline=Deadline(25))
    assert delivery.withdraw(KEY, channel, ts, Deadline(25), card_ts=card_ts) is True
    assert [c.args["ts"] for c in fake_slack.calls_to("chat.delete")] == [card_ts, ts]
    assert fake_slack.posted() == [] and fake_slack.replies(channel, ts) == []
    [gone] = logged(events, "posted message withdrawn: the store could not record it")
    assert gone == {"job_key": KEY, "channel": channel, "ts": ts, "level": "WARNING"}


def test_withdraw_without_a_card_deletes_the_message_alone(delivery: Delivery, fake_slack: FakeSlackApi) -> None:
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    assert delivery.withdraw(KEY, channel, ts, Deadline(25)) is True
    assert [c.args["ts"] for c in fake_slack.calls_to("chat.delete")] == [ts]


def test_a_message_slack_will_not_delete_is_not_withdrawn(
    delivery: Delivery, fake_slack: FakeSlackApi, events: pytest.LogCaptureFixture
) -> None:
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    fake_slack.api_error("chat.delete", "cant_delete_message", times=1)
    assert delivery.withdraw(KEY, channel, ts, Deadline(25)) is False
    assert [m["ts"] for m in fake_slack.posted()] == [ts]
    [kept] = logged(events, "posted message could not be recorded nor withdrawn: a redelivery will adopt it")
    assert kept == {
        "job_key": KEY,
        "channel": channel,
        "ts": ts,
        "reason": "Slack chat_delete: cant_delete_message",
        "level": "ERROR",
    }
    assert logged(events, "posted message withdrawn: the store could not record it") == []


def test_withdraw_is_bounded_by_the_delivery_timeout(fake_slack: FakeSlackApi) -> None:
    delivery = delivery_for(fake_slack, slack_timeout=0.4)
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    fake_slack.slow("chat.delete", 2.5)
    started = time.monotonic()
    assert delivery.withdraw(KEY, channel, ts, Deadline(25)) is False
    assert time.monotonic() - started < 2.0
    fake_slack.slow("chat.delete", 0)


def test_update_rewrites_the_message_in_place(delivery: Delivery, fake_slack: FakeSlackApi) -> None:
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    delivery.update(channel, ts, message("Training job failed: now with more"), Deadline(25))
    assert fake_slack.message(channel, ts)["text"] == "Training job failed: now with more"
    assert len(fake_slack.posted()) == 1


def test_update_is_bounded_by_the_delivery_timeout(fake_slack: FakeSlackApi) -> None:
    delivery = delivery_for(fake_slack, slack_timeout=0.4)
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    fake_slack.slow("chat.update", 2.5)
    with pytest.raises(ApiUnavailable):
        delivery.update(channel, ts, message("later"), Deadline(25))
    fake_slack.slow("chat.update", 0)


def test_without_an_email_the_routed_destination_stands(delivery: Delivery, fake_slack: FakeSlackApi) -> None:
    assert delivery.to_person(None, TO_TEAM, Deadline(25)) is TO_TEAM
    assert delivery.to_person("", TO_TEAM, Deadline(25)) is TO_TEAM
    assert fake_slack.calls_to("users.lookupByEmail") == []


def test_a_caller_slack_knows_is_told_directly(delivery: Delivery, fake_slack: FakeSlackApi) -> None:
    fake_slack.seed_user("dana@acme.example", "U0DANA")
    person = delivery.to_person("dana@acme.example", TO_TEAM, Deadline(25))
    assert person == Destination(channel="U0DANA", rerun_allowed=(), reason="the caller, dana@acme.example")


def test_a_caller_slack_does_not_know_leaves_the_route_and_says_so(
    delivery: Delivery, fake_slack: FakeSlackApi
) -> None:
    person = delivery.to_person("nobody@acme.example", TO_TEAM, Deadline(25))
    assert person == Destination(
        channel=ROUTED, rerun_allowed=("U0VISION",), reason="routes[0] (nobody@acme.example not found in Slack)"
    )


def test_looking_the_caller_up_is_bounded_by_the_delivery_timeout(fake_slack: FakeSlackApi) -> None:
    delivery = delivery_for(fake_slack, slack_timeout=0.4)
    fake_slack.seed_user("dana@acme.example", "U0DANA")
    fake_slack.slow("users.lookupByEmail", 2.5)
    with pytest.raises(ApiUnavailable):
        delivery.to_person("dana@acme.example", TO_TEAM, Deadline(25))
    fake_slack.slow("users.lookupByEmail", 0)


def rate_limited(slack: FakeSlackApi, method: str) -> None:
    """Slack asks for a 6 s pause: longer than the 4 s deadline, so the call must give up rather than wait."""
    slack.rate_limit(method, retry_after=6)


@pytest.mark.parametrize(
    "case", ["update", "adopt", "search", "card", "card update", "card search", "fallback", "caller"]
)
def test_no_call_waits_out_a_rate_limit_past_the_deadline(
    delivery: Delivery, fake_slack: FakeSlackApi, other: WebClient, case: str
) -> None:
    parent = earlier_alert(other)
    channel = fake_slack.conversation_id(ROUTED)
    if case == "card update":
        earlier_card(other, parent)
    fake_slack.seed_user("dana@acme.example", "U0DANA")
    actions = {
        "update": ("chat.update", lambda d: delivery.update(channel, parent, ALERT, d)),
        "adopt": ("chat.update", lambda d: delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=True, deadline=d)),
        "search": ("conversations.history", lambda d: delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=True, deadline=d)),
        "card": (
            "chat.postMessage",
            lambda d: delivery.deliver_card(KEY, channel, parent, CARD, adopted=False, deadline=d),
        ),
        "card update": (
            "chat.update",
            lambda d: delivery.deliver_card(KEY, channel, parent, CARD, adopted=True, deadline=d),
        ),
        "card search": (
            "conversations.replies",
            lambda d: delivery.deliver_card(KEY, channel, parent, CARD, adopted=True, deadline=d),
        ),
        "fallback": ("chat.postMessage", lambda d: delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=d)),
        "caller": ("users.lookupByEmail", lambda d: delivery.to_person("dana@acme.example", TO_TEAM, d)),
    }
    method, action = actions[case]
    if case == "fallback":
        fake_slack.api_error("chat.postMessage", "not_in_channel", times=1)
    rate_limited(fake_slack, method)
    started = time.monotonic()
    with pytest.raises(ApiUnavailable):
        action(Deadline(4))
    assert time.monotonic() - started < 3.0


def test_withdraw_does_not_wait_out_a_rate_limit_past_the_deadline(
    delivery: Delivery, fake_slack: FakeSlackApi
) -> None:
    channel, ts, _, _ = delivery.deliver(KEY, TO_TEAM, ALERT, in_doubt=False, deadline=Deadline(25))
    rate_limited(fake_slack, "chat.delete")
    started = time.monotonic()
    assert delivery.withdraw(KEY, channel, ts, Deadline(4)) is False
    assert time.monotonic() - started < 3.0
