"""The Slack messages for one failed job: pure Block Kit dicts, ready for chat.postMessage / chat.update.

An alert is two messages. `diagnosis_message(diagnosis, ctx)` is the CHANNEL message: one screen, at most
CHANNEL_MESSAGE_TEXT characters of text in all its blocks (`text_length`), with what it takes to act.
`diagnosis_card(diagnosis, ctx)` is the full card: posted as the first reply in the alert's thread, and the
answer to `/diagnose`. Neither ever fails nor exceeds Slack's limits, whatever the input size. Every string that
comes from logs or the job is escaped (`bot.render.mrkdwn`); the only `<...>` sequences in the output are ones built
here: user mentions from ids matching `^[UW][A-Z0-9]+$`, `<!date^...>` timestamps and links to percent-encoded
console URLs.

The channel message, top to bottom (optional blocks are left out when there is nothing to say):
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
    context      Acknowledged by <@U…> at … / Rerun by <@U…> as job N
    actions      Acknowledge | Undo acknowledge, Rerun (primary, confirm; gone once a rerun was made). The Rerun
                 button and its confirmation say what the class's knowledge file offers (ctx.rerun_offer): an
                 unchanged rerun (transient causes), changes in order, or the fix to apply first; no Rerun for
                 a class that offers none, nor for an incident.

A Cloud Monitoring incident about a job that has not failed (ctx.incident) is headed and summed up as an open
(or closed) incident on a running job, with its policy and a link to it, and offers no Rerun.
The header, the summary, the facts, the notice, the status and the buttons are measured first; the evidence and
the remedies share what is left (each at its natural size when both fit), and the commands get the rest.

The card (the thread reply; no buttons: they are on the channel message):
    header, context (all facts), section (class and confidence, symptom, curve, cascade), context (unavailable),
    section Evidence (all of it), section Check first / What to do (all), section Avoid (all),
    section × n commands, context "Also possible", context links (job in console, logs)
When the card would be too long, evidence is cut first, then commands, then the Avoid list, then the
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

from bot.alerting.incidents import Incident
from bot.chat.rerun import GENERIC_BUTTON, RerunOffer
from bot.gcp.job_resource import parse_job_name
from bot.gcp.pipeline_resource import PipelineInfo
from bot.jobs.identity import JobKind, parse_key
from bot.models import Command, Diagnosis, JobInfo
from bot.render import links
from bot.render.mrkdwn import (
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
from bot.render.redact import redact

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
#: The channel message's budget: one screen (the full card is one click away, in the thread).
CHANNEL_MESSAGE_TEXT = 1_200
MAX_COMMANDS_SHOWN = 10
CHANNEL_EVIDENCE_LINES = 3
CHANNEL_REMEDIES = 2

_USER_ID = re.compile(r"[UW][A-Z0-9]{1,30}")
_UNKNOWN_CLASS = "unknown"
_FACT_CAP = 120
_LINK_URL_CAP = 600
_FALLBACK_CAP = 400
_MORE_COMMANDS_RESERVE = 100
_COMMAND_CAP = 1500
_CHANNEL_LINE_CAP = 300  # one evidence line in the channel message (the card shows it whole)
_CHANNEL_EVIDENCE_CAP = 330  # the channel's Evidence section
_MIN_CUT = 40  # a line cut shorter than this says too little
_READABLE_LINE = 120  # show fewer evidence lines rather than cut them below this
_CHANNEL_REMEDY_CAP = 170  # one remedy in the channel message (the card shows it whole)
_CHANNEL_FACT_CAP = 48
_CHANNEL_UNAVAILABLE_CAP = 200
_CASCADE_CAP = 320


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
    incident: Incident | None = None  # the alert is about this Monitoring incident, not a failure
    rerun_offer: RerunOffer | None = None  # what Rerun offers (None: a generic Rerun button)
    pipeline: PipelineInfo | None = None  # the alert is about this pipeline run; `job` is its failed task's job
    rerun_outcome: str | None = None  # how the rerun started from chat ended ("Rerun succeeded in 2 h 10 min")

    @property
    def rerun_made(self) -> bool:
        return self.rerun_by is not None or self.rerun_job_id is not None


def diagnosis_message(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    """The channel message, `{"text": fallback, "blocks": [...]}`: headline, key facts, the decisive evidence,
    the first remedies, the commands that fit and the buttons, in at most CHANNEL_MESSAGE_TEXT characters of
    text (only absurd input can push the fixed parts past it: then everything else gives way)."""
    top = [b for b in (_header(diagnosis, ctx), _headline(diagnosis, ctx), _key_facts(diagnosis, ctx)) if b]
    top += [b for b in (_unavailable_brief(ctx),) if b]
    bottom = [b for b in (_divider(), _status(ctx), _actions(ctx)) if b]
    worst_note = _thread_note(diagnosis, ctx, hidden_commands=len(diagnosis.commands))
    left = CHANNEL_MESSAGE_TEXT - text_length(top + bottom) - text_length([worst_note])

    # The evidence and the first remedies at their natural size (each within its own caps) when both fit, else
    # sharing what is left so that neither starves the other; then whole commands, in order, while they fit.
    evidence_lines = _evidence_lines(diagnosis, ctx)
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
        text = _command_text(command, _COMMAND_CAP)
        if not text or len(text) > left:
            break
        commands.append(_section(text))
        left -= len(text)
    note = _thread_note(diagnosis, ctx, hidden_commands=len(diagnosis.commands) - len(commands))
    return {"text": _fallback(diagnosis, ctx), "blocks": top + evidence + remedies + commands + [note] + bottom}


def diagnosis_card(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    """The full card, `{"text": fallback, "blocks": [...]}`: symptom, all evidence, first checks, remedies and
    what to avoid, every command, alternatives and links, within every Slack limit (no buttons)."""
    top = [_header(diagnosis, ctx), _facts(diagnosis, ctx), _full_summary(diagnosis, ctx), _unavailable(ctx)]
    bottom = [_alternatives(diagnosis), _links(ctx)]
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
    if ctx.incident is not None:
        return _incident_header(ctx.incident, ctx)
    title = truncate(escape(one_line(diagnosis.title[:MAX_HEADER_TEXT])), 100)
    name = escape(one_line((_display_name(ctx) or _job_id(ctx) or "Vertex AI job")[: MAX_HEADER_TEXT * 2]))
    if ctx.pipeline is not None:
        tasks = ", ".join(task.name for task in ctx.pipeline.failed_tasks) or "a task"
        name = escape(one_line(f"Pipeline {_display_name(ctx) or ctx.pipeline.ref.id} ({tasks})"[:MAX_HEADER_TEXT]))
    if ctx.rerun_outcome:  # the outcome of the rerun first: it is the news now
        name = escape(one_line(ctx.rerun_outcome[:60])) + " · " + name
    if title:
        text = truncate(name, MAX_HEADER_TEXT - len(title) - 2) + ": " + title
    else:
        text = truncate(name, MAX_HEADER_TEXT)
    return {"type": "header", "text": _plain(text or "Vertex AI job failed")}


def _facts(diagnosis: Diagnosis, ctx: AlertContext) -> dict | None:
    job = ctx.job
    facts: list[str] = _pipeline_facts(ctx)
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
    facts += _ledger_fact(diagnosis)
    if job.labels:
        shown = [inline_code(f"{k}={v}", 60) for k, v in sorted(job.labels.items())[:5]]
        more = f" +{len(job.labels) - 5}" if len(job.labels) > 5 else ""
        facts.append("Labels " + " ".join(shown) + more)
    if not facts:
        return None
    return {"type": "context", "elements": [_mrkdwn(f) for f in facts[:MAX_CONTEXT_ELEMENTS]]}


def _ledger_fact(diagnosis: Diagnosis) -> list[str]:
    """The run ledger as one fact: run time · attempts · accelerator-hours · last checkpoint (alerting.ledger)."""
    from bot.alerting.ledger import ledger_line

    line = ledger_line(diagnosis.ledger)
    return [":hourglass: " + escape(one_line(line))[:300]] if line else []


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
    if ctx.incident is not None:
        return _incident_summary(ctx.incident, diagnosis, ctx)
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


def _incident_header(incident: Incident, ctx: AlertContext) -> dict:
    what = _incident_headline(incident, ctx)
    policy = escape(one_line((incident.policy_name or "")[:MAX_HEADER_TEXT]))
    text = truncate(what, MAX_HEADER_TEXT - len(policy) - 2) + ": " + policy if policy else truncate(what, 150)
    return {"type": "header", "text": _plain(truncate(text, MAX_HEADER_TEXT))}


def _incident_headline(incident: Incident, ctx: AlertContext) -> str:
    """What the alert is about, escaped: an open incident on running job bert-large, or a closed one."""
    name = escape(one_line((_display_name(ctx) or ctx.job.job_id or "")[:MAX_HEADER_TEXT]))
    running = "running job" if ctx.job.state == "JOB_STATE_RUNNING" else "job"
    on = f" on {running} {truncate(name, 80)}" if name and ctx.job.job_id else ""
    if incident.state == "closed":
        return f":white_check_mark: Incident closed{on}"
    return f":rotating_light: Open incident{on}"


def _incident_summary(incident: Incident, diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    if ctx.job.state == "JOB_STATE_RUNNING":
        subject = "on a running job"
    elif ctx.job.state:
        subject = f"on a job in state {inline_code(ctx.job.state.removeprefix('JOB_STATE_').lower(), 40)}"
    else:
        subject = "on a training job" if ctx.job.job_id else "(no training job named)"
    if incident.state == "closed":
        ended = f" {_slack_date(incident.ended_at)}" if incident.ended_at is not None else ""
        lines = [f":white_check_mark: *Cloud Monitoring incident closed*{ended}, {subject} (it did not fail)."]
    else:
        lines = [f":rotating_light: *Open Cloud Monitoring incident* {subject}: the job has not failed."]
    facts = []
    if incident.policy_name:
        facts.append(f"Policy *{safe_text(incident.policy_name, 200)}*")
    if incident.condition_name:
        facts.append(f"condition {inline_code(incident.condition_name, 200)}")
    if incident.started_at is not None:
        facts.append(f"opened {_slack_date(incident.started_at)}")
    if facts:
        lines.append(" · ".join(facts))
    if incident.summary:
        lines.append(safe_text(incident.summary, 500))
    if incident.url and len(incident.url) <= _LINK_URL_CAP:
        lines.append(f"<{incident.url}|View the incident in Cloud Monitoring>")
    if diagnosis.failure_class == _UNKNOWN_CLASS:
        lines.append("*What its logs show so far*: no known pattern.")
    else:
        found = f"{inline_code(diagnosis.failure_class, 80)} ({_percent(diagnosis.confidence)} confidence)"
        lines.append(f"*What its logs show so far*: {found}")
        if diagnosis.symptom:
            lines.append(safe_text(diagnosis.symptom, 700))
    if diagnosis.finding:
        lines.append(":chart_with_downwards_trend: *The curve:* " + safe_text(diagnosis.finding, 300))
    return _section("\n".join(lines))


def _cascade_note(cascade: list[str], first: str | None) -> str:
    return _cascade_line(cascade, first)


def _headline(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    """The channel's summary: class and confidence (and the curve's finding), the cascade in one line; the
    symptom is the card's."""
    summary = _summary(diagnosis.model_copy(update={"symptom": "", "cascade": []}), ctx)
    return _with_cascade(summary, diagnosis, ctx)


