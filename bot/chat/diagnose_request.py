"""What people type to ask for a diagnosis: `/diagnose TEXT` and `@trainmedic diagnose TEXT` (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.jobs.reference import USAGE, JobReference, JobReferenceError, parse_job_reference
from bot.render.mrkdwn import escape

PRIVATE_WORD = "private"
_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")


@dataclass(frozen=True)
class DiagnoseRequest:
    """What someone asked for with `/diagnose TEXT` or `@trainmedic diagnose TEXT`."""

    reference: JobReference | None = None
    private: bool = False
    help: bool = False
    error: str | None = None  # the text did not parse: say why


def parse_diagnose_text(text: str) -> DiagnoseRequest:
    """`/diagnose` text: "JOB", "JOB private", "help" or nothing (help)."""
    words = text.split()
    private = any(word.lower() == PRIVATE_WORD for word in words)
    words = [word for word in words if word.lower() != PRIVATE_WORD]
    if not words or (len(words) == 1 and words[0].lower() in ("help", "-h", "--help", "?")):
        return DiagnoseRequest(help=True, private=private)
    if len(words) > 1:
        return DiagnoseRequest(private=private, error=f"give one job at a time ({USAGE}), optionally then 'private'")
    try:
        return DiagnoseRequest(reference=parse_job_reference(words[0]), private=private)
    except JobReferenceError as exc:
        return DiagnoseRequest(private=private, error=str(exc))


def parse_mention_text(text: str) -> DiagnoseRequest:
    """An app mention: "<@BOT> diagnose JOB [private]" (the word diagnose may be left out)."""
    words = _MENTION.sub(" ", text).split()
    if words and words[0].lower().strip(":,") == "diagnose":
        words = words[1:]
    return parse_diagnose_text(" ".join(words))


def help_text(default_project: str | None, regions: Sequence[str]) -> str:
    where = f"project `{escape(default_project)}`, " if default_project else ""
    return (
        "*/diagnose* tells you why a Vertex AI custom training job failed, or what its logs show so far.\n"
        f"• `/diagnose 8501620632646057984`: a job id ({where}looked up in {escape(', '.join(regions))})\n"
        "• `/diagnose projects/PROJECT/locations/REGION/customJobs/ID`, `PROJECT/ID` or the job's Cloud "
        "Console link\n"
        "• add `private` to get the answer only for yourself: `/diagnose 8501620632646057984 private`\n"
        "• slash commands do not work in threads: there, mention me instead, "
        "`@trainmedic diagnose 8501620632646057984`"
    )


def acknowledgement_text(request: DiagnoseRequest) -> str:
    """What the 3-second acknowledgement says."""
    job = request.reference.job_id if request.reference else "the job"
    return f":hourglass_flowing_sand: Diagnosing job {job}…"
