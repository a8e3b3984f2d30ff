"""A local server speaking the two Google REST APIs trainmedic reads: Vertex AI v1 CustomJobs and Logging v2.

    google = FakeGoogleApis().start()
    google.seed_job(custom_job_json("p", "us-central1", "123", state="JOB_STATE_FAILED"))
    google.seed_log_entries([log_entry("p", "123", "Job failed.")])
    google.inject(status=403, job_id="123")        # faults: per job id, per API, or for everything
    VertexJobsClient(endpoint=google.base_url) / CloudLoggingClient(endpoint=google.base_url)

Served routes:
    GET  /v1/projects/{p}/locations/{l}/customJobs/{id}   the seeded job (404 if none)
    GET  /v1/projects/{p}/locations/{l}/customJobs        customJobs.list: `filter` (display_name, state,
                                                          create_time, labels.K; = != < > <= >=; AND, OR
                                                          binding tighter, parentheses), pageSize (default
                                                          and max 100 here), pageToken / nextPageToken
    POST /v1/projects/{p}/locations/{l}/customJobs        creates a job with a new numeric id
    GET  /v1/projects/{p}/locations/{l}/pipelineJobs/{id} the seeded PipelineJob (404 if none)
    POST /v1/projects/{p}/locations/{l}/pipelineJobs?pipelineJobId=ID  creates a PipelineJob (409 if it exists)
    GET  /v1/projects/{p}/locations/{l}/pipelineJobs      pipelineJobs.list, filtered and paged like customJobs.list
    POST /v2/entries:list                                 seeded entries matching the filter (comparisons joined
                                                          by AND: =, !=, <, >, <=, >=, : on dotted fields)
    GET  /v1/projects/{p}/locations/global/services/{s}/quotaInfos   Cloud Quotas quotaInfos.list: the seeded
                                                          QuotaInfos of that project and service, pageSize /
                                                          pageToken / nextPageToken
Like the real API, enums are sent as numbers when the query asks for `$alt=json;enum-encoding=int`
(the generated clients always do).
"""

from __future__ import annotations

import copy
import itertools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from standins.http_server import LocalHttpServer, RecordedRequest, Reply

_QUOTA_INFOS_PATH = re.compile(
    r"^/v1/projects/(?P<project>[^/]+)/locations/global/services/(?P<service>[^/]+)/quotaInfos$"
)
_JOB_PATH = re.compile(
    r"^/v1/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/customJobs(?:/(?P<job_id>[^/:]+))?$"
)
_PIPELINE_PATH = re.compile(
    r"^/v1/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/pipelineJobs(?:/(?P<job_id>[^/:]+))?$"
)
# one comparison of Logging's query language: a dotted field, an operator, a quoted string or a bare number
_LOG_TERM = re.compile(
    r'^(?P<field>[A-Za-z_][\w.]*)\s*(?P<op><=|>=|!=|=|<|>|:)\s*(?:"(?P<text>[^"]*)"|(?P<number>-?\d+))$'
)

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_JOB_STATE_NUMBERS = {
    "JOB_STATE_UNSPECIFIED": 0,
    "JOB_STATE_QUEUED": 1,
    "JOB_STATE_PENDING": 2,
    "JOB_STATE_RUNNING": 3,
    "JOB_STATE_SUCCEEDED": 4,
    "JOB_STATE_FAILED": 5,
    "JOB_STATE_CANCELLING": 6,
    "JOB_STATE_CANCELLED": 7,
}
_STRATEGY_NUMBERS = {
    "STRATEGY_UNSPECIFIED": 0,
    "ON_DEMAND": 1,
    "LOW_COST": 2,
    "STANDARD": 3,
    "SPOT": 4,
    "FLEX_START": 6,
}
_ACCELERATOR_NUMBERS = {
    "ACCELERATOR_TYPE_UNSPECIFIED": 0,
    "NVIDIA_TESLA_V100": 3,
    "NVIDIA_TESLA_T4": 5,
    "NVIDIA_TESLA_A100": 8,
    "NVIDIA_A100_80GB": 9,
    "NVIDIA_L4": 11,
    "NVIDIA_H100_80GB": 13,
}


