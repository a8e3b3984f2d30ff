"""Parse what people type to name a Vertex AI job (pure; no I/O). The id formats are bot.jobs.identity's.

Accepted forms:
    8501620632646057984                                              the numeric CustomJob id
    acme-ml/8501620632646057984                                      PROJECT/JOB_ID (the store's job key)
    projects/acme-ml/locations/us-central1/customJobs/8501620632646057984
    https://console.cloud.google.com/vertex-ai/locations/us-central1/training/8501620632646057984?project=acme-ml
    .../training/8501620632646057984/cpu?project=acme-ml             (and other tabs of the job's page)
    https://console.cloud.google.com/logs/viewer?project=acme-ml&resource=ml_job%2Fjob_id%2F8501620632646057984
A Vertex AI Pipelines run (PipelineJob):
    pipelineJobs/train-pipeline-20261130101500                       (or PROJECT/pipelineJobs/ID, the store's key)
    train-pipeline-20261130101500                                    a bare id as the SDK generates it (NAME-TIMESTAMP)
    projects/acme-ml/locations/us-central1/pipelineJobs/train-pipeline-20261130101500
    https://console.cloud.google.com/vertex-ai/locations/us-central1/pipelines/runs/train-pipeline-2026...?project=P
Slack may wrap a pasted link as `<url>` or `<url|label>` and escape `&` as `&amp;`; both are undone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from bot.errors import BotError
from bot.jobs.identity import (
    CUSTOM_JOB_ID,
    PIPELINE_JOB_ID,
    PROJECT,
    REGION,
    RESOURCE_NAME,
    JobIdError,
    JobKind,
    JobRef,
    parse_resource_name,
    shown,
)

_CONSOLE_PATH = re.compile(r"/vertex-ai/locations/([^/]+)/training/([^/]+)(?:/[a-z-]*)?/?")
_CONSOLE_PIPELINE = re.compile(r"/vertex-ai/(?:locations/([^/]+)/)?pipelines/runs/([^/]+)(?:/[a-z-]*)?/?")
# The SDK's generated PipelineJob id: the pipeline name and a timestamp (a bare id without it may be a display name).
_GENERATED_PIPELINE_ID = re.compile(r"[a-z0-9][a-z0-9-]*-[0-9]{14}")
_PIPELINE_PREFIX = JobKind.PIPELINE_JOB.value + "/"
_LOGS_RESOURCE = re.compile(r"ml_job/job_id/([0-9]+)")
_LOGS_QUERY = re.compile(r'resource\.labels\.job_id\s*=\s*"?([0-9]+)"?')
_CONSOLE_HOSTS = ("console.cloud.google.com", "pantheon.corp.google.com")
USAGE = (
    "a numeric job id, PROJECT/JOB_ID, projects/PROJECT/locations/REGION/customJobs/JOB_ID, "
    "pipelineJobs/PIPELINE_JOB_ID, or the job's (or pipeline run's) Cloud Console URL"
)


class JobReferenceError(BotError, ValueError):
    """The text does not name a job; the message says what was expected."""


@dataclass(frozen=True)
class JobReference:
    """A job as named by a person: the id always, the project and region when the reference carried them."""

    job_id: str
    project: str | None = None
    region: str | None = None
    kind: JobKind = JobKind.CUSTOM_JOB

    def ref(self, project: str, region: str | None = None) -> JobRef:
        """The JobRef in `project` (and `region`, when chosen); JobReferenceError when a part is malformed."""
        try:
            return JobRef(project=project, id=self.job_id, kind=self.kind, region=region or self.region)
        except JobIdError as exc:
            raise JobReferenceError(str(exc)) from None

    def resolve(
        self,
        *,
        project: str | None = None,
        region: str | None = None,
        default_project: str | None = None,
        regions: Sequence[str] = (),
    ) -> tuple[str, list[str]]:
        """The project and the regions to look in, most specific first.

        An explicit `project`/`region` (a CLI flag) wins over what the reference carries, which wins over
        the configured defaults.

        Raises:
            JobReferenceError: no project is known, or a given project or region is malformed.
        """
        chosen_project = project or self.project or default_project
        if not chosen_project:
            raise JobReferenceError(
                f"job {self.job_id}: which project? Give projects/PROJECT/locations/REGION/customJobs/{self.job_id} "
                "or PROJECT/JOB_ID (no default_project is configured)"
            )
        _check(chosen_project, PROJECT, "project")
        chosen_region = region or self.region
        if chosen_region:
            _check(chosen_region, REGION, "region")
            return chosen_project, [chosen_region]
        if not regions:
            raise JobReferenceError(f"job {self.job_id}: which region? No regions are configured")
        return chosen_project, list(dict.fromkeys(regions))


def parse_job_reference(text: str) -> JobReference:
    """Parse one job reference (see the module docstring).

    Raises:
        JobReferenceError: the text is none of the accepted forms, or a part of it is malformed.
    """
    raw = _unwrap_slack_link(text.strip())
    if not raw:
        raise JobReferenceError(f"no job given: expected {USAGE}")
    if raw.startswith(("http://", "https://")):
        return _from_url(raw)
    if raw.startswith("projects/"):
        return _from_name(raw)
    if raw.startswith(_PIPELINE_PREFIX):
        return _pipeline(raw[len(_PIPELINE_PREFIX) :])
    if "/" in raw:
        project, _, rest = raw.partition("/")
        _check(project, PROJECT, "project")
        if rest.startswith(_PIPELINE_PREFIX):
            return _pipeline(rest[len(_PIPELINE_PREFIX) :], project=project)
        return JobReference(job_id=_job_id(rest), project=project)
    if _GENERATED_PIPELINE_ID.fullmatch(raw):
        return _pipeline(raw)
    return JobReference(job_id=_job_id(raw))


def _pipeline(job_id: str, *, project: str | None = None, region: str | None = None) -> JobReference:
    _check(job_id, PIPELINE_JOB_ID, "pipeline job id")
    return JobReference(job_id=job_id, project=project, region=region, kind=JobKind.PIPELINE_JOB)


def _unwrap_slack_link(text: str) -> str:
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1].split("|", 1)[0]
    return text.replace("&amp;", "&")


def _from_name(name: str) -> JobReference:
    match = RESOURCE_NAME.fullmatch(name)
    if match is None:
        raise JobReferenceError(
            f"{_shown(name)} is not a CustomJob resource name (nor a PipelineJob one): expected {USAGE}"
        )
    project, region, _, _ = match.groups()
    _check(project, PROJECT, "project")
    _check(region, REGION, "region")
    try:
        ref = parse_resource_name(name)
    except JobIdError as exc:
        raise JobReferenceError(str(exc)) from None
    return JobReference(job_id=ref.id, project=ref.project, region=ref.region, kind=ref.kind)


def _from_url(url: str) -> JobReference:
    parts = urlsplit(url)
    if parts.hostname not in _CONSOLE_HOSTS:
        raise JobReferenceError(f"{_shown(url)} is not a Cloud Console link: expected {USAGE}")
    query = parse_qs(parts.query)
    project = (query.get("project") or [None])[0]
    if project is not None:
        _check(project, PROJECT, "project")
    path = unquote(parts.path)
    pipeline = _CONSOLE_PIPELINE.fullmatch(path)
    if pipeline is not None:
        region, job_id = pipeline.groups()
        if region is not None:
            _check(region, REGION, "region")
        return _pipeline(job_id, project=project, region=region)
    console = _CONSOLE_PATH.fullmatch(path)
    if console is not None:
        region, job_id = console.groups()
        _check(region, REGION, "region")
        return JobReference(job_id=_job_id(job_id), project=project, region=region)
    if path.startswith("/logs/"):
        job_id = _job_in_logs_link(query, path)
        if job_id is not None:
            return JobReference(job_id=job_id, project=project)
    raise JobReferenceError(
        f"{_shown(url)} does not link to one custom job: open the job in the console "
        "(Vertex AI > Training > Custom jobs > the job) and copy that page's link"
    )


def _job_in_logs_link(query: dict[str, list[str]], path: str) -> str | None:
    for resource in query.get("resource", []):
        match = _LOGS_RESOURCE.fullmatch(resource)
        if match:
            return match.group(1)
    for text in [*query.get("advancedFilter", []), *query.get("query", []), path]:
        match = _LOGS_QUERY.search(text)
        if match:
            return match.group(1)
    return None


def _job_id(value: str) -> str:
    if not CUSTOM_JOB_ID.fullmatch(value):
        raise JobReferenceError(
            f"{_shown(value)} is not a custom job id: ids are numbers such as 8501620632646057984 "
            "(display names cannot be looked up; for a pipeline run give pipelineJobs/ID or its console link)"
        )
    return value


def _check(value: str, pattern: re.Pattern[str], what: str) -> None:
    if not pattern.fullmatch(value):
        raise JobReferenceError(f"{_shown(value)} is not a valid {what}")


_shown = shown