def _full_summary(diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    return _with_cascade(_summary(diagnosis.model_copy(update={"cascade": []}), ctx), diagnosis, ctx)


def _with_cascade(summary: dict, diagnosis: Diagnosis, ctx: AlertContext) -> dict:
    if not diagnosis.cascade:
        return summary
    first = _first_replica(diagnosis, ctx)
    line = _cascade_line(diagnosis.cascade, first, diagnosis.failure_class, diagnosis.evidence)
    return _section(summary["text"]["text"] + "\n" + line)


# The cascade in one line: "workerpool0-1..3 and workerpool1-0 timed out in NCCL collectives after workerpool0-0
# ran out of GPU memory". The classifier gives one entry per replica: "REPLICA (CLASS): its first line" (older
# stored diagnoses: "REPLICA: its first line").
_CASCADE_ENTRY = re.compile(
    r"(?:(?P<replica>\S+) \((?P<failure_class>[^()\s]*)\)|(?P<bare>workerpool\d+-\d+|\?)): (?P<text>.*)", re.DOTALL
)
_WORKER = re.compile(r"workerpool(\d{1,4})-(\d{1,6})")
_COLLECTIVE = re.compile(
    r"nccl|collective|all_?reduce|all_?gather|reduce_?scatter|broadcast|barrier|processgroup|watchdog|gloo",
    re.IGNORECASE,
)
_TIMEOUT = re.compile(r"time ?out|timed out|deadline exceeded", re.IGNORECASE)
_CASCADE_ACTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"rendezvous", re.IGNORECASE), "failed to rendezvous"),
    (
        re.compile(r"connection (?:reset|refused|closed)|broken pipe|socket|peer", re.IGNORECASE),
        "lost contact with the other replicas",
    ),
    (re.compile(r"SIGTERM|SIGKILL|terminated|killed", re.IGNORECASE), "got a termination signal"),
    (re.compile(r"exited with a non-zero status", re.IGNORECASE), "exited with an error"),
)
_CASCADE_BY_CLASS = {
    "distributed_setup": "lost contact with the other replicas",
    "accelerator_oom": "ran out of device memory too",
    "host_oom": "ran out of host memory too",
}
_CAUSES = {
    "host_oom": "ran out of host memory",
    "numerical_instability": "hit a NaN/Inf loss",
    "application_error": "crashed with an exception",
    "container_startup": "failed to start",
    "input_pipeline": "failed in its input pipeline",
    "permission_denied": "was denied a permission",
    "quota_exhausted": "hit a quota limit",
    "preemption": "was preempted",
    "distributed_setup": "failed in distributed setup",
}
_MAX_CASCADE_RUNS = 6


