"""The full card of one failed job: posted as the first reply in the alert's thread, and the answer to
`/diagnose` (pure Block Kit dicts; no buttons: they are on the channel message, bot.render.channel_message).

    header, context (all facts), section (class and confidence, symptom, curve, cascade), context (unavailable),
    section Evidence (all of it), section Check first / What to do (all), section Avoid (all),
    section × n commands, context "Also possible", context links (job in console, logs)

It stays within MAX_MESSAGE_TEXT and every Slack limit, whatever the input size: when the card would be too
long, evidence is cut first, then commands, then the Avoid list, then the remediation list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.models import Alternative, Command, Diagnosis
from bot.render import links
from bot.render.alert_blocks import (
    COMMAND_CAP,
    MAX_COMMANDS_SHOWN,
    command_text,
    evidence_of,
    evidence_section,
    fallback_text,
    header_block,
    ledger_fact,
    list_section,
    machine_fact,
    pipeline_facts,
    summary_block,
    unavailable_block,
    with_cascade,
)
from bot.render.alert_context import AlertContext, first_replica_of, job_id_of, project_of, region_of
from bot.render.block_kit import (
    LINK_URL_CAP,
    MAX_CONTEXT_ELEMENTS,
    MAX_MESSAGE_TEXT,
    MAX_SECTION_TEXT,
    count_text,
    mrkdwn_text,
    percent,
    section,
    slack_date,
    text_length,
    utc,
)
from bot.render.mrkdwn import ELLIPSIS, inline_code, safe_text

_FACT_CAP = 120


_MORE_COMMANDS_RESERVE = 100


def diagnosis_card(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    """The full card, `{"text": fallback, "blocks": [...]}`: symptom, all evidence, first checks, remedies and
    what to avoid, every command, alternatives and links, within every Slack limit (no buttons)."""
    top = [header_block(diagnosis, ctx), _facts(diagnosis, ctx), _full_summary(diagnosis, ctx), unavailable_block(ctx)]
    bottom = [_alternatives(diagnosis), _links(ctx)]
    fixed = [b for b in top + bottom if b is not None]
    budget = MAX_MESSAGE_TEXT - text_length(fixed)

    evidence = evidence_of(diagnosis, ctx)
    parts = [  # in cutting order: the first is shortened first
        _Part.of(lambda n: evidence_section(evidence, n), floor=600),
        _Part.of(lambda n: _commands(diagnosis.commands, n), floor=500),
        _Part.of(lambda n: list_section("*Avoid*", diagnosis.avoid, n, numbered=False), floor=250),
        _Part.of(lambda n: _remediation(diagnosis, n), floor=600),
    ]
    sizes = _allocate([p.size for p in parts], [p.floor for p in parts], budget)
    evidence_blocks, command_blocks, avoid_blocks, remediation_blocks = (
        p.render(size) for p, size in zip(parts, sizes, strict=True)
    )
    blocks = [b for b in top if b is not None]
    blocks += evidence_blocks + remediation_blocks + avoid_blocks + command_blocks
    blocks += [b for b in bottom if b is not None]
    return {"text": fallback_text(diagnosis, ctx), "blocks": blocks}


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


def _full_summary(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    return with_cascade(summary_block(diagnosis.model_copy(update={"cascade": []}), ctx), diagnosis, ctx)


def _facts(diagnosis: Diagnosis, ctx: AlertContext) -> dict | None:
    job = ctx.job
    facts: list[str] = pipeline_facts(ctx)
    for label, value in (("Project", project_of(ctx)), ("Region", region_of(ctx)), ("Job", job_id_of(ctx))):
        if value:
            facts.append(f"{label} {inline_code(value, _FACT_CAP)}")
    replica = first_replica_of(diagnosis, ctx)
    if replica:
        facts.append(f"First failure {inline_code(replica, _FACT_CAP)}")
    machine = machine_fact(job)
    if machine:
        facts.append(machine)
    failed_at = ctx.failed_at or job.end_time
    if failed_at is not None:
        facts.append(f"Failed {slack_date(failed_at)}")
    if ctx.attempt is not None:
        facts.append(f"{count_text(ctx.attempt)} failed attempt{'' if ctx.attempt == 1 else 's'} seen")
    facts += ledger_fact(diagnosis)
    if job.labels:
        shown = [inline_code(f"{k}={v}", 60) for k, v in sorted(job.labels.items())[:5]]
        more = f" +{len(job.labels) - 5}" if len(job.labels) > 5 else ""
        facts.append("Labels " + " ".join(shown) + more)
    if not facts:
        return None
    return {"type": "context", "elements": [mrkdwn_text(f) for f in facts[:MAX_CONTEXT_ELEMENTS]]}


def _remediation(diagnosis: Diagnosis, budget: int) -> list[dict]:
    checks_budget = min(budget // 3, 800) if diagnosis.remediation else budget  # the fix matters more
    checks = list_section("*Check first*", diagnosis.first_checks, checks_budget, numbered=False)
    left = budget - text_length(checks) - (1 if checks else 0)
    fixes = list_section("*What to do*", diagnosis.remediation, left, numbered=True)
    if not checks or not fixes:
        return checks + fixes
    combined = checks[0]["text"]["text"] + "\n" + fixes[0]["text"]["text"]
    if len(combined) <= MAX_SECTION_TEXT:
        return [section(combined)]
    return checks + fixes


def _commands(commands: Sequence[Command], budget: int, *, more: str = "run `trainmedic diagnose`") -> list[dict]:
    """One section per command (title and code block), then a note counting the commands left out and where
    they are (`more`)."""
    candidates = commands[:MAX_COMMANDS_SHOWN]
    natural = [command_text(c, COMMAND_CAP) for c in candidates]
    if len(commands) == len(candidates) and sum(len(t) for t in natural) <= budget:
        return [section(t) for t in natural]
    blocks: list[dict] = []
    used = 0
    for command, text in zip(candidates, natural, strict=True):
        room = min(budget - used - _MORE_COMMANDS_RESERVE, COMMAND_CAP)
        if len(text) > room:
            text = command_text(command, room)
            if not text:
                break
        blocks.append(section(text))
        used += len(text)
    hidden = len(commands) - len(blocks)
    note = f"{ELLIPSIS}and {hidden} more command{'' if hidden == 1 else 's'}: {more}"
    if hidden and used + len(note) <= budget:
        blocks.append({"type": "context", "elements": [mrkdwn_text(note)]})
    return blocks


def _alternatives(diagnosis: Diagnosis) -> dict | None:
    if not diagnosis.alternatives:
        return None
    shown = [
        f"{inline_code(alt.failure_class, 50)} {percent(alt.confidence)}{_reason(alt)}"
        for alt in diagnosis.alternatives[:5]
    ]
    return {"type": "context", "elements": [mrkdwn_text("Also possible: " + " · ".join(shown))]}


def _reason(alt: Alternative) -> str:
    """Why an alternative is listed: its own line (rules), or the line whose words point at it (text model)."""
    if not alt.evidence:
        return ""
    return f" ({alt.reason}: \u201c{safe_text(alt.evidence, 90)}\u201d)"


def _links(ctx: AlertContext) -> dict | None:
    project, job_id, replica = project_of(ctx), job_id_of(ctx), ctx.first_failing_replica
    if not job_id:
        return None
    start, end = _log_window(ctx)
    candidates = [
        (links.job_console_url(project, region_of(ctx), job_id), "Job in console"),
        (links.logs_query_url(project, job_id, start=start, end=end), "Logs (all replicas)"),
    ]
    if replica:
        label = "Logs for " + safe_text(replica, 60)
        candidates.append((links.logs_query_url(project, job_id, replica, start=start, end=end), label))
    shown = [f"<{url}|{label}>" for url, label in candidates if len(url) <= LINK_URL_CAP]
    if not shown:
        return None
    return {"type": "context", "elements": [mrkdwn_text(" · ".join(shown))]}


def _log_window(ctx: AlertContext) -> tuple[datetime | None, datetime | None]:
    end = ctx.failed_at or ctx.job.end_time
    start = ctx.job.start_time or ctx.job.create_time
    if end is None:
        return None, None
    try:
        end = utc(end) + timedelta(minutes=10)
        start = utc(start) - timedelta(minutes=10) if start is not None else end - timedelta(days=1)
    except OverflowError:  # a nonsense time near datetime.min/max: link without a range
        return None, None
    return start, end
