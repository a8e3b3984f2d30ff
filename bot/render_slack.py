"""The Slack message for one failed job: pure Block Kit dicts, ready for chat.postMessage / chat.update.

`diagnosis_message(diagnosis, ctx)` never fails and never exceeds Slack's limits, whatever the input size.
Every string that comes from logs or the job is escaped (`bot.mrkdwn`); the only `<...>` sequences in the
output are ones built here: user mentions from ids matching `^[UW][A-Z0-9]+$`, `<!date^...>` timestamps and
links to percent-encoded console URLs.

Layout, top to bottom (optional blocks are left out when there is nothing to say):
    header       "<display name or job id>: <diagnosis title>"
    context      project · region · job · first failing replica · machine · failed at · attempts · labels
    section      class and confidence, symptom, cascade note
    context      what could not be fetched (ctx.unavailable)
    section      Evidence (a code block)
    section      Check first / What to do (numbered)
    section      Avoid
    section × n  one per command: title and a code block   (+ context "…and N more commands")
    context      Also possible: <class> NN% · ...
    context      links: job in console, logs (all replicas, first failing replica)
    divider
    context      Acknowledged by <@U…> at … / Rerun by <@U…> as job N
    actions      Acknowledge | Undo acknowledge, Rerun (primary, confirm; gone once a rerun was made)

When the message would be too long, evidence is cut first, then commands, then the Avoid list, then the
remediation list.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from bot import links
from bot.job_resource import parse_job_name
from bot.models import Command, Diagnosis, JobInfo
from bot.mrkdwn import (
    ELLIPSIS,
    MIN_CODE_BLOCK,
    code_block,
    escape,
    fit_list,
    inline_code,
    one_line,
    safe_text,
    truncate,
)
from bot.redact import redact

ACTION_ACKNOWLEDGE = "diagnosis_acknowledge"
ACTION_UNACKNOWLEDGE = "diagnosis_unacknowledge"
ACTION_RERUN = "diagnosis_rerun"

# Slack's limits (platform-facts 6.5) and our own, stricter, message budget.
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_FALLBACK_TEXT = 3000
#: Sum of every "text" string in the blocks. Slack rejects messages at an undocumented ~12-13k aggregate
#: (msg_blocks_too_long; one report of a rejection at 11.3k counted text only), so stay well below.
MAX_MESSAGE_TEXT = 10_000
MAX_COMMANDS_SHOWN = 10

_USER_ID = re.compile(r"[UW][A-Z0-9]{1,30}")
_UNKNOWN_CLASS = "unknown"
_FACT_CAP = 120
_LINK_URL_CAP = 600
_FALLBACK_CAP = 400
_MORE_COMMANDS_RESERVE = 100
_COMMAND_CAP = 1500


class AlertContext(BaseModel):
    """What the message shows besides the diagnosis: where the job ran and what people did about it."""

    model_config = ConfigDict(frozen=True)

    job: JobInfo = Field(default_factory=JobInfo)
    project: str | None = None
    region: str | None = None
    job_id: str
    display_name: str | None = None
    first_failing_replica: str | None = None
    failed_at: datetime | None = None
    attempt: int | None = Field(default=None, ge=0)  # failed attempts / restarts seen
    unavailable: list[str] = Field(default_factory=list)  # "job details: the bot lacks aiplatform..."
    acknowledged_by: str | None = None  # Slack user id
    acknowledged_at: datetime | None = None
    rerun_by: str | None = None
    rerun_job_id: str | None = None
    job_key: str = Field(min_length=1, max_length=MAX_BUTTON_VALUE)  # the only thing in button values

    @property
    def rerun_made(self) -> bool:
        return self.rerun_by is not None or self.rerun_job_id is not None


def diagnosis_message(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    """The whole message: `{"text": fallback, "blocks": [...]}`, within every Slack limit."""
    top = [_header(diagnosis, ctx), _facts(diagnosis, ctx), _summary(diagnosis, ctx), _unavailable(ctx)]
    bottom = [_alternatives(diagnosis), _links(ctx), _divider(), _status(ctx), _actions(ctx)]
    fixed = [b for b in top + bottom if b is not None]
    budget = MAX_MESSAGE_TEXT - sum(_text_length(b) for b in fixed)

    evidence = _evidence_lines(diagnosis, ctx)
    parts = [  # in cutting order: the first is shortened first
        _Part.of(lambda n: _evidence(evidence, n), floor=600),
        _Part.of(lambda n: _commands(diagnosis.commands, n), floor=500),
        _Part.of(lambda n: _list_section("*Avoid*", diagnosis.avoid, n, numbered=False), floor=250),
        _Part.of(lambda n: _remediation(diagnosis, n), floor=600),
    ]
    sizes = _allocate([p.size for p in parts], [p.floor for p in parts], budget)
    evidence_blocks, command_blocks, avoid_blocks, remediation_blocks = (
        p.render(size) for p, size in zip(parts, sizes, strict=True)
    )
    blocks = [b for b in top if b is not None]
    blocks += evidence_blocks + remediation_blocks + avoid_blocks + command_blocks
    blocks += [b for b in bottom if b is not None]
    return {"text": _fallback(diagnosis, ctx), "blocks": blocks}


def message_digest(message: dict) -> str:
    """A stable sha256 of the message JSON: equal digests mean a chat.update would change nothing.

    Never fails on odd text: a lone surrogate is hashed as itself (surrogatepass), not raised as an error.
    """
    encoded = json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()


def text_length(blocks: Sequence[dict]) -> int:
    """The number of characters in every "text" string of `blocks` (what MAX_MESSAGE_TEXT bounds)."""
    return sum(_text_length(b) for b in blocks)


# ---- budget -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Part:
    """A cuttable run of blocks: `build(n)` renders it in at most n characters of text."""

    build: Callable[[int], list[dict]]
    floor: int  # cut other parts before cutting this one below here
    full: list[dict]
    size: int

    @classmethod
    def of(cls, build: Callable[[int], list[dict]], *, floor: int) -> _Part:
        full = build(MAX_MESSAGE_TEXT)
        return cls(build=build, floor=floor, full=full, size=text_length(full))

    def render(self, size: int) -> list[dict]:
        if size >= self.size:
            return self.full
        return self.build(size) if size > 0 else []


def _allocate(desired: list[int], floors: list[int], budget: int) -> list[int]:
    """Shrink parts, first to last, to their floor and then to nothing, until they fit in `budget`."""
    sizes = list(desired)
    for limits in ([min(f, d) for f, d in zip(floors, desired, strict=True)], [0] * len(desired)):
        for i, lowest in enumerate(limits):
            excess = sum(sizes) - max(budget, 0)
            if excess <= 0:
                return sizes
            sizes[i] -= min(excess, sizes[i] - lowest)
    return sizes


def _text_length(node: object) -> int:
    if isinstance(node, dict):
        return sum(len(v) if k == "text" and isinstance(v, str) else _text_length(v) for k, v in node.items())
    if isinstance(node, list):
        return sum(_text_length(v) for v in node)
    return 0


# ---- fixed blocks ---------------------------------------------------------------------------------------


def _header(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    title = truncate(escape(one_line(diagnosis.title[:MAX_HEADER_TEXT])), 100)
    name = escape(one_line((_display_name(ctx) or _job_id(ctx) or "Vertex AI job")[: MAX_HEADER_TEXT * 2]))
    if title:
        text = truncate(name, MAX_HEADER_TEXT - len(title) - 2) + ": " + title
    else:
        text = truncate(name, MAX_HEADER_TEXT)
    return {"type": "header", "text": _plain(text or "Vertex AI job failed")}


def _facts(diagnosis: Diagnosis, ctx: AlertContext) -> dict | None:
    job = ctx.job
    facts: list[str] = []
    for label, value in (("Project", _project(ctx)), ("Region", _region(ctx)), ("Job", _job_id(ctx))):
        if value:
            facts.append(f"{label} {inline_code(value, _FACT_CAP)}")
    replica = _first_replica(diagnosis, ctx)
    if replica:
        facts.append(f"First failure {inline_code(replica, _FACT_CAP)}")
    machine = _machine(job)
    if machine:
        facts.append(machine)
    failed_at = ctx.failed_at or job.end_time
    if failed_at is not None:
        facts.append(f"Failed {_slack_date(failed_at)}")
    if ctx.attempt is not None:
        facts.append(f"{_count(ctx.attempt)} failed attempt{'' if ctx.attempt == 1 else 's'} seen")
    if job.labels:
        shown = [inline_code(f"{k}={v}", 60) for k, v in sorted(job.labels.items())[:5]]
        more = f" +{len(job.labels) - 5}" if len(job.labels) > 5 else ""
        facts.append("Labels " + " ".join(shown) + more)
    if not facts:
        return None
    return {"type": "context", "elements": [_mrkdwn(f) for f in facts[:MAX_CONTEXT_ELEMENTS]]}


def _machine(job: JobInfo) -> str | None:
    pool = job.primary_pool
    if pool is None:
        return None
    parts: list[str] = []
    if pool.machine_type:
        parts.append(inline_code(pool.machine_type, 60))
    if pool.accelerator_type and pool.accelerator_count:
        parts.append(f"{_count(pool.accelerator_count)}× {inline_code(pool.accelerator_type, 60)}")
    if job.replica_total > 1:
        parts.append(f"{_count(job.replica_total)} replicas")
    if job.spot:
        parts.append("Spot")
    return "Machine " + " · ".join(parts) if parts else None


def _summary(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    if diagnosis.failure_class == _UNKNOWN_CLASS:
        lines = ["*Unclassified failure*: no known failure pattern matched."]
    else:
        lines = [f"*{_percent(diagnosis.confidence)} confidence* · {inline_code(diagnosis.failure_class, 80)}"]
    if diagnosis.symptom:
        lines.append(safe_text(diagnosis.symptom, 700))
    if diagnosis.finding:
        lines.append(":chart_with_downwards_trend: *The curve:* " + safe_text(diagnosis.finding, 300))
    if diagnosis.cascade:
        lines.append(_cascade_note(diagnosis.cascade, _first_replica(diagnosis, ctx)))
    return _section("\n".join(lines))


def _cascade_note(cascade: list[str], first: str | None) -> str:
    shown = ", ".join(inline_code(entry, 120) for entry in cascade[:4])
    if len(cascade) > 4:
        shown += f" and {len(cascade) - 4} more"
    cause = f" of {inline_code(first, 60)}" if first else ""
    return f":link: *Cascade:* {shown} failed as a consequence{cause}."


def _unavailable(ctx: AlertContext) -> dict | None:
    if not ctx.unavailable:
        return None
    items = [safe_text(item, 150) for item in ctx.unavailable[:4]]
    more = f"; and {len(ctx.unavailable) - 4} more" if len(ctx.unavailable) > 4 else ""
    text = ":warning: Could not fetch, so this diagnosis may be incomplete: " + "; ".join(items) + more
    return {"type": "context", "elements": [_mrkdwn(text)]}


def _alternatives(diagnosis: Diagnosis) -> dict | None:
    if not diagnosis.alternatives:
        return None
    shown = [f"{inline_code(alt.failure_class, 50)} {_percent(alt.confidence)}" for alt in diagnosis.alternatives[:5]]
    return {"type": "context", "elements": [_mrkdwn("Also possible: " + " · ".join(shown))]}


def _links(ctx: AlertContext) -> dict | None:
    project, job_id, replica = _project(ctx), _job_id(ctx), ctx.first_failing_replica
    if not job_id:
        return None
    start, end = _log_window(ctx)
    candidates = [
        (links.job_console_url(project, _region(ctx), job_id), "Job in console"),
        (links.logs_query_url(project, job_id, start=start, end=end), "Logs (all replicas)"),
    ]
    if replica:
        label = "Logs for " + safe_text(replica, 60)
        candidates.append((links.logs_query_url(project, job_id, replica, start=start, end=end), label))
    shown = [f"<{url}|{label}>" for url, label in candidates if len(url) <= _LINK_URL_CAP]
    if not shown:
        return None
    return {"type": "context", "elements": [_mrkdwn(" · ".join(shown))]}


def _log_window(ctx: AlertContext) -> tuple[datetime | None, datetime | None]:
    end = ctx.failed_at or ctx.job.end_time
    start = ctx.job.start_time or ctx.job.create_time
    if end is None:
        return None, None
    try:
        end = _utc(end) + timedelta(minutes=10)
        start = _utc(start) - timedelta(minutes=10) if start is not None else end - timedelta(days=1)
    except OverflowError:  # a nonsense time near datetime.min/max: link without a range
        return None, None
    return start, end


def _status(ctx: AlertContext) -> dict | None:
    lines: list[str] = []
    if ctx.acknowledged_by is not None:
        when = f" at {_slack_date(ctx.acknowledged_at)}" if ctx.acknowledged_at is not None else ""
        lines.append(f":white_check_mark: Acknowledged by {_mention(ctx.acknowledged_by)}{when}")
    if ctx.rerun_made:
        who = f" by {_mention(ctx.rerun_by)}" if ctx.rerun_by is not None else ""
        if ctx.rerun_job_id:
            project, region, new_id = _project(ctx), _region(ctx), ctx.rerun_job_id
            if new_id.startswith("projects/"):  # the created job's resource name: link it in its own region
                try:
                    project, region, new_id = parse_job_name(new_id)
                except ValueError:
                    pass
            url = links.job_console_url(project, region, new_id)
            job = inline_code(new_id, 80)
            target = f"<{url}|{job.strip('`')}>" if len(url) <= _LINK_URL_CAP else job
            lines.append(f":repeat: Rerun{who} as job {target}")
        else:
            lines.append(f":repeat: Rerun requested{who}")
    if not lines:
        return None
    return {"type": "context", "elements": [_mrkdwn(line) for line in lines]}


def _actions(ctx: AlertContext) -> dict:
    if ctx.acknowledged_by is None:
        buttons = [_button("Acknowledge", ACTION_ACKNOWLEDGE, ctx.job_key)]
    else:
        buttons = [_button("Undo acknowledge", ACTION_UNACKNOWLEDGE, ctx.job_key)]
    if not ctx.rerun_made:
        rerun = _button("Rerun", ACTION_RERUN, ctx.job_key)
        rerun["style"] = "primary"
        rerun["confirm"] = {
            "title": _plain("Rerun this job?"),
            "text": _plain("This creates a new custom job with the same spec. It will use quota and cost money."),
            "confirm": _plain("Rerun"),
            "deny": _plain("Cancel"),
        }
        buttons.append(rerun)
    return {"type": "actions", "elements": buttons}


# ---- cuttable blocks ----------------------------------------------------------------------------------


def _evidence_lines(diagnosis: Diagnosis, ctx: AlertContext) -> list[str]:
    if diagnosis.evidence:
        return diagnosis.evidence  # redacted by the classifier
    message = ctx.job.error_message
    # What is known when nothing matched: the CustomJob's error, redacted (it may quote a token or a password).
    return redact(message[:20_000]).splitlines()[:200] if message else []


def _evidence(lines: list[str], budget: int) -> list[dict]:
    heading = "*Evidence*\n"
    code = _fitted_code(lines, min(budget, MAX_SECTION_TEXT) - len(heading), MAX_SECTION_TEXT - len(heading))
    return [_section(heading + code)] if code else []


def _fitted_code(lines: list[str], room: int, cap: int) -> str:
    """The code block at its natural size (up to `cap`) if that fits in `room`, else cut to `room`."""
    if not lines:
        return ""
    natural = code_block(lines, cap)
    if len(natural) <= room:
        return natural
    return code_block(lines, room) if room >= MIN_CODE_BLOCK else ""


def _remediation(diagnosis: Diagnosis, budget: int) -> list[dict]:
    checks_budget = min(budget // 3, 800) if diagnosis.remediation else budget  # the fix matters more
    checks = _list_section("*Check first*", diagnosis.first_checks, checks_budget, numbered=False)
    left = budget - text_length(checks) - (1 if checks else 0)
    fixes = _list_section("*What to do*", diagnosis.remediation, left, numbered=True)
    if not checks or not fixes:
        return checks + fixes
    combined = checks[0]["text"]["text"] + "\n" + fixes[0]["text"]["text"]
    if len(combined) <= MAX_SECTION_TEXT:
        return [_section(combined)]
    return checks + fixes


def _list_section(heading: str, items: Sequence[str], budget: int, *, numbered: bool) -> list[dict]:
    text = fit_list(heading, items, min(budget, MAX_SECTION_TEXT), numbered=numbered)
    return [_section(text)] if text else []


def _commands(commands: Sequence[Command], budget: int) -> list[dict]:
    """One section per command (title and code block), then a note counting the commands left out."""
    candidates = commands[:MAX_COMMANDS_SHOWN]
    natural = [_command_text(c, _COMMAND_CAP) for c in candidates]
    if len(commands) == len(candidates) and sum(len(t) for t in natural) <= budget:
        return [_section(t) for t in natural]
    blocks: list[dict] = []
    used = 0
    for command, text in zip(candidates, natural, strict=True):
        room = min(budget - used - _MORE_COMMANDS_RESERVE, _COMMAND_CAP)
        if len(text) > room:
            text = _command_text(command, room)
            if not text:
                break
        blocks.append(_section(text))
        used += len(text)
    hidden = len(commands) - len(blocks)
    note = f"{ELLIPSIS}and {hidden} more command{'' if hidden == 1 else 's'}: run `trainmedic diagnose`"
    if hidden and used + len(note) <= budget:
        blocks.append({"type": "context", "elements": [_mrkdwn(note)]})
    return blocks


def _command_text(command: Command, limit: int) -> str:
    """The command's title and code block in at most `limit` characters, or "" if it cannot fit."""
    title = f"*{safe_text(command.title, 200) or 'Command'}*\n"
    lines = command.command.splitlines() or [""]
    code = _fitted_code(lines, limit - len(title), _COMMAND_CAP - len(title))
    return title + code if code else ""


