"""Post and update messages in Slack through slack_sdk's WebClient; Slack failures become our errors.

Alert messages carry Slack message metadata naming their job (`alert_metadata`), so a message whose post
outcome is unknown (the answer timed out, the connection dropped, the poster died) can be found again with
conversations.history and adopted instead of posted twice (`find_alert`). The alert's full diagnosis card, the
first reply in its thread, carries `card_metadata` and is found the same way in the thread with
conversations.replies (`find_card`). An alert post is never re-sent by
the client itself: a connection error or a 5xx may come after Slack carried it out, so it surfaces as
`PostOutcomeUnknown` for the caller to settle. Calls made for a push take a `timeout` and an `ends_at` (a
`time.monotonic()` deadline): no call, and no rate-limit wait, outlasts it.
"""

from __future__ import annotations

import copy
import functools
import re
import threading
import time
from typing import Any

from bot.errors import ApiError, ApiUnavailable

# Errors that say the channel is wrong for us (not transient, not the message's fault).
CHANNEL_ERRORS = frozenset({"channel_not_found", "not_in_channel", "is_archived", "restricted_action"})
_TRANSIENT = frozenset({"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"})
ALERT_EVENT_TYPE = "trainmedic_alert"
CARD_EVENT_TYPE = "trainmedic_card"  # the full diagnosis card, posted in the alert's thread
HISTORY_PAGE = 200  # messages per conversations.history page (Slack recommends at most 200)
MAX_HISTORY_PAGES = 5
MAX_CHANNEL_PAGES = 20  # conversations.list pages of 1,000 when resolving a channel name
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,}")


class ChannelUnavailable(ApiError):
    """The channel does not exist, is archived, or the bot may not post there."""


class PostOutcomeUnknown(ApiUnavailable):
    """Slack may or may not have posted the message (timeout, dropped connection, 5xx): look before posting."""


def alert_metadata(job_key: str) -> dict:
    """The Slack message metadata every alert carries: which job it is about."""
    return {"event_type": ALERT_EVENT_TYPE, "event_payload": {"job_key": job_key}}


def card_metadata(job_key: str) -> dict:
    """The Slack message metadata of an alert's thread card: which job it is about."""
    return {"event_type": CARD_EVENT_TYPE, "event_payload": {"job_key": job_key}}


def build_web_client(*, token: str, base_url: str, timeout: int = 10) -> Any:
    """The one WebClient of the process: retries 429 (honouring Retry-After), 5xx and connection errors."""
    from slack_sdk import WebClient
    from slack_sdk.http_retry.builtin_handlers import (
        ConnectionErrorRetryHandler,
        RateLimitErrorRetryHandler,
        ServerErrorRetryHandler,
    )

    return WebClient(
        token=token,
        base_url=base_url,
        timeout=timeout,
        retry_handlers=[
            ConnectionErrorRetryHandler(max_retry_count=2),
            RateLimitErrorRetryHandler(max_retry_count=2),
            ServerErrorRetryHandler(max_retry_count=2),
        ],
    )


