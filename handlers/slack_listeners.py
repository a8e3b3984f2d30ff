"""Slack listeners (slash command, mentions, buttons, modals) registered on the Bolt app."""

from __future__ import annotations

from typing import Any


def register_listeners(bolt: Any, services: Any) -> None:
    """Register every Slack listener on `bolt` (the chat-actions issue fills this in)."""