# ---- small pieces -------------------------------------------------------------------------------------


def _fallback(diagnosis: Diagnosis, ctx: AlertContext) -> str:
    name = safe_text(_display_name(ctx) or _job_id(ctx) or "Vertex AI job", 120)
    title = safe_text(diagnosis.title, 200) or "failed"
    if diagnosis.failure_class == _UNKNOWN_CLASS:
        detail = "unclassified"
    else:
        detail = f"{safe_text(diagnosis.failure_class, 80)}, {_percent(diagnosis.confidence)}"
    return truncate(f"Training job failed: {name}: {title} ({detail})", _FALLBACK_CAP)


def _display_name(ctx: AlertContext) -> str | None:
    return ctx.display_name or ctx.job.display_name


def _job_id(ctx: AlertContext) -> str | None:
    return ctx.job_id or ctx.job.job_id


def _project(ctx: AlertContext) -> str | None:
    return ctx.project or ctx.job.project


def _region(ctx: AlertContext) -> str | None:
    return ctx.region or ctx.job.region


def _first_replica(diagnosis: Diagnosis, ctx: AlertContext) -> str | None:
    return ctx.first_failing_replica or diagnosis.first_failing_replica


def _mention(user_id: str | None) -> str:
    if user_id is not None and _USER_ID.fullmatch(user_id):
        return f"<@{user_id}>"
    return inline_code(user_id or "someone", 40)