def google_error_body(status: int, message: str, *, permission: str | None = None, domain: str = "") -> dict:
    """An error body the way Google's REST APIs send one (google.rpc.Status as JSON)."""
    error: dict[str, Any] = {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN")}
    if permission:
        error["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "IAM_PERMISSION_DENIED",
                "domain": domain or "iam.googleapis.com",
                "metadata": {"permission": permission},
            }
        ]
    return {"error": error}


def pipeline_job_json(
    project: str, region: str, job_id: str, *, failed_tasks: dict[str, str] | None = None, **fields: Any
) -> dict:
    """A PipelineJob REST dict: a failed run whose `failed_tasks` (task name -> CustomJob id) ran as CustomJobs,
    after a task that succeeded; `fields` override top-level keys."""
    tasks: list[dict] = [
        {
            "taskId": "1",
            "taskName": "prepare-data",
            "state": "SUCCEEDED",
            "executorDetail": {
                "containerDetail": {"mainJob": f"projects/{project}/locations/{region}/customJobs/1111"}
            },
        },
    ]
    for index, (task, custom_job_id) in enumerate((failed_tasks or {}).items(), start=2):
        tasks.append(
            {
                "taskId": str(index),
                "taskName": task,
                "state": "FAILED",
                "error": {"code": 9, "message": "The replica workerpool0-0 exited with a non-zero status of 1."},
                "executorDetail": {
                    "containerDetail": {"mainJob": f"projects/{project}/locations/{region}/customJobs/{custom_job_id}"}
                },
            }
        )
    failed = ", ".join(failed_tasks or {})
    job = {
        "name": f"projects/{project}/locations/{region}/pipelineJobs/{job_id}",
        "displayName": job_id.rsplit("-", 1)[0],
        "state": "PIPELINE_STATE_FAILED",
        "error": {"code": 9, "message": f"The DAG failed because some tasks failed. The failed tasks are: [{failed}]."},
        "labels": {"team": "vision", "vertex-ai-pipelines-run-billing-id": "4242"},
        "serviceAccount": f"pipelines@{project}.iam.gserviceaccount.com",
        "pipelineSpec": {"pipelineInfo": {"name": job_id.rsplit("-", 1)[0]}, "root": {"dag": {"tasks": {}}}},
        "runtimeConfig": {"gcsOutputDirectory": f"gs://{project}-pipelines/{job_id}"},
        "jobDetail": {"taskDetails": tasks},
        "createTime": "2026-02-23T23:40:00Z",
        "startTime": "2026-02-23T23:41:00Z",
        "endTime": "2026-02-23T23:58:00Z",
    }
    job.update(fields)
    return job


def pipeline_event(project: str, region: str, job_id: str, state: str, *, insert_id: str | None = None) -> dict:
    """A Vertex AI Pipelines state-change LogEntry, as the sink delivers it."""
    return {
        "insertId": insert_id or f"{job_id}-{state}",
        "logName": f"projects/{project}/logs/aiplatform.googleapis.com%2Fpipeline_job_events",
        "resource": {
            "type": "aiplatform.googleapis.com/PipelineJob",
            "labels": {"resource_container": project, "location": region, "pipeline_job_id": job_id},
        },
        "severity": "ERROR" if state.endswith("FAILED") else "INFO",
        "jsonPayload": {"state": state},
        "timestamp": "2026-02-23T23:58:00Z",
    }


def refused_create(
    project: str,
    region: str,
    message: str,
    *,
    code: int = 8,
    caller: str | None = None,
    request_job: dict | None = None,
    method: str = "google.cloud.aiplatform.v1.JobService.CreateCustomJob",
    insert_id: str = "audit-1",
    timestamp: str = "2026-11-30T10:00:00Z",
) -> dict:
    """An Admin Activity audit-log entry of a Vertex AI create call that was refused, as a sink delivers it."""
    proto: dict[str, Any] = {
        "@type": "type.googleapis.com/google.cloud.audit.AuditLog",
        "status": {"code": code, "message": message},
        "serviceName": "aiplatform.googleapis.com",
        "methodName": method,
        "resourceName": f"projects/{project}/locations/{region}",
    }
    if caller is not None:
        proto["authenticationInfo"] = {"principalEmail": caller}
    if request_job is not None:
        proto["request"] = {
            "@type": "type.googleapis.com/google.cloud.aiplatform.v1.CreateCustomJobRequest",
            "customJob": request_job,
        }
    return {
        "insertId": insert_id,
        "logName": f"projects/{project}/logs/cloudaudit.googleapis.com%2Factivity",
        "protoPayload": proto,
        "resource": {
            "type": "audited_resource",
            "labels": {"project_id": project, "service": "aiplatform.googleapis.com", "method": method},
        },
        "severity": "ERROR",
        "timestamp": timestamp,
    }


