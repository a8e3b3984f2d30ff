"""A job's identity: which project, region and kind of Vertex AI job, and its id — the one place id formats live.

Every layer passes a `JobRef`; strings appear only at the edges, printed and parsed here:

    key             the store's and Slack metadata's form: `PROJECT/JOB_ID` for a CustomJob (the form stored alerts
                    already carry), `PROJECT/pipelineJobs/ID` for a PipelineJob, `PROJECT/incident-ID` for a Cloud
                    Monitoring incident that names no job
    resource name   `projects/PROJECT/locations/REGION/customJobs/ID` (or `pipelineJobs/ID`)

The region is part of the identity only when it is known: a CustomJob's log entries do not carry it, so the job
lookup (bot.jobs.lookup) finds it by searching the configured regions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum

# A project id (also the legacy "example.com:name" form) or a project number.
PROJECT = re.compile(r"(?:[a-z0-9.-]+:)?[a-z][a-z0-9-]{1,61}[a-z0-9]|[0-9]{1,20}")
REGION = re.compile(r"[a-z]+-[a-z]+[0-9]{1,2}")
CUSTOM_JOB_ID = re.compile(r"[0-9]{1,30}")
# PipelineJob ids are chosen by the submitter (or generated from the pipeline name and a timestamp): RFC 1035-like.
PIPELINE_JOB_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,127}")
INCIDENT_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
# A refused create call (no job exists): a digest of who asked for what and why, and the day it was refused.
REFUSAL_ID = re.compile(r"[0-9a-f]{16}-[0-9]{8}")
_INCIDENT_PREFIX = "incident-"
RESOURCE_NAME = re.compile(r"projects/([^/]+)/locations/([^/]+)/(customJobs|pipelineJobs)/([^/?#]+)/?")


class JobKind(StrEnum):
    """What kind of thing an alert is about; the value is the REST collection name where there is one."""

    CUSTOM_JOB = "customJobs"
    PIPELINE_JOB = "pipelineJobs"
    INCIDENT = "incident"  # a Monitoring incident that names no job
    REFUSAL = "refusals"  # a create call Vertex AI refused: no job exists


_ID_FORMAT = {
    JobKind.CUSTOM_JOB: CUSTOM_JOB_ID,
    JobKind.PIPELINE_JOB: PIPELINE_JOB_ID,
    JobKind.INCIDENT: INCIDENT_ID,
    JobKind.REFUSAL: REFUSAL_ID,
}
_ID_EXAMPLE = {
    JobKind.CUSTOM_JOB: "custom job ids are numbers such as 8501620632646057984",
    JobKind.PIPELINE_JOB: "pipeline job ids are lowercase letters, digits and dashes",
    JobKind.INCIDENT: "incident ids are letters, digits, '.', '_' and '-'",
    JobKind.REFUSAL: "refusal ids are 16 hex digits, '-' and a date",
}


class JobIdError(ValueError):
    """A project, region or id does not have its format; the message says which and what was given."""


@dataclass(frozen=True)
class JobRef:
    """One job: its project (id or number), kind and id, and its region when known. Validated when built."""

    project: str
    id: str
    kind: JobKind = JobKind.CUSTOM_JOB
    region: str | None = None

    def __post_init__(self) -> None:
        check(self.project, PROJECT, "project")
        check(self.id, _ID_FORMAT[self.kind], f"{self.kind.name.lower().replace('_', ' ')} id")
        if self.region is not None:
            check(self.region, REGION, "region")

    @property
    def key(self) -> str:
        """The store's key for the job's alert (see the module docstring)."""
        if self.kind is JobKind.CUSTOM_JOB:
            return f"{self.project}/{self.id}"
        if self.kind is JobKind.INCIDENT:
            return f"{self.project}/{_INCIDENT_PREFIX}{self.id}"
        return f"{self.project}/{self.kind.value}/{self.id}"

    @property
    def resource_name(self) -> str:
        """`projects/P/locations/R/<collection>/ID`; ValueError when the region is unknown or it is no job."""
        if not self.is_job or self.region is None:
            raise JobIdError(f"{self.key}: no resource name without a region")
        return f"projects/{self.project}/locations/{self.region}/{self.kind.value}/{self.id}"

    @property
    def is_job(self) -> bool:
        """A Vertex AI resource that can be fetched (not an incident naming no job, nor a refused create)."""
        return self.kind in (JobKind.CUSTOM_JOB, JobKind.PIPELINE_JOB)

    def in_region(self, region: str) -> JobRef:
        return replace(self, region=region)

    def __str__(self) -> str:
        return self.key


def custom_job(project: str, job_id: str, region: str | None = None) -> JobRef:
    return JobRef(project=project, id=job_id, kind=JobKind.CUSTOM_JOB, region=region)


def pipeline_job(project: str, job_id: str, region: str | None = None) -> JobRef:
    return JobRef(project=project, id=job_id, kind=JobKind.PIPELINE_JOB, region=region)


def incident(project: str, incident_id: str) -> JobRef:
    return JobRef(project=project, id=incident_id, kind=JobKind.INCIDENT)


def parse_key(key: str) -> JobRef:
    """The JobRef a store key names (the inverse of JobRef.key).

    Raises:
        JobIdError: not a key of any kind, or a part of it is malformed.
    """
    project, sep, rest = key.partition("/")
    if not sep or not rest:
        raise JobIdError(f"{shown(key)} is not a job key (PROJECT/JOB_ID)")
    kind_name, sep, job_id = rest.partition("/")
    if sep:
        kinds = {kind.value: kind for kind in JobKind if kind is not JobKind.INCIDENT}  # "P/refusals/ID" too
        if kind_name not in kinds:
            raise JobIdError(f"{shown(key)} is not a job key: unknown kind {shown(kind_name)}")
        return JobRef(project=project, id=job_id, kind=kinds[kind_name])
    if rest.startswith(_INCIDENT_PREFIX):
        return incident(project, rest[len(_INCIDENT_PREFIX) :])
    return custom_job(project, rest)


def location_name(project: str, region: str) -> str:
    """`projects/P/locations/R`, the parent of a region's jobs; ValueError naming the part that is malformed."""
    if not is_valid(project, PROJECT):
        raise JobIdError(f"not a project id or number: {project!r}")
    if not is_valid(region, REGION):
        raise JobIdError(f"not a region: {region!r}")
    return f"projects/{project}/locations/{region}"


