"""A diagnosis as readable terminal text (`trainmedic diagnose`, the demo). Pure: returns a string.

Log-derived text is printed in full, but control characters (ANSI escape sequences included) are shown as
`\\xNN` so a log line cannot rewrite the terminal.
"""

from __future__ import annotations

from bot.intake.sanitize import show_unsafe
from bot.models import Diagnosis, JobInfo
from bot.render.block_kit import percent
from bot.render.redact import redact

_BOLD, _DIM, _RED, _YELLOW, _CYAN, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[33m", "\x1b[36m", "\x1b[0m"
_INDENT = "    "
MAX_ERROR_CHARS = 300
# google.rpc.Code, as CustomJob.error.code carries it
RPC_CODES = {
    1: "CANCELLED",
    2: "UNKNOWN",
    3: "INVALID_ARGUMENT",
    4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND",
    6: "ALREADY_EXISTS",
    7: "PERMISSION_DENIED",
    8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION",
    10: "ABORTED",
    11: "OUT_OF_RANGE",
    12: "UNIMPLEMENTED",
    13: "INTERNAL",
    14: "UNAVAILABLE",
    15: "DATA_LOSS",
    16: "UNAUTHENTICATED",
}


def diagnosis_text(
    diagnosis: Diagnosis, *, source: str | None = None, color: bool = False, job: JobInfo | None = None
) -> str:
    """Render `diagnosis` for a terminal.

    Args:
        diagnosis: the classifier's answer.
        source: where the logs came from (a file name or job id), shown under the title.
        color: add ANSI colours (only when writing to a terminal).
        job: the CustomJob the diagnosis used (--custom-job, --job): its facts are shown.

    Returns:
        The text, ending in a newline.
    """

    def paint(text: str, style: str) -> str:
        return f"{style}{text}{_RESET}" if color else text

    out: list[str] = [paint(_clean(diagnosis.title) or "Training job failed", _BOLD)]
    if diagnosis.failure_class == "unknown":
        out.append(f"  class:      {paint('unknown', _YELLOW)} (no known failure pattern matched)")
    else:
        confidence = paint(percent(diagnosis.confidence), _BOLD)
        out.append(f"  class:      {paint(_clean(diagnosis.failure_class), _CYAN)}  confidence: {confidence}")
    if diagnosis.basis == "words" and diagnosis.failure_class != "unknown":
        out.append("  basis:      the words of its lines (no rule matched): likely, not proven")
    if diagnosis.basis == "shape" and diagnosis.failure_class != "unknown":
        out.append("  basis:      the shape of its training curve (no rule judged it): likely, not proven")
    if source:
        out.append(f"  source:     {_clean(source)}")
    if diagnosis.finding:
        out.append(f"  the curve:  {_clean(diagnosis.finding)}")
    if diagnosis.first_failing_replica:
        out.append(f"  first failing replica: {_clean(diagnosis.first_failing_replica)}")
    if diagnosis.cascade:
        out.append("  failed as a consequence:")
        out += [f"{_INDENT}{_clean(entry)}" for entry in diagnosis.cascade]
    if diagnosis.symptom:
        out += ["", _clean(diagnosis.symptom)]

    def section(title: str, lines: list[str]) -> None:
        if lines:
            out.extend(["", paint(title, _BOLD), *lines])

    if job is not None:
        section("The job:", job_fact_lines(job, diagnosis.details))
    section("Run ledger:", _ledger_lines(diagnosis))
    section("Evidence:", [paint(f"{_INDENT}{line}", _DIM) for line in _split(diagnosis.evidence)])
    section("Check first:", [f"  - {_clean(item)}" for item in diagnosis.first_checks])
    section("What to do:", [f"  {i}. {_clean(item)}" for i, item in enumerate(diagnosis.remediation, 1)])
    section("Avoid:", [f"  - {paint(_clean(item), _RED)}" for item in diagnosis.avoid])
    commands: list[str] = []
    for command in diagnosis.commands:
        commands.append(f"  {_clean(command.title)}:")
        commands += [f"{_INDENT}{line}" for line in _split([command.command])]
    section("Commands:", commands)
    if diagnosis.alternatives:
        out += ["", "Also possible:"]
        for alt in diagnosis.alternatives:
            reason = f"  ({alt.reason}: {_clean(alt.evidence)[:120]})"
            out.append(f"  - {_clean(alt.failure_class)} {percent(alt.confidence)}" + (reason if alt.evidence else ""))
    return "\n".join(out) + "\n"


def job_fact_lines(job: JobInfo, details: dict[str, str] | None = None) -> list[str]:
    """The CustomJob's facts a diagnosis used, one a line: state, error, machines, Spot, identity, place.

    The project is the id (from `details`, which prefer the id the job or its log gives over the number in
    the job's resource name), with the number beside it when known. The error message is redacted.
    """
    details = details or {}

    def row(label: str, value: str) -> str:
        return f"  {label + ':':<17} {_clean(value)}"

    rows = [row("state", job.state or "unknown")]
    if job.error_code is not None or job.error_message:
        code = f"{job.error_code} {RPC_CODES.get(job.error_code, '')}".strip() if job.error_code is not None else ""
        message = redact(" ".join((job.error_message or "").split()))
        if len(message) > MAX_ERROR_CHARS:
            message = message[: MAX_ERROR_CHARS - 1] + "…"
        rows.append(row("error", ": ".join(part for part in (code, message) if part)))
    else:
        rows.append(row("error", "none"))
    pools = [(index, pool) for index, pool in enumerate(job.worker_pools) if pool.replica_count or pool.machine_type]
    for index, pool in pools:
        machine = [pool.machine_type or "machine type unknown"]
        if pool.accelerator_type:
            machine.append(f"{pool.accelerator_type} x {pool.accelerator_count}")
        machine.append(f"{pool.replica_count} replica{'' if pool.replica_count == 1 else 's'}")
        rows.append(row(f"workerpool{index}", ", ".join(machine)))
    if not pools:
        rows.append(row("machines", "unknown"))
    rows.append(row("Spot", "yes" if job.spot else "no"))
    if job.service_account:
        identity = job.service_account
    else:
        agent = details.get("service_account")  # the agent's address needs the project number
        identity = "not set: Vertex AI's custom code service agent" + (f" ({agent})" if agent else "")
    rows.append(row("service account", identity))
    rows.append(row("region", job.region or "unknown"))
    project = details.get("project") or (job.project if job.project and not job.project.isdigit() else None)
    number = details.get("project_number") or (job.project if job.project and job.project.isdigit() else None)
    if project and number and details.get("project_read_from"):
        # the job's resource names only its number: an id read from an account's address is a guess (a shared
        # identity project's account runs jobs elsewhere), and the commands use it
        said = f"{project} (number {number}; id read from {details['project_read_from']}: --project if not)"
        rows.append(row("project", said))
    elif project and number:
        rows.append(row("project", f"{project} (number {number})"))
    elif project:
        rows.append(row("project", project))
    else:
        rows.append(row("project", f"id unknown (number {number})" if number else "unknown"))
    return rows


def _ledger_lines(diagnosis: Diagnosis) -> list[str]:
    """The run ledger in one line (bot/alerting/ledger.py): run time, attempts, accelerator-hours, last checkpoint."""
    from bot.alerting.ledger import ledger_line

    line = ledger_line(diagnosis.ledger)
    return [f"  {_clean(line)}"] if line else []


def _clean(text: str) -> str:
    """One line of text with control characters made visible (bot.intake.sanitize, shared with the Slack renderer)."""
    return show_unsafe(" ".join(text.splitlines()))


def _split(texts: list[str]) -> list[str]:
    """Multi-line entries as separate cleaned lines (tabs kept, other control characters made visible)."""
    return [show_unsafe(line) for text in texts for line in text.splitlines()]


