"""Jobs that were never created: Vertex AI create calls refused, read from the Admin Activity audit log.

A sink on the audit log (always on) sends failed `Create*Job` / `CreateTrainingPipeline` calls of the v1, v1beta1
and ui job and pipeline services: `protoPayload.serviceName="aiplatform.googleapis.com"`, a non-zero
`protoPayload.status.code`, `resource.type="audited_resource"`. The region is read from `protoPayload.resourceName`
(`projects/P/locations/R...`); the caller from `authenticationInfo.principalEmail` (absent for some callers: the
alert then goes to the routed or default channel). Whether the entry carries the request (`request.customJob`
with its labels and spec) is not confirmed by Google's documentation: when it does, the alert is routed by the
request's labels and its commands use the spec (accelerators x replicas for a quota request); when not, both fall
back to what the status message says.

One alert per distinct refusal (caller, method, message) and day: a CI loop retrying every minute posts once.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any

from bot.errors import InvalidPushMessage
from bot.gcp.job_resource import job_info_from_rest
from bot.intake.audit_entry import PERMISSION_DENIED, refused_checks
from bot.jobs.identity import PROJECT, REGION, JobKind, JobRef, is_valid
from bot.jobs.lookup import JobLookup, Lookup
from bot.models import JobInfo
from bot.sources.base import Gate, Irrelevant, Sighting, Subject

SERVICE = "aiplatform.googleapis.com"
RESOURCE_TYPE = "audited_resource"
# google.cloud.aiplatform.{v1,v1beta1,ui}.{JobService,PipelineService}.<a training create call>
CREATE_METHOD = re.compile(
    r"google\.cloud\.aiplatform\.(?:v1|v1beta1|ui)\.(?:JobService|PipelineService)\."
    r"(?P<call>CreateCustomJob|CreateHyperparameterTuningJob|CreatePipelineJob|CreateTrainingPipeline)$"
)
_LOCATION = re.compile(r"^projects/[^/]+/locations/([^/]+)")
_REQUEST_JOBS = ("customJob", "pipelineJob", "hyperparameterTuningJob", "trainingPipeline")
LABEL_PRINCIPAL = "trainmedic/refused_by"
LABEL_METHOD = "trainmedic/refused_call"


class AuditLogSource:
    name = "audit_log"

    def recognise(self, data: Any, *, message_id: str | None) -> Sighting | None:
        proto = data.get("protoPayload") if isinstance(data, dict) else None
        if not isinstance(proto, dict) or proto.get("serviceName") != SERVICE:
            return None
        method = CREATE_METHOD.search(str(proto.get("methodName", "")))
        if method is None:
            raise Irrelevant(f"audit entry for {str(proto.get('methodName'))[:120]!r}, not a job creation")
        status = proto.get("status") if isinstance(proto.get("status"), dict) else {}
        code = status.get("code")
        if not code:
            raise Irrelevant("a job creation that succeeded")
        message = str(status.get("message") or f"{method['call']} refused with code {code}")
        resource = data.get("resource") if isinstance(data.get("resource"), dict) else {}
        labels = resource.get("labels") if isinstance(resource.get("labels"), dict) else {}
        project = str(labels.get("project_id", ""))
        if not is_valid(project, PROJECT):
            raise InvalidPushMessage(f"audit entry without a valid resource.labels.project_id: {project[:80]!r}")
        principal = _principal(proto)
        day = _day(data.get("timestamp") or data.get("receiveTimestamp"))
        digest = hashlib.sha256(f"{principal}|{method['call']}|{message}".encode()).hexdigest()[:16]
        ref = JobRef(project=project, id=f"{digest}-{day}", kind=JobKind.REFUSAL, region=_region(proto))
        entry_labels = {LABEL_METHOD: method["call"]}
        if principal:
            entry_labels[LABEL_PRINCIPAL] = principal
        entry = {
            "insertId": data.get("insertId") or message_id or digest,
            "logName": data.get("logName"),
            "resource": {"type": RESOURCE_TYPE, "labels": {"project_id": project, "task_name": "service"}},
            "labels": entry_labels,
            "severity": "ERROR",
            "textPayload": "\n".join([message, *(refused_checks(proto) if code == PERMISSION_DENIED else [])]),
            "timestamp": data.get("timestamp"),
        }
        job = refused_job(ref, _request_job(proto), principal)
        return Sighting(ref=ref, entry=entry, marks_failure=True, job=job)

    def marks_failure(self, entry: dict) -> bool:
        return isinstance(entry.get("labels"), dict) and LABEL_METHOD in entry["labels"]

    def gate(self, ref: JobRef, lookup: Lookup, failed_marker: bool) -> Gate:
        return Gate("post")  # the refusal is the failure: there is no job to wait for

    def subject(self, sighting: Sighting, lookup: Lookup, jobs: JobLookup, *, deadline: Any) -> Subject:
        return Subject(job=sighting.job, logs_of=None, notify_email=sighting.job.submitted_by if sighting.job else None)


def refused_job(ref: JobRef, request: dict | None, principal: str | None) -> JobInfo:
    """What the refused request said of the job (its spec and labels when the entry carried them), with the
    project and region of the call and the caller."""
    job = JobInfo()
    if isinstance(request, dict):
        try:
            job = job_info_from_rest({k: v for k, v in request.items() if k != "name"})
        except ValueError:
            job = JobInfo()
    return job.model_copy(
        update={
            "project": ref.project,
            "region": ref.region,
            "submitted_by": principal,
            "display_name": job.display_name or "job creation refused",
        }
    )


def _principal(proto: dict) -> str | None:
    info = proto.get("authenticationInfo") if isinstance(proto.get("authenticationInfo"), dict) else {}
    email = info.get("principalEmail")
    return email if isinstance(email, str) and "@" in email and len(email) <= 254 else None


def _region(proto: dict) -> str | None:
    match = _LOCATION.match(str(proto.get("resourceName", "")))
    return match.group(1) if match and is_valid(match.group(1), REGION) else None


def _request_job(proto: dict) -> dict | None:
    request = proto.get("request") if isinstance(proto.get("request"), dict) else {}
    for key in _REQUEST_JOBS:
        if isinstance(request.get(key), dict):
            return request[key]
    return None


def _day(timestamp: Any) -> str:
    try:
        moment = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        moment = datetime.now(UTC)
    return moment.astimezone(UTC).strftime("%Y%m%d")