def key_kind(key: str) -> JobKind:
    """The kind of job a store key names, by its shape alone (rendering must not fail on a key it cannot parse: a
    key that is no other kind's is a CustomJob's)."""
    rest = key.partition("/")[2]
    if rest.startswith(_INCIDENT_PREFIX):
        return JobKind.INCIDENT
    collection = rest.partition("/")[0] if "/" in rest else ""
    return next((kind for kind in JobKind if kind.value == collection), JobKind.CUSTOM_JOB)


def parse_resource_name(name: str) -> JobRef:
    """The JobRef of `projects/P/locations/R/customJobs/ID` or `.../pipelineJobs/ID`.

    Raises:
        JobIdError: not such a resource name, or a part of it is malformed.
    """
    match = RESOURCE_NAME.fullmatch(name)
    if match is None:
        raise JobIdError(f"{shown(name)} is not a CustomJob or PipelineJob resource name")
    project, region, collection, job_id = match.groups()
    return JobRef(project=project, id=job_id, kind=JobKind(collection), region=region)


def is_valid(value: str, pattern: re.Pattern[str]) -> bool:
    return pattern.fullmatch(value) is not None


def check(value: str, pattern: re.Pattern[str], what: str) -> None:
    if not isinstance(value, str) or pattern.fullmatch(value) is None:
        hint = next((_ID_EXAMPLE[kind] for kind, p in _ID_FORMAT.items() if p is pattern), None)
        raise JobIdError(f"{shown(str(value))} is not a valid {what}" + (f": {hint}" if hint else ""))


def shown(value: str) -> str:
    """A short, quoted rendering of untrusted input for error messages."""
    return repr(value if len(value) <= 80 else value[:77] + "...")