def _cascade_line(
    cascade: Sequence[str], first: str | None, failure_class: str | None = None, evidence: Sequence[str] = ()
) -> str:
    """One line naming the replicas that failed as a consequence, what they did, and after what."""
    what: dict[str, list[str]] = {}  # what they did -> replicas, in the order first seen
    for entry in cascade:
        match = _CASCADE_ENTRY.fullmatch(entry.strip())
        replica, text = (match["replica"] or match["bare"], match["text"]) if match else ("?", entry)
        action = _cascade_action((match["failure_class"] or "") if match else "", text)
        if replica not in what.setdefault(action, []):
            what[action].append(replica)
    clauses = [f"{_replica_runs(replicas)} {action}" for action, replicas in what.items()]
    if first:
        cause = f"after {safe_text(first, 60)} {_cause(failure_class, evidence)}"
    else:
        cause = "as a consequence of the failure above"
    return truncate(f":link: *Cascade:* {_join(clauses)} {cause}.", _CASCADE_CAP)


def _cascade_action(failure_class: str, text: str) -> str:
    head = text[:2000]
    if _COLLECTIVE.search(head) and _TIMEOUT.search(head):
        return "timed out in NCCL collectives" if "nccl" in head.lower() else "timed out in collective operations"
    for pattern, action in _CASCADE_ACTIONS:
        if pattern.search(head):
            return action
    if failure_class in _CASCADE_BY_CLASS:
        return _CASCADE_BY_CLASS[failure_class]
    return f"failed ({safe_text(failure_class, 40)})" if failure_class else "failed"


