"""The channel message of one failed job: one screen, with what it takes to act (pure Block Kit dicts).

`diagnosis_message(diagnosis, ctx)` has at most CHANNEL_MESSAGE_TEXT characters of text in all its blocks
(`text_length`); the full card is one click away, in the thread (bot.render.diagnosis_card). It never fails
nor exceeds Slack's limits, whatever the input size. Top to bottom (optional blocks are left out when there
is nothing to say):
    header       "<display name or job id>: <diagnosis title>"
    section      class and confidence (the curve's finding), the cascade in one line: "workerpool0-1..3 and
                 workerpool1-0 timed out in NCCL collectives after workerpool0-0 ran out of GPU memory"
    context      job in project · region, first failing replica, machine, run ledger
    context      what could not be fetched (ctx.unavailable), shortened
    section      Evidence: the first lines (up to three; long ones cut in the middle, the card has them whole)
    section      What to do: the first two remedies
    section × n  whole commands, in order, as many as fit
    context      what the thread holds ("In the thread: 3 more commands, all 6 steps, first checks, ...")
    divider
    context      status, and the buttons (bot.render.alert_actions)

The header, the summary, the facts, the notice, the status and the buttons are measured first; the evidence and
the remedies share what is left (each at its natural size when both fit), and the commands get the rest.
"""

from __future__ import annotations

