"""Fill knowledge-base command templates with the job's own values; unknown values stay explicit placeholders.

The values come from bot.diagnosis.commands.details. Every value goes through `safe_value` before it enters a
command: a log cannot inject shell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from bot.diagnosis.knowledge_schema import CommandTemplate, FailureClass
from bot.models import Command

PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
# Values copied into a shell command come from logs: only plain identifier characters are allowed through.
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/+=-]{0,200}$")
# A title is not shell, but a value shown in it is still plain: identifiers and ", " lists (us-east4, us-west1).
_SAFE_TITLE_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/+=, -]{0,200}$")
_BASIC_ROLE = re.compile(r"roles/(?:owner|editor|viewer)\b")
_PLACEHOLDER_NAMES = {
    "project": "PROJECT_ID",
    "resource_project": "PROJECT_ID",
    "region": "REGION",
    "job_region": "REGION",
    "job_id": "JOB_ID",
    "service_account": "SERVICE_ACCOUNT_EMAIL",
    "member": "serviceAccount:SERVICE_ACCOUNT_EMAIL",  # the grantee as --member names it: the job's identity
}


def placeholder(name: str) -> str:
    return _PLACEHOLDER_NAMES.get(name, name.upper())


def unfilled_pattern(classes: Iterable[FailureClass]) -> re.Pattern[str]:
    """A placeholder left in a filled command: a template's {name} in its upper-case form (PROJECT_ID, BUCKET,
    QUOTA_ID...), for every name any of the classes' (or their variants') commands use, as a whole word."""
    names = {
        placeholder(name)
        for failure_class in classes
        for holder in (failure_class, *failure_class.variants.values())
        for template in holder.commands or ()
        for name in template.placeholders
    }
    if not names:
        return re.compile(r"(?!)")
    return re.compile(r"(?<![\w.-])(?:" + "|".join(sorted(names, key=len, reverse=True)) + r")(?![\w.-])")


def safe_value(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().strip("'\"`")
    return value if _SAFE_VALUE.match(value) else None


def fill(template: str, details: Mapping[str, str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        return safe_value(details.get(name)) or placeholder(name)

    return PLACEHOLDER.sub(substitute, template)


def _title_value(value: str | None) -> str | None:
    value = (value or "").strip()
    return value if _SAFE_TITLE_VALUE.match(value) else None


def _applies(template: CommandTemplate, details: Mapping[str, str]) -> bool:
    for name in template.requires:
        known = safe_value(details.get(name)) if name in template.placeholders else _title_value(details.get(name))
        if known is None:
            return False
    if any(details.get(name) for name in template.absent):
        return False
    if any(details.get(name) not in values for name, values in template.when.items()):
        return False
    return not any(details.get(name) in values for name, values in template.unless.items())


def fill_commands(templates: Iterable[CommandTemplate], details: Mapping[str, str]) -> list[Command]:
    """The templates that apply (required details known, `absent`/`when`/`unless` met), filled in; never one
    that grants a basic role (owner, editor, viewer)."""
    commands: list[Command] = []
    for template in templates:
        if not _applies(template, details):
            continue
        command = fill(template.template, details)
        if _BASIC_ROLE.search(command):
            continue
        title = PLACEHOLDER.sub(
            lambda m: _title_value(details.get(m.group(1))) or placeholder(m.group(1)), template.title
        )
        commands.append(Command(title=title, command=command))
    return commands