def custom_job_json(project: str, region: str, job_id: str, **fields: Any) -> dict:
    """A realistic CustomJob REST dict (a failed single-GPU container job); `fields` override top-level keys."""
    job = {
        "name": f"projects/{project}/locations/{region}/customJobs/{job_id}",
        "displayName": f"train-{job_id}",
        "state": "JOB_STATE_FAILED",
        "error": {"code": 3, "message": "The replica workerpool0-0 exited with a non-zero status of 1."},
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {
                        "machineType": "a2-highgpu-1g",
                        "acceleratorType": "NVIDIA_TESLA_A100",
                        "acceleratorCount": 1,
                    },
                    "replicaCount": "1",
                    "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
                    "containerSpec": {"imageUri": "us-docker.pkg.dev/p/train/trainer:1", "args": ["--epochs=3"]},
                }
            ],
            "serviceAccount": f"trainer@{project}.iam.gserviceaccount.com",
            "baseOutputDirectory": {"outputUriPrefix": f"gs://{project}-out/{job_id}"},
        },
        "labels": {"team": "vision"},
        "createTime": "2026-02-23T23:40:00.123456Z",
        "startTime": "2026-02-23T23:45:00.123456789Z",
        "endTime": "2026-02-23T23:54:06Z",
        "updateTime": "2026-02-23T23:54:06Z",
    }
    job.update(fields)
    return job


def log_entry(
    project: str,
    job_id: str,
    text: str,
    *,
    timestamp: str = "2026-02-23T23:54:05.123456789Z",
    task_name: str = "service",
    severity: str = "INFO",
    insert_id: str | None = None,
    json_payload: dict | None = None,
) -> dict:
    """A LogEntry REST dict for a custom job (textPayload, or jsonPayload when given)."""
    entry: dict[str, Any] = {
        "insertId": insert_id or f"{job_id}-{timestamp}",
        "logName": f"projects/{project}/logs/aiplatform.googleapis.com%2Fcustom_job",
        "resource": {
            "type": "ml_job",
            "labels": {"project_id": project, "job_id": job_id, "task_name": task_name},
        },
        "severity": severity,
        "timestamp": timestamp,
        "receiveTimestamp": timestamp,
    }
    if json_payload is not None:
        entry["jsonPayload"] = json_payload
    else:
        entry["textPayload"] = text
    return entry


def refused_call_entry(
    project: str,
    principal: str,
    *,
    service: str,
    method: str,
    checks: list[tuple[str, str]],
    timestamp: str = "2026-02-23T23:54:04.5Z",
    message: str = "PERMISSION_DENIED",
    insert_id: str | None = None,
) -> dict:
    """A Cloud Audit Logs entry of a call IAM refused (status 7): one authorizationInfo per (permission, resource)
    check, `granted` left out as proto3 JSON leaves a false boolean out."""
    log = "data_access" if method.split(".")[-1].startswith(("get", "list", "access", "read")) else "activity"
    return {
        "insertId": insert_id or f"audit-{method}-{timestamp}",
        "logName": f"projects/{project}/logs/cloudaudit.googleapis.com%2F{log}",
        "resource": {"type": "audited_resource", "labels": {"project_id": project, "service": service}},
        "severity": "ERROR",
        "timestamp": timestamp,
        "receiveTimestamp": timestamp,
        "protoPayload": {
            "@type": "type.googleapis.com/google.cloud.audit.AuditLog",
            "status": {"code": 7, "message": message},
            "authenticationInfo": {"principalEmail": principal},
            "serviceName": service,
            "methodName": method,
            "authorizationInfo": [{"permission": permission, "resource": resource} for permission, resource in checks],
        },
    }


