"""Replies to an on-demand diagnosis (pure): the full card with the job's state on top, or a clear problem."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.errors import ApiPermissionDenied, ApiUnavailable, JobNotFound
from bot.jobs.lookup import Found
from bot.jobs.reference import USAGE, JobReferenceError
from bot.models import Diagnosis
from bot.render.alert_context import AlertContext
from bot.render.diagnosis_card import diagnosis_card
from bot.render.mrkdwn import escape, inline_code, safe_text, truncate

_CHANNEL_ID = re.compile(r"[CG][A-Z0-9]{2,30}")
# a job or pipeline run in these states is still going: diagnosed from its logs so far
ACTIVE_STATES = frozenset(
    {
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_UPDATING",
        "JOB_STATE_PAUSED",
        "JOB_STATE_CANCELLING",
        "PIPELINE_STATE_QUEUED",
        "PIPELINE_STATE_PENDING",
        "PIPELINE_STATE_RUNNING",
        "PIPELINE_STATE_PAUSED",
        "PIPELINE_STATE_CANCELLING",
    }
)


@dataclass(frozen=True)
class JobDiagnosis:
    """What an on-demand diagnosis found: the job asked about, its diagnosis, the alert context it renders with,
    and what could not be fetched (bot.chat.diagnose builds it; this module renders it)."""

    job: Found  # the job asked about (for a pipeline: the pipeline; `context.job` is its failed task's job)
    diagnosis: Diagnosis
    context: AlertContext
    unavailable: list[str] = field(default_factory=list)

    @property
    def state(self) -> str:
        return self.job.info.state or "JOB_STATE_UNSPECIFIED"

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    def source_label(self) -> str:
        """A one-line description of what was diagnosed (the CLI's source line)."""
        label = self.job.ref.resource_name
        if self.job.info.display_name:
            label += f" ({self.job.info.display_name})"
        label += f", {self.state}"
        if self.active:
            label += ": still running, diagnosed from its logs so far"
        if self.unavailable:
            label += "; could not fetch " + "; ".join(self.unavailable)
        return label


def diagnosis_reply(result: JobDiagnosis, *, alert_channel: str | None = None) -> dict:
    """The full card (the one an alert has in its thread) for an on-demand diagnosis, the job's state on top; no
    buttons (actions belong to the alert message the store knows, which the reply points to when there is one)."""
    message = diagnosis_card(result.diagnosis, result.context)
    blocks = list(message["blocks"])
    note = _state_note(result)
    if note:
        blocks.insert(1, _section(note))
    if alert_channel:
        blocks.append(
            _context(f"The alert for this job is in {channel_link(alert_channel)}: Acknowledge and Rerun are there.")
        )
    return {"text": _reply_fallback(result, message["text"]), "blocks": blocks}


def channel_link(channel: str) -> str:
    """A channel as mrkdwn: a link for a channel id (C…/G…), else the escaped name ("#ml-alerts")."""
    if _CHANNEL_ID.fullmatch(channel):
        return f"<#{channel}>"
    return escape(channel if channel.startswith("#") else f"#{channel}")


def _state_note(result: JobDiagnosis) -> str | None:
    state = inline_code(result.state, 60)
    if result.active:
        running = f":hourglass_flowing_sand: *Still running* ({state}): "
        if result.diagnosis.failure_class == "unknown":
            return running + "nothing in its logs so far matches a known problem."
        return running + "this is what its logs show so far."
    if result.state == "JOB_STATE_SUCCEEDED":
        return f":white_check_mark: This job *succeeded* ({state}); what its logs show:"
    if result.state != "JOB_STATE_FAILED":
        return f"The job is {state}."
    return None


def _reply_fallback(result: JobDiagnosis, fallback: str) -> str:
    if result.state == "JOB_STATE_FAILED":
        return fallback
    name = safe_text(result.job.info.display_name or f"job {result.job.job_id}", 120)
    return truncate(f"{name} is {result.state}: {safe_text(result.diagnosis.title, 200)}", 400)


def problem_message(exc: Exception) -> dict:
    """A clear answer for a job that could not be diagnosed."""
    detail = escape(str(exc))
    if isinstance(exc, JobReferenceError):
        text = f":warning: {detail}\nSee `/diagnose help`."
    elif isinstance(exc, JobNotFound):
        text = f":mag: Unknown job: {detail}. Check the id, or give its project and region: {escape(USAGE)}."
    elif isinstance(exc, ApiPermissionDenied):
        text = f":lock: {detail}."
    elif isinstance(exc, ApiUnavailable):
        text = f":hourglass: Vertex AI did not answer ({detail}). Try again in a minute."
    else:
        text = f":x: Vertex AI refused the request: {detail}"
    return text_message(text)


def text_message(text: str) -> dict:
    plain = re.sub(r"<#([A-Z0-9]+)>", r"#\1", text)
    return {"text": truncate(plain, 3000), "blocks": [_section(text)]}


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, 3000)}}


def _context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": truncate(text, 3000)}]}
