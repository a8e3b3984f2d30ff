"""Read a Vertex AI PipelineJob (REST JSON) into a PipelineInfo, and build the body that runs it again.

A pipeline's tasks run as CustomJobs: `jobDetail.taskDetails[].executorDetail.containerDetail.mainJob` names a
container task's job (`failedMainJobs[]` its earlier failed attempts) and `...customJobDetail.job` a custom-job
task's. `list` omits `jobDetail`, so failed tasks are read from `get`. Task states carry no prefix (FAILED, ...).
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.jobs.identity import JobIdError, JobKind, JobRef, parse_resource_name

PIPELINE_STATES: dict[int, str] = {
    0: "PIPELINE_STATE_UNSPECIFIED",
    1: "PIPELINE_STATE_QUEUED",
    2: "PIPELINE_STATE_PENDING",
    3: "PIPELINE_STATE_RUNNING",
    4: "PIPELINE_STATE_SUCCEEDED",
    5: "PIPELINE_STATE_FAILED",
    6: "PIPELINE_STATE_CANCELLING",
    7: "PIPELINE_STATE_CANCELLED",
    8: "PIPELINE_STATE_PAUSED",
}
TASK_STATES: dict[int, str] = {
    0: "STATE_UNSPECIFIED",
    1: "PENDING",
    2: "RUNNING",
    3: "SUCCEEDED",
    4: "CANCEL_PENDING",
    5: "CANCELLING",
    6: "CANCELLED",
    7: "FAILED",
    8: "SKIPPED",
    9: "NOT_TRIGGERED",
}
FAILED = "PIPELINE_STATE_FAILED"
TERMINAL_OK = frozenset({"PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_CANCELLED", "PIPELINE_STATE_CANCELLING"})
# What a rerun may not send back (output-only fields of PipelineJob).
_OUTPUT_ONLY = frozenset(
    {"name", "state", "error", "jobDetail", "createTime", "startTime", "endTime", "updateTime", "scheduleName"}
)


class FailedTask(BaseModel):
    """A pipeline task that failed, and the CustomJob it ran as (when it ran as one)."""

    model_config = ConfigDict(frozen=True)

    name: str
    error: str | None = None
    custom_job: str | None = None  # projects/P/locations/L/customJobs/ID

    def job_ref(self) -> JobRef | None:
        if not self.custom_job:
            return None
        try:
            ref = parse_resource_name(self.custom_job)
        except JobIdError:
            return None
        return ref if ref.kind is JobKind.CUSTOM_JOB else None


class PipelineInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    display_name: str | None = None
    state: str | None = None
    error_message: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    failed_tasks: list[FailedTask] = Field(default_factory=list)
    create_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    service_account: str | None = None

    @property
    def ref(self) -> JobRef:
        return parse_resource_name(self.name)


def pipeline_info_from_rest(data: Any) -> PipelineInfo:
    """Raises ValueError when `data` is not a PipelineJob this module can read (no name, wrong types)."""
    if not isinstance(data, dict):
        raise ValueError(f"pipeline job: expected an object, got {type(data).__name__}")
    name = data.get("name")
    if not isinstance(name, str):
        raise ValueError("pipeline job: no name")
    try:
        ref = parse_resource_name(name)
    except JobIdError as exc:
        raise ValueError(f"pipeline job: {exc}") from None
    if ref.kind is not JobKind.PIPELINE_JOB:
        raise ValueError(f"pipeline job: {name!r} is not a PipelineJob name")
    error = data.get("error") if isinstance(data.get("error"), dict) else {}
    labels = data.get("labels") if isinstance(data.get("labels"), dict) else {}
    detail = data.get("jobDetail") if isinstance(data.get("jobDetail"), dict) else {}
    tasks = detail.get("taskDetails") if isinstance(detail.get("taskDetails"), list) else []
    return PipelineInfo(
        name=name,
        display_name=_text(data.get("displayName")),
        state=_enum(data.get("state"), PIPELINE_STATES),
        error_message=_text(error.get("message")),
        labels={str(k): str(v) for k, v in labels.items()},
        failed_tasks=[task for task in (_failed_task(t) for t in tasks) if task is not None],
        create_time=data.get("createTime"),
        start_time=data.get("startTime"),
        end_time=data.get("endTime"),
        service_account=_text(data.get("serviceAccount")),
    )


def pipeline_rerun_body(data: dict, *, labels: dict[str, str]) -> dict:
    """The PipelineJob to create for a rerun: the same pipelineSpec and runtimeConfig (the tasks that succeeded
    come from Vertex's per-task cache when caching is on), output-only fields dropped, `labels` merged in."""
    if not isinstance(data.get("pipelineSpec"), dict):
        raise ValueError("the pipeline job carries no pipelineSpec to run again")
    body = {key: copy.deepcopy(value) for key, value in data.items() if key not in _OUTPUT_ONLY}
    old = data.get("labels") if isinstance(data.get("labels"), dict) else {}
    body["labels"] = {**{str(k): str(v) for k, v in old.items()}, **labels}
    body["labels"].pop("vertex-ai-pipelines-run-billing-id", None)  # reserved: Vertex sets it
    return body


def _failed_task(task: Any) -> FailedTask | None:
    if not isinstance(task, dict) or _enum(task.get("state"), TASK_STATES) != "FAILED":
        return None
    executor = task.get("executorDetail") if isinstance(task.get("executorDetail"), dict) else {}
    container = executor.get("containerDetail") if isinstance(executor.get("containerDetail"), dict) else {}
    custom = executor.get("customJobDetail") if isinstance(executor.get("customJobDetail"), dict) else {}
    job = _text(container.get("mainJob")) or _text(custom.get("job"))
    if job is None:  # the task's job was retried and every attempt failed: the last one named
        earlier = container.get("failedMainJobs") or custom.get("failedJobs") or []
        job = _text(earlier[-1]) if isinstance(earlier, list) and earlier else None
    error = task.get("error") if isinstance(task.get("error"), dict) else {}
    return FailedTask(name=_text(task.get("taskName")) or "task", error=_text(error.get("message")), custom_job=job)


def _enum(value: Any, names: dict[int, str]) -> str | None:
    if isinstance(value, int):
        return names.get(value, str(value))
    return value if isinstance(value, str) and value else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