def _cause(failure_class: str | None, evidence: Sequence[str]) -> str:
    if failure_class == "accelerator_oom":
        text = " ".join(evidence)[:5000]
        if re.search(r"\bTPU\b|\bHBM\b|XLA", text):
            return "ran out of TPU memory"
        if re.search(r"CUDA|\bGPU\b|cuda|HIP", text):
            return "ran out of GPU memory"
        return "ran out of accelerator memory"
    if failure_class in _CAUSES:
        return _CAUSES[failure_class]
    return f"failed ({safe_text(failure_class, 40)})" if failure_class and failure_class != _UNKNOWN_CLASS else "failed"


def _replica_runs(replicas: list[str]) -> str:
    """Each pool's consecutive replicas as one run, escaped: "workerpool0-1..3 and workerpool1-0"."""
    pools: dict[str, list[int]] = {}  # "workerpool0" -> indices, pools in the order first seen
    others: list[str] = []
    for replica in replicas:
        match = _WORKER.fullmatch(replica)
        if match:
            pools.setdefault(f"workerpool{int(match[1])}", []).append(int(match[2]))
        else:
            others.append("another replica" if replica == "?" else safe_text(replica, 40))
    runs: list[str] = []
    for pool, indices in pools.items():
        ordered = sorted(set(indices))
        start = previous = ordered[0]
        for index in [*ordered[1:], None]:
            if index is not None and index == previous + 1:
                previous = index
                continue
            if previous - start >= 2:
                runs.append(f"{pool}-{start}..{previous}")
            else:
                runs += [f"{pool}-{i}" for i in range(start, previous + 1)]
            if index is not None:
                start = previous = index
    runs += others
    if len(runs) > _MAX_CASCADE_RUNS:
        hidden = len(runs) - _MAX_CASCADE_RUNS + 1
        runs = [*runs[: _MAX_CASCADE_RUNS - 1], f"{hidden} more"]
    return _join(runs)


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _key_facts(diagnosis: Diagnosis, ctx: AlertContext) -> dict | None:
    """The channel's facts: where the job ran, which replica failed first, on what, and the run ledger (time,
    attempts, accelerator-hours, last checkpoint); the card adds the failure time, the attempts seen and the
    labels (the message's own time is about when the job failed)."""
    facts: list[str] = _pipeline_facts(ctx) + _rerun_of_facts(ctx)
    where = " · ".join(inline_code(v, _CHANNEL_FACT_CAP) for v in (_project(ctx), _region(ctx)) if v)
    job_id = _job_id(ctx)
    if job_id:
        facts.append(f"Job {inline_code(job_id, _CHANNEL_FACT_CAP)}" + (f" in {where}" if where else ""))
    elif where:
        facts.append(where)
    replica = _first_replica(diagnosis, ctx)
    if replica:
        facts.append(f"First failure {inline_code(replica, _CHANNEL_FACT_CAP)}")
    machine = _machine(ctx.job)
    if machine:
        facts.append(machine)
    facts += _ledger_fact(diagnosis)
    if not facts:
        return None
    return {"type": "context", "elements": [_mrkdwn(f) for f in facts]}


