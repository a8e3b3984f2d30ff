"""Diagnose one job on demand: fetch the CustomJob (GetCustomJob) and its logs (entries.list), then classify.

Shared by `/diagnose`, `@trainmedic diagnose` and `trainmedic diagnose --job`. A job that is still running is
diagnosed from what its logs show so far (NaN losses, low utilisation, warnings). Failures to fetch become
clear answers: an unknown job names where it was looked for, a missing permission is named, a bad id says
what is expected.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.alerting.event_log import event
from bot.alerting.ledger import LedgerClassifier
from bot.chat.job_reference import USAGE, JobReference, JobReferenceError, parse_job_reference
from bot.diagnosis.classifier import Classifier
from bot.errors import ApiError, ApiPermissionDenied, ApiUnavailable, BotError, JobNotFound
from bot.gcp.job_resource import job_info_from_rest
from bot.intake.log_input import entries_to_lines
from bot.models import Diagnosis, JobInfo
from bot.render.mrkdwn import escape, inline_code, safe_text, truncate
from bot.render.slack_blocks import AlertContext, diagnosis_card
from bot.store import AlertRecord, Store

MAX_LOG_ENTRIES = 1000  # the newest entries are read: a failure (or a NaN) is at the end of the log
ACTIVE_STATES = frozenset(
    {
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_UPDATING",
        "JOB_STATE_PAUSED",
        "JOB_STATE_CANCELLING",
    }
)
PRIVATE_WORD = "private"
BOT_IDENTITY = "trainmedic's service account"
_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
_CHANNEL_ID = re.compile(r"[CG][A-Z0-9]{2,30}")


@dataclass(frozen=True)
class FetchedJob:
    project: str
    region: str
    job_id: str
    raw: dict  # the CustomJob REST dict
    info: JobInfo

    @property
    def job_key(self) -> str:
        return f"{self.project}/{self.job_id}"

    @property
    def name(self) -> str:
        return f"projects/{self.project}/locations/{self.region}/customJobs/{self.job_id}"


@dataclass(frozen=True)
class JobDiagnosis:
    job: FetchedJob
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
        label = self.job.name
        if self.job.info.display_name:
            label += f" ({self.job.info.display_name})"
        label += f", {self.state}"
        if self.active:
            label += ": still running, diagnosed from its logs so far"
        if self.unavailable:
            label += "; could not fetch " + "; ".join(self.unavailable)
        return label


@dataclass(frozen=True)
class DiagnoseRequest:
    """What someone asked for with `/diagnose TEXT` or `@trainmedic diagnose TEXT`."""

    reference: JobReference | None = None
    private: bool = False
    help: bool = False
    error: str | None = None  # the text did not parse: say why


# ------------------------------------------------------------------------------------------------ fetching


def fetch_job(
    jobs: Any, *, project: str, job_id: str, regions: Sequence[str], identity: str = BOT_IDENTITY
) -> FetchedJob:
    """GetCustomJob in each region until one has the job (`identity` names who calls, for error messages).

    Raises:
        JobNotFound: no region has it (the message names the project and regions tried).
        ApiPermissionDenied: the bot may not read jobs (the message names the permission).
        ApiUnavailable / ApiError: Vertex AI failed.
        JobReferenceError: the project, region or id is malformed.
    """
    for region in regions:
        try:
            raw = jobs.get_job_raw(project=project, region=region, job_id=job_id)
        except JobNotFound:
            continue
        except ApiPermissionDenied as exc:
            permission = exc.permission or "aiplatform.customJobs.get"
            raise ApiPermissionDenied(
                f"cannot read custom job {job_id} in project {project} ({region}): "
                f"{identity} lacks {permission} (grant roles/aiplatform.viewer)",
                permission,
            ) from exc
        except ValueError as exc:
            raise JobReferenceError(str(exc)) from exc
        try:
            info = job_info_from_rest(raw, region_hint=region)
        except ValueError as exc:
            raise ApiError(f"Vertex AI returned a CustomJob trainmedic cannot read: {exc}") from exc
        return FetchedJob(project=project, region=region, job_id=job_id, raw=raw, info=info)
    where = ", ".join(regions)
    raise JobNotFound(f"no custom job {job_id} in project {project} (looked in {where})")


class JobDiagnoser:
    """Fetch and classify jobs on demand; everything is injected."""

    def __init__(
        self,
        *,
        jobs: Any,
        logs: Any,
        classifier: Classifier,
        regions: Sequence[str],
        default_project: str | None,
        store: Store | None = None,
        max_entries: int = MAX_LOG_ENTRIES,
        identity: str = BOT_IDENTITY,
    ) -> None:
        self.jobs = jobs
        self.logs = logs
        self.classifier = classifier
        self.regions = list(regions)
        self.default_project = default_project
        self.store = store
        self.max_entries = max_entries
        self.identity = identity

    def diagnose(
        self, reference: JobReference, *, project: str | None = None, region: str | None = None
    ) -> JobDiagnosis:
        """Fetch the job and its logs and classify them.

        Raises:
            JobReferenceError, JobNotFound, ApiPermissionDenied, ApiUnavailable, ApiError: see fetch_job.
        """
        chosen_project, regions = reference.resolve(
            project=project, region=region, default_project=self.default_project, regions=self.regions
        )
        job = fetch_job(
            self.jobs, project=chosen_project, job_id=reference.job_id, regions=regions, identity=self.identity
        )
        entries, unavailable = self._entries(job)
        info = job.info
        if info.project != job.project and not job.project.isdigit():
            # Vertex AI names the job projects/NUMBER/...: keep the project id asked for (the name keeps the number)
            info = info.model_copy(update={"project": job.project})
        diagnosis = self.classifier.classify(entries_to_lines(entries), info)
        context = AlertContext(
            job=info,
            project=job.project,
            region=job.region,
            job_id=job.job_id,
            display_name=job.info.display_name,
            first_failing_replica=diagnosis.first_failing_replica,
            failed_at=job.info.end_time if job.info.state == "JOB_STATE_FAILED" else None,
            unavailable=unavailable,
            job_key=job.job_key,
        )
        return JobDiagnosis(job=job, diagnosis=diagnosis, context=context, unavailable=unavailable)

    def answer(self, request: DiagnoseRequest, *, who: str | None = None) -> dict:
        """The reply to a diagnose request: the diagnosis message, or a clear message saying what went wrong."""
        if request.help or request.reference is None:
            text = request.error or ""
            return _text_message(
                (f":warning: {escape(text)}\n\n" if text else "") + help_text(self.default_project, self.regions)
            )
        try:
            result = self.diagnose(request.reference)
        except (JobReferenceError, ApiError) as exc:
            event(logging.INFO, "diagnose refused", job=request.reference.job_id, who=who, reason=str(exc))
            return problem_message(exc)
        alert = self._alert(result.job.job_key)
        event(
            logging.INFO,
            "diagnosed on demand",
            job_key=result.job.job_key,
            who=who,
            state=result.state,
            failure_class=result.diagnosis.failure_class,
        )
        return diagnosis_reply(result, alert_channel=alert.channel if alert is not None and alert.posted else None)

    def _alert(self, job_key: str) -> AlertRecord | None:
        if self.store is None:
            return None
        try:
            return self.store.get_alert(job_key)
        except BotError:  # the pointer to the alert is a nicety: answer without it
            return None

    def _entries(self, job: FetchedJob) -> tuple[list[dict], list[str]]:
        if self.logs is None:
            return [], ["the job's logs: no Cloud Logging client configured"]
        try:
            return self.logs.job_entries(project=job.project, job_id=job.job_id, max_entries=self.max_entries), []
        except ApiPermissionDenied as exc:
            permission = exc.permission or "logging.logEntries.list"
            return [], [f"the job's logs: {self.identity} lacks {permission} (roles/logging.viewer)"]
        except ApiError as exc:
            return [], [f"the job's logs: {exc}"]


# ------------------------------------------------------------------------------------------------ requests


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


# ------------------------------------------------------------------------------------------------ replies


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
    return _text_message(text)


def _text_message(text: str) -> dict:
    plain = re.sub(r"<#([A-Z0-9]+)>", r"#\1", text)
    return {"text": truncate(plain, 3000), "blocks": [_section(text)]}


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, 3000)}}


def _context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": truncate(text, 3000)}]}


# ------------------------------------------------------------------------------------------------ the CLI


def diagnose_remote_job(
    job_ref: str,
    *,
    project: str | None,
    region: str | None,
    knowledge: Path | None,
    environ: Mapping[str, str],
) -> tuple[Diagnosis, str, JobInfo]:
    """`trainmedic diagnose --job`: fetch and diagnose a real job with Application Default Credentials.

    VERTEX_API_ENDPOINT / LOGGING_API_ENDPOINT (and TRAINMEDIC_CONFIG for the default project and regions)
    are honoured. Returns the diagnosis, a line describing the job and the job's facts it used.
    """
    from bot.config import load_routing, load_settings_for_tools
    from bot.diagnosis.knowledge import load_knowledge
    from bot.gcp.cloud_logs import CloudLoggingClient
    from bot.gcp.vertex_jobs import VertexJobsClient

    settings = load_settings_for_tools(environ)
    routing = load_routing(settings.TRAINMEDIC_CONFIG)
    reference = parse_job_reference(job_ref)
    default_project = routing.default_project or settings.GOOGLE_CLOUD_PROJECT
    if not (project or reference.project or default_project):
        default_project = _adc_project()
    diagnoser = JobDiagnoser(
        jobs=VertexJobsClient(endpoint=settings.VERTEX_API_ENDPOINT),
        logs=CloudLoggingClient(endpoint=settings.LOGGING_API_ENDPOINT),
        classifier=LedgerClassifier(Classifier(load_knowledge(knowledge))),
        regions=routing.regions,
        default_project=default_project,
        identity="the account of your Application Default Credentials",
    )
    try:
        result = diagnoser.diagnose(reference, project=project, region=region)
    except ApiError as exc:
        if _credentials_missing(exc):
            raise ApiError(
                f"{exc}\nNo Application Default Credentials: run `gcloud auth application-default login`"
            ) from exc
        raise
    return result.diagnosis, result.source_label(), result.context.job


def _adc_project() -> str | None:
    """The project of the Application Default Credentials (gcloud's), if any."""
    try:
        import google.auth

        return google.auth.default()[1]
    except Exception:  # no credentials, or none that name a project: the caller asks for --project
        return None


def _credentials_missing(exc: BaseException) -> bool:
    from google.auth.exceptions import DefaultCredentialsError

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, DefaultCredentialsError):
            return True
        cause = cause.__cause__
    return False
