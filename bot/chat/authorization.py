"""Who may rerun a job: the user ids and user groups (S...) its route's `rerun_allowed` names in the current config.
A group's members are read from Slack and cached briefly (the modal's submit follows the button's check closely)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from bot.errors import ActionRefused, ApiError
from bot.slack.directory import SlackDirectory


class RerunAuthorization:
    def __init__(
        self, directory: SlackDirectory, *, clock: Callable[[], float] = time.time, group_cache_seconds: float = 30.0
    ) -> None:
        self.directory, self.clock, self.group_cache_seconds = directory, clock, group_cache_seconds
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}  # user group -> (fetched at, members)
        self._lock = threading.Lock()

    def require_rerun(self, allowed: tuple[str, ...], user: str) -> None:
        """Raises ActionRefused unless `user` is in `allowed`, directly or through a user group."""
        if not allowed:
            raise ActionRefused("Rerun is not enabled for this job: its route in the config sets no rerun_allowed")
        if user in allowed:
            return
        for group in (entry for entry in allowed if entry.startswith("S")):
            if user in self.group_members(group):
                return
        raise ActionRefused(f"only {who_may(allowed)} may rerun this job")

    def group_members(self, group: str) -> frozenset[str]:
        now = self.clock()
        with self._lock:
            cached = self._groups.get(group)
        if cached is not None and now - cached[0] < self.group_cache_seconds:
            return cached[1]
        try:
            members = self.directory.usergroup_members(group)
        except ApiError as exc:
            raise ActionRefused(f"could not check the user group <!subteam^{group}> ({exc})") from exc
        with self._lock:
            self._groups[group] = (now, members)
        return members


def who_may(allowed: tuple[str, ...]) -> str:
    """The people and groups who may, as Slack mentions ("<@U1>, <!subteam^S1> or <@U2>")."""
    names = [f"<!subteam^{entry}>" if entry.startswith("S") else f"<@{entry}>" for entry in allowed[:10]]
    more = f" and {len(allowed) - 10} more" if len(allowed) > 10 else ""
    if len(names) == 1:
        return names[0] + more
    return ", ".join(names[:-1]) + f" or {names[-1]}" + more
