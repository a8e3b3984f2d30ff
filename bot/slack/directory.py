"""Who is who in the Slack workspace: channel members and user groups (the checks behind the chat actions)."""

from __future__ import annotations

from typing import Any

from bot.errors import ApiError, ApiUnavailable


class SlackDirectory:
    """conversations.members and usergroups.users.list through a slack_sdk WebClient."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def is_channel_member(self, channel: str, user: str, *, max_pages: int = 20) -> bool:
        """Whether `user` is a member of `channel` (conversations.members, page by page, at most `max_pages`
        pages of 1,000: a larger channel answers False rather than being scanned for ever).

        Raises:
            ApiError / ApiUnavailable: Slack refused or did not answer ("Slack conversations.members: ...").
        """
        cursor: str | None = None
        for _ in range(max_pages):
            kwargs: dict[str, Any] = {"channel": channel, "limit": 1000}
            if cursor:
                kwargs["cursor"] = cursor
            page = self._directory("conversations_members", **kwargs)
            if user in (page.get("members") or []):
                return True
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                break
        return False

    def usergroup_members(self, group: str) -> frozenset[str]:
        """The members of a user group (usergroups.users.list)."""
        return frozenset(self._directory("usergroups_users_list", usergroup=group).get("users") or [])

    def _directory(self, method: str, **kwargs: Any) -> Any:
        from slack_sdk.errors import SlackApiError, SlackClientError

        try:
            return getattr(self.client, method)(**kwargs)
        except SlackApiError as exc:
            error = exc.response.get("error", "") if exc.response is not None else ""
            raise ApiError(f"Slack {method.replace('_', '.')}: {error or 'error'}") from exc
        except (SlackClientError, OSError) as exc:
            raise ApiUnavailable(f"Slack {method.replace('_', '.')}: {type(exc).__name__}") from exc