def _pipeline_facts(ctx: AlertContext) -> list[str]:
    """A pipeline run's alert names the run and its failed task(s); the job facts that follow are the task's."""
    if ctx.pipeline is None:
        return []
    tasks = ", ".join(inline_code(task.name, _CHANNEL_FACT_CAP) for task in ctx.pipeline.failed_tasks[:3])
    run = f"Pipeline run {inline_code(ctx.pipeline.ref.id, _CHANNEL_FACT_CAP)}"
    return [run + (f" · failed task {tasks}" if tasks else "")]


def _rerun_of_facts(ctx: AlertContext) -> list[str]:
    """A job the bot started as a rerun names the job it reran (its `rerun-of` label): the two alerts link."""
    earlier = ctx.job.labels.get("rerun-of")
    return [f"Rerun of job {inline_code(earlier, _CHANNEL_FACT_CAP)}"] if earlier else []


def _unavailable_brief(ctx: AlertContext) -> dict | None:
    block = _unavailable(ctx)
    if block is None:
        return None
    return {"type": "context", "elements": [_mrkdwn(truncate(block["elements"][0]["text"], _CHANNEL_UNAVAILABLE_CAP))]}


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
    if _job_id(ctx):
        more.append("logs")
    listed = ", ".join(more) if more else "the full diagnosis"
    return {"type": "context", "elements": [_mrkdwn(f":speech_balloon: *In the thread:* {listed}")]}


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
            outcome = f": *{escape(ctx.rerun_outcome)}*" if ctx.rerun_outcome else ""
            lines.append(f":repeat: Rerun{who} as job {target}{outcome}")
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
    offer = ctx.rerun_offer
    offered = offer is None or offer.offered
    # an incident's job has not failed; a pipeline run is rerun from the console (see bot.chat.actions)
    custom_job = parse_key(ctx.job_key).kind is JobKind.CUSTOM_JOB  # not a pipeline run, nor a refused creation
    if not ctx.rerun_made and ctx.incident is None and custom_job and offered:
        label, title, text = offer.button() if offer is not None else GENERIC_BUTTON
        rerun = _button(label, ACTION_RERUN, ctx.job_key)
        rerun["style"] = "primary"
        rerun["confirm"] = {
            "title": _plain(truncate(title, 100)),
            "text": _plain(truncate(text, 300)),
            "confirm": _plain(truncate(label, 30)),
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
    return _list_section(heading, [_cut_line(item, cap) for item in first], budget, numbered=numbered)


def _channel_evidence(lines: list[str], budget: int) -> list[dict]:
    """The first few evidence lines in at most `budget` characters, long lines cut in the middle alike (fewer
    lines rather than lines cut to nothing)."""
    for count in range(min(CHANNEL_EVIDENCE_LINES, len(lines)), 0, -1):
        shown = lines[:count]
        marker = [f"{ELLIPSIS} ({len(lines) - count} more in the thread)"] if len(lines) > count else []
        overhead = len("*Evidence*\n```\n\n```") + sum(len(m) + 1 for m in marker) + count - 1
        cap = min(_CHANNEL_LINE_CAP, _shared_cap([len(line) for line in shown], budget - overhead))
        if cap >= min(_READABLE_LINE, max(len(line) for line in shown)) or count == 1:
            return _evidence([_cut_middle(line, max(cap, _MIN_CUT)) for line in shown] + marker, budget)
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


def _list_section(heading: str, items: Sequence[str], budget: int, *, numbered: bool) -> list[dict]:
    text = fit_list(heading, items, min(budget, MAX_SECTION_TEXT), numbered=numbered)
    return [_section(text)] if text else []


def _commands(commands: Sequence[Command], budget: int, *, more: str = "run `trainmedic diagnose`") -> list[dict]:
    """One section per command (title and code block), then a note counting the commands left out and where
    they are (`more`)."""
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
    note = f"{ELLIPSIS}and {hidden} more command{'' if hidden == 1 else 's'}: {more}"
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
    if ctx.incident is not None:  # not a failure: the notification says what it is
        state = "closed" if ctx.incident.state == "closed" else "open"
        running = " running" if ctx.job.state == "JOB_STATE_RUNNING" else ""
        policy = safe_text(ctx.incident.policy_name or "Cloud Monitoring incident", 200)
        return truncate(f"Incident {state} on{running} job {name}: {policy}", _FALLBACK_CAP)
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