class SlackPoster:
    """post / update / reply in thread / ephemeral, returning Slack's ids; find an alert's earlier message."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._channel_ids: dict[str, str] = {}  # "#name" / "name" -> "C0123..." (learned or listed)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------ messages

    def post(
        self,
        channel: str,
        message: dict,
        *,
        metadata: dict | None = None,
        thread_ts: str | None = None,
        timeout: float | None = None,
        ends_at: float | None = None,
    ) -> tuple[str, str]:
        """Post `message` (in the thread of the message `thread_ts` when given); returns (channel id, ts).

        Raises:
            PostOutcomeUnknown: no answer, a dropped connection or a 5xx: Slack may have posted it.
            ChannelUnavailable, ApiUnavailable (429: not posted), ApiError.
        """
        client = self._bounded(timeout, ends_at, resend=False)
        kwargs: dict[str, Any] = {
            "channel": channel,
            "text": message["text"],
            "blocks": message["blocks"],
            "unfurl_links": False,
            "unfurl_media": False,
        }
        if thread_ts is not None:
            kwargs["thread_ts"] = thread_ts
        if metadata is not None:
            kwargs["metadata"] = metadata
        response = self._call("chat_postMessage", client=client, unknown_outcome=True, **kwargs)
        posted_in = str(response["channel"])
        if posted_in != channel and _CHANNEL_ID.fullmatch(posted_in):
            with self._lock:
                self._channel_ids[channel] = posted_in
        return posted_in, str(response["ts"])

    def user_by_email(self, email: str, *, timeout: float | None = None, ends_at: float | None = None) -> str | None:
        """The Slack user id of `email` (users.lookupByEmail), or None when the workspace has no such user or the
        app may not look users up (the caller then posts to a channel instead).

        Raises:
            ApiUnavailable: Slack did not answer (the redelivery looks again).
        """
        client = self._bounded(timeout, ends_at, resend=True)
        try:
            response = self._call("users_lookupByEmail", client=client, email=email)
        except ApiUnavailable:
            raise
        except ApiError:  # users_not_found, missing_scope (users:read.email), account_inactive...
            return None
        user = response.get("user") if isinstance(response.get("user"), dict) else {}
        user_id = user.get("id")
        return str(user_id) if user_id and not user.get("deleted") else None

    def update(
        self,
        channel: str,
        ts: str,
        message: dict,
        *,
        metadata: dict | None = None,
        timeout: float | None = None,
        ends_at: float | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {"channel": channel, "ts": ts, "text": message["text"], "blocks": message["blocks"]}
        if metadata is not None:
            kwargs["metadata"] = metadata
        client = self._bounded(timeout, ends_at, resend=True) if timeout is not None else self.client
        self._call("chat_update", client=client, **kwargs)

    def delete(self, channel: str, ts: str, *, timeout: float | None = None, ends_at: float | None = None) -> None:
        client = self._bounded(timeout, ends_at, resend=True) if timeout is not None else self.client
        self._call("chat_delete", client=client, channel=channel, ts=ts)

    def reply(self, channel: str, thread_ts: str, text: str) -> str:
        response = self._call("chat_postMessage", channel=channel, thread_ts=thread_ts, text=text, unfurl_links=False)
        return response["ts"]

    def ephemeral(self, channel: str, user: str, text: str, blocks: list[dict] | None = None) -> None:
        kwargs: dict[str, Any] = {"channel": channel, "user": user, "text": text}
        if blocks:
            kwargs["blocks"] = blocks
        self._call("chat_postEphemeral", **kwargs)

    # ------------------------------------------------------------------------------------------ finding

    def find_alert(
        self, channel: str, *, job_key: str, timeout: float, ends_at: float | None = None
    ) -> tuple[str, str] | None:
        """(channel id, ts) of a top-level message of ours in `channel` whose metadata names `job_key`, among its
        newest MAX_HISTORY_PAGES * HISTORY_PAGE messages (conversations.history with include_all_metadata, newest
        first: a post whose outcome is unknown is recent); the oldest such message on the first page that has one.
        None if there is none.

        Raises:
            ChannelUnavailable: the channel is unknown or the bot cannot read it.
            ApiUnavailable: transient; ApiError: permanent (e.g. missing_scope: channels:history).
        """
        channel_id = self.channel_id(channel, timeout=timeout, ends_at=ends_at)
        if channel_id is None:
            raise ChannelUnavailable(f"Slack: no channel named {channel}")
        client = self._bounded(timeout, ends_at, resend=True)
        found: list[str] = []
        cursor: str | None = None
        for _ in range(MAX_HISTORY_PAGES):
            if ends_at is not None and ends_at - time.monotonic() <= 0:
                raise ApiUnavailable(f"Slack conversations.history {channel}: out of time")
            response = self._call(
                "conversations_history",
                client=client,
                channel=channel_id,
                include_all_metadata=True,
                limit=HISTORY_PAGE,
                cursor=cursor,
            )
            for message in response.get("messages") or []:
                ts = str(message.get("ts", ""))
                if _is_alert_for(message, job_key) and message.get("thread_ts") in (None, ts):
                    found.append(ts)
            cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
            if found or not response.get("has_more") or not cursor:
                break
        return (channel_id, min(found, key=float)) if found else None

    def find_card(
        self, channel: str, thread_ts: str, *, job_key: str, timeout: float, ends_at: float | None = None
    ) -> str | None:
        """The ts of our card for `job_key` in the thread of the message `thread_ts` (conversations.replies with
        include_all_metadata, oldest first; the oldest card when there are several), or None.

        Raises:
            ApiUnavailable: transient; ApiError: permanent (e.g. missing_scope: channels:history).
        """
        client = self._bounded(timeout, ends_at, resend=True)
        cursor: str | None = None
        for _ in range(MAX_HISTORY_PAGES):
            if ends_at is not None and ends_at - time.monotonic() <= 0:
                raise ApiUnavailable(f"Slack conversations.replies {channel}: out of time")
            response = self._call(
                "conversations_replies",
                client=client,
                channel=channel,
                ts=thread_ts,
                include_all_metadata=True,
                limit=HISTORY_PAGE,
                cursor=cursor,
            )
            for message in response.get("messages") or []:
                ts = str(message.get("ts", ""))
                if ts != thread_ts and message.get("thread_ts") == thread_ts and _is_card_for(message, job_key):
                    return ts  # replies come oldest first
            cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
            if not response.get("has_more") or not cursor:
                break
        return None

    def channel_id(self, channel: str, *, timeout: float, ends_at: float | None = None) -> str | None:
        """The conversation id of `channel` ("C0123…" as is, "#name" looked up with conversations.list)."""
        if _CHANNEL_ID.fullmatch(channel):
            return channel
        with self._lock:
            known = self._channel_ids.get(channel)
        if known is not None:
            return known
        name = channel.removeprefix("#")
        client = self._bounded(timeout, ends_at, resend=True)
        cursor: str | None = None
        for _ in range(MAX_CHANNEL_PAGES):
            response = self._call(
                "conversations_list",
                client=client,
                types="public_channel,private_channel",
                exclude_archived=True,
                limit=1000,
                cursor=cursor,
            )
            for listed in response.get("channels") or []:
                listed_name, listed_id = listed.get("name"), listed.get("id")
                if isinstance(listed_name, str) and isinstance(listed_id, str):
                    with self._lock:
                        self._channel_ids[f"#{listed_name}"] = self._channel_ids[listed_name] = listed_id
                    if listed_name == name:
                        return listed_id
            cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                break
        return None

    # ------------------------------------------------------------------------------------------ plumbing

    def _bounded(self, timeout: float | None, ends_at: float | None, *, resend: bool) -> Any:
        """A copy of the client with its own socket timeout and retry handlers: a rate-limit wait only when it
        fits before `ends_at`; re-sending after a connection error or a 5xx only when the call is idempotent
        (`resend`)."""
        from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, ServerErrorRetryHandler

        client = copy.copy(self.client)
        if timeout is not None:
            client.timeout = max(timeout, 0.1)
        handlers: list[Any] = [_rate_limit_handler(ends_at=ends_at)]
        if resend:
            handlers += [ConnectionErrorRetryHandler(max_retry_count=1), ServerErrorRetryHandler(max_retry_count=1)]
        client.retry_handlers = handlers
        return client

    def _call(self, method: str, *, client: Any = None, unknown_outcome: bool = False, **kwargs: Any) -> Any:
        from slack_sdk.errors import SlackApiError, SlackClientError

        try:
            return getattr(client or self.client, method)(**kwargs)
        except SlackApiError as exc:
            error = exc.response.get("error", "") if exc.response is not None else ""
            status = exc.response.status_code if exc.response is not None else 0
            detail = f"Slack {method}: {error or status}"
            if error in CHANNEL_ERRORS:
                raise ChannelUnavailable(detail) from exc
            if unknown_outcome and status >= 500:
                raise PostOutcomeUnknown(detail) from exc
            if status == 429 or status >= 500 or error in _TRANSIENT:
                raise ApiUnavailable(detail) from exc
            raise ApiError(detail) from exc
        except (SlackClientError, OSError) as exc:
            detail = f"Slack {method}: {type(exc).__name__}: {exc}"
            if unknown_outcome:
                raise PostOutcomeUnknown(detail) from exc
            raise ApiUnavailable(detail) from exc


def _is_alert_for(message: dict, job_key: str) -> bool:
    return _is_ours(message, ALERT_EVENT_TYPE, job_key)


def _is_card_for(message: dict, job_key: str) -> bool:
    return _is_ours(message, CARD_EVENT_TYPE, job_key)


def _is_ours(message: dict, event_type: str, job_key: str) -> bool:
    metadata = message.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("event_type") != event_type:
        return False
    payload = metadata.get("event_payload")
    return isinstance(payload, dict) and payload.get("job_key") == job_key and bool(message.get("bot_id"))


@functools.cache
def _deadline_rate_limit_class() -> type:
    """Defined on first use: slack_sdk stays off the import path of `trainmedic diagnose`."""
    from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

    class DeadlineRateLimitRetryHandler(RateLimitErrorRetryHandler):
        """Waits out a 429 only when Retry-After (plus up to 1 s of jitter) ends before `ends_at`."""

        def __init__(self, *, max_retry_count: int, ends_at: float | None) -> None:
            super().__init__(max_retry_count=max_retry_count)
            self.ends_at = ends_at

        def _can_retry(self, *, state: Any, request: Any, response: Any = None, error: Any = None) -> bool:
            if not super()._can_retry(state=state, request=request, response=response, error=error):
                return False
            if self.ends_at is None:
                return True
            headers = {key.lower(): value for key, value in response.headers.items()}
            raw = headers.get("retry-after") or ["1"]
            try:
                wait = int(raw[0] if isinstance(raw, list) else raw) + 1
            except ValueError:
                return False
            return time.monotonic() + wait < self.ends_at

    return DeadlineRateLimitRetryHandler


def _rate_limit_handler(*, ends_at: float | None) -> Any:
    return _deadline_rate_limit_class()(max_retry_count=2, ends_at=ends_at)
