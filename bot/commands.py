"""Fill knowledge-base command templates with the job's own values; unknown values stay explicit placeholders."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from bot.knowledge import CommandTemplate
from bot.models import Command

_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
# Values copied into a shell command come from logs: only plain identifier characters are allowed through.
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/+=-]{0,200}$")
_PLACEHOLDER_NAMES = {
    "project": "PROJECT_ID",
    "resource_project": "PROJECT_ID",
    "region": "REGION",
    "job_id": "JOB_ID",
    "service_account": "SERVICE_ACCOUNT_EMAIL",
}


def placeholder(name: str) -> str:
    return _PLACEHOLDER_NAMES.get(name, name.upper())


def safe_value(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().strip("'\"`")
    return value if _SAFE_VALUE.match(value) else None


def fill(template: str, details: Mapping[str, str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        return safe_value(details.get(name)) or placeholder(name)

    return _PLACEHOLDER.sub(substitute, template)


def fill_commands(templates: Iterable[CommandTemplate], details: Mapping[str, str]) -> list[Command]:
    """Commands whose required details are known, filled in; the rest are left out."""
    commands: list[Command] = []
    for template in templates:
        if any(safe_value(details.get(name)) is None for name in template.requires):
            continue
        commands.append(Command(title=template.title, command=fill(template.template, details)))
    return commands