def _count(value: int) -> str:
    return str(value) if 0 <= value < 100_000 else "many"


def _percent(value: float) -> str:
    if not math.isfinite(value):
        return "?%"
    return f"{round(min(max(value, 0.0), 1.0) * 100)}%"


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _slack_date(moment: datetime) -> str:
    """A `<!date>` token: shown in each reader's time zone, with a UTC fallback."""
    moment = _utc(moment)
    fallback = moment.strftime("%Y-%m-%d %H:%M UTC")
    seconds = int(moment.timestamp())
    if seconds < 0:  # not a real job time; Slack's token takes Unix seconds
        return fallback
    return f"<!date^{seconds}^{{date_short_pretty}} {{time}}|{fallback}>"


def _plain(text: str) -> dict:
    return {"type": "plain_text", "text": text, "emoji": True}


def _mrkdwn(text: str) -> dict:
    return {"type": "mrkdwn", "text": text}


def _section(text: str) -> dict:
    return {"type": "section", "text": _mrkdwn(truncate(text, MAX_SECTION_TEXT))}


def _divider() -> dict:
    return {"type": "divider"}


def _button(text: str, action_id: str, value: str) -> dict:
    return {"type": "button", "text": _plain(text[:MAX_BUTTON_TEXT]), "action_id": action_id, "value": value}
