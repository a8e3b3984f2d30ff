"""The blocks both of an alert's messages use (bot.render.channel_message, bot.render.diagnosis_card): the
header, the summary, the job's facts, what could not be fetched, the evidence, the commands and the fallback text.

A Cloud Monitoring incident about a job that has not failed (ctx.incident) is headed and summed up as an open
(or closed) incident on a running job, with its policy and a link to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.alerting.incidents import Incident
from bot.models import Command, Diagnosis, JobInfo
from bot.render.alert_context import UNKNOWN_CLASS, AlertContext, display_name_of, first_replica_of, job_id_of
from bot.render.block_kit import (
    LINK_URL_CAP,
    MAX_HEADER_TEXT,
    MAX_SECTION_TEXT,
    count_text,
    mrkdwn_text,
    percent,
    plain_text,
    section,
    slack_date,
)
from bot.render.cascade import cascade_line
from bot.render.mrkdwn import MIN_CODE_BLOCK, code_block, escape, fit_list, inline_code, one_line, safe_text, truncate
from bot.render.redact import redact

MAX_COMMANDS_SHOWN = 10


COMMAND_CAP = 1500


CHANNEL_FACT_CAP = 48


_FALLBACK_CAP = 400


def header_block(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    if ctx.incident is not None:
        return _incident_header(ctx.incident, ctx)
    title = truncate(escape(one_line(diagnosis.title[:MAX_HEADER_TEXT])), 100)
    name = escape(one_line((display_name_of(ctx) or job_id_of(ctx) or "Vertex AI job")[: MAX_HEADER_TEXT * 2]))
    if ctx.pipeline is not None:
        tasks = ", ".join(task.name for task in ctx.pipeline.failed_tasks) or "a task"
        name = escape(one_line(f"Pipeline {display_name_of(ctx) or ctx.pipeline.ref.id} ({tasks})"[:MAX_HEADER_TEXT]))
    if ctx.rerun_outcome:  # the outcome of the rerun first: it is the news now
        name = escape(one_line(ctx.rerun_outcome[:60])) + " · " + name
    if title:
        text = truncate(name, MAX_HEADER_TEXT - len(title) - 2) + ": " + title
    else:
        text = truncate(name, MAX_HEADER_TEXT)
    return {"type": "header", "text": plain_text(text or "Vertex AI job failed")}


def _incident_header(incident: Incident, ctx: AlertContext) -> dict:
    what = _incident_headline(incident, ctx)
    policy = escape(one_line((incident.policy_name or "")[:MAX_HEADER_TEXT]))
    text = truncate(what, MAX_HEADER_TEXT - len(policy) - 2) + ": " + policy if policy else truncate(what, 150)
    return {"type": "header", "text": plain_text(truncate(text, MAX_HEADER_TEXT))}


def _incident_headline(incident: Incident, ctx: AlertContext) -> str:
    """What the alert is about, escaped: an open incident on running job bert-large, or a closed one."""
    name = escape(one_line((display_name_of(ctx) or ctx.job.job_id or "")[:MAX_HEADER_TEXT]))
    running = "running job" if ctx.job.state == "JOB_STATE_RUNNING" else "job"
    on = f" on {running} {truncate(name, 80)}" if name and ctx.job.job_id else ""
    if incident.state == "closed":
        return f":white_check_mark: Incident closed{on}"
    return f":rotating_light: Open incident{on}"


# an answer the text model gave where no rule had evidence enough (bot/diagnosis/words/word_evidence.py)
WORDS_NOTE = "_No rule matched: the words of the lines below point at this class. Likely, not proven._"
# an answer the shape model gave from a training curve no rule judged (bot/diagnosis/shape/)
SHAPE_NOTE = "_No rule judged this curve: its shape is like that of runs with this failure. Likely, not proven._"

def summary_block(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    if ctx.incident is not None:
        return _incident_summary(ctx.incident, diagnosis, ctx)
    if diagnosis.failure_class == UNKNOWN_CLASS:
        lines = ["*Unclassified failure*: no known failure pattern matched."]
    else:
        lines = [f"*{percent(diagnosis.confidence)} confidence* · {inline_code(diagnosis.failure_class, 80)}"]
    if diagnosis.basis != "rules" and diagnosis.failure_class != UNKNOWN_CLASS:
        lines.append(WORDS_NOTE if diagnosis.basis == "words" else SHAPE_NOTE)
    if diagnosis.symptom:
        lines.append(safe_text(diagnosis.symptom, 700))
    if diagnosis.finding:
        lines.append(":chart_with_downwards_trend: *The curve:* " + safe_text(diagnosis.finding, 300))
    if diagnosis.cascade:
        lines.append(_cascade_note(diagnosis.cascade, first_replica_of(diagnosis, ctx)))
    return section("\n".join(lines))


def _incident_summary(incident: Incident, diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    if ctx.job.state == "JOB_STATE_RUNNING":
        subject = "on a running job"
    elif ctx.job.state:
        subject = f"on a job in state {inline_code(ctx.job.state.removeprefix('JOB_STATE_').lower(), 40)}"
    else:
        subject = "on a training job" if ctx.job.job_id else "(no training job named)"
    if incident.state == "closed":
        ended = f" {slack_date(incident.ended_at)}" if incident.ended_at is not None else ""
        lines = [f":white_check_mark: *Cloud Monitoring incident closed*{ended}, {subject} (it did not fail)."]
    else:
        lines = [f":rotating_light: *Open Cloud Monitoring incident* {subject}: the job has not failed."]
    facts = []
    if incident.policy_name:
        facts.append(f"Policy *{safe_text(incident.policy_name, 200)}*")
    if incident.condition_name:
        facts.append(f"condition {inline_code(incident.condition_name, 200)}")
    if incident.started_at is not None:
        facts.append(f"opened {slack_date(incident.started_at)}")
    if facts:
        lines.append(" · ".join(facts))
    if incident.summary:
        lines.append(safe_text(incident.summary, 500))
    if incident.url and len(incident.url) <= LINK_URL_CAP:
        lines.append(f"<{incident.url}|View the incident in Cloud Monitoring>")
    if diagnosis.failure_class == UNKNOWN_CLASS:
        lines.append("*What its logs show so far*: no known pattern.")
    else:
        found = f"{inline_code(diagnosis.failure_class, 80)} ({percent(diagnosis.confidence)} confidence)"
        lines.append(f"*What its logs show so far*: {found}")
        if diagnosis.symptom:
            lines.append(safe_text(diagnosis.symptom, 700))
    if diagnosis.finding:
        lines.append(":chart_with_downwards_trend: *The curve:* " + safe_text(diagnosis.finding, 300))
    return section("\n".join(lines))


def _cascade_note(cascade: list[str], first: str | None) -> str:
    return cascade_line(cascade, first)


def with_cascade(summary: dict, diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    if not diagnosis.cascade:
        return summary
    first = first_replica_of(diagnosis, ctx)
    line = cascade_line(diagnosis.cascade, first, diagnosis.failure_class, diagnosis.evidence)
    return section(summary["text"]["text"] + "\n" + line)


def machine_fact(job: JobInfo) -> str | None:
    pool = job.primary_pool
    if pool is None:
        return None
    parts: list[str] = []
    if pool.machine_type:
        parts.append(inline_code(pool.machine_type, 60))
    if pool.accelerator_type and pool.accelerator_count:
        parts.append(f"{count_text(pool.accelerator_count)}× {inline_code(pool.accelerator_type, 60)}")
    if job.replica_total > 1:
        parts.append(f"{count_text(job.replica_total)} replicas")
    if job.spot:
        parts.append("Spot")
    return "Machine " + " · ".join(parts) if parts else None


def ledger_fact(diagnosis: Diagnosis) -> list[str]:
    """The run ledger as one fact: run time · attempts · accelerator-hours · last checkpoint (alerting.ledger)."""
    from bot.alerting.ledger import ledger_line

    line = ledger_line(diagnosis.ledger)
    return [":hourglass: " + escape(one_line(line))[:300]] if line else []


def pipeline_facts(ctx: AlertContext) -> list[str]:
    """A pipeline run's alert names the run and its failed task(s); the job facts that follow are the task's."""
    if ctx.pipeline is None:
        return []
    tasks = ", ".join(inline_code(task.name, CHANNEL_FACT_CAP) for task in ctx.pipeline.failed_tasks[:3])
    run = f"Pipeline run {inline_code(ctx.pipeline.ref.id, CHANNEL_FACT_CAP)}"
    return [run + (f" · failed task {tasks}" if tasks else "")]


def unavailable_block(ctx: AlertContext) -> dict | None:
    if not ctx.unavailable:
        return None
    items = [safe_text(item, 150) for item in ctx.unavailable[:4]]
    more = f"; and {len(ctx.unavailable) - 4} more" if len(ctx.unavailable) > 4 else ""
    text = ":warning: Could not fetch, so this diagnosis may be incomplete: " + "; ".join(items) + more
    return {"type": "context", "elements": [mrkdwn_text(text)]}


def fallback_text(diagnosis: Diagnosis, ctx: AlertContext) -> str:
    name = safe_text(display_name_of(ctx) or job_id_of(ctx) or "Vertex AI job", 120)
    if ctx.incident is not None:  # not a failure: the notification says what it is
        state = "closed" if ctx.incident.state == "closed" else "open"
        running = " running" if ctx.job.state == "JOB_STATE_RUNNING" else ""
        policy = safe_text(ctx.incident.policy_name or "Cloud Monitoring incident", 200)
        return truncate(f"Incident {state} on{running} job {name}: {policy}", _FALLBACK_CAP)
    title = safe_text(diagnosis.title, 200) or "failed"
    if diagnosis.failure_class == UNKNOWN_CLASS:
        detail = "unclassified"
    else:
        detail = f"{safe_text(diagnosis.failure_class, 80)}, {percent(diagnosis.confidence)}"
    return truncate(f"Training job failed: {name}: {title} ({detail})", _FALLBACK_CAP)


def evidence_of(diagnosis: Diagnosis, ctx: AlertContext) -> list[str]:
    if diagnosis.evidence:
        return diagnosis.evidence  # redacted by the classifier
    message = ctx.job.error_message
    # What is known when nothing matched: the CustomJob's error, redacted (it may quote a token or a password).
    return redact(message[:20_000]).splitlines()[:200] if message else []


def evidence_section(lines: list[str], budget: int) -> list[dict]:
    heading = "*Evidence*\n"
    code = _fitted_code(lines, min(budget, MAX_SECTION_TEXT) - len(heading), MAX_SECTION_TEXT - len(heading))
    return [section(heading + code)] if code else []


def _fitted_code(lines: list[str], room: int, cap: int) -> str:
    """The code block at its natural size (up to `cap`) if that fits in `room`, else cut to `room`."""
    if not lines:
        return ""
    natural = code_block(lines, cap)
    if len(natural) <= room:
        return natural
    return code_block(lines, room) if room >= MIN_CODE_BLOCK else ""


def command_text(command: Command, limit: int) -> str:
    """The command's title and code block in at most `limit` characters, or "" if it cannot fit."""
    title = f"*{safe_text(command.title, 200) or 'Command'}*\n"
    lines = command.command.splitlines() or [""]
    code = _fitted_code(lines, limit - len(title), COMMAND_CAP - len(title))
    return title + code if code else ""


def list_section(heading: str, items: Sequence[str], budget: int, *, numbered: bool) -> list[dict]:
    text = fit_list(heading, items, min(budget, MAX_SECTION_TEXT), numbered=numbered)
    return [section(text)] if text else []