@dataclass
class Fault:
    status: int | None = None  # None: answer normally (after the delay)
    delay: float = 0.0
    times: int | None = None  # None: every matching call
    job_id: str | None = None  # None: any job (and the logs API)
    api: str | None = None  # "vertex", "logging", "quotas" or None for all
    message: str | None = None
    permission: str | None = None
    error_info: bool = True  # a 403 body carries a google.rpc.ErrorInfo naming the permission

    def matches(self, api: str, job_id: str | None) -> bool:
        return (self.api in (None, api)) and (self.job_id is None or self.job_id == job_id)


class FakeGoogleApis:
    """One loopback server for Vertex AI CustomJobs and Cloud Logging entries:list."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, dict] = {}  # resource name -> REST dict
        self._entries: list[dict] = []
        self._quota_infos: dict[tuple[str, str], list[dict]] = {}  # (project, service) -> QuotaInfo REST dicts
        self._faults: list[Fault] = []
        self._ids = itertools.count(7_000_000_000_000_000_001)
        self.server = LocalHttpServer(self._handle)

    # ------------------------------------------------------------------------------------ lifecycle

    def start(self) -> FakeGoogleApis:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> FakeGoogleApis:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.server.requests

    # ------------------------------------------------------------------------------------ seeding

    def seed_job(self, job: dict) -> dict:
        """Store a CustomJob REST dict (it must have a `name`)."""
        with self._lock:
            self._jobs[job["name"]] = copy.deepcopy(job)
        return job

    def job(self, name: str) -> dict | None:
        with self._lock:
            stored = self._jobs.get(name)
            return copy.deepcopy(stored) if stored is not None else None

    def seed_log_entries(self, entries: list[dict]) -> None:
        with self._lock:
            self._entries.extend(copy.deepcopy(entries))

    def seed_quota_info(
        self,
        project: str,
        service: str,
        metric: str,
        quota_id: str,
        dimensions: list[str],
        limits: dict[str, int] | None = None,
        display_names: tuple[str, str] = ("", ""),
    ) -> None:
        """A QuotaInfo of `project` (its id, as Cloud Quotas lists it): `dimensions` ["region"] or [] (global);
        `limits` region -> value, "" for the default value (a DimensionsInfo with no dimensions); `display_names`
        the metric's and the quota's, as an error quotes them."""
        infos = [
            {
                "dimensions": {"region": region} if region else {},
                "details": {"value": str(value)},  # an int64: a string in JSON
                **({"applicableLocations": [region]} if region else {}),
            }
            for region, value in (limits or {}).items()
        ]
        info = {
            "name": f"projects/{project}/locations/global/services/{service}/quotaInfos/{quota_id}",
            "quotaId": quota_id,
            "metric": metric,
            "service": service,
            "isPrecise": True,
            "containerType": "PROJECT",
            "dimensions": list(dimensions),
            **({"dimensionsInfos": infos} if infos else {}),
            **({"metricDisplayName": display_names[0]} if display_names[0] else {}),
            **({"quotaDisplayName": display_names[1]} if display_names[1] else {}),
        }
        with self._lock:
            self._quota_infos.setdefault((project, service), []).append(info)

    def inject(
        self,
        *,
        status: int | None = None,
        delay: float = 0.0,
        times: int | None = None,
        job_id: str | None = None,
        api: str | None = None,
        message: str | None = None,
        permission: str | None = None,
        error_info: bool = True,
    ) -> None:
        """Make matching calls fail with `status` and/or answer after `delay` seconds.

        A 403 gets a Google-style PERMISSION_DENIED body naming `permission` (default: the one the call
        needs) in its message and, unless `error_info` is false, in an ErrorInfo detail. `times` limits
        how many calls the fault hits; `job_id`/`api` narrow which calls it hits.
        """
        with self._lock:
            self._faults.append(Fault(status, delay, times, job_id, api, message, permission, error_info))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    # ------------------------------------------------------------------------------------ serving

    def _handle(self, request: RecordedRequest) -> Reply:
        if request.path == "/v2/entries:list" and request.method == "POST":
            return self._answer("logging", None, "logging.logEntries.list", request, self._list_entries)
        quotas = _QUOTA_INFOS_PATH.match(request.path)
        if quotas is not None and request.method == "GET":
            where = (quotas["project"], quotas["service"])
            listed = partial(self._list_quotas, where)
            return self._answer("quotas", None, "cloudquotas.quotas.get", request, listed)
        pipeline = _PIPELINE_PATH.match(request.path)
        if pipeline is not None and request.method == "POST" and not pipeline["job_id"]:
            parent = request.path.removeprefix("/v1/").removesuffix("/pipelineJobs")
            enum_ints = "enum-encoding=int" in ";".join(request.query.get("$alt", []))
            return self._answer(
                "vertex",
                None,
                "aiplatform.pipelineJobs.create",
                request,
                lambda req: self._create_pipeline(parent, req, enum_ints),
            )
        if pipeline is not None and request.method == "GET" and not pipeline["job_id"]:
            parent = request.path.removeprefix("/v1/").removesuffix("/pipelineJobs")
            enum_ints = "enum-encoding=int" in ";".join(request.query.get("$alt", []))
            return self._answer(
                "vertex",
                None,
                "aiplatform.pipelineJobs.list",
                request,
                lambda req: self._list_jobs(parent, req, enum_ints, "pipelineJobs"),
            )
        if pipeline is not None and request.method == "GET" and pipeline["job_id"]:
            name = request.path.removeprefix("/v1/")
            enum_ints = "enum-encoding=int" in ";".join(request.query.get("$alt", []))
            return self._answer(
                "vertex",
                pipeline["job_id"],
                "aiplatform.pipelineJobs.get",
                request,
                lambda _: self._get_pipeline(name, enum_ints),
            )
        match = _JOB_PATH.match(request.path)
        if match is None:
            return Reply.json(google_error_body(404, f"no route for {request.method} {request.path}"), 404)
        parent = f"projects/{match['project']}/locations/{match['region']}"
        job_id = match["job_id"]
        enum_ints = "enum-encoding=int" in ";".join(request.query.get("$alt", []))
        if request.method == "GET" and job_id:
            return self._answer(
                "vertex",
                job_id,
                "aiplatform.customJobs.get",
                request,
                lambda _: self._get_job(f"{parent}/customJobs/{job_id}", enum_ints),
            )
        if request.method == "GET" and not job_id:
            return self._answer(
                "vertex",
                None,
                "aiplatform.customJobs.list",
                request,
                lambda req: self._list_jobs(parent, req, enum_ints),
            )
        if request.method == "POST" and not job_id:
            return self._answer(
                "vertex",
                None,
                "aiplatform.customJobs.create",
                request,
                lambda req: self._create_job(parent, req, enum_ints),
            )
        return Reply.json(google_error_body(404, f"no route for {request.method} {request.path}"), 404)

    def _answer(
        self,
        api: str,
        job_id: str | None,
        permission: str,
        request: RecordedRequest,
        normal: Callable[[RecordedRequest], Reply],
    ) -> Reply:
        fault = self._take_fault(api, job_id)
        if fault is None:
            return normal(request)
        reply = normal(request) if fault.status is None else _fault_reply(fault, api, permission, request)
        reply.delay = fault.delay
        return reply

    def _take_fault(self, api: str, job_id: str | None) -> Fault | None:
        with self._lock:
            fault = next((f for f in self._faults if f.matches(api, job_id)), None)
            if fault is not None and fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
            return fault

    def _get_job(self, name: str, enum_ints: bool) -> Reply:
        job = self.job(name)
        if job is None:
            return Reply.json(google_error_body(404, f'The CustomJob "{name}" does not exist.'), 404)
        return Reply.json(_with_enum_numbers(job) if enum_ints else job)

    def _get_pipeline(self, name: str, enum_ints: bool) -> Reply:
        job = self.job(name)
        if job is None:
            return Reply.json(google_error_body(404, f'The PipelineJob "{name}" does not exist.'), 404)
        return Reply.json(_pipeline_with_enum_numbers(job) if enum_ints else job)

    def _create_pipeline(self, parent: str, request: RecordedRequest, enum_ints: bool) -> Reply:
        body, job_id = request.json, (request.query.get("pipelineJobId") or [""])[0]
        if not isinstance(body, dict) or not body.get("pipelineSpec"):
            return Reply.json(google_error_body(400, "pipelineSpec is required."), 400)
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,127}", job_id):
            return Reply.json(google_error_body(400, f"Invalid pipeline job id {job_id!r}."), 400)
        if self.job(f"{parent}/pipelineJobs/{job_id}") is not None:
            return Reply.json(google_error_body(409, f"PipelineJob {job_id} already exists."), 409)
        job = {key: value for key, value in body.items() if key not in ("name", "state", "createTime", "jobDetail")}
        job.update(name=f"{parent}/pipelineJobs/{job_id}", state="PIPELINE_STATE_PENDING")
        job["createTime"] = "2026-02-24T10:00:00Z"
        self.seed_job(job)
        return Reply.json(_pipeline_with_enum_numbers(job) if enum_ints else job)

    def _create_job(self, parent: str, request: RecordedRequest, enum_ints: bool) -> Reply:
        body = request.json
        if not isinstance(body, dict) or not body.get("displayName") or not body.get("jobSpec"):
            return Reply.json(google_error_body(400, "displayName and jobSpec are required."), 400)
        job = {key: value for key, value in body.items() if key not in ("name", "state", "createTime")}
        job["name"] = f"{parent}/customJobs/{next(self._ids)}"
        job["state"] = "JOB_STATE_PENDING"
        job["createTime"] = job["updateTime"] = "2026-02-24T10:00:00.000000Z"
        self.seed_job(job)
        return Reply.json(_with_enum_numbers(job) if enum_ints else job)

    def _list_jobs(
        self, parent: str, request: RecordedRequest, enum_ints: bool, collection: str = "customJobs"
    ) -> Reply:
        def one(key: str) -> str:
            values = request.query.get(key, [])
            return values[0] if values else ""

        try:
            matches = parse_job_filter(one("filter"))
        except ValueError as exc:
            return Reply.json(google_error_body(400, f"Invalid filter: {exc}"), 400)
        size_text, token = one("pageSize") or "0", one("pageToken") or "0"
        if not size_text.isdigit() or not token.isdigit():
            return Reply.json(google_error_body(400, "Invalid pageSize or pageToken."), 400)
        size = min(int(size_text) or 100, 100)
        with self._lock:
            jobs = [
                copy.deepcopy(job)
                for name, job in sorted(self._jobs.items())
                if name.startswith(f"{parent}/{collection}/") and matches(job)
            ]
        start = int(token)
        page: dict[str, Any] = {}
        if jobs[start : start + size]:
            encode = _pipeline_with_enum_numbers if collection == "pipelineJobs" else _with_enum_numbers
            page[collection] = [encode(job) if enum_ints else job for job in jobs[start : start + size]]
        if start + size < len(jobs):
            page["nextPageToken"] = str(start + size)
        return Reply.json(page)

    def _list_quotas(self, where: tuple[str, str], request: RecordedRequest) -> Reply:
        size_text = (request.query.get("pageSize") or ["0"])[0] or "0"
        token = (request.query.get("pageToken") or ["0"])[0] or "0"
        if not size_text.isdigit() or not token.isdigit():
            return Reply.json(google_error_body(400, "Invalid pageSize or pageToken."), 400)
        size, start = min(int(size_text) or 100, 100), int(token)  # this stand-in's pages: 100 at most
        with self._lock:
            infos = copy.deepcopy(self._quota_infos.get(where, []))
        page: dict[str, Any] = {"quotaInfos": infos[start : start + size]}
        if start + size < len(infos):
            page["nextPageToken"] = str(start + size)
        return Reply.json(page)

    def _list_entries(self, request: RecordedRequest) -> Reply:
        body = request.json if isinstance(request.json, dict) else {}
        projects = {name.removeprefix("projects/") for name in body.get("resourceNames", [])}
        try:
            matches = parse_log_filter(body.get("filter", ""))
        except ValueError as exc:
            return Reply.json(google_error_body(400, f"Invalid filter: {exc}"), 400)
        with self._lock:
            entries = [
                copy.deepcopy(entry)
                for entry in self._entries
                if _in_projects(entry, projects) and matches(entry)
            ]
        entries.sort(key=lambda entry: entry.get("timestamp", ""), reverse="desc" in body.get("orderBy", ""))
        start = int(body.get("pageToken") or 0)
        size = int(body.get("pageSize") or 50)
        page: dict[str, Any] = {"entries": entries[start : start + size]} if entries[start : start + size] else {}
        if start + size < len(entries):
            page["nextPageToken"] = str(start + size)
        return Reply.json(page)


_FILTER_TOKEN = re.compile(
    r"\s*(?:(?P<paren>[()])|(?P<word>AND|OR)(?![\w.])|(?P<field>[a-z_]+(?:\.[\w-]+)?)\s*(?P<op><=|>=|!=|=|<|>)\s*"
    r'"(?P<value>[^"]*)")'
)
_FILTER_FIELDS = {"display_name": "displayName", "state": "state", "create_time": "createTime"}


def parse_job_filter(text: str) -> Callable[[dict], bool]:
    """customJobs.list's filter as a predicate on a job REST dict (ValueError for what the API refuses).

    Fields: display_name, state, create_time, labels.KEY (no update_time); OR binds tighter than AND.
    """
    tokens: list[tuple[str, Any]] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _FILTER_TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"cannot parse at {text[position : position + 30]!r}")
        position = match.end()
        if match["paren"]:
            tokens.append((match["paren"], None))
        elif match["word"]:
            tokens.append((match["word"], None))
        else:
            field = match["field"]
            if field not in _FILTER_FIELDS and not field.startswith("labels."):
                raise ValueError(f"unsupported field {field!r}")
            tokens.append(("cmp", (field, match["op"], match["value"])))
    if not tokens:
        return lambda job: True
    index = 0

    def peek() -> str | None:
        return tokens[index][0] if index < len(tokens) else None

    def take(kind: str) -> Any:
        nonlocal index
        if peek() != kind:
            raise ValueError(f"expected {kind}, got {peek()}")
        index += 1
        return tokens[index - 1][1]

    def term() -> Callable[[dict], bool]:
        if peek() == "(":
            take("(")
            inner = conjunction()
            take(")")
            return inner
        field, op, value = take("cmp")
        return lambda job: _compare(_filter_value(job, field), op, value)

    def disjunction() -> Callable[[dict], bool]:
        parts = [term()]
        while peek() == "OR":
            take("OR")
            parts.append(term())
        return lambda job: any(part(job) for part in parts)

    def conjunction() -> Callable[[dict], bool]:
        parts = [disjunction()]
        while peek() == "AND":
            take("AND")
            parts.append(disjunction())
        return lambda job: all(part(job) for part in parts)

    predicate = conjunction()
    if index != len(tokens):
        raise ValueError(f"unexpected {peek()}")
    return predicate


def _filter_value(job: dict, field: str) -> str | None:
    if field.startswith("labels."):
        return (job.get("labels") or {}).get(field.split(".", 1)[1])
    value = job.get(_FILTER_FIELDS[field])
    return None if value is None else str(value)


def _compare(actual: Any, op: str, wanted: Any) -> bool:
    """`actual op wanted` for the filter languages: RFC 3339 times compare as instants, numbers as numbers."""
    if actual is None:
        return op == "!="
    if op in ("=", "!="):
        return (actual == wanted) == (op == "=")
    if isinstance(actual, str) and isinstance(wanted, str) and actual.endswith("Z") and wanted.endswith("Z"):
        actual, wanted = (datetime.fromisoformat(t[:-1][:26] + "+00:00") for t in (actual, wanted))
    return {
        "<": actual < wanted,
        ">": actual > wanted,
        "<=": actual <= wanted,
        ">=": actual >= wanted,
    }[op]


def _fault_reply(fault: Fault, api: str, permission: str, request: RecordedRequest) -> Reply:
    status = fault.status or 500
    if status == 403:
        needed = fault.permission or permission
        resource = request.path.removeprefix("/v1/")
        text = fault.message or f"Permission '{needed}' denied on resource '{resource}' (or it may not exist)."
        domain = {"vertex": "aiplatform.googleapis.com", "quotas": "cloudquotas.googleapis.com"}.get(
            api, "logging.googleapis.com"
        )
        body = google_error_body(403, text, permission=needed if fault.error_info else None, domain=domain)
        return Reply.json(body, 403)
    text = fault.message or f"fake {_STATUS_NAMES.get(status, 'error')}"
    return Reply.json(google_error_body(status, text), status)


def _in_projects(entry: dict, projects: set[str]) -> bool:
    labels = entry.get("resource", {}).get("labels", {})
    log_project = str(entry.get("logName", "")).split("/")[1:2]  # "projects/P/logs/..." -> ["P"]
    return not projects or labels.get("project_id") in projects or bool(projects.intersection(log_project))


def parse_log_filter(text: str) -> Callable[[dict], bool]:
    """A Logging filter of comparisons joined by AND, as a predicate on a LogEntry REST dict (ValueError for
    anything else). `:` is "has" (a substring here); RFC 3339 times compare as instants; a repeated field matches
    when any of its elements does; a bare number compares as a number."""
    terms = []
    for part in (p.strip() for p in re.split(r"\s+AND\s+", text.strip())) if text.strip() else ():
        term = _LOG_TERM.match(part)
        if term is None:
            raise ValueError(f"cannot read {part!r}")
        terms.append(term)

    def matches(entry: dict) -> bool:
        return all(_term_holds(entry, term) for term in terms)

    return matches


def _term_holds(entry: dict, term: re.Match[str]) -> bool:
    values = _field_values(entry, term["field"].split("."))
    wanted: Any = int(term["number"]) if term["number"] is not None else term["text"]
    op = term["op"]
    for value in values:
        if op == ":":
            if isinstance(value, str) and str(wanted) in value:
                return True
        elif type(value) is type(wanted) and _compare(value, op, wanted):
            return True
    return op == "!=" and not values


def _field_values(value: Any, path: list[str]) -> list[Any]:
    if isinstance(value, list):
        return [found for item in value for found in _field_values(item, path)]
    if not path:
        return [value]
    if not isinstance(value, dict) or path[0] not in value:
        return []
    return _field_values(value[path[0]], path[1:])


def _with_enum_numbers(job: dict) -> dict:
    """The job as the API sends it to a client asking for enum-encoding=int."""
    job = copy.deepcopy(job)
    if isinstance(job.get("state"), str):
        job["state"] = _JOB_STATE_NUMBERS.get(job["state"], job["state"])
    spec = job.get("jobSpec", {})
    scheduling = spec.get("scheduling", {})
    if isinstance(scheduling.get("strategy"), str):
        scheduling["strategy"] = _STRATEGY_NUMBERS.get(scheduling["strategy"], scheduling["strategy"])
    for pool in spec.get("workerPoolSpecs", []):
        machine = pool.get("machineSpec", {})
        if isinstance(machine.get("acceleratorType"), str):
            machine["acceleratorType"] = _ACCELERATOR_NUMBERS.get(
                machine["acceleratorType"], machine["acceleratorType"]
            )
    return job


_PIPELINE_STATE_NUMBERS = {
    "PIPELINE_STATE_QUEUED": 1,
    "PIPELINE_STATE_PENDING": 2,
    "PIPELINE_STATE_RUNNING": 3,
    "PIPELINE_STATE_SUCCEEDED": 4,
    "PIPELINE_STATE_FAILED": 5,
    "PIPELINE_STATE_CANCELLING": 6,
    "PIPELINE_STATE_CANCELLED": 7,
    "PIPELINE_STATE_PAUSED": 8,
}
_TASK_STATE_NUMBERS = {
    "PENDING": 1,
    "RUNNING": 2,
    "SUCCEEDED": 3,
    "CANCEL_PENDING": 4,
    "CANCELLING": 5,
    "CANCELLED": 6,
    "FAILED": 7,
    "SKIPPED": 8,
    "NOT_TRIGGERED": 9,
}


def _pipeline_with_enum_numbers(job: dict) -> dict:
    """A PipelineJob as the API sends it to a client asking for enum-encoding=int."""
    job = copy.deepcopy(job)
    if isinstance(job.get("state"), str):
        job["state"] = _PIPELINE_STATE_NUMBERS.get(job["state"], job["state"])
    for task in job.get("jobDetail", {}).get("taskDetails", []):
        if isinstance(task.get("state"), str):
            task["state"] = _TASK_STATE_NUMBERS.get(task["state"], task["state"])
    return job
