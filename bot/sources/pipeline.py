"""Vertex AI Pipelines: a failed PipelineJob is one alert, about the task that failed.

Pipeline events come from the sink as LogEntries of the monitored resource `aiplatform.googleapis.com/PipelineJob`
(labels `pipeline_job_id`, `location`, `resource_container`; `jsonPayload.state` the pipeline's new state). The
pipeline has failed when an event says PIPELINE_STATE_FAILED or the PipelineJob is in that state. The diagnosis is
made on the first failed task's CustomJob and its logs (tasks run as CustomJobs; `jobDetail.taskDetails[]`), and
those task jobs are not posted on their own (bot.sources.custom_job: the pipeline's billing label).
"""

from __future__ import annotations

import re
from typing import Any

from bot.errors import InvalidPushMessage
from bot.gcp.pipeline_resource import FAILED, TERMINAL_OK
from bot.jobs.identity import JobIdError, JobRef, pipeline_job
from bot.jobs.lookup import JobLookup, Lookup
from bot.sources.base import Gate, Sighting, Subject

RESOURCE_TYPE = "aiplatform.googleapis.com/PipelineJob"
_LOG_PROJECT = re.compile(r"^projects/([^/]+)/logs/")


class PipelineSource:
    name = "pipeline"

    def recognise(self, data: Any, *, message_id: str | None) -> Sighting | None:
        if not isinstance(data, dict):
            return None
        resource = data.get("resource")
        if not isinstance(resource, dict) or resource.get("type") != RESOURCE_TYPE:
            return None
        labels = resource.get("labels") if isinstance(resource.get("labels"), dict) else {}
        project = _project(labels.get("resource_container"), data.get("logName"))
        try:
            ref = pipeline_job(project or "", str(labels.get("pipeline_job_id", "")), labels.get("location") or None)
        except JobIdError as exc:
            problem = f"PipelineJob entry without a valid project/location/pipeline_job_id: {exc}"
            raise InvalidPushMessage(problem[:500]) from None
        return Sighting(ref=ref, entry=data, marks_failure=self.marks_failure(data))

    def marks_failure(self, entry: dict) -> bool:
        payload = entry.get("jsonPayload")
        return isinstance(payload, dict) and payload.get("state") == FAILED

    def gate(self, ref: JobRef, lookup: Lookup, failed_marker: bool) -> Gate:
        state = lookup.state
        if state in TERMINAL_OK:
            return Gate("recovered", f"pipeline is {state}: not a failure")
        if failed_marker or state == FAILED:
            return Gate("post")
        return Gate("held", f"held: pipeline is {state or 'in an unknown state'}")

    def subject(self, sighting: Sighting, lookup: Lookup, jobs: JobLookup, *, deadline: Any) -> Subject:
        pipeline = lookup.found.pipeline if lookup.found else None
        unavailable = list(lookup.unavailable)
        if pipeline is None:
            return Subject(job=None, logs_of=None, unavailable=unavailable)
        task_ref = next((ref for ref in (t.job_ref() for t in pipeline.failed_tasks) if ref is not None), None)
        if task_ref is None:
            if not pipeline.failed_tasks:
                unavailable.append("the failed task: the pipeline names no failed task")
            return Subject(job=None, logs_of=None, pipeline=pipeline, unavailable=unavailable)
        task = jobs.job(task_ref, fresh=True, deadline=deadline)
        unavailable += [f"the failed task's {problem}" for problem in task.unavailable]
        return Subject(job=task.job, logs_of=task_ref, pipeline=pipeline, unavailable=unavailable)


def _project(container: Any, log_name: Any) -> str | None:
    """The project from `resource_container` ("projects/ID" or the bare id), else from the entry's logName."""
    if isinstance(container, str) and container:
        return container.removeprefix("projects/")
    match = _LOG_PROJECT.match(log_name) if isinstance(log_name, str) else None
    return match.group(1) if match else None
