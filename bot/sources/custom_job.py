"""Vertex AI CustomJob log entries (resource.type "ml_job"): the job is the CustomJob named by the entry's labels;
it has failed when Vertex writes "Job failed." (task "service") or the job is JOB_STATE_FAILED.

A CustomJob that runs a Vertex AI Pipelines task carries the pipeline's reserved billing label; its failure is
the pipeline's, which the pipeline source posts (one message per failure)."""

from __future__ import annotations

from typing import Any

from bot.errors import InvalidPushMessage
from bot.intake.log_input import entry_labels, entry_text
from bot.jobs.identity import JobIdError, JobRef, custom_job
from bot.jobs.lookup import JobLookup, Lookup
from bot.sources.base import Gate, Sighting, Subject

JOB_FAILED_TEXT = "Job failed."
PIPELINE_LABEL = "vertex-ai-pipelines-run-billing-id"  # reserved by Vertex AI Pipelines, set on its task jobs
TERMINAL_OK_STATES = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING"})


class CustomJobSource:
    name = "custom_job"

    def recognise(self, data: Any, *, message_id: str | None) -> Sighting | None:
        if not isinstance(data, dict):
            return None
        resource = data.get("resource")
        if not isinstance(resource, dict) or resource.get("type") != "ml_job":
            return None
        labels = entry_labels(data)
        try:
            ref = custom_job(labels.get("project_id", ""), labels.get("job_id", ""))
        except JobIdError:
            problem = f"ml_job entry without a valid job_id/project_id label: {labels!r}"
            raise InvalidPushMessage(problem[:500]) from None
        return Sighting(ref=ref, entry=data, marks_failure=self.marks_failure(data))

    def marks_failure(self, entry: dict) -> bool:
        return is_failure_marker(entry)

    def gate(self, ref: JobRef, lookup: Lookup, failed_marker: bool) -> Gate:
        state = lookup.state
        if state in TERMINAL_OK_STATES:
            return Gate("recovered", f"job is {state}: not a failure")
        if lookup.job is not None and PIPELINE_LABEL in lookup.job.labels:
            return Gate("owned", "a Vertex AI Pipelines task: the pipeline's alert reports this failure")
        if failed_marker or state == "JOB_STATE_FAILED":
            return Gate("post")
        reason = f"job is {state}" if state else "no 'Job failed.' entry yet and the job state is unknown"
        return Gate("held", f"held: {reason}")

    def subject(self, sighting: Sighting, lookup: Lookup, jobs: JobLookup, *, deadline: Any) -> Subject:
        ref = sighting.ref
        return Subject(job=lookup.job, logs_of=ref, unavailable=list(lookup.unavailable))


def is_failure_marker(entry: Any) -> bool:
    """Vertex's own "Job failed." entry (written by the service, not by a replica)."""
    if not isinstance(entry, dict):
        return False
    return entry_text(entry).strip() == JOB_FAILED_TEXT and entry_labels(entry).get("task_name") in (None, "service")
