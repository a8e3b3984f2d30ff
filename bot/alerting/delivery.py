"""Posting a job's alert exactly once to Slack, although Slack and Pub/Sub are at-least-once.

Every alert carries Slack message metadata naming its job. When a post's outcome is unknown (Slack's answer timed
out, the connection dropped) or the post was left in doubt by an attempt that never settled it, the message Slack
may hold is looked for (conversations.history) and adopted before anything is posted again; the card in its thread
likewise (conversations.replies). A routed channel that cannot be used falls back to the default channel. Every
call is bounded by the push's Deadline.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from bot.alerting.deadline import Deadline
from bot.alerting.event_log import event
from bot.alerting.routing import Destination
from bot.errors import ApiError, ApiUnavailable
from bot.slack.poster import ChannelUnavailable, PostOutcomeUnknown, SlackPoster, alert_metadata, card_metadata

SLACK_TIMEOUT = 5.0  # one Slack call never takes longer (see bot.alerting.deadline)
MIN_POST_SECONDS = 2.0  # with less time left, do not start a post: release and let the redelivery post
MIN_SEARCH_SECONDS = 1.5  # with less time left, do not look for an earlier message now


class Delivery:
    """The Slack side of an alert: post or adopt the channel message and its card, update, withdraw."""

    def __init__(self, poster: SlackPoster, *, default_channel: str, slack_timeout: float = SLACK_TIMEOUT) -> None:
        self.poster = poster
        self.default_channel = default_channel
        self.slack_timeout = slack_timeout

    def deliver(
        self,
        job_key: str,
        destination: Destination,
        message: dict,
        *,
        in_doubt: bool,
        deadline: Deadline,
        take_over: tuple[str, str] | None = None,
    ) -> tuple[str, str, str, bool]:
        """Post the job's message, or adopt the one an earlier attempt may have posted, or `take_over` (the job's
        stuck-job message): (channel, ts, how, whether it was adopted)."""
        if take_over is not None:
            return self.adopt(job_key, take_over, message, deadline)
        if in_doubt:
            earlier = self.find_earlier(job_key, destination, deadline)
            if earlier is not None:
                return self.adopt(job_key, earlier, message, deadline)
        if deadline.remaining() < MIN_POST_SECONDS:
            raise ApiUnavailable(f"{job_key}: too little time left to post (shutting down?); a redelivery will post")
        metadata = alert_metadata(job_key)
        try:
            try:
                channel, ts = self.poster.post(
                    destination.channel,
                    message,
                    metadata=metadata,
                    timeout=deadline.call_timeout(self.slack_timeout),
                    ends_at=deadline.ends_at,
                )
                return channel, ts, destination.reason, False
            except ChannelUnavailable as exc:
                if destination.channel == self.default_channel:
                    raise ApiUnavailable(f"{exc}; the default channel is not usable either") from exc
                event(
                    logging.WARNING,
                    "routed channel unusable, posting to the default channel",
                    job_key=job_key,
                    channel=destination.channel,
                    reason=str(exc),
                )
                channel, ts = self.poster.post(
                    self.default_channel,
                    message,
                    metadata=metadata,
                    timeout=deadline.call_timeout(self.slack_timeout),
                    ends_at=deadline.ends_at,
                )
                return channel, ts, f"default_channel ({destination.channel}: {exc})", False
        except PostOutcomeUnknown as exc:
            event(logging.WARNING, "Slack did not answer a post: looking for it", job_key=job_key, reason=str(exc))
            if deadline.remaining() >= MIN_SEARCH_SECONDS:
                try:
                    earlier = self.find_earlier(job_key, destination, deadline)
                except ApiError:
                    earlier = None
                if earlier is not None:
                    return self.adopt(job_key, earlier, message, deadline)
            raise

    def find_earlier(self, job_key: str, destination: Destination, deadline: Deadline) -> tuple[str, str] | None:
        """The message an earlier attempt posted for the job, in the routed or the default channel, if any.

        Raises:
            ApiUnavailable: Slack could not be searched now (the redelivery will look again).
        """
        channels = list(dict.fromkeys([destination.channel, self.default_channel]))
        for channel in channels:
            try:
                found = self.poster.find_alert(
                    channel,
                    job_key=job_key,
                    timeout=deadline.call_timeout(self.slack_timeout),
                    ends_at=deadline.ends_at,
                )
            except ApiUnavailable:
                raise
            except ApiError as exc:  # e.g. missing_scope (channels:history) or an unknown channel: post anyway
                event(
                    logging.ERROR,
                    "cannot look for an earlier message; posting may duplicate it",
                    job_key=job_key,
                    channel=channel,
                    reason=str(exc),
                )
                continue
            if found is not None:
                return found
        return None

    def adopt(
        self, job_key: str, found: tuple[str, str], message: dict, deadline: Deadline
    ) -> tuple[str, str, str, bool]:
        """Make an earlier attempt's message the job's message, showing what we would have posted."""
        channel, ts = found
        self.poster.update(
            channel,
            ts,
            message,
            metadata=alert_metadata(job_key),
            timeout=deadline.call_timeout(self.slack_timeout),
            ends_at=deadline.ends_at,
        )
        event(logging.WARNING, "adopted the message an earlier attempt posted", job_key=job_key, channel=channel, ts=ts)
        return channel, ts, "the message an earlier attempt posted (adopted)", True

    def deliver_card(
        self, job_key: str, channel: str, ts: str, card: dict, *, adopted: bool, deadline: Deadline
    ) -> str | None:
        """Put the full card in the thread of the job's message (channel, ts): adopt the one an earlier attempt
        posted there (when the message was adopted), else post it. Its ts, or None when Slack refused it for good
        (the alert stands without it; /diagnose still gives the card).

        Raises:
            PostOutcomeUnknown, ApiUnavailable: not known to be posted now; the caller leaves the post in doubt.
        """
        metadata = card_metadata(job_key)
        if adopted:
            found = self.find_card(job_key, channel, ts, deadline)
            if found is not None:
                try:
                    self.poster.update(
                        channel,
                        found,
                        card,
                        metadata=metadata,
                        timeout=deadline.call_timeout(self.slack_timeout),
                        ends_at=deadline.ends_at,
                    )
                except ApiUnavailable:
                    raise
                except ApiError as exc:  # it is there all the same: later updates try again
                    event(logging.WARNING, "adopted card not updated", job_key=job_key, reason=str(exc))
                event(logging.WARNING, "adopted the card an earlier attempt posted", job_key=job_key, ts=found)
                return found
        if deadline.remaining() < MIN_POST_SECONDS:
            raise ApiUnavailable(f"{job_key}: too little time left to post the card; a redelivery will post it")
        try:
            _, card_ts = self.poster.post(
                channel,
                card,
                metadata=metadata,
                thread_ts=ts,
                timeout=deadline.call_timeout(self.slack_timeout),
                ends_at=deadline.ends_at,
            )
        except ApiUnavailable:
            raise
        except ApiError as exc:
            event(logging.ERROR, "the card was refused: the alert stands without it", job_key=job_key, reason=str(exc))
            return None
        return card_ts

    def find_card(self, job_key: str, channel: str, ts: str, deadline: Deadline) -> str | None:
        """The card an earlier attempt posted in the thread of (channel, ts), if any.

        Raises:
            ApiUnavailable: Slack could not be searched now (the redelivery will look again).
        """
        try:
            return self.poster.find_card(
                channel,
                ts,
                job_key=job_key,
                timeout=deadline.call_timeout(self.slack_timeout),
                ends_at=deadline.ends_at,
            )
        except ApiUnavailable:
            raise
        except ApiError as exc:  # e.g. missing_scope (channels:history): post anyway, as for the message itself
            event(
                logging.ERROR,
                "cannot look for an earlier card; posting may duplicate it",
                job_key=job_key,
                channel=channel,
                reason=str(exc),
            )
            return None

    def withdraw(
        self, job_key: str, channel: str, ts: str, deadline: Deadline, *, card_ts: str | None = None
    ) -> bool:
        """Delete a posted message (and its card) that the store could not record; False when Slack still holds
        it (the post is then in doubt: a redelivery adopts it)."""
        try:
            for message_ts in (card_ts, ts):  # the card first: a parent deleted with replies would stay as a stub
                if message_ts is not None:
                    self.poster.delete(
                        channel, message_ts, timeout=deadline.call_timeout(self.slack_timeout), ends_at=deadline.ends_at
                    )
        except ApiError as exc:
            event(
                logging.ERROR,
                "posted message could not be recorded nor withdrawn: a redelivery will adopt it",
                job_key=job_key,
                channel=channel,
                ts=ts,
                reason=str(exc),
            )
            return False
        event(
            logging.WARNING,
            "posted message withdrawn: the store could not record it",
            job_key=job_key,
            channel=channel,
            ts=ts,
        )
        return True


    def to_person(self, email: str | None, destination: Destination, deadline: Deadline) -> Destination:
        """The person named by `email` (found in Slack by email), else `destination` (saying why)."""
        if not email:
            return destination
        user = self.poster.user_by_email(
            email, timeout=deadline.call_timeout(self.slack_timeout), ends_at=deadline.ends_at
        )
        if user is None:
            return replace(destination, reason=f"{destination.reason} ({email} not found in Slack)")
        return Destination(channel=user, rerun_allowed=(), reason=f"the caller, {email}")

    def update(self, channel: str, ts: str, message: dict, deadline: Deadline) -> None:
        """chat.update one of the alert's messages (raises ApiUnavailable / ApiError as the poster does)."""
        self.poster.update(
            channel, ts, message, timeout=deadline.call_timeout(self.slack_timeout), ends_at=deadline.ends_at
        )