from bot.models import Diagnosis
from bot.render.alert_actions import actions_block, status_block
from bot.render.alert_blocks import (
    CHANNEL_FACT_CAP,
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
from bot.render.block_kit import MAX_SECTION_TEXT, divider, mrkdwn_text, section, text_length
from bot.render.mrkdwn import ELLIPSIS, inline_code, truncate

#: The channel message's budget: one screen (the full card is one click away, in the thread).
CHANNEL_MESSAGE_TEXT = 1_200


CHANNEL_EVIDENCE_LINES = 3


CHANNEL_REMEDIES = 2


_CHANNEL_LINE_CAP = 300  # one evidence line in the channel message (the card shows it whole)


_CHANNEL_EVIDENCE_CAP = 330  # the channel's Evidence section


_MIN_CUT = 40  # a line cut shorter than this says too little


_READABLE_LINE = 120  # show fewer evidence lines rather than cut them below this


_CHANNEL_REMEDY_CAP = 170  # one remedy in the channel message (the card shows it whole)


_CHANNEL_UNAVAILABLE_CAP = 200


def diagnosis_message(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    """The channel message, `{"text": fallback, "blocks": [...]}`: headline, key facts, the decisive evidence,
    the first remedies, the commands that fit and the buttons, in at most CHANNEL_MESSAGE_TEXT characters of
    text (only absurd input can push the fixed parts past it: then everything else gives way)."""
    top = [b for b in (header_block(diagnosis, ctx), _headline(diagnosis, ctx), _key_facts(diagnosis, ctx)) if b]
    top += [b for b in (_unavailable_brief(ctx),) if b]
    bottom = [b for b in (divider(), status_block(ctx), actions_block(ctx)) if b]
    # the longest the note can be: every command in the thread, or all but some ("6 more commands")
    shapes = {len(diagnosis.commands), max(len(diagnosis.commands) - 1, 0)}
    notes = [_thread_note(diagnosis, ctx, hidden_commands=n) for n in shapes]
    worst_note = max(notes, key=lambda note: text_length([note]))
    left = CHANNEL_MESSAGE_TEXT - text_length(top + bottom) - text_length([worst_note])

    # The evidence and the first remedies at their natural size (each within its own caps) when both fit, else
    # sharing what is left so that neither starves the other; then whole commands, in order, while they fit.
    evidence_lines = evidence_of(diagnosis, ctx)
    evidence = _channel_evidence(evidence_lines, _CHANNEL_EVIDENCE_CAP)
    remedies = _first_remedies(diagnosis, MAX_SECTION_TEXT)
    evidence_natural, remedies_natural = text_length(evidence), text_length(remedies)
    if evidence_natural + remedies_natural > left:
        evidence_room = min(evidence_natural, max(left // 2, left - remedies_natural))
        evidence = _channel_evidence(evidence_lines, evidence_room)
        remedies = _first_remedies(diagnosis, max(left - text_length(evidence), 0))
    left -= text_length(evidence) + text_length(remedies)
    commands: list[dict] = []
    for command in diagnosis.commands[:MAX_COMMANDS_SHOWN]:
        text = command_text(command, COMMAND_CAP)
        if not text or len(text) > left:
            break
        commands.append(section(text))
        left -= len(text)
    note = _thread_note(diagnosis, ctx, hidden_commands=len(diagnosis.commands) - len(commands))
    return {"text": fallback_text(diagnosis, ctx), "blocks": top + evidence + remedies + commands + [note] + bottom}


def _headline(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    """The channel's summary: class and confidence (and the curve's finding), the cascade in one line; the
    symptom is the card's."""
    summary = summary_block(diagnosis.model_copy(update={"symptom": "", "cascade": []}), ctx)
    return with_cascade(summary, diagnosis, ctx)


def _key_facts(diagnosis: Diagnosis, ctx: AlertContext) -> dict | None:
    """The channel's facts: where the job ran, which replica failed first, on what, and the run ledger (time,
    attempts, accelerator-hours, last checkpoint); the card adds the failure time, the attempts seen and the
    labels (the message's own time is about when the job failed)."""
    facts: list[str] = pipeline_facts(ctx) + _rerun_of_facts(ctx)
    where = " · ".join(inline_code(v, CHANNEL_FACT_CAP) for v in (project_of(ctx), region_of(ctx)) if v)
    job_id = job_id_of(ctx)
    if job_id:
        facts.append(f"Job {inline_code(job_id, CHANNEL_FACT_CAP)}" + (f" in {where}" if where else ""))
    elif where:
        facts.append(where)
    replica = first_replica_of(diagnosis, ctx)
    if replica:
        facts.append(f"First failure {inline_code(replica, CHANNEL_FACT_CAP)}")
    machine = machine_fact(ctx.job)
    if machine:
        facts.append(machine)
    facts += ledger_fact(diagnosis)
    if not facts:
        return None
    return {"type": "context", "elements": [mrkdwn_text(f) for f in facts]}


def _rerun_of_facts(ctx: AlertContext) -> list[str]:
    """A job the bot started as a rerun names the job it reran (its `rerun-of` label): the two alerts link."""
    earlier = ctx.job.labels.get("rerun-of")
    return [f"Rerun of job {inline_code(earlier, CHANNEL_FACT_CAP)}"] if earlier else []


def _unavailable_brief(ctx: AlertContext) -> dict | None:
    block = unavailable_block(ctx)
    if block is None:
        return None
    return {
        "type": "context",
        "elements": [mrkdwn_text(truncate(block["elements"][0]["text"], _CHANNEL_UNAVAILABLE_CAP))],
    }


def _thread_note(diagnosis: Diagnosis, ctx: AlertContext, *, hidden_commands: int) -> dict:
    """Where the rest is: what the card in the thread adds to the channel message."""
    more: list[str] = []
    if hidden_commands > 0:
        some_shown = "more " if hidden_commands < len(diagnosis.commands) else ""
        more.append(f"{hidden_commands} {some_shown}command{'' if hidden_commands == 1 else 's'}")
    if len(diagnosis.remediation) > CHANNEL_REMEDIES:
        more.append(f"all {len(diagnosis.remediation)} steps")
    if diagnosis.first_checks:
        more.append("first checks")
    if diagnosis.avoid:
        more.append("what to avoid")
    if job_id_of(ctx):
        more.append("logs")
    listed = ", ".join(more) if more else "the full diagnosis"
    return {"type": "context", "elements": [mrkdwn_text(f":speech_balloon: *In the thread:* {listed}")]}


def _first_remedies(diagnosis: Diagnosis, budget: int) -> list[dict]:
    """The first remedies (or, with none, the first checks), numbered as in the card, in `budget` characters:
    each cut short alike rather than the last one dropped."""
    if diagnosis.remediation:
        heading, items, numbered = "*What to do*", diagnosis.remediation, True
    else:
        heading, items, numbered = "*Check first*", diagnosis.first_checks, False
    first = list(items[:CHANNEL_REMEDIES])
    if not first:
        return []
    room = min(budget, MAX_SECTION_TEXT) - len(heading) - sum(len("\n1. ") for _ in first)
    cap = min(_CHANNEL_REMEDY_CAP, max(_shared_cap([len(item) for item in first], room), _MIN_CUT))
    return list_section(heading, [_cut_line(item, cap) for item in first], budget, numbered=numbered)


def _channel_evidence(lines: list[str], budget: int) -> list[dict]:
    """The first few evidence lines in at most `budget` characters, long lines cut in the middle alike (fewer
    lines rather than lines cut to nothing)."""
    for count in range(min(CHANNEL_EVIDENCE_LINES, len(lines)), 0, -1):
        shown = lines[:count]
        marker = [f"{ELLIPSIS} ({len(lines) - count} more in the thread)"] if len(lines) > count else []
        overhead = len("*Evidence*\n```\n\n```") + sum(len(m) + 1 for m in marker) + count - 1
        cap = min(_CHANNEL_LINE_CAP, _shared_cap([len(line) for line in shown], budget - overhead))
        if cap >= min(_READABLE_LINE, max(len(line) for line in shown)) or count == 1:
            return evidence_section([_cut_middle(line, max(cap, _MIN_CUT)) for line in shown] + marker, budget)
    return []


def _shared_cap(lengths: list[int], room: int) -> int:
    """The largest per-item cap whose capped lengths sum to at most `room` (short items keep their length)."""
    left = room
    for count, length in enumerate(sorted(lengths)):
        share = left // (len(lengths) - count)
        if length > share:
            return max(share, 0)
        left -= length
    return max(lengths, default=0)


def _cut_line(line: str, cap: int) -> str:
    """The start of `line` (raw text: it is escaped where it is shown)."""
    return line if len(line) <= cap else line[: cap - 1] + ELLIPSIS


def _cut_middle(line: str, cap: int) -> str:
    """`line` with its middle left out when longer than `cap`: an error line says what failed at its start and
    why at its end (raw text: it is escaped where it is shown)."""
    if len(line) <= cap:
        return line
    head = cap * 2 // 5
    tail = cap - head - len(" … ")
    return line[:head].rstrip() + " … " + line[-tail:].lstrip()
