"""Post and update messages in Slack through slack_sdk's WebClient; Slack failures become our errors."""

from __future__ import annotations

from typing import Any

from bot.errors import ApiError, ApiUnavailable

# Errors that say the channel is wrong for us (not transient, not the message's fault).
CHANNEL_ERRORS = frozenset({"channel_not_found", "not_in_channel", "is_archived", "restricted_action"})
_TRANSIENT = frozenset({"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"})


class ChannelUnavailable(ApiError):
    """The channel does not exist, is archived, or the bot may not post there."""


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
    """post / update / reply in thread / ephemeral, returning Slack's ids."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def post(self, channel: str, message: dict) -> tuple[str, str]:
        response = self._call(
            "chat_postMessage",
            channel=channel,
            text=message["text"],
            blocks=message["blocks"],
            unfurl_links=False,
            unfurl_media=False,
        )
        return response["channel"], response["ts"]

    def update(self, channel: str, ts: str, message: dict) -> None:
        self._call("chat_update", channel=channel, ts=ts, text=message["text"], blocks=message["blocks"])

    def delete(self, channel: str, ts: str) -> None:
        self._call("chat_delete", channel=channel, ts=ts)

    def reply(self, channel: str, thread_ts: str, text: str) -> str:
        response = self._call("chat_postMessage", channel=channel, thread_ts=thread_ts, text=text, unfurl_links=False)
        return response["ts"]

    def ephemeral(self, channel: str, user: str, text: str, blocks: list[dict] | None = None) -> None:
        kwargs: dict[str, Any] = {"channel": channel, "user": user, "text": text}
        if blocks:
            kwargs["blocks"] = blocks
        self._call("chat_postEphemeral", **kwargs)

    def _call(self, method: str, **kwargs: Any) -> Any:
        from slack_sdk.errors import SlackApiError, SlackClientError

        try:
            return getattr(self.client, method)(**kwargs)
        except SlackApiError as exc:
            error = exc.response.get("error", "") if exc.response is not None else ""
            status = exc.response.status_code if exc.response is not None else 0
            detail = f"Slack {method}: {error or status}"
            if error in CHANNEL_ERRORS:
                raise ChannelUnavailable(detail) from exc
            if status == 429 or status >= 500 or error in _TRANSIENT:
                raise ApiUnavailable(detail) from exc
            raise ApiError(detail) from exc
        except (SlackClientError, OSError) as exc:
            raise ApiUnavailable(f"Slack {method}: {type(exc).__name__}: {exc}") from exc
